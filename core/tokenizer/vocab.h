// What SPM, BPE and WPM share: the vocabulary read from tokenizer.ggml.*, token
// lookup by text, llama.cpp's token attribute bits, the special-token ids and the
// end-of-generation set, and the split of input text around special tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tokenizer/special_partition.h"
#include "core/tokenizer/tokenizer.h"

namespace runnel {

// std::hash over anything string-like, so maps keyed by std::string can be
// searched with a std::string_view without building a string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIdMap = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

// The per-model settings llama.cpp fixes before it reads the metadata keys that
// may override them.
struct VocabDefaults {
  TokenId bos = -1, eos = -1, unk = -1, sep = -1, pad = -1;
  bool add_bos = false, add_eos = false, add_sep = false;
  bool add_space_prefix = false, clean_spaces = false;
};

class VocabTokenizer : public Tokenizer {
 public:
  std::string token_to_piece(TokenId id, bool special) const override;

  // Token id of exactly this text, or -1.
  TokenId find_token(std::string_view text) const {
    const auto it = ids_.find(text);
    return it == ids_.end() ? -1 : it->second;
  }

 protected:
  enum class Kind { Spm, Bpe, Wpm };

  // Reads tokens, scores, types and special ids, applying llama.cpp's defaults
  // and its by-text fix-ups (EOT/EOG detection, phi-3 / jina strip flags).
  VocabTokenizer(const GgufMetadata& md, Kind kind, const VocabDefaults& defaults);

  bool has_bits(TokenId id, uint16_t bits) const { return (attr_bits_[id] & bits) != 0; }

  // The text split at special tokens (only user-defined ones unless parse_special).
  std::vector<Fragment> partition(std::string_view text, bool parse_special) const;

  // The byte that an SPM-style "<0xXX>" byte token stands for.
  static int byte_token_value(std::string_view text);

  Kind kind_;
  TokenIdMap ids_;
  std::vector<uint16_t> attr_bits_;         // kAttr* bits per token
  std::vector<TokenId> special_by_length_;  // control / user-defined / unknown, longest first
  size_t max_token_bytes_ = 0;

 private:
  void load_tokens(const GgufMetadata& md);
  // Returns the end-of-message id the metadata names (-1 if none).
  TokenId load_special_ids(const GgufMetadata& md, const VocabDefaults& defaults);
  void detect_special_by_text(const GgufMetadata& md, TokenId eom);
  void read_token_id(const GgufMetadata& md, std::string_view key, TokenId& id) const;
  void mark_control(TokenId id);
};

}  // namespace runnel
