#include "core/tokenizer/byte_encoding.h"

#include <array>

namespace runnel {
namespace {

constexpr bool stands_for_itself(uint32_t b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

constexpr std::array<uint16_t, 256> make_byte_to_codepoint() {
  std::array<uint16_t, 256> table{};
  uint16_t next = 0x100;
  for (uint32_t b = 0; b < 256; ++b) {
    table[b] = stands_for_itself(b) ? static_cast<uint16_t>(b) : next++;
  }
  return table;
}
constexpr std::array<uint16_t, 256> kByteToCodepoint = make_byte_to_codepoint();

// The alphabet's UTF-8 spellings, so encoding a byte is one small append.
struct Utf8Spellings {
  std::array<std::array<char, 2>, 256> bytes{};
  std::array<uint8_t, 256> length{};
  constexpr Utf8Spellings() {
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t c = kByteToCodepoint[b];
      if (c < 0x80) {
        bytes[b] = {static_cast<char>(c), 0};
        length[b] = 1;
      } else {  // all alphabet code points are below U+0800: two bytes
        bytes[b] = {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
        length[b] = 2;
      }
    }
  }
};
constexpr Utf8Spellings kSpellings;

}  // namespace

uint32_t gpt2_byte_to_codepoint(uint8_t byte) {
  return kByteToCodepoint[byte];
}

int gpt2_codepoint_to_byte(uint32_t cpt) {
  if (cpt < 256 && stands_for_itself(cpt)) return static_cast<int>(cpt);
  if (cpt < 0x100 || cpt >= 0x100 + 68) return -1;
  for (int b = 0; b < 256; ++b) {
    if (kByteToCodepoint[b] == cpt) return b;
  }
  return -1;
}

void gpt2_encode_bytes(std::string_view bytes, std::string& out) {
  out.reserve(out.size() + bytes.size() * 2);
  for (char ch : bytes) {
    const auto b = static_cast<uint8_t>(ch);
    out.append(kSpellings.bytes[b].data(), kSpellings.length[b]);
  }
}

}  // namespace runnel
