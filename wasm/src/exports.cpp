// The C ABI of the wasm module: what wasm/js/engine.js calls. Requests and answers
// cross as JSON strings (UTF-8); handles are small positive ints. Every entry point
// catches everything: a failure returns 0 / null and rn_last_error() says why, so a
// bad GGUF or impossible parameter reaches JS as a message, never as a trap.
#include <cxxabi.h>
#include <emscripten.h>

#include <typeinfo>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/chat/chat_template.h"
#include "core/chat/tool_calls.h"
#include "core/kv/kv_cache.h"
#include "core/runtime/chat_request.h"
#include "core/runtime/engine.h"
#include "core/runtime/memory_plan.h"
#include "core/runtime/request.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "wasm/src/js_file.h"
#include "wasm/src/js_store.h"
#if defined(__EMSCRIPTEN_PTHREADS__)
#include "wasm/src/wasm_thread_pool.h"
#endif

// clang-format off
EM_JS(void, runnel_js_load_progress, (double done, double total), {
  if (Module.runnelLoadProgress) Module.runnelLoadProgress(done, total);
});
// clang-format on

namespace runnel::wasm {
namespace {

using json = nlohmann::json;

struct LoadedModel {
  std::unique_ptr<Engine> engine;
  JsStore* store = nullptr;  // owned by engine
  std::unique_ptr<PromptFormat> format;  // chat template and BOS policy
  MemoryPlan plan;
  uint64_t file_weight_bytes = 0;  // the tensors' bytes in the file (what a load reads)
  int n_threads = 1;
  // rn_embed's scratch session (Session::embed clears it before and after), made on
  // first use and remade larger when a longer input comes: embeddings need no more
  // cache than their longest input.
  std::unique_ptr<Session> embed_session;
};

struct SessionSlot {
  int model = 0;
  std::unique_ptr<Session> session;
  std::unique_ptr<RequestRun> run;
  uint64_t bytes_read_at_start = 0;
  ExpertCacheStats experts_at_start;
  // A chat generation's reply is split into content, reasoning and tool calls at its end.
  std::optional<ChatSyntax> chat_syntax;
  std::string text;  // generated so far
  bool logprobs_on = false;            // params.logprobs
  std::vector<StepLogprobs> logprobs;  // the tokens' so far
};

std::map<int, std::unique_ptr<LoadedModel>> g_models;
std::map<int, std::unique_ptr<SessionSlot>> g_sessions;
int g_next_handle = 1;
std::string g_error;
std::string g_answer;  // the last string handed to JS (read before the next call)
std::vector<float> g_logits;  // rn_eval_logits' last answer (copied out by JS)

const char* answer(std::string s) {
  g_answer = std::move(s);
  return g_answer.c_str();
}

LoadedModel& model_of(int handle) {
  const auto it = g_models.find(handle);
  if (it == g_models.end()) throw std::invalid_argument("no model with handle " + std::to_string(handle) + " (disposed?)");
  return *it->second;
}

SessionSlot& session_of(int handle) {
  const auto it = g_sessions.find(handle);
  if (it == g_sessions.end()) throw std::invalid_argument("no session with handle " + std::to_string(handle) + " (disposed?)");
  return *it->second;
}

// Runs fn; on an exception stores its message and returns `failed`.
template <typename T, typename Fn>
T guarded(T failed, Fn&& fn) {
  try {
    g_error.clear();
    return fn();
  } catch (const json::exception& e) {
    g_error = std::string("bad request: ") + e.what();
  } catch (const std::bad_alloc&) {
    g_error = "out of wasm memory (try a smaller contextSize or memoryBudget)";
  } catch (const std::exception& e) {
    g_error = e.what();
  } catch (...) {
#if defined(__wasm_exception_handling__)
    const std::type_info* type = abi::__cxa_current_exception_type();
    g_error = std::string("internal error: an exception of type ") + (type ? type->name() : "unknown");
#else
    g_error = "internal error: an exception that is not a std::exception";
#endif
  }
  return failed;
}

// Reads an optional number field, refusing other types with the field's name.
template <typename T>
T field(const json& j, const char* name, T fallback) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number() && !it->is_boolean()) {
    throw std::invalid_argument(std::string(name) + " must be a number, got " + it->dump());
  }
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    const double d = it->get<double>();
    if (d != static_cast<double>(static_cast<int64_t>(d))) {
      throw std::invalid_argument(std::string(name) + " must be an integer, got " + it->dump());
    }
  }
  return it->get<T>();
}

