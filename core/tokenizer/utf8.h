// UTF-8 <-> code points, with llama.cpp's tolerance for broken input: an invalid
// byte never aborts tokenization, it becomes one U+FFFD (decoding) or one symbol of
// its own (SPM's per-character split), so every input byte is accounted for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace runnel {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of the sequence a lead byte announces, from its high nibble alone
// (0x0-0xB -> 1, 0xC-0xD -> 2, 0xE -> 3, 0xF -> 4); continuation bytes count as 1.
// This is how SPM and BPE cut text into symbols; the caller clamps to the text end.
inline size_t utf8_sequence_length(uint8_t lead) {
  static constexpr uint8_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[lead >> 4];
}

// Decodes one code point at `offset` and advances it. Returns false (offset
// unchanged) for a byte that does not start a sequence llama.cpp accepts: a stray
// continuation byte, a truncated sequence, a lead byte F8-FF, or a value above
// U+10FFFF. Overlong forms and surrogates are accepted as llama.cpp accepts them.
bool utf8_decode_one(std::string_view text, size_t& offset, uint32_t& cpt);

// All code points of `text`; each byte that cannot be decoded becomes U+FFFD.
std::vector<uint32_t> utf8_to_codepoints(std::string_view text);

// Appends the UTF-8 form of `cpt` (<= 0x10FFFF; surrogates encode as 3 bytes).
void append_utf8(std::string& out, uint32_t cpt);
std::string codepoint_to_utf8(uint32_t cpt);

// Length of the longest prefix of `bytes` that does not end inside a sequence that
// could still complete: what a streaming printer may emit now. Invalid bytes count
// as complete (they will never become valid); only a valid-so-far tail of an
// unfinished sequence (e.g. "\xE2\x96" before its last byte) is held back.
size_t utf8_complete_prefix(std::string_view bytes);

// `bytes` with every byte that is not part of a well-formed UTF-8 sequence (strict:
// no overlongs, surrogates or values above U+10FFFF) replaced by U+FFFD.
std::string utf8_sanitize(std::string_view bytes);

}  // namespace runnel
