// Code-point sets of a grammar lowered to bytes: the grammar engine matches UTF-8
// byte by byte, so every character class becomes a few sequences of byte sets
// (as regex engines compile Unicode classes).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace runnel {

inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// A set of byte values: 256 bits.
struct ByteSet {
  std::array<uint64_t, 4> words{};

  bool test(uint8_t b) const { return (words[b >> 6] >> (b & 63)) & 1; }
  void set(uint8_t b) { words[b >> 6] |= uint64_t{1} << (b & 63); }
  void set_range(uint8_t lo, uint8_t hi) {
    for (uint32_t b = lo; b <= hi; ++b) set(static_cast<uint8_t>(b));
  }
  void add(const ByteSet& o) {
    for (int i = 0; i < 4; ++i) words[i] |= o.words[i];
  }
  bool empty() const { return (words[0] | words[1] | words[2] | words[3]) == 0; }
  bool operator==(const ByteSet&) const = default;
  // (not <=>: Emscripten's libc++ has no <=> for std::array)
  bool operator<(const ByteSet& o) const { return words < o.words; }
};

// Inclusive code-point range.
struct CodepointRange {
  uint32_t lo = 0, hi = 0;
  bool operator==(const CodepointRange&) const = default;
  bool operator<(const CodepointRange& o) const { return lo != o.lo ? lo < o.lo : hi < o.hi; }
};

// Sorted, merged, without surrogates (U+D800..U+DFFF have no UTF-8 encoding) and
// clipped to U+10FFFF.
std::vector<CodepointRange> normalize_ranges(std::vector<CodepointRange> ranges);

// Every Unicode scalar value not in `ranges` (which must be normalized).
std::vector<CodepointRange> complement_ranges(const std::vector<CodepointRange>& ranges);

// Byte-set sequences whose strings are exactly the UTF-8 encodings of the code points
// in `ranges` (normalized). Sequences that differ only in their first byte are merged,
// so e.g. "any character" is 8 sequences. Different sequences never match the same
// string.
std::vector<std::vector<ByteSet>> utf8_sequences(const std::vector<CodepointRange>& ranges);

// UTF-8 encoding of one scalar value.
std::string encode_utf8(uint32_t cp);

}  // namespace runnel
