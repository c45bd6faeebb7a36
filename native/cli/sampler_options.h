// The sampling flags `run` and `chat` share (--temp, --top-k, --top-p, --min-p, --seed,
// --repeat-penalty), declared once so both commands word and check them alike.
#pragma once

#include <cstdint>

#include <string>

#include "core/chat/chat_template.h"
#include "core/sampling/sampler.h"
#include "native/cli/args.h"

namespace runnel::cli {

// Declares the flags, in this order, writing into `sampler`.
void add_sampler_options(ArgParser& parser, SamplerParams* sampler);
// Throws UsageError naming the flag whose value is out of range.
void check_sampler_options(const SamplerParams& sampler);
// --seed's default (llama.cpp's LLAMA_DEFAULT_SEED, 4294967295) becomes a random seed;
// any other value is kept. Commands print the seed they used.
uint64_t resolve_seed(uint64_t seed);

// --chat-template-kwargs JSON (llama.cpp's flag, llama-server's chat_template_kwargs):
// the template variables a chat prompt is rendered with, e.g. {"enable_thinking":
// false}. Throws UsageError naming what is wrong (bad JSON, an unknown key).
ChatOptions parse_chat_template_kwargs(const std::string& text);

}  // namespace runnel::cli
