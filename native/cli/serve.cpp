// runnel serve: the OpenAI-compatible server (native/server) on one model.
// SIGINT/SIGTERM are taken by a dedicated thread (sigwait), which starts the graceful
// shutdown; the process then exits 0 once in-flight requests have ended.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "kernels/kernels.h"
#include "native/cli/args.h"
#include "native/cli/commands.h"
#include "native/cli/model_loader.h"
#include "native/cpu_topology.h"
#include "native/mmap_store.h"
#include "native/server/server.h"
#include "native/thread_pool.h"

namespace runnel::cli {
namespace {

// The demo page: `--web-root`, else web/ of the source tree this binary was built in
// (build-release/runnel -> ../web), when it holds an index.html.
std::string find_web_root(const std::string& executable) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::canonical(executable, ec);
  if (ec) return "";
  for (const fs::path& candidate : {exe.parent_path() / "web", exe.parent_path().parent_path() / "web"}) {
    if (fs::exists(candidate / "index.html", ec)) return candidate.string();
  }
  return "";
}

// The banner's note on the demo page: the package the page imports is a build output
// (web/runnel-llm/, copied there by wasm/'s `npm run build`), absent from a fresh checkout.
std::string web_root_note(const std::string& web_root) {
  if (web_root.empty()) return "";
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(web_root) / "runnel-llm" / "dist" / "runnel.wasm", ec)) {
    return ", demo page at /";
  }
  return ", demo page at / without its package: build it with (cd wasm && npm run build)";
}

}  // namespace

