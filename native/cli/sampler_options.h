// The sampling flags `run` and `chat` share (--temp, --top-k, --top-p, --min-p, --seed,
// --repeat-penalty), declared once so both commands word and check them alike.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/chat/chat_template.h"
#include "core/runtime/engine.h"
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

// --grammar TEXT, --grammar-file FILE, --json-schema JSON|@FILE: the output constraint
// `run` and `chat` share (at most one of them).
struct GrammarOptions {
  std::string grammar, grammar_file, json_schema;
};
void add_grammar_options(ArgParser& parser, GrammarOptions* options);
// Throws UsageError naming the flags when more than one is given, or one is empty.
void check_grammar_options(const ArgParser& parser, const GrammarOptions& options);
// The compiled constraint (null without one of the flags). Throws UsageError naming the
// flag: an unreadable file, a malformed grammar ("--grammar: line 1, column 9: ..."),
// a schema that is not JSON or that the converter refuses.
std::shared_ptr<const Grammar> load_grammar(const Engine& engine, const GrammarOptions& options);

}  // namespace runnel::cli