json model_info(const LoadedModel& m) {
  const ModelConfig& c = m.engine->config();
  const GgufMetadata& md = m.engine->store().model().metadata;
  json info = {
      {"architecture", c.arch_name},
      {"name", md.find_string("general.name").value_or("")},
      {"nVocab", c.n_vocab},
      {"nCtxTrain", c.n_ctx_train},
      {"contextSize", m.engine->n_ctx()},
      {"nEmbd", c.n_embd},
      {"nLayer", c.n_layer},
      {"nHead", c.n_head},
      {"nHeadKv", c.n_head_kv},
      {"fileBytes", m.file_weight_bytes},
      {"threads", m.n_threads},
      {"simd", std::string(kernels().isa)},
      {"floatOps", std::string(float_ops().isa)},
      {"streaming", m.store->streaming()},
      {"weightsResidentBytes", m.store->resident_bytes()},
      {"bytesRead", m.store->bytes_read()},
      {"expertCacheSlots", m.store->expert_stats().n_slots},
      {"memoryPlan",
       {{"totalBytes", m.plan.total_bytes()},
        {"streamingBytes", m.plan.streaming_bytes()},
        {"expertBytes", m.plan.expert_bytes},
        {"expertStreamingBytes", m.plan.min_expert_slots > 0 ? m.plan.expert_streaming_bytes() : 0}}},
      {"kvBytesPerSession", m.plan.kv_bytes},
      {"chatTemplate", m.format->has_chat_template()},
      {"bos", m.engine->tokenizer().bos()},
      {"eos", m.engine->tokenizer().eos()},
  };
  if (!m.format->has_chat_template()) info["chatTemplateError"] = m.format->chat_template_error();
  return info;
}

// params.logitBias: OpenAI's logit_bias (what `runnel serve` accepts).
std::vector<std::pair<int32_t, float>> logit_bias(const json& p, int n_vocab) {
  const auto it = p.find("logitBias");
  if (it == p.end() || it->is_null()) return {};
  return parse_logit_bias(*it, n_vocab, "logitBias");
}

SamplerParams sampler_params(const json& p, int n_vocab) {
  SamplerParams s;
  s.temperature = field<float>(p, "temperature", s.temperature);
  s.top_k = field<int32_t>(p, "topK", s.top_k);
  s.top_p = field<float>(p, "topP", s.top_p);
  s.min_p = field<float>(p, "minP", s.min_p);
  s.typical_p = field<float>(p, "typicalP", s.typical_p);
  s.repeat_penalty = field<float>(p, "repeatPenalty", s.repeat_penalty);
  s.frequency_penalty = field<float>(p, "frequencyPenalty", s.frequency_penalty);
  s.presence_penalty = field<float>(p, "presencePenalty", s.presence_penalty);
  s.penalty_last_n = field<int32_t>(p, "penaltyLastN", s.penalty_last_n);
  const double seed = field<double>(p, "seed", static_cast<double>(s.seed));
  if (seed < 0 || seed > 18446744073709549568.0 || seed != static_cast<double>(static_cast<uint64_t>(seed))) {
    throw std::invalid_argument("seed must be a non-negative integer, got " + p["seed"].dump());
  }
  s.seed = static_cast<uint64_t>(seed);
  s.logit_bias = logit_bias(p, n_vocab);
  s.validate();
  return s;
}

// A message's tool calls: OpenAI's tool_calls ([{id, function: {name, arguments}}]) or
// the objects lastReply.toolCalls holds ([{id, name, arguments}]); arguments as an
// object or its JSON text.
std::vector<ChatToolCall> parse_message_calls(const json& calls) {
  if (!calls.is_array()) throw std::invalid_argument("toolCalls must be an array, got " + calls.dump());
  std::vector<ChatToolCall> out;
  for (const json& c : calls) {
    const json& f = c.is_object() && c.contains("function") ? c["function"] : c;
    if (!f.is_object() || !f.contains("name") || !f["name"].is_string()) {
      throw std::invalid_argument("a tool call needs a string name, got " + c.dump());
    }
    ChatToolCall call{f["name"].get<std::string>(), "{}", c.value("id", std::string())};
    if (f.contains("arguments")) {
      const json& a = f["arguments"];
      call.arguments = a.is_string() ? a.get<std::string>() : a.dump();
      if (!json::accept(call.arguments)) {
        throw std::invalid_argument("the arguments of tool call '" + call.name + "' are not JSON: " + call.arguments);
      }
    }
    out.push_back(std::move(call));
  }
  return out;
}

