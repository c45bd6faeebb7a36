#include "core/tokenizer/utf8.h"

namespace runnel {
namespace {

bool is_continuation(uint8_t b) {
  return (b & 0xC0) == 0x80;
}

// Strict check of the sequence starting at `bytes[i]` (RFC 3629 table): returns
// its length when well formed, 0 when invalid, and -1 when it is a valid prefix
// cut short by the end of `bytes`.
int strict_sequence(std::string_view bytes, size_t i) {
  const auto b0 = static_cast<uint8_t>(bytes[i]);
  if (b0 < 0x80) return 1;
  int n = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  for (int k = 1; k < n; ++k) {
    if (i + k >= bytes.size()) return -1;
    const auto b = static_cast<uint8_t>(bytes[i + k]);
    if (k == 1 ? (b < lo || b > hi) : !is_continuation(b)) return 0;
  }
  return n;
}

}  // namespace

bool utf8_decode_one(std::string_view text, size_t& offset, uint32_t& cpt) {
  const size_t size = text.size();
  const auto b0 = static_cast<uint8_t>(text[offset]);
  if (b0 < 0x80) {
    cpt = b0;
    offset += 1;
    return true;
  }
  int n = 0;
  uint32_t value = 0;
  if ((b0 & 0xE0) == 0xC0) {
    n = 2;
    value = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3;
    value = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4;
    value = b0 & 0x07;
  } else {
    return false;  // continuation byte or F8-FF
  }
  if (offset + n > size) return false;
  for (int k = 1; k < n; ++k) {
    const auto b = static_cast<uint8_t>(text[offset + k]);
    if (!is_continuation(b)) return false;
    value = (value << 6) | (b & 0x3F);
  }
  if (value > 0x10FFFF) return false;
  cpt = value;
  offset += n;
  return true;
}

std::vector<uint32_t> utf8_to_codepoints(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  size_t offset = 0;
  while (offset < text.size()) {
    uint32_t cpt = 0;
    if (utf8_decode_one(text, offset, cpt)) {
      out.push_back(cpt);
    } else {
      out.push_back(kReplacementChar);
      ++offset;
    }
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cpt) {
  if (cpt <= 0x7F) {
    out.push_back(static_cast<char>(cpt));
  } else if (cpt <= 0x7FF) {
    out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt <= 0xFFFF) {
    out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt <= 0x10FFFF) {
    out.push_back(static_cast<char>(0xF0 | (cpt >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    append_utf8(out, kReplacementChar);  // unreachable for decoded text
  }
}

std::string codepoint_to_utf8(uint32_t cpt) {
  std::string s;
  append_utf8(s, cpt);
  return s;
}

size_t utf8_complete_prefix(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    const int n = strict_sequence(bytes, i);
    if (n < 0) return i;  // an unfinished but so far valid sequence: hold it
    i += n == 0 ? 1 : static_cast<size_t>(n);
  }
  return i;
}

std::string utf8_sanitize(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    const int n = strict_sequence(bytes, i);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      append_utf8(out, kReplacementChar);
      ++i;
    }
  }
  return out;
}

}  // namespace runnel
