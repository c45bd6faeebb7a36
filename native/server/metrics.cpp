// The access log (one line per request, at its last byte) and /metrics (Prometheus text
// format) of `runnel serve`: Server's members that count and report, apart from the routes.
#include <cstdio>
#include <string>
#include <thread>

#include <httplib.h>

#include "native/memory_budget.h"
#include "native/server/server.h"

namespace runnel::server {

void Server::begin_request_log() {
  if (!options_.access_log) return;
  std::lock_guard<std::mutex> lock(log_mutex_);
  request_logs_[std::this_thread::get_id()] = RequestLog{now_ns(), ""};
}

void Server::note_usage(const Usage& usage, const std::string& finish_reason) {
  if (!options_.access_log) return;
  std::string tokens = " prompt=" + std::to_string(usage.prompt_tokens);
  if (!finish_reason.empty()) {
    tokens += " completion=" + std::to_string(usage.completion_tokens) + " finish=" + finish_reason;
  }
  std::lock_guard<std::mutex> lock(log_mutex_);
  request_logs_[std::this_thread::get_id()].tokens = std::move(tokens);
}

// Called by httplib after the response's last byte (streams included), once per request.
void Server::log_request(const httplib::Request& req, const httplib::Response& res) {
  if (!options_.access_log) return;
  RequestLog entry;
  {
    std::lock_guard<std::mutex> lock(log_mutex_);
    const auto it = request_logs_.find(std::this_thread::get_id());
    if (it != request_logs_.end()) {
      entry = std::move(it->second);
      request_logs_.erase(it);
    }
  }
  // The path is percent-decoded: control characters would forge log lines.
  std::string path = req.path;
  for (char& c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  // No start time: httplib refused the request before routing (a malformed request line).
  char ms[32] = "";
  if (entry.start_ns > 0) {
    std::snprintf(ms, sizeof ms, " %lldms", static_cast<long long>((now_ns() - entry.start_ns + 500000) / 1000000));
  }
  std::fprintf(stderr, "%s %s %d%s%s\n", req.method.empty() ? "-" : req.method.c_str(), path.c_str(), res.status,
               entry.tokens.c_str(), ms);
}

void Server::count_request(const std::string& path, int status) {
  std::lock_guard<std::mutex> lock(metrics_mutex_);
  // Unknown paths share one label so a scanner cannot grow the table.
  static const char* kKnown[] = {"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models",
                                 "/health", "/metrics"};
  std::string label = "other";
  for (const char* k : kKnown) {
    if (path == k) label = k;
  }
  ++requests_[label][status];
}

std::string Server::metrics_text() {
  int busy = 0, waiting = 0, kv_tokens = 0;
  {
    std::lock_guard<std::mutex> lock(slots_mutex_);
    for (const Slot& s : slots_) {
      busy += s.busy;
      kv_tokens += s.session->position();  // read without the compute lock: a gauge
    }
    waiting = waiting_;
  }
  std::lock_guard<std::mutex> lock(metrics_mutex_);
  std::string out;
  char line[256];
  out += "# HELP runnel_requests_total HTTP requests by endpoint and status.\n# TYPE runnel_requests_total counter\n";
  for (const auto& [path, by_status] : requests_) {
    for (const auto& [status, n] : by_status) {
      std::snprintf(line, sizeof line, "runnel_requests_total{endpoint=\"%s\",status=\"%d\"} %llu\n", path.c_str(),
                    status, static_cast<unsigned long long>(n));
      out += line;
    }
  }
  const auto metric = [&](const char* name, const char* type, const char* help, double value) {
    std::snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s %s\n%s %.6g\n", name, help, name, type, name, value);
    out += line;
  };
  metric("runnel_prompt_tokens_total", "counter", "Prompt tokens received.", static_cast<double>(prompt_tokens_));
  metric("runnel_prompt_tokens_cached_total", "counter", "Prompt tokens reused from a slot's cache.",
         static_cast<double>(cached_tokens_));
  metric("runnel_generated_tokens_total", "counter", "Tokens generated.", static_cast<double>(generated_tokens_));
  metric("runnel_draft_tokens_total", "counter", "Speculative decoding: draft tokens checked.",
         static_cast<double>(drafted_tokens_));
  metric("runnel_draft_tokens_accepted_total", "counter", "Speculative decoding: draft tokens accepted.",
         static_cast<double>(accepted_drafts_));
  metric("runnel_batched_passes_total", "counter", "Forward passes that decoded several slots at once.",
         static_cast<double>(scheduler_->batched_passes()));
  metric("runnel_batched_tokens_total", "counter", "Tokens decoded in those passes.",
         static_cast<double>(scheduler_->batched_tokens()));
  metric("runnel_prompt_seconds_total", "counter", "Time spent evaluating prompts.", prompt_seconds_);
  metric("runnel_generation_seconds_total", "counter", "Time spent generating.", generation_seconds_);
  metric("runnel_generation_tokens_per_second", "gauge", "Generation speed of the last request.",
         last_gen_tokens_per_s_);
  metric("runnel_queue_depth", "gauge", "Requests waiting for a slot.", waiting);
  metric("runnel_slots_busy", "gauge", "Slots generating now.", busy);
  metric("runnel_slots_total", "gauge", "Slots.", static_cast<double>(slots_.size()));
  metric("runnel_kv_cache_tokens", "gauge", "Tokens held in the slots' KV caches.", kv_tokens);
  metric("runnel_kv_cache_capacity_tokens", "gauge", "Tokens the slots' KV caches can hold.",
         static_cast<double>(slots_.size()) * engine_->n_ctx());
  // Memory: what is resident, and what was read from storage (streamed weights).
  const uint64_t read_bytes = process_read_bytes();
  const uint64_t tokens = prompt_tokens_ - cached_tokens_ + generated_tokens_;
  metric("runnel_resident_bytes", "gauge", "Resident memory of the server (VmRSS).",
         static_cast<double>(process_rss_bytes()));
  metric("runnel_storage_read_bytes_total", "counter", "Bytes the process read from storage.",
         static_cast<double>(read_bytes));
  metric("runnel_storage_read_bytes_per_token", "gauge", "Storage bytes read per evaluated token since start.",
         tokens > 0 ? static_cast<double>(read_bytes) / static_cast<double>(tokens) : 0.0);
  // Mixture of experts under a memory budget: the expert cache.
  const ExpertCacheStats experts = engine_->store().expert_stats();
  if (experts.n_slots > 0) {
    metric("runnel_expert_cache_slots", "gauge", "Experts the expert cache holds at once.",
           static_cast<double>(experts.n_slots));
    metric("runnel_expert_cache_hits_total", "counter", "Picked experts found in the expert cache.",
           static_cast<double>(experts.hits));
    metric("runnel_expert_cache_misses_total", "counter", "Picked experts read from storage.",
           static_cast<double>(experts.misses));
    metric("runnel_expert_read_bytes_total", "counter", "Bytes of experts read from storage.",
           static_cast<double>(experts.bytes_read));
  }
  return out;
}

}  // namespace runnel::server
