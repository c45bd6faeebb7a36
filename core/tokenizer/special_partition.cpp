#include "core/tokenizer/special_partition.h"

#include <array>

namespace runnel {
namespace {

// C isspace: llama.cpp strips with it, so only ASCII whitespace counts here.
bool is_c_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

// Cuts every text fragment of `in` at each occurrence of `token`'s text.
void split_at(std::string_view text, TokenId token, std::string_view token_text, uint16_t bits,
              const std::vector<Fragment>& in, std::vector<Fragment>& out) {
  for (const Fragment& f : in) {
    if (f.is_token) {
      out.push_back(f);
      continue;
    }
    size_t begin = f.offset;
    const size_t end = f.offset + f.length;
    const std::string_view fragment = text.substr(0, end);
    while (begin < end) {
      const size_t match = fragment.find(token_text, begin);
      if (match == std::string_view::npos) break;
      size_t left_end = match;
      if (bits & kAttrLstrip) {
        while (left_end > begin && is_c_space(text[left_end - 1])) --left_end;
      }
      if (left_end > begin) out.push_back({false, -1, begin, left_end - begin});
      out.push_back({true, token, match, token_text.size()});
      begin = match + token_text.size();
      if (bits & kAttrRstrip) {
        while (begin < end && is_c_space(text[begin])) ++begin;
      }
    }
    if (begin < end) out.push_back({false, -1, begin, end - begin});
  }
}

}  // namespace

std::vector<Fragment> partition_special_tokens(std::string_view text,
                                               std::span<const TokenId> specials,
                                               const std::vector<std::string>& texts,
                                               const std::vector<uint16_t>& bits,
                                               bool parse_special) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({false, -1, 0, text.size()});

  // A token can only occur if its first byte does: skip the rest cheaply (models
  // have thousands of special tokens, a prompt uses few).
  std::array<bool, 256> present{};
  for (char c : text) present[static_cast<uint8_t>(c)] = true;

  std::vector<Fragment> next;
  for (TokenId id : specials) {
    if (!parse_special && (bits[id] & (kAttrControl | kAttrUnknown))) continue;
    const std::string& t = texts[id];
    if (t.empty() || t.size() > text.size() || !present[static_cast<uint8_t>(t[0])]) continue;
    next.clear();
    split_at(text, id, t, bits[id], fragments, next);
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace runnel
