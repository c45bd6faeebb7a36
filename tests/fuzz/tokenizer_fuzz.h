// The body of the tokenizer targets (fuzz_tokenizer_spm/bpe/wpm.cpp): one algorithm,
// every vocabulary of that kind in tests/data/tokenizer. Input: byte 0 picks the
// vocabulary (low bits) and add_special / parse_special (bits 6, 7); the rest is the text.
// Checked beyond "no crash": every id is in the vocabulary, and where the algorithm is
// lossless the pieces of the text's tokens give back the text's bytes: byte-level BPE and
// SPM with byte fallback, on valid UTF-8 (ill-formed bytes become U+FFFD first, as in
// llama.cpp) and, for SPM, without a literal U+2581 (its space mark: it comes back as " ").
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/utf8.h"
#include "tests/fuzz/fuzz_util.h"

namespace runnel::fuzz {

enum class RoundTrip { kNone, kBytes, kSpmSpacePrefix };

struct TokenizerVocab {
  std::unique_ptr<Tokenizer> tokenizer;
  RoundTrip round_trip;
};

struct TokenizerCase {
  std::vector<TokenizerVocab> vocabs;
};

[[noreturn]] inline void fail(const Tokenizer& tok, std::string_view what, std::string_view text) {
  std::fprintf(stderr, "tokenizer %s/%s: %.*s (text of %zu bytes)\n", std::string(tok.model_name()).c_str(),
               std::string(tok.pre_name()).c_str(), static_cast<int>(what.size()), what.data(), text.size());
  std::abort();
}

inline void fuzz_tokenizer(const TokenizerCase& c, const uint8_t* data, size_t size) {
  if (size == 0) return;
  const TokenizerVocab& vocab = c.vocabs[data[0] % c.vocabs.size()];
  const Tokenizer& tok = *vocab.tokenizer;
  const RoundTrip round_trip = vocab.round_trip;
  const bool add_special = (data[0] & 0x40) != 0;
  const bool parse_special = (data[0] & 0x80) != 0;
  const std::string_view text = as_text(data + 1, size - 1);

  const std::vector<TokenId> ids = tok.encode(text, add_special, parse_special);
  for (TokenId id : ids) {
    if (id < 0 || id >= tok.n_vocab()) fail(tok, "encode gave an id outside the vocabulary", text);
  }
  (void)tok.decode(ids, true);
  (void)tok.decode(ids, false);

  if (round_trip == RoundTrip::kNone || add_special || parse_special) return;
  if (utf8_sanitize(text) != text) return;
  if (round_trip == RoundTrip::kSpmSpacePrefix && text.find("\xe2\x96\x81") != std::string_view::npos) return;
  std::string pieces;
  for (TokenId id : ids) pieces += tok.token_to_piece(id, false);
  std::string expected(text);
  // SPM puts a space before the text (add_space_prefix) and its pieces keep it.
  if (round_trip == RoundTrip::kSpmSpacePrefix && !text.empty()) expected.insert(0, " ");
  if (pieces != expected) fail(tok, "the pieces of the tokens differ from the text", text);
}

}  // namespace runnel::fuzz
