// The sampling flags of `run` and `chat` (sampler_options.h).
#include "native/cli/sampler_options.h"

#include <random>

#include "native/server/api.h"

namespace runnel::cli {
namespace {

// llama.cpp's LLAMA_DEFAULT_SEED: no --seed given, pick one at random.
constexpr uint64_t kRandomSeed = 0xFFFFFFFFu;

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

}  // namespace runnel::cli
