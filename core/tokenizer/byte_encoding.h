// GPT-2's byte-level alphabet: byte-level BPE vocabularies spell every byte as a
// printable code point (bytes that are printable Latin-1 stand for themselves, the
// other 68 map to U+0100..U+0143 in byte order; so a space is "Ġ" = U+0120).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace runnel {

// The code point that stands for `byte`.
uint32_t gpt2_byte_to_codepoint(uint8_t byte);

// The byte a code point stands for, or -1 when it is not in the alphabet.
int gpt2_codepoint_to_byte(uint32_t cpt);

// Appends the alphabet spelling of every byte of `bytes` (UTF-8) to `out`.
void gpt2_encode_bytes(std::string_view bytes, std::string& out);

}  // namespace runnel
