// Tokenizers built from GGUF metadata (tokenizer.ggml.*): SPM (llama), byte-level
// BPE with the pre-tokenizer named by tokenizer.ggml.pre, WPM (bert).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/gguf/gguf.h"

namespace runnel {

using TokenId = int32_t;

// tokenizer.ggml.token_type values.
enum class TokenAttr : int32_t {
  Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5,
  Byte = 6,
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Throws GgufError naming the missing/invalid key or unknown model/pre-tokenizer.
  static std::unique_ptr<Tokenizer> from_metadata(const GgufMetadata& md);

  // Tokenizes the exact bytes of `text`. add_special: prepend BOS / append EOS as
  // the metadata says (tokenizer.ggml.add_bos_token ...). parse_special: text like
  // "<|im_start|>" becomes its control token instead of being tokenized as text.
  virtual std::vector<TokenId> encode(std::string_view text, bool add_special,
                                      bool parse_special) const = 0;

  // The bytes a token stands for (byte tokens decoded, SPM's U+2581 -> space,
  // BPE's byte-to-unicode mapping undone). Control tokens give "" unless special.
  virtual std::string token_to_piece(TokenId id, bool special) const = 0;

  std::string decode(const std::vector<TokenId>& ids, bool special) const;

  int32_t n_vocab() const { return static_cast<int32_t>(tokens_.size()); }
  const std::string& token_text(TokenId id) const { return tokens_[id]; }
  TokenAttr attr(TokenId id) const { return attrs_[id]; }
  TokenId bos() const { return bos_; }  // -1 if none
  TokenId eos() const { return eos_; }
  TokenId eot() const { return eot_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  TokenId unk() const { return unk_; }  // -1 if none
  TokenId pad() const { return pad_; }
  TokenId sep() const { return sep_; }  // bert's [SEP]: what encode appends for WPM
  bool add_sep() const { return add_sep_; }
  // End of generation: eos, eot, eom and the like.
  bool is_eog(TokenId id) const;
  std::string_view model_name() const { return model_; }  // "llama", "gpt2", "bert"
  std::string_view pre_name() const { return pre_; }

 protected:
  std::string model_, pre_;
  std::vector<std::string> tokens_;
  std::vector<TokenAttr> attrs_;
  std::vector<float> scores_;
  TokenId bos_ = -1, eos_ = -1, eot_ = -1, unk_ = -1, pad_ = -1;
  std::vector<TokenId> eog_ids_;
  bool add_bos_ = false, add_eos_ = false;
  TokenId sep_ = -1;
  // decode() follows llama.cpp's detokenizer: with add_space_prefix_ (SPM) the
  // first piece loses one leading space; clean_spaces_ tidies " ," " 's" etc.
  bool add_sep_ = false, add_space_prefix_ = false, clean_spaces_ = false;
};

// Turns a stream of token ids into text without ever emitting part of a UTF-8
// sequence: bytes of an incomplete sequence are held until it completes.
class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tok, bool special = false)
      : tok_(tok), special_(special) {}
  std::string push(TokenId id);  // complete UTF-8 text ready to print (may be "")
  std::string flush();           // whatever is pending (invalid bytes as U+FFFD)

 private:
  const Tokenizer& tok_;
  bool special_;
  std::string pending_;
};

}  // namespace runnel