std::vector<ChatMessage> parse_messages(const json& j) {
  if (!j.is_array() || j.empty()) throw std::invalid_argument("messages must be a non-empty array");
  std::vector<ChatMessage> out;
  for (const json& m : j) {
    const json* calls = nullptr;
    if (m.is_object()) {
      for (const char* key : {"toolCalls", "tool_calls"}) {
        if (m.contains(key) && !m[key].is_null()) calls = &m[key];
      }
    }
    const bool null_content = m.is_object() && (!m.contains("content") || m["content"].is_null());
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() ||
        !((m.contains("content") && m["content"].is_string()) || (calls && null_content))) {
      throw std::invalid_argument("each message needs a string role and a string content, got " + m.dump());
    }
    ChatMessage message{m["role"].get<std::string>(), null_content ? "" : m["content"].get<std::string>()};
    if (calls) message.tool_calls = parse_message_calls(*calls);
    for (const char* key : {"toolCallId", "tool_call_id"}) {
      if (m.contains(key) && m[key].is_string()) message.tool_call_id = m[key].get<std::string>();
    }
    if (message.role == "tool" && message.tool_call_id.empty()) {
      throw std::invalid_argument("a tool message needs toolCallId (the id of the call it answers), got " + m.dump());
    }
    if (m.contains("name") && m["name"].is_string()) message.name = m["name"].get<std::string>();
    for (const char* key : {"reasoning", "reasoning_content"}) {
      if (m.contains(key) && m[key].is_string()) message.reasoning_content = m[key].get<std::string>();
    }
    out.push_back(std::move(message));
  }
  // A tool message's function name, for templates that print it: the call it answers.
  for (ChatMessage& t : out) {
    if (t.role != "tool" || !t.name.empty()) continue;
    for (const ChatMessage& a : out) {
      for (const ChatToolCall& c : a.tool_calls) {
        if (c.id == t.tool_call_id) t.name = c.name;
      }
    }
  }
  return out;
}

// params.tools ([{name, description?, parameters?}], or OpenAI's {type: "function",
// function: {...}}), params.toolChoice ("auto" | "none" | "required" | a tool's name |
// {type: "function", function: {name}}), params.parallelToolCalls.
ChatToolOptions tool_options(const json& p) {
  ChatToolOptions out;
  if (p.contains("tools") && !p["tools"].is_null()) {
    const json& tools = p["tools"];
    if (!tools.is_array()) throw RequestError("tools must be an array, got " + tools.dump(), "tools");
    for (const json& t : tools) {
      if (t.is_object() && t.contains("type") && t["type"] != "function") {
        throw RequestError("tool type " + t["type"].dump() + " is not supported (function only)", "tools");
      }
      const json& f = t.is_object() && t.contains("function") ? t["function"] : t;
      if (!f.is_object() || !f.contains("name") || !f["name"].is_string()) {
        throw RequestError("a tool needs a string name, got " + t.dump(), "tools");
      }
      ChatTool tool{f["name"].get<std::string>(), f.value("description", std::string())};
      if (f.contains("parameters") && !f["parameters"].is_null()) {
        if (!f["parameters"].is_object()) {
          throw RequestError("the parameters of tool '" + tool.name + "' must be an object (a JSON schema)", "tools");
        }
        tool.parameters = f["parameters"].dump();
      }
      out.tools.push_back(std::move(tool));
    }
  }
  if (p.contains("toolChoice") && !p["toolChoice"].is_null()) {
    const json& c = p["toolChoice"];
    if (c == "auto") {
      out.choice = ToolChoice::Auto;
    } else if (c == "none") {
      out.choice = ToolChoice::None;
    } else if (c == "required") {
      out.choice = ToolChoice::Required;
    } else if (c.is_string() || (c.is_object() && c.contains("function") && c["function"].is_object() &&
                                 c["function"].contains("name") && c["function"]["name"].is_string())) {
      out.choice = ToolChoice::Function;
      out.function = c.is_string() ? c.get<std::string>() : c["function"]["name"].get<std::string>();
    } else {
      throw RequestError("toolChoice must be auto, none, required or a tool's name, got " + c.dump(), "toolChoice");
    }
  }
  if (p.contains("parallelToolCalls") && !p["parallelToolCalls"].is_null()) {
    if (!p["parallelToolCalls"].is_boolean()) {
      throw RequestError("parallelToolCalls must be a boolean", "parallelToolCalls");
    }
    out.parallel = p["parallelToolCalls"].get<bool>();
  }
  return out;
}

