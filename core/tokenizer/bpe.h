// Byte-level BPE (tokenizer.ggml.model = "gpt2"): pre-tokenization by the regex
// list tokenizer.ggml.pre names, GPT-2's byte alphabet, then merges by rank from
// tokenizer.ggml.merges.
#pragma once

#include "core/tokenizer/pretokenize.h"
#include "core/tokenizer/vocab.h"

namespace runnel {

class BpeTokenizer : public VocabTokenizer {
 public:
  // `pre` is the resolved tokenizer.ggml.pre (see from_metadata).
  BpeTokenizer(const GgufMetadata& md, const PreTokenizerSpec& pre);

  std::vector<TokenId> encode(std::string_view text, bool add_special,
                              bool parse_special) const override;

  size_t n_merges() const { return n_merges_; }

 private:
  // Appends the tokens of one pre-tokenized word (already in the byte alphabet).
  void encode_word(std::string_view word, std::string& key, std::vector<TokenId>& out) const;
  int merge_rank(std::string_view left, std::string_view right, std::string& key) const;

  PreTokenizerSpec pre_spec_;
  // "left right" -> rank (its index in tokenizer.ggml.merges; the first one wins).
  TokenIdMap ranks_;
  size_t n_merges_ = 0;
};

}  // namespace runnel
