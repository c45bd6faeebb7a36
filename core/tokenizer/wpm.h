// WordPiece (tokenizer.ggml.model = "bert").
#pragma once

#include "core/tokenizer/vocab.h"

namespace runnel {

class WpmTokenizer : public VocabTokenizer {
 public:
  explicit WpmTokenizer(const GgufMetadata& md);

  std::vector<TokenId> encode(std::string_view text, bool add_special,
                              bool parse_special) const override;

  // BertNormalizer + BertPreTokenizer: the words of `text` (lowercased and
  // accent-stripped when the model says so, split at whitespace, punctuation,
  // ASCII symbols and CJK ideographs).
  std::vector<std::string> pre_tokenize(std::string_view text) const;

 private:
  void encode_word(std::string_view word, std::vector<TokenId>& out) const;

  bool lowercase_ = true, strip_accents_ = true;
};

}  // namespace runnel