// The reply of a chat generation: {content, reasoning, toolCalls: [{id, name, arguments}]}
// with arguments as an object.
json reply_json(const SessionSlot& slot) {
  const ChatSyntax& syntax = *slot.chat_syntax;
  const ChatReply reply = syntax.tool_calls || syntax.reasoning ? parse_chat_reply(slot.text, syntax)
                                                                : ChatReply{slot.text, "", {}};
  json calls = json::array();
  for (const ChatToolCall& c : reply.tool_calls) {
    calls.push_back({{"id", c.id}, {"name", c.name}, {"arguments", json::parse(c.arguments, nullptr, false)}});
  }
  return {{"content", reply.content}, {"reasoning", reply.reasoning}, {"toolCalls", calls}};
}

// chatTemplateKwargs: the template variables runnel knows (enable_thinking), as
// `runnel serve`'s chat_template_kwargs; any other key is refused by name rather than
// dropped (it would change the prompt the caller asked for).
ChatOptions chat_options(const json& r) {
  const auto it = r.find("chatTemplateKwargs");
  if (it == r.end() || it->is_null()) return {};
  if (!it->is_object()) throw std::invalid_argument("chatTemplateKwargs must be an object, got " + it->dump());
  ChatOptions options;
  for (const auto& [key, value] : it->items()) {
    if (key != "enable_thinking") {
      throw std::invalid_argument("chatTemplateKwargs." + key + " is not supported (supported: enable_thinking)");
    }
    if (!value.is_boolean()) {
      throw std::invalid_argument("chatTemplateKwargs.enable_thinking must be a boolean, got " + value.dump());
    }
    options.enable_thinking = value.get<bool>();
  }
  return options;
}

// The prompt of a generate request: {"tokens": [...]}, {"text": ..., "parseSpecial"}
// or {"messages": [...], "chatTemplateKwargs"} (rendered with the chat template).
PromptInput prompt_input(const json& r) {
  if (r.contains("chatTemplateKwargs") && !r.contains("messages")) {
    throw std::invalid_argument("chatTemplateKwargs: only with chat messages");
  }
  if (r.contains("tokens")) return PromptInput::from_tokens(r["tokens"].get<std::vector<TokenId>>());
  if (r.contains("messages")) {
    PromptInput input = PromptInput::from_messages(parse_messages(r["messages"]));
    input.chat_options = chat_options(r);
    return input;
  }
  if (r.contains("text") && r["text"].is_string()) {
    return PromptInput::from_text(r["text"].get<std::string>(), r.value("parseSpecial", true));
  }
  throw std::invalid_argument("a prompt needs text, tokens or messages");
}

// params.grammar (GBNF text) or params.jsonSchema (a schema object, or its JSON text):
// the output constraint, compiled once for the request; null without one.
std::shared_ptr<const Grammar> output_grammar(const Engine& engine, const json& p) {
  const auto grammar = p.find("grammar");
  const auto schema = p.find("jsonSchema");
  const bool has_grammar = grammar != p.end() && !grammar->is_null();
  const bool has_schema = schema != p.end() && !schema->is_null();
  if (has_grammar && has_schema) {
    throw RequestError("grammar and jsonSchema each constrain the output: give at most one of them", "grammar");
  }
  if (has_grammar) {
    if (!grammar->is_string()) throw RequestError("grammar must be a string (a GBNF grammar)", "grammar");
    return compile_grammar(engine, grammar->get<std::string>(), "grammar");
  }
  if (has_schema) {
    return compile_json_schema(engine, schema->is_string() ? schema->get<std::string>() : schema->dump(),
                               "jsonSchema");
  }
  return nullptr;
}

// params.stop: a string or an array of strings.
std::vector<std::string> stop_strings(const json& p) {
  const auto it = p.find("stop");
  if (it == p.end() || it->is_null()) return {};
  if (it->is_string()) return {it->get<std::string>()};
  if (!it->is_array()) throw std::invalid_argument("stop must be a string or an array of strings, got " + it->dump());
  std::vector<std::string> out;
  for (const json& s : *it) {
    if (!s.is_string()) throw std::invalid_argument("stop must be a string or an array of strings, got " + it->dump());
    out.push_back(s.get<std::string>());
  }
  return out;
}

// params.logprobs (true: each token's log probability) and params.topLogprobs (0-20
// alternatives, only with logprobs), as the server's chat fields: RequestOptions::logprobs.
int logprobs_option(const json& p) {
  const auto lp = p.find("logprobs");
  const auto top = p.find("topLogprobs");
  const bool on = lp != p.end() && !lp->is_null() && lp->get<bool>();
  if (top == p.end() || top->is_null()) return on ? 0 : -1;
  if (!top->is_number_integer() || top->get<int64_t>() < 0 || top->get<int64_t>() > kMaxTopLogprobs) {
    throw RequestError("topLogprobs must be an integer in [0, " + std::to_string(kMaxTopLogprobs) + "], got " +
                           top->dump(),
                       "topLogprobs");
  }
  if (!on) throw RequestError("topLogprobs needs logprobs: true", "topLogprobs");
  return static_cast<int>(top->get<int64_t>());
}

