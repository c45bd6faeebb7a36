// Byte-level BPE: each pre-tokenized word is spelled in GPT-2's byte alphabet and
// cut into characters; the adjacent pair with the lowest merge rank (leftmost on
// ties) is merged until no pair has a rank; each resulting piece is a token.
#include "core/tokenizer/bpe.h"

#include <queue>

#include "core/tokenizer/byte_encoding.h"
#include "core/tokenizer/utf8.h"

namespace runnel {
namespace {

struct Symbol {
  int prev, next;
  size_t offset, n;  // bytes of the word; n == 0 once merged into the left
};

struct Bigram {
  int left, right;
  int rank;
  size_t n;  // bytes of the pair when queued: stale once either side changed
};

// Lowest rank first, then leftmost.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

BpeTokenizer::BpeTokenizer(const GgufMetadata& md, const PreTokenizerSpec& pre)
    : VocabTokenizer(md, Kind::Bpe,
                     VocabDefaults{.bos = pre.no_bos ? -1 : 11,
                                   .eos = 11,
                                   .unk = -1,
                                   .sep = -1,
                                   .pad = -1,
                                   .add_bos = pre.add_bos,
                                   .add_eos = false,
                                   .add_sep = false,
                                   .add_space_prefix = false,
                                   .clean_spaces = pre.clean_spaces}),
      pre_spec_(pre) {
  const std::vector<std::string>* merges = md.find_string_array("tokenizer.ggml.merges");
  if (merges == nullptr) {
    throw GgufError("metadata key 'tokenizer.ggml.merges' is missing (needed by gpt2 tokenizers)");
  }
  n_merges_ = merges->size();
  ranks_.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const std::string& m = (*merges)[i];
    // "left right", split at the first space after the first byte, so the entry
    // itself is the key; one without such a space can never match a pair
    // (llama.cpp keeps it as the pair ("", "")).
    if (m.find(' ', 1) == std::string::npos) continue;
    ranks_.emplace(m, static_cast<int>(i));
  }
}

int BpeTokenizer::merge_rank(std::string_view left, std::string_view right,
                             std::string& key) const {
  key.assign(left);
  key.push_back(' ');
  key.append(right);
  const auto it = ranks_.find(key);
  return it == ranks_.end() ? -1 : it->second;
}

std::vector<TokenId> BpeTokenizer::encode(std::string_view text, bool add_special,
                                          bool parse_special) const {
  std::vector<TokenId> out;
  if (add_special && add_bos_) out.push_back(bos_);
  std::string word, key;
  for (const Fragment& f : partition(text, parse_special)) {
    if (f.is_token) {
      out.push_back(f.token);
      continue;
    }
    for (const std::string& w : pre_tokenize(text.substr(f.offset, f.length), pre_spec_.steps)) {
      word.clear();
      gpt2_encode_bytes(w, word);
      encode_word(word, key, out);
    }
  }
  if (add_special && add_eos_) out.push_back(eos_);
  return out;
}

void BpeTokenizer::encode_word(std::string_view word, std::string& key,
                               std::vector<TokenId>& out) const {
  if (pre_spec_.ignore_merges) {
    const TokenId id = find_token(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  std::vector<Symbol> symbols;
  for (size_t offset = 0; offset < word.size();) {
    const size_t n =
        std::min(utf8_sequence_length(static_cast<uint8_t>(word[offset])), word.size() - offset);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, offset + n == word.size() ? -1 : index + 1, offset, n});
    offset += n;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto try_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[left];
    const Symbol& r = symbols[right];
    const int rank = merge_rank(word.substr(l.offset, l.n), word.substr(r.offset, r.n), key);
    if (rank >= 0) queue.push({left, right, rank, l.n + r.n});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_pair(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[b.left];
    Symbol& r = symbols[b.right];
    // Symbols never move, they only grow rightwards: an unchanged length means
    // an unchanged pair.
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.n) continue;
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    try_pair(l.prev, b.left);
    try_pair(b.left, l.next);
  }

  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[i].next) {
    const std::string_view piece = word.substr(symbols[i].offset, symbols[i].n);
    const TokenId id = find_token(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    // A piece outside the vocabulary (a broken merge list): llama.cpp falls back
    // to single-byte tokens, skipping bytes that have none.
    for (char c : piece) {
      const TokenId byte = find_token(std::string_view(&c, 1));
      if (byte >= 0) out.push_back(byte);
    }
  }
}

}  // namespace runnel
