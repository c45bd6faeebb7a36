// Unicode character properties for the tokenizers: the \p{..} classes and \s of
// the pre-tokenizer regexes, lowercase, and canonical decomposition (NFD).
// Data: unicode_data.cpp (generated); lookups are binary searches with an ASCII
// fast path, so nothing is built at start-up and there is no global state.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tokenizer/unicode_data.h"

namespace runnel {

// A code point's class bits. The category bits are the one-letter general
// category (exactly one is set for every code point); whitespace is the separate
// Unicode White_Space property that regex \s means (\t\n\v\f\r, U+0085, U+00A0,
// U+1680, U+2000..U+200A, U+2028/9, U+202F, U+205F, U+3000).
struct CodepointFlags {
  static constexpr uint16_t kUndefined = 1 << 0;    // Cn, and anything above U+10FFFF
  static constexpr uint16_t kNumber = 1 << 1;       // N*
  static constexpr uint16_t kLetter = 1 << 2;       // L*
  static constexpr uint16_t kSeparator = 1 << 3;    // Z*
  static constexpr uint16_t kMark = 1 << 4;         // M*
  static constexpr uint16_t kPunctuation = 1 << 5;  // P*
  static constexpr uint16_t kSymbol = 1 << 6;       // S*
  static constexpr uint16_t kControl = 1 << 7;      // Cc, Cf, Co, Cs
  static constexpr uint16_t kWhitespace = 1 << 8;

  uint16_t bits = 0;  // 0 only for "no code point" (outside a fragment)

  bool is_undefined() const { return bits & kUndefined; }
  bool is_number() const { return bits & kNumber; }
  bool is_letter() const { return bits & kLetter; }
  bool is_separator() const { return bits & kSeparator; }
  bool is_mark() const { return bits & kMark; }
  bool is_punctuation() const { return bits & kPunctuation; }
  bool is_symbol() const { return bits & kSymbol; }
  bool is_control() const { return bits & kControl; }
  bool is_whitespace() const { return bits & kWhitespace; }
};

GeneralCategory unicode_category(uint32_t cpt);  // Cn above U+10FFFF
CodepointFlags unicode_flags(uint32_t cpt);
bool unicode_is_whitespace(uint32_t cpt);

// Simple (one-to-one) lowercase mapping; `cpt` itself when it has none.
uint32_t unicode_tolower(uint32_t cpt);

// Canonical combining class (0 for starters).
uint8_t unicode_combining_class(uint32_t cpt);

// Appends the full canonical decomposition of `cpt` (recursively expanded, Hangul
// syllables split algorithmically) to `out`; `cpt` itself when it has none.
void unicode_decompose(uint32_t cpt, std::vector<uint32_t>& out);

// The first code point of `cpt`'s canonical decomposition. llama.cpp's WPM
// normalizer replaces each code point by exactly this (then drops marks), which
// we reproduce for parity.
uint32_t unicode_decompose_first(uint32_t cpt);

// Normalization Form D of a code point sequence: decomposition plus canonical
// ordering of combining marks.
std::vector<uint32_t> unicode_nfd(const std::vector<uint32_t>& cpts);

}  // namespace runnel