// The tokens' log probabilities as session.lastLogprobs: the server's entries with the
// token ids added, [{id, token, logprob, bytes, topLogprobs: [{id, token, logprob, bytes}]}].
json logprobs_json(const SessionSlot& slot, const LoadedModel& m) {
  json entries = chat_logprobs_json(m.engine->tokenizer(), slot.logprobs);
  for (size_t i = 0; i < entries.size(); ++i) {
    json& e = entries[i];
    const StepLogprobs& lp = slot.logprobs[i];
    e["id"] = lp.chosen.id;
    e["topLogprobs"] = std::move(e["top_logprobs"]);
    e.erase("top_logprobs");
    for (size_t k = 0; k < lp.top.size(); ++k) e["topLogprobs"][k]["id"] = lp.top[k].id;
  }
  return entries;
}

// The share of picked experts found in the cache since `start` (0 without a cache).
double expert_hit_rate(const ExpertCacheStats& now, const ExpertCacheStats& start) {
  const uint64_t hits = now.hits - start.hits, picks = hits + now.misses - start.misses;
  return picks > 0 ? static_cast<double>(hits) / static_cast<double>(picks) : 0.0;
}

json stats_json(const RequestRun& run, const SessionSlot& slot, const LoadedModel& m) {
  const GenerationStats& st = run.stats();
  return {{"promptTokens", st.n_prompt},
          {"generatedTokens", st.n_generated},
          {"promptMs", st.prompt_ms},
          {"generateMs", st.gen_ms},
          {"promptTokensPerSecond", st.prompt_tokens_per_s()},
          {"generateTokensPerSecond", st.gen_tokens_per_s()},
          {"finishReason", finish_reason_name(run.finish_reason())},
          {"cachedTokens", run.n_cached()},
          {"bytesRead", m.store->bytes_read() - slot.bytes_read_at_start},
          {"weightsResidentBytes", m.store->resident_bytes()},
          {"expertHitRate", expert_hit_rate(m.store->expert_stats(), slot.experts_at_start)},
          {"draftTokens", st.n_drafted},
          {"draftTokensAccepted", st.n_draft_accepted}};
}

}  // namespace
}  // namespace runnel::wasm

using namespace runnel;
using namespace runnel::wasm;

