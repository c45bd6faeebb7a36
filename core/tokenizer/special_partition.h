// Splitting input text at special-token texts before normal tokenization, the
// way llama.cpp's tokenizer_st_partition does: tokens are tried longest first,
// each one cutting every text fragment that is left; control and unknown tokens
// only when parse_special, user-defined tokens always.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenizer/tokenizer.h"

namespace runnel {

// llama.cpp's token attribute bits (llama_token_attr). TokenAttr holds the GGUF
// token type; these bits also carry the strip flags llama.cpp adds per model.
inline constexpr uint16_t kAttrUnknown = 1 << 0;
inline constexpr uint16_t kAttrUnused = 1 << 1;
inline constexpr uint16_t kAttrNormal = 1 << 2;
inline constexpr uint16_t kAttrControl = 1 << 3;
inline constexpr uint16_t kAttrUserDefined = 1 << 4;
inline constexpr uint16_t kAttrByte = 1 << 5;
inline constexpr uint16_t kAttrLstrip = 1 << 7;  // eat whitespace left of the token
inline constexpr uint16_t kAttrRstrip = 1 << 8;  // eat whitespace right of the token

// A special token, or a span [offset, offset + length) of the input still to be
// tokenized as text.
struct Fragment {
  bool is_token = false;
  TokenId token = -1;
  size_t offset = 0, length = 0;
};

// `specials` in the order to try (longest text first); `texts` / `bits` are indexed
// by token id. An empty text gives no fragments.
std::vector<Fragment> partition_special_tokens(std::string_view text,
                                               std::span<const TokenId> specials,
                                               const std::vector<std::string>& texts,
                                               const std::vector<uint16_t>& bits,
                                               bool parse_special);

}  // namespace runnel