int serve_command(const std::vector<std::string>& args) {
  std::string model_path, kv_type = "f16", mem_budget, session_path;
  int n_ctx = 0, n_threads = 0, n_keep = -1;
  bool dry_run = false;
  server::ServerOptions so;
  ArgParser p("runnel serve -m FILE [options]",
              "Serves the model in FILE over the OpenAI API (/v1/chat/completions, /v1/completions,\n"
              "/v1/embeddings, /v1/models), plus /health, /metrics and the demo page at /.");
  p.string_option("-m, --model", &model_path, "FILE", "GGUF model (first part of a split model)");
  p.string_option("--host", &so.host, "ADDR", "address to listen on (default 127.0.0.1: this machine only)");
  p.int_option("--port", &so.port, "port (default 8080; 0 = any free port, printed at start)");
  p.int_option("-c, --ctx-size", &n_ctx, "context size of each slot (default: min(model's, 4096))");
  p.int_option("-t, --threads", &n_threads, "threads (default: physical cores)");
  p.int_option("--slots", &so.slots, "conversations kept in memory, each with its own KV cache (default 1)");
  p.int_option("--queue", &so.queue, "requests that may wait for a slot; more get 429 (default 8)");
  p.string_option("--api-key", &so.api_key, "KEY", "require 'Authorization: Bearer KEY' on /v1 and /metrics");
  p.string_option("--model-alias", &so.model_alias, "NAME", "model id for clients (default: the file name)");
  p.string_option("--cors", &so.cors_origin, "ORIGIN", "allow browser requests from ORIGIN (default: none)");
  p.string_option("--web-root", &so.web_root, "DIR", "folder served at / (default: the repository's web/)");
  p.string_option("--kv-type", &kv_type, "TYPE", "KV cache type: f16 (default), q8_0, q4_0");
  p.string_option("--mem-budget", &mem_budget, "SIZE",
                  "memory to stay within, e.g. 2.5G (default: cgroup limit, else MemAvailable);\n"
                  "weights beyond it are streamed from the file layer by layer");
  p.flag("--dry-run", &dry_run, "print the memory plan (all slots) and exit");
  p.int_option("--keep", &n_keep,
               "allow max_tokens beyond the context: when a slot's context fills, keep its first N\n"
               "tokens and drop the oldest half of the rest (default -1: such requests get a 400)");
  p.string_option("--session", &session_path, "FILE",
                  "slot 0's conversation: restored from FILE at start if it exists, saved at exit");
  p.flag("--lenient", &so.lenient,
         "serve requests with fields this server does not implement (functions, logprobs,\n"
         "suffix, ...) as if they were absent, logging a warning (default: 400 naming the field)");
  std::string reasoning_format = "auto";
  p.string_option("--reasoning-format", &reasoning_format, "FORMAT",
                  "reasoning of templates that think (<think>...</think>): auto (default) sends it\n"
                  "as reasoning_content, none keeps it inline in the content");
  LoadRequest lr;
  add_speculation_options(p, &lr);
  bool log_disable = false;
  p.flag("--log-disable", &log_disable, "no line per request on stderr (access log, --lenient warnings)");
  float shutdown_s = static_cast<float>(so.shutdown_deadline_s);
  p.float_option("--shutdown-timeout", &shutdown_s,
                 "seconds in-flight generations may run on after SIGTERM/SIGINT (default 10)");
  // Limits against hostile or broken clients; each refusal is a 4xx with a JSON error.
  int max_body_bytes = static_cast<int>(so.max_body_bytes);
  int max_header_bytes = static_cast<int>(so.connection.max_header_bytes);
  int max_connections = 0;
  float request_timeout_s = static_cast<float>(so.connection.request_timeout_s);
  float idle_timeout_s = static_cast<float>(so.connection.idle_timeout_s);
  float write_timeout_s = static_cast<float>(so.connection.write_timeout_s);
  p.int_option("--max-body-bytes", &max_body_bytes, "largest request body; larger get 413 (default 8 MiB)");
  p.int_option("--max-header-bytes", &max_header_bytes,
               "largest request line + headers; larger get 431 (default 16384)");
  p.float_option("--request-timeout", &request_timeout_s,
                 "seconds a request may take to arrive, from its first byte to its last; slower\n"
                 "get 408 and lose the connection (default 30)");
  p.float_option("--idle-timeout", &idle_timeout_s,
                 "seconds a request may pause between bytes (default 10)");
  p.float_option("--write-timeout", &write_timeout_s,
                 "seconds a client may take none of a reply before it is dropped and its\n"
                 "generation cancelled (default 30)");
  p.int_option("--max-connections", &max_connections,
               "connections served at once, one thread each; more get 503 (default\n"
               "max(64, slots + queue + 16); at least slots + queue + 1)");
  p.int_option("--max-messages", &so.limits.max_messages, "most messages in a chat request (default 256)");
  p.int_option("--max-prompt-tokens", &so.limits.max_prompt_tokens,
               "most prompt tokens a request may bring (default 0: the context size)");
  p.int_option("--max-completion-tokens", &so.limits.max_completion_tokens,
               "most tokens a request may ask for, and the cap of requests that give no\n"
               "max_tokens (default 0: the context size)");
  if (p.parse_or_print_help(args)) return 0;
  if (model_path.empty()) throw UsageError("-m: a model file is required");
  if (so.port < 0 || so.port > 65535) throw UsageError("--port: must be in [0, 65535], got " + std::to_string(so.port));
  if (p.seen("-c") && n_ctx < 1) throw UsageError("-c: must be >= 1, got " + std::to_string(n_ctx));
  if (p.seen("-t") && n_threads < 1) throw UsageError("-t: must be >= 1, got " + std::to_string(n_threads));
  if (so.slots < 1 || so.slots > 64) throw UsageError("--slots: must be in [1, 64], got " + std::to_string(so.slots));
  if (so.queue < 0 || so.queue > 1024) throw UsageError("--queue: must be in [0, 1024], got " + std::to_string(so.queue));
  if (!(shutdown_s >= 0)) throw UsageError("--shutdown-timeout: must be >= 0");
  const auto positive = [](const char* name, double v) {
    if (!(v > 0 && v <= 86400)) {
      throw UsageError(std::string(name) + ": must be in (0, 86400] seconds, got " + std::to_string(v));
    }
  };
  positive("--request-timeout", request_timeout_s);
  positive("--idle-timeout", idle_timeout_s);
  positive("--write-timeout", write_timeout_s);
  if (max_body_bytes < 1024) {
    throw UsageError("--max-body-bytes: must be >= 1024, got " + std::to_string(max_body_bytes));
  }
  if (max_header_bytes < 1024 || max_header_bytes > (1 << 20)) {
    throw UsageError("--max-header-bytes: must be in [1024, 1048576], got " + std::to_string(max_header_bytes));
  }
  if (so.limits.max_messages < 1) {
    throw UsageError("--max-messages: must be >= 1, got " + std::to_string(so.limits.max_messages));
  }
  if (so.limits.max_prompt_tokens < 0) {
    throw UsageError("--max-prompt-tokens: must be >= 0, got " + std::to_string(so.limits.max_prompt_tokens));
  }
  if (so.limits.max_completion_tokens < 0) {
    throw UsageError("--max-completion-tokens: must be >= 0, got " + std::to_string(so.limits.max_completion_tokens));
  }
  if (!p.seen("--max-connections")) max_connections = std::max(64, so.slots + so.queue + 16);
  if (max_connections < so.slots + so.queue + 1 || max_connections > 4096) {
    throw UsageError("--max-connections: must be in [slots + queue + 1 = " + std::to_string(so.slots + so.queue + 1) +
                     ", 4096], got " + std::to_string(max_connections));
  }
  so.max_body_bytes = static_cast<size_t>(max_body_bytes);
  so.connection.max_header_bytes = static_cast<size_t>(max_header_bytes);
  so.connection.max_connections = max_connections;
  so.connection.request_timeout_s = request_timeout_s;
  so.connection.idle_timeout_s = idle_timeout_s;
  so.connection.write_timeout_s = write_timeout_s;
  if (n_keep < -1) throw UsageError("--keep: must be >= -1, got " + std::to_string(n_keep));
  if (reasoning_format != "auto" && reasoning_format != "none") {
    throw UsageError("--reasoning-format: must be auto or none, got '" + reasoning_format + "'");
  }
  check_speculation_options(lr);
  so.lookup_ngram = lr.lookup_ngram;
  so.n_draft = lr.n_draft;
  so.split_reasoning = reasoning_format == "auto";
  so.shutdown_deadline_s = shutdown_s;
  so.access_log = !log_disable;
  if (so.model_alias.empty()) so.model_alias = std::filesystem::path(model_path).filename().string();
  if (!p.seen("--web-root")) so.web_root = find_web_root("/proc/self/exe");
  so.model_file = model_path;
  select_kernels_from_env();

  // Block the stop signals before any thread starts, so that only sigwait sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server

  lr.model = model_path;
  lr.n_ctx = n_ctx;
  lr.n_threads = n_threads;
  lr.kv_type = kv_type;
  lr.n_keep = n_keep;
  lr.mem_budget = mem_budget;
  lr.n_sessions = so.slots + 1;  // + the embeddings session
  lr.extra_sessions = 1;
  lr.decode_batch = so.slots;
  lr.dry_run = dry_run;
  LoadedModel loaded = load_model(lr);
  if (dry_run) return loaded.dry_run_status;
  const int threads = loaded.n_threads;
  so.session_path = session_path;
  std::unique_ptr<Engine> draft = load_draft_model(lr, *loaded.engine, loaded.held_bytes());
  server::Server server(std::move(loaded.engine), so, std::move(draft));

  // The signal thread starts once the port is bound, so that a failed bind prints its
  // error alone; a signal that comes earlier stays pending (blocked) until sigwait.
  std::thread signal_thread;
  std::atomic<bool> signalled{false}, quiet{false};
  const auto start_signal_thread = [&] {
    signal_thread = std::thread([&server, &signalled, &quiet, stop_signals] {
      int sig = 0;
      sigwait(&stop_signals, &sig);
      signalled = true;
      if (!quiet) {
        std::fprintf(stderr, "runnel serve: %s: finishing in-flight requests, then exiting\n",
                     sig == SIGINT ? "SIGINT" : "SIGTERM");
      }
      server.stop();
    });
  };
  // Ends the signal thread; one that got no signal is woken without its banner (the
  // server stopped on its own, or failed).
  const auto end_signal_thread = [&] {
    if (!signal_thread.joinable()) return;
    if (!signalled) {
      quiet = true;
      pthread_kill(signal_thread.native_handle(), SIGTERM);
    }
    signal_thread.join();
  };
  try {
    server.run([&](int port) {
      start_signal_thread();
      std::fprintf(stderr,
                   "runnel serve: listening on http://%s:%d (model %s, %d slot%s, %d threads, %s kernels, kv %s%s%s)\n",
                   so.host.c_str(), port, so.model_alias.c_str(), so.slots, so.slots == 1 ? "" : "s", threads,
                   std::string(kernels().isa).c_str(), kv_type.c_str(),
                   loaded.streaming_note().empty() ? "" : (", " + loaded.streaming_note()).c_str(),
                   web_root_note(so.web_root).c_str());
    });
  } catch (...) {
    end_signal_thread();
    throw;
  }
  end_signal_thread();
  std::fprintf(stderr, "runnel serve: stopped\n");
  return 0;
}

}  // namespace runnel::cli
