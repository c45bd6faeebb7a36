// Pre-tokenizer selection by tokenizer.ggml.pre and the split driver.
#include "core/tokenizer/pretokenize.h"

#include "core/tokenizer/utf8.h"

namespace runnel {
namespace {

using namespace split;

// The regex lists, as llama.cpp's llm_tokenizer_bpe assigns them per pre type.
constexpr SplitMatcher kGpt2[] = {gpt2};
constexpr SplitMatcher kLlama3[] = {llama3};
constexpr SplitMatcher kQwen2[] = {qwen2};
constexpr SplitMatcher kSeedCoder[] = {seed_coder};
constexpr SplitMatcher kGpt4o[] = {gpt4o};
constexpr SplitMatcher kTekken[] = {tekken};
constexpr SplitMatcher kDefault[] = {punct_run, gpt2, number_run, ascii_digits_3};
constexpr SplitMatcher kFalcon[] = {punct_run_falcon, gpt2, ascii_digits_3};
constexpr SplitMatcher kStarcoder[] = {number_single, gpt2};
constexpr SplitMatcher kDeepseekLlm[] = {newline,        cased_letters, wide_punct,
                                         trailing_space, cjk_hangul,    number_run};
constexpr SplitMatcher kDeepseekCoder[] = {newline, space_letters, space_punct, cjk_hangul,
                                           number_single};
constexpr SplitMatcher kDeepseekV3[] = {number_up_to_3, cjk_kana, deepseek_v3_words};
constexpr SplitMatcher kPoro[] = {poro};
constexpr SplitMatcher kViking[] = {poro, number_single};
constexpr SplitMatcher kChameleon[] = {chameleon_sentinel, chameleon_image, chameleon_spaces,
                                       number_single,      chameleon_punct, gpt2};
constexpr SplitMatcher kSuperBpe[] = {number_run, digit_groups};

struct NamedPre {
  std::string_view name;
  std::span<const SplitMatcher> steps;
  bool ignore_merges, clean_spaces, add_bos, no_bos;
};

// Every name llama.cpp accepts for these regex lists, with the flags it sets.
//                                            ignore clean  add    no
//                                            merges spaces bos    bos
constexpr NamedPre kPreTokenizers[] = {
    {"default", kDefault, false, true, false, false},
    {"llama3", kLlama3, true, true, true, false},
    {"llama-v3", kLlama3, true, true, true, false},
    {"llama-bpe", kLlama3, true, true, true, false},
    {"falcon3", kLlama3, true, true, true, false},
    {"falcon-h1", kLlama3, true, true, true, false},
    {"pixtral", kLlama3, true, true, true, false},
    {"midm-2.0", kLlama3, true, true, true, false},
    {"lfm2", kLlama3, true, true, true, false},
    {"jina-v5-nano", kLlama3, true, true, true, false},
    {"dbrx", kLlama3, false, true, false, false},
    {"smaug-bpe", kLlama3, false, true, false, false},
    {"chatglm-bpe", kLlama3, false, true, false, true},
    {"glm4", kLlama3, false, true, false, true},
    {"deepseek-llm", kDeepseekLlm, false, false, false, false},
    {"deepseek-coder", kDeepseekCoder, false, false, false, false},
    {"deepseek-v3", kDeepseekV3, false, false, false, false},
    {"hunyuan-dense", kDeepseekV3, false, false, false, false},
    {"joyai-llm", kDeepseekV3, false, false, false, false},
    {"falcon", kFalcon, false, true, false, false},
    {"mpt", kGpt2, false, true, false, false},
    {"gpt-2", kGpt2, false, true, false, false},
    {"phi-2", kGpt2, false, true, false, false},
    {"jina-es", kGpt2, false, true, false, false},
    {"jina-de", kGpt2, false, true, false, false},
    {"gigachat", kGpt2, false, true, false, false},
    {"jina-v1-en", kGpt2, false, true, false, false},
    {"jina-v2-es", kGpt2, false, true, false, false},
    {"jina-v2-de", kGpt2, false, true, false, false},
    {"jina-v2-code", kGpt2, false, true, false, false},
    {"roberta-bpe", kGpt2, false, true, false, false},
    {"a.x-4.0", kGpt2, false, true, false, false},
    {"mellum", kGpt2, false, true, false, false},
    {"modern-bert", kGpt2, false, true, false, false},
    {"olmo", kGpt2, false, true, false, false},
    {"jais", kGpt2, false, true, false, false},
    {"exaone4", kGpt2, false, true, false, false},
    {"trillion", kGpt2, false, false, false, false},
    {"granite-docling", kGpt2, false, false, false, false},
    {"starcoder", kStarcoder, false, true, false, false},
    {"refact", kStarcoder, false, true, false, false},
    {"command-r", kStarcoder, false, false, false, false},
    {"smollm", kStarcoder, false, false, false, false},
    {"codeshell", kStarcoder, false, true, false, false},
    {"exaone", kStarcoder, false, true, false, false},
    {"minerva-7b", kStarcoder, false, true, false, false},
    {"mellum2", kStarcoder, false, true, false, false},
    {"qwen2", kQwen2, false, false, false, false},
    {"deepseek-r1-qwen", kQwen2, false, false, false, false},
    {"kormo", kQwen2, false, false, false, false},
    {"f2llmv2", kQwen2, false, false, false, false},
    {"megrez", kQwen2, false, true, false, false},
    {"stablelm2", kQwen2, false, true, false, false},
    {"hunyuan", kQwen2, false, false, false, false},
    {"solar-open", kQwen2, false, false, false, false},
    {"grok-2", kQwen2, false, false, false, false},
    {"bailingmoe", kQwen2, false, false, false, false},
    {"bailingmoe2", kQwen2, false, false, false, false},
    {"llada-moe", kQwen2, false, false, false, false},
    {"seed-coder", kSeedCoder, false, false, false, false},
    {"poro-chat", kPoro, false, false, false, false},
    {"bloom", kPoro, false, true, false, false},
    {"gpt3-finnish", kPoro, false, true, false, false},
    {"viking", kViking, false, false, false, false},
    {"tekken", kTekken, true, false, true, false},
    {"gpt-4o", kGpt4o, false, false, false, false},
    {"llama4", kGpt4o, false, false, false, false},
    {"kanana2", kGpt4o, false, false, false, false},
    {"talkie", kGpt4o, false, false, false, false},
    {"minimax-m2", kGpt4o, false, false, false, false},
    {"chameleon", kChameleon, false, false, true, false},
    {"superbpe", kSuperBpe, false, false, false, false},
};

// Refines `pieces` (lengths in code points, in text order) with one matcher: in
// each piece, matches and the gaps between them become pieces, as
// std::regex_iterator walks a piece in llama.cpp. Empty pieces are dropped: they
// cannot produce tokens.
std::vector<size_t> apply_step(const std::vector<uint32_t>& cpts,
                               const std::vector<CodepointFlags>& flags,
                               const std::vector<size_t>& pieces, SplitMatcher match) {
  std::vector<size_t> out;
  out.reserve(pieces.size() * 2);
  size_t begin = 0;
  for (size_t len : pieces) {
    const FragmentView view{cpts.data(), flags.data(), begin, begin + len};
    size_t gap = begin, pos = begin;
    while (pos < view.end) {
      const size_t m = match(view, pos);
      if (m == kNoMatch) {
        ++pos;
        continue;
      }
      if (pos > gap) out.push_back(pos - gap);
      if (m > 0) out.push_back(m);
      gap = pos + m;
      pos = m > 0 ? gap : pos + 1;  // after an empty match the search moves on
    }
    if (gap < view.end) out.push_back(view.end - gap);
    begin += len;
  }
  return out;
}

}  // namespace

std::optional<PreTokenizerSpec> find_pre_tokenizer(std::string_view name) {
  for (const NamedPre& p : kPreTokenizers) {
    if (p.name == name) {
      return PreTokenizerSpec{p.steps, p.ignore_merges, p.clean_spaces, p.add_bos, p.no_bos};
    }
  }
  return std::nullopt;
}

std::vector<std::string> pre_tokenize(std::string_view text, std::span<const SplitMatcher> steps) {
  const std::vector<uint32_t> cpts = utf8_to_codepoints(text);
  std::vector<CodepointFlags> flags(cpts.size());
  for (size_t i = 0; i < cpts.size(); ++i) flags[i] = unicode_flags(cpts[i]);

  std::vector<size_t> pieces;
  if (!cpts.empty()) pieces.push_back(cpts.size());
  for (SplitMatcher step : steps) pieces = apply_step(cpts, flags, pieces, step);

  std::vector<std::string> words;
  words.reserve(pieces.size());
  size_t begin = 0;
  for (size_t len : pieces) {
    std::string& w = words.emplace_back();
    for (size_t i = begin; i < begin + len; ++i) append_utf8(w, cpts[i]);
    begin += len;
  }
  return words;
}

}  // namespace runnel
