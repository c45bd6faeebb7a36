// SentencePiece-style BPE over token scores (tokenizer.ggml.model = "llama").
#pragma once

#include <array>

#include "core/tokenizer/vocab.h"

namespace runnel {

class SpmTokenizer : public VocabTokenizer {
 public:
  explicit SpmTokenizer(const GgufMetadata& md);

  std::vector<TokenId> encode(std::string_view text, bool add_special,
                              bool parse_special) const override;

 private:
  // Appends the tokens of one text fragment (spaces already spelled U+2581).
  void encode_fragment(std::string_view text, std::vector<TokenId>& out) const;

  std::array<TokenId, 256> byte_tokens_;  // "<0xXX>" (or the bare byte), -1 if absent
};

}  // namespace runnel