extern "C" {

EMSCRIPTEN_KEEPALIVE const char* rn_last_error() { return g_error.c_str(); }

// Picks the kernel table ("" = best; "ref" forces the scalar one). 1 on success.
EMSCRIPTEN_KEEPALIVE int rn_select_isa(const char* isa) {
  if (select_kernels(isa)) return 1;
  g_error = std::string("unknown ISA '") + isa +
            "' (this build has: simd128-relaxed where the engine runs relaxed SIMD, simd128, ref)";
  return 0;
}

// {"files": [{"source", "size", "name"}], "contextSize", "memoryBudget", "threads",
//  "kvType", "batchSize", "keep", "allLogits", "draftMax"} -> model handle, or 0.
EMSCRIPTEN_KEEPALIVE int rn_model_load(const char* request_json) {
  return guarded(0, [&] {
    const json r = json::parse(request_json);
    std::vector<JsFile> files;
    for (const json& f : r.at("files")) {
      files.emplace_back(f.at("source").get<int>(), f.at("size").get<uint64_t>(), f.at("name").get<std::string>());
    }
    if (files.empty()) throw std::invalid_argument("no model file given");
    auto model = std::make_unique<LoadedModel>();
    std::unique_ptr<JsStore> store = JsStore::open(std::move(files));

    EngineOptions eo;
    eo.n_ctx = field<int>(r, "contextSize", 0);
    eo.n_batch = field<int>(r, "batchSize", 64);
    eo.n_keep = field<int>(r, "keep", -1);
    eo.all_logits = r.value("allLogits", false);
    eo.n_draft = field<int>(r, "draftMax", std::min(8, eo.n_batch - 1));
    if (eo.n_ctx < 0) throw std::invalid_argument("contextSize must be >= 0, got " + std::to_string(eo.n_ctx));
    if (eo.n_batch < 1) throw std::invalid_argument("batchSize must be >= 1, got " + std::to_string(eo.n_batch));
    eo.kv_type = parse_kv_type(r.value("kvType", std::string("f16")));
    const int threads = field<int>(r, "threads", 1);
    if (threads < 1 || threads > 64) throw std::invalid_argument("threads must be in [1, 64], got " + std::to_string(threads));
#if defined(__EMSCRIPTEN_PTHREADS__)
    model->n_threads = threads;
    eo.parallel = std::make_shared<ThreadPool>(threads);
#else
    model->n_threads = 1;  // this build has no threads; the JS side reports why
    eo.parallel = std::make_shared<InlineParallel>();
#endif

    // The memory plan decides between loading whole and streaming layers.
    const ModelConfig config = ModelConfig::from_model(store->model());
    MemoryPlanOptions po;
    po.n_ctx = eo.n_ctx > 0 ? eo.n_ctx : config.default_n_ctx();
    po.n_batch = eo.n_batch;
    po.kv_type = eo.kv_type;
    po.all_logits = eo.all_logits;
    po.n_draft = eo.n_draft;
    po.n_tasks = model->n_threads == 1 ? 1 : model->n_threads * kTasksPerThread;
    model->plan = plan_memory(store->model(), config, po);
    // wasm32 addresses 4 GiB; keep room for the JS side and the allocator.
    constexpr uint64_t kWasmLimit = uint64_t{3584} << 20;
    const double budget_in = field<double>(r, "memoryBudget", 0);
    if (budget_in < 0) throw std::invalid_argument("memoryBudget must be >= 0 bytes");
    const uint64_t budget = budget_in > 0 ? std::min<uint64_t>(static_cast<uint64_t>(budget_in), kWasmLimit) : kWasmLimit;
    const MemoryPlan& plan = model->plan;
    // Progress counts bytes read; the plan's weights_bytes also counts the repacked
    // layouts' extra bytes.
    for (const GgufTensorInfo& t : store->model().tensors) model->file_weight_bytes += t.n_bytes;
    const uint64_t total = model->file_weight_bytes;
    store->on_load_progress([total](uint64_t done) {
      runnel_js_load_progress(static_cast<double>(done), static_cast<double>(total));
    });
    switch (plan.fit(budget)) {
      case MemoryPlan::Fit::Resident:
        store->load_weights(0);
        break;
      case MemoryPlan::Fit::Experts:
        store->load_weights_streaming_experts(plan.expert_cache_bytes(budget), plan.min_expert_slots);
        break;
      case MemoryPlan::Fit::Streaming:
        store->load_weights(plan.layer_budget(budget));
        break;
      case MemoryPlan::Fit::DoesNotFit:
        throw std::invalid_argument("the model does not fit memoryBudget " + format_bytes(budget) + ": " +
                                    format_bytes(plan.streaming_bytes()) + " needed even when streaming (kv cache " +
                                    format_bytes(plan.kv_bytes) + "); lower contextSize or use kvType q8_0");
    }
    model->store = store.get();
    model->engine = Engine::load(std::move(store), eo);
    model->store->on_load_progress(nullptr);
    model->format = std::make_unique<PromptFormat>(*model->engine);
    const int handle = g_next_handle++;
    g_models[handle] = std::move(model);
    return handle;
  });
}

EMSCRIPTEN_KEEPALIVE const char* rn_model_info(int model) {
  return guarded<const char*>(nullptr, [&] { return answer(model_info(model_of(model)).dump()); });
}

EMSCRIPTEN_KEEPALIVE void rn_model_free(int model) {
  for (auto it = g_sessions.begin(); it != g_sessions.end();) {
    it = it->second->model == model ? g_sessions.erase(it) : std::next(it);
  }
  g_models.erase(model);
}

EMSCRIPTEN_KEEPALIVE const char* rn_tokenize(int model, const char* text, int add_special, int parse_special) {
  return guarded<const char*>(nullptr, [&] {
    const json ids = model_of(model).engine->tokenizer().encode(text, add_special != 0, parse_special != 0);
    return answer(ids.dump());
  });
}

EMSCRIPTEN_KEEPALIVE const char* rn_detokenize(int model, const char* ids_json, int special) {
  return guarded<const char*>(nullptr, [&] {
    const LoadedModel& m = model_of(model);
    const std::vector<TokenId> ids = json::parse(ids_json).get<std::vector<TokenId>>();
    for (const TokenId id : ids) {
      if (id < 0 || id >= m.engine->config().n_vocab) {
        throw std::invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary");
      }
    }
    return answer(json(m.engine->tokenizer().decode(ids, special != 0)).dump());
  });
}

// {"messages": [...], "chatTemplateKwargs"} -> the rendered prompt (a JSON string).
EMSCRIPTEN_KEEPALIVE const char* rn_apply_chat(int model, const char* request_json) {
  return guarded<const char*>(nullptr, [&] {
    const LoadedModel& m = model_of(model);
    const json r = json::parse(request_json);
    return answer(json(m.format->render(parse_messages(r.at("messages")), chat_options(r))).dump());
  });
}

// ["text", ...] -> {"embeddings": [[n_embd floats], ...], "promptTokens": n}, or null.
// As `runnel serve`'s /v1/embeddings: each text is tokenized with BOS as the model
// wants and no special-token parsing, must fit the context, and becomes the mean of
// its final-norm hidden states, L2-normalized (Session::embed).
EMSCRIPTEN_KEEPALIVE const char* rn_embed(int model, const char* texts_json) {
  return guarded<const char*>(nullptr, [&] {
    LoadedModel& m = model_of(model);
    const json texts = json::parse(texts_json);
    if (!texts.is_array() || texts.empty()) throw std::invalid_argument("embed needs a text or a non-empty array of texts");
    std::vector<std::string> strings;
    for (size_t i = 0; i < texts.size(); ++i) {
      if (!texts[i].is_string()) throw std::invalid_argument("input[" + std::to_string(i) + "] must be a string, got " + texts[i].dump());
      if (texts[i].get_ref<const std::string&>().empty()) throw std::invalid_argument("input[" + std::to_string(i) + "] is empty");
      strings.push_back(texts[i].get<std::string>());
    }
    const std::vector<std::vector<TokenId>> inputs = embedding_inputs(*m.engine, strings);
    int n_longest = 0, n_tokens = 0;
    for (const std::vector<TokenId>& input : inputs) {
      n_longest = std::max(n_longest, static_cast<int>(input.size()));
      n_tokens += static_cast<int>(input.size());
    }
    if (!m.embed_session || m.embed_session->n_ctx() < n_longest) {
      m.embed_session.reset();  // free the smaller one first
      m.embed_session = m.engine->new_session(std::min(m.engine->n_ctx(), std::max(n_longest, 256)));
    }
    json embeddings = json::array();
    for (const std::vector<TokenId>& tokens : inputs) embeddings.push_back(m.embed_session->embed(tokens));
    return answer(json{{"embeddings", std::move(embeddings)}, {"promptTokens", n_tokens}}.dump());
  });
}

EMSCRIPTEN_KEEPALIVE int rn_session_new(int model, int n_ctx) {
  return guarded(0, [&] {
    LoadedModel& m = model_of(model);
    auto slot = std::make_unique<SessionSlot>();
    slot->model = model;
    slot->session = m.engine->new_session(n_ctx);
    const int handle = g_next_handle++;
    g_sessions[handle] = std::move(slot);
    return handle;
  });
}

EMSCRIPTEN_KEEPALIVE void rn_session_free(int session) { g_sessions.erase(session); }

// {"text" | "tokens" | "messages" (+ "chatTemplateKwargs"), "params": {...}} -> 1, or 0.
// The prompt is the whole context: the longest prefix already in the session's cache is
// reused.
EMSCRIPTEN_KEEPALIVE int rn_generate_start(int session, const char* request_json) {
  return guarded(0, [&] {
    SessionSlot& slot = session_of(session);
    LoadedModel& m = model_of(slot.model);
    slot.run.reset();
    const json r = json::parse(request_json);
    const json params = r.value("params", json::object());
    RequestOptions options;
    options.max_tokens = field<int>(params, "maxTokens", 256);
    options.sampler = sampler_params(params, m.engine->config().n_vocab);
    options.stop = stop_strings(params);
    options.grammar = output_grammar(*m.engine, params);
    options.logprobs = logprobs_option(params);
    options.lookup_ngram = field<int>(params, "lookupNgram", 0);
    if (options.lookup_ngram < 0 || options.lookup_ngram > 16) {
      throw RequestError("lookupNgram must be in [0, 16] (0: off), got " + std::to_string(options.lookup_ngram),
                         "lookupNgram");
    }
    std::vector<TokenId> prompt;
    slot.chat_syntax.reset();
    slot.text.clear();
    slot.logprobs.clear();
    slot.logprobs_on = options.logprobs >= 0;
    const bool has_tools = params.contains("tools") || params.contains("toolChoice");
    if (r.contains("messages")) {
      ChatToolOptions tools = tool_options(params);
      tools.id_seed = std::random_device{}();
      tools.id_seed = tools.id_seed << 32 | std::random_device{}();
      ChatTurn turn = prepare_chat_turn(*m.engine, *m.format, parse_messages(r["messages"]), chat_options(r), tools);
      if (turn.grammar && options.grammar) {
        throw RequestError("grammar / jsonSchema cannot be combined with tool calls that need a grammar (toolChoice "
                           "required or a tool's name, or a template without a native call format)",
                           "grammar");
      }
      if (turn.grammar) options.grammar = std::move(turn.grammar);
      prompt = std::move(turn.prompt);
      slot.chat_syntax = turn.syntax;
    } else {
      if (has_tools) throw RequestError("tools: only for chat(messages)", "tools");
      prompt = m.format->tokens(prompt_input(r));
    }
    slot.bytes_read_at_start = m.store->bytes_read();
    slot.experts_at_start = m.store->expert_stats();
    slot.run = std::make_unique<RequestRun>(*slot.session, prompt, options);
    return 1;
  });
}

// -> {"piece": "...", "done": bool, "stats": {...} (when done)}, or null on error.
EMSCRIPTEN_KEEPALIVE const char* rn_generate_step(int session) {
  return guarded<const char*>(nullptr, [&] {
    SessionSlot& slot = session_of(session);
    if (!slot.run) throw std::invalid_argument("no generation in progress");
    std::string piece;
    const bool more = slot.run->next(piece);
    slot.text += piece;
    for (StepLogprobs& lp : slot.run->take_logprobs()) slot.logprobs.push_back(std::move(lp));
    json out = {{"piece", piece}, {"done", !more}};
    if (!more) {
      out["stats"] = stats_json(*slot.run, slot, model_of(slot.model));
      if (slot.chat_syntax) out["stats"]["reply"] = reply_json(slot);
      if (slot.logprobs_on) out["stats"]["logprobs"] = logprobs_json(slot, model_of(slot.model));
      slot.run.reset();
    }
    return answer(out.dump(-1, ' ', false, json::error_handler_t::replace));
  });
}

// Ends the generation now: -> {"piece": pending text, "done": true, "stats"}.
EMSCRIPTEN_KEEPALIVE const char* rn_generate_stop(int session) {
  return guarded<const char*>(nullptr, [&] {
    SessionSlot& slot = session_of(session);
    if (!slot.run) throw std::invalid_argument("no generation in progress");
    json out = {{"piece", slot.run->stop(FinishReason::Aborted)}, {"done", true}};
    slot.text += out["piece"].get<std::string>();
    for (StepLogprobs& lp : slot.run->take_logprobs()) slot.logprobs.push_back(std::move(lp));
    out["stats"] = stats_json(*slot.run, slot, model_of(slot.model));
    if (slot.chat_syntax) out["stats"]["reply"] = reply_json(slot);
    if (slot.logprobs_on) out["stats"]["logprobs"] = logprobs_json(slot, model_of(slot.model));
    slot.run.reset();
    return answer(out.dump(-1, ' ', false, json::error_handler_t::replace));
  });
}

// {"text" | "tokens" | "messages"} -> {"nTokens", "nVocab", "offset"}, or null: the
// prompt evaluated as the whole context (the session's history is cleared first), in
// the prompt's own batches as `runnel run --all-logits` does; the logits at every
// position, [nTokens, nVocab] floats (row i predicts the token after token i), start at
// byte `offset` of wasm memory and stay there until the next call. Needs a model
// loaded with "allLogits".
EMSCRIPTEN_KEEPALIVE const char* rn_eval_logits(int session, const char* request_json) {
  return guarded<const char*>(nullptr, [&] {
    SessionSlot& slot = session_of(session);
    LoadedModel& m = model_of(slot.model);
    if (!m.engine->options().all_logits) {
      throw std::invalid_argument("evalLogits needs a model loaded with allLogits: true");
    }
    const std::vector<TokenId> prompt = m.format->tokens(prompt_input(json::parse(request_json)));
    slot.run.reset();
    slot.session->reset();
    g_logits.clear();  // free the last answer before the next one is made
    g_logits = slot.session->eval_all(prompt);
    return answer(json{{"nTokens", prompt.size()},
                       {"nVocab", m.engine->config().n_vocab},
                       {"offset", reinterpret_cast<uintptr_t>(g_logits.data())}}
                      .dump());
  });
}

// The session's tokens (history) as a JSON array.
EMSCRIPTEN_KEEPALIVE const char* rn_session_tokens(int session) {
  return guarded<const char*>(nullptr, [&] { return answer(json(session_of(session).session->tokens()).dump()); });
}

}  // extern "C"
