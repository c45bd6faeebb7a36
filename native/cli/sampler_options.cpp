// The sampling flags of `run` and `chat` (sampler_options.h).
#include "native/cli/sampler_options.h"

#include <fstream>
#include <random>
#include <sstream>

#include "core/runtime/request.h"

#include "native/server/api.h"

namespace runnel::cli {
namespace {

// llama.cpp's LLAMA_DEFAULT_SEED: no --seed given, pick one at random.
constexpr uint64_t kRandomSeed = 0xFFFFFFFFu;

std::string read_file(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(flag + ": cannot read '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

void add_sampler_options(ArgParser& p, SamplerParams* s) {
  p.float_option("--temp", &s->temperature, "temperature (default 0.8; 0 = greedy)");
  p.int_option("--top-k", &s->top_k, "top-k sampling (default 40; 0 = off)");
  p.float_option("--top-p", &s->top_p, "top-p sampling (default 0.95; 1 = off)");
  p.float_option("--min-p", &s->min_p, "min-p sampling (default 0.05; 0 = off)");
  p.u64_option(
      "--seed", &s->seed,
      "random seed (default: a random one, printed with the figures; 4294967295 = random)");
  p.float_option("--repeat-penalty", &s->repeat_penalty,
                 "penalty for repeating recent tokens (default 1.0 = off)");
}

void check_sampler_options(const SamplerParams& s) {
  if (s.temperature < 0) throw UsageError("--temp: must be >= 0");
  if (s.top_k < 0) throw UsageError("--top-k: must be >= 0");
  if (!(s.top_p > 0 && s.top_p <= 1)) throw UsageError("--top-p: must be in (0, 1]");
  if (!(s.min_p >= 0 && s.min_p <= 1)) throw UsageError("--min-p: must be in [0, 1]");
  if (!(s.repeat_penalty > 0)) throw UsageError("--repeat-penalty: must be > 0");
}

uint64_t resolve_seed(uint64_t seed) {
  return seed == kRandomSeed ? std::random_device{}() : seed;
}

ChatOptions parse_chat_template_kwargs(const std::string& text) {
  const nlohmann::json kwargs = nlohmann::json::parse(text, nullptr, false);
  if (kwargs.is_discarded()) throw UsageError("--chat-template-kwargs: not valid JSON: " + text);
  try {
    return server::chat_options_from_json(kwargs, "--chat-template-kwargs");
  } catch (const server::ApiError& e) {
    throw UsageError(e.what());
  }
}

void add_grammar_options(ArgParser& p, GrammarOptions* o) {
  p.string_option("--grammar", &o->grammar, "TEXT",
                  "constrain the output to a GBNF grammar (llama.cpp's syntax; the start rule is root),\n"
                  "e.g. 'root ::= (\"yes\" | \"no\")'");
  p.string_option("--grammar-file", &o->grammar_file, "FILE", "read the GBNF grammar from FILE");
  p.string_option("--json-schema", &o->json_schema, "JSON",
                  "constrain the output to JSON valid under a JSON schema; @FILE reads it from FILE,\n"
                  "'{}' allows any JSON value");
}

void check_grammar_options(const ArgParser& p, const GrammarOptions& o) {
  std::string given;
  int n = 0;
  for (const auto& [flag, value] : {std::pair<const char*, const std::string*>{"--grammar", &o.grammar},
                                    {"--grammar-file", &o.grammar_file},
                                    {"--json-schema", &o.json_schema}}) {
    if (!p.seen(flag)) continue;
    if (value->empty()) throw UsageError(std::string(flag) + ": must not be empty");
    given += (n++ == 0 ? "" : " and ") + std::string(flag);
  }
  if (n > 1) throw UsageError(given + ": give at most one of them");
}

std::shared_ptr<const Grammar> load_grammar(const Engine& engine, const GrammarOptions& o) {
  try {
    if (!o.grammar.empty()) return compile_grammar(engine, o.grammar, "--grammar");
    if (!o.grammar_file.empty()) {
      return compile_grammar(engine, read_file("--grammar-file", o.grammar_file),
                             "--grammar-file " + o.grammar_file);
    }
    if (!o.json_schema.empty()) {
      const bool from_file = o.json_schema[0] == '@';
      const std::string text = from_file ? read_file("--json-schema", o.json_schema.substr(1)) : o.json_schema;
      return compile_json_schema(engine, text, from_file ? "--json-schema " + o.json_schema : "--json-schema");
    }
  } catch (const RequestError& e) {
    throw UsageError(e.what());
  }
  return nullptr;
}

}  // namespace runnel::cli
