// Pre-tokenization for byte-level BPE: the text is cut into words by the regex
// list that tokenizer.ggml.pre names, before BPE merges run inside each word.
//
// The regexes are never compiled: each distinct one is a hand-written matcher
// (pretokenize_matchers.cpp) that returns the match a backtracking (ECMAScript)
// engine would find at a position, in the code point classes llama.cpp uses.
// A list applies its regexes one after another, each refining the previous cut:
// inside every piece, matches and the unmatched gaps between them become pieces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenizer/unicode.h"

namespace runnel {

// One piece of text being split: code points [begin, end) of the whole text's
// `cpts` / `flags` arrays. Positions outside it read as "no code point", which is
// how lookaheads and end anchors see the piece's edges.
struct FragmentView {
  static constexpr uint32_t kNone = 0xFFFFFFFF;
  const uint32_t* cpts;
  const CodepointFlags* flags;
  size_t begin, end;
  // The run [memo_begin, memo_end) a lookahead-style matcher last measured, so
  // that asking again at each position inside it stays linear.
  mutable size_t memo_begin = 0, memo_end = 0;

  uint32_t cpt(size_t i) const { return i < end ? cpts[i] : kNone; }
  CodepointFlags flag(size_t i) const { return i < end ? flags[i] : CodepointFlags{}; }
};

// Length of the match starting exactly at `pos` (0 for an empty match, as a
// lookahead-only regex gives), or kNoMatch.
inline constexpr size_t kNoMatch = static_cast<size_t>(-1);
using SplitMatcher = size_t (*)(const FragmentView& view, size_t pos);

// What tokenizer.ggml.pre selects: the regex list and the vocabulary flags that
// llama.cpp ties to the same name.
struct PreTokenizerSpec {
  std::span<const SplitMatcher> steps;
  bool ignore_merges = false;  // a word that is a whole token skips the merges
  bool clean_spaces = true;    // decode() tidies " ," / " 's" like llama.cpp
  bool add_bos = false;        // default for tokenizer.ggml.add_bos_token
  bool no_bos = false;         // the model has no BOS unless the metadata names one
};

// nullopt for a name we do not know (the caller refuses it by name).
std::optional<PreTokenizerSpec> find_pre_tokenizer(std::string_view name);

// Cuts `text` into words (UTF-8, each non-empty) with `steps`. Bytes that are not
// valid UTF-8 come out as U+FFFD, as llama.cpp does.
std::vector<std::string> pre_tokenize(std::string_view text, std::span<const SplitMatcher> steps);

// The matchers, one per distinct regex (names say which).
namespace split {
size_t gpt2(const FragmentView& v, size_t pos);        // 's|'t|..| ?\p{L}+| ?\p{N}+|..
size_t llama3(const FragmentView& v, size_t pos);      // ..|\p{N}{1,3}|..
size_t qwen2(const FragmentView& v, size_t pos);       // llama3 with \p{N}
size_t seed_coder(const FragmentView& v, size_t pos);  // qwen2 without [\r\n]* tails
size_t gpt4o(const FragmentView& v, size_t pos);       // cased words + contractions
size_t tekken(const FragmentView& v, size_t pos);      // cased words, \p{N}
size_t deepseek_v3_words(const FragmentView& v, size_t pos);
size_t punct_run(const FragmentView& v, size_t pos);         // [\p{P}\$\+<=>\^~\|]+
size_t punct_run_falcon(const FragmentView& v, size_t pos);  // ... plus `
size_t number_run(const FragmentView& v, size_t pos);        // \p{N}+
size_t number_single(const FragmentView& v, size_t pos);     // \p{N}
size_t number_up_to_3(const FragmentView& v, size_t pos);    // \p{N}{1,3}
size_t ascii_digits_3(const FragmentView& v, size_t pos);    // [0-9][0-9][0-9]
size_t newline(const FragmentView& v, size_t pos);           // [\r\n]
size_t space_letters(const FragmentView& v, size_t pos);     // \s?\p{L}+
size_t space_punct(const FragmentView& v, size_t pos);       // \s?\p{P}+
size_t cjk_hangul(const FragmentView& v, size_t pos);        // [一-龥ࠀ-一가-퟿]+
size_t cjk_kana(const FragmentView& v, size_t pos);          // [一-龥぀-ゟ゠-ヿ]+
size_t cased_letters(const FragmentView& v, size_t pos);  // \s?[A-Za-zµÀ-Ö...]+ (deepseek-llm)
size_t wide_punct(const FragmentView& v, size_t pos);  // \s?[!-/:-~！-／：-～‘-‟　-。]+
size_t trailing_space(const FragmentView& v, size_t pos);  // \s+$
size_t poro(const FragmentView& v, size_t pos);            //  ?[^(\s|.,!?…。，、।۔،)]+
size_t chameleon_sentinel(const FragmentView& v, size_t pos);
size_t chameleon_image(const FragmentView& v, size_t pos);
size_t chameleon_spaces(const FragmentView& v, size_t pos);
size_t chameleon_punct(const FragmentView& v, size_t pos);
size_t digit_groups(const FragmentView& v, size_t pos);  // (?=(\d{3})+(?!\d))
}  // namespace split

}  // namespace runnel
