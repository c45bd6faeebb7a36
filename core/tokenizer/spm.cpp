// SPM: the text is cut into UTF-8 characters, then the adjacent pair whose
// concatenation is the vocabulary token with the highest score is merged (the
// leftmost pair on ties), again and again until no pair forms a token. Pieces that
// are not tokens are spelled with byte tokens <0xXX>.
#include "core/tokenizer/spm.h"

#include <queue>

#include "core/tokenizer/utf8.h"

namespace runnel {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, SPM's space

// A piece of the text: bytes [offset, offset + n) and its neighbours in the
// linked list of live pieces (-1 at the ends). n == 0 once merged into the left.
struct Symbol {
  int prev, next;
  size_t offset, n;
};

struct Bigram {
  int left, right;
  float score;
  size_t n;  // bytes of the pair when it was queued: stale once either side grew
};

// Highest score first, then leftmost.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

SpmTokenizer::SpmTokenizer(const GgufMetadata& md)
    : VocabTokenizer(md, Kind::Spm,
                     VocabDefaults{.bos = 1,
                                   .eos = 2,
                                   .unk = 0,
                                   .sep = -1,
                                   .pad = -1,
                                   .add_bos = true,
                                   .add_eos = false,
                                   .add_sep = false,
                                   .add_space_prefix = true,
                                   .clean_spaces = false}) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const char name[] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    TokenId id = find_token(std::string_view(name, sizeof(name)));
    if (id < 0) id = find_token(std::string(1, static_cast<char>(b)));
    byte_tokens_[b] = id;
  }
}

std::vector<TokenId> SpmTokenizer::encode(std::string_view text, bool add_special,
                                          bool parse_special) const {
  std::vector<TokenId> out;
  if (add_special && add_bos_) out.push_back(bos_);
  bool after_special = true;  // the text start counts as "after a special token"
  std::string piece;
  for (const Fragment& f : partition(text, parse_special)) {
    if (f.is_token) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    piece.clear();
    if (add_space_prefix_ && after_special) piece += kSpaceMark;
    for (char c : text.substr(f.offset, f.length)) {
      if (c == ' ') {
        piece += kSpaceMark;
      } else {
        piece.push_back(c);
      }
    }
    encode_fragment(piece, out);
    after_special = false;
  }
  if (add_special && add_eos_) out.push_back(eos_);
  return out;
}

void SpmTokenizer::encode_fragment(std::string_view text, std::vector<TokenId>& out) const {
  std::vector<Symbol> symbols;
  for (size_t offset = 0; offset < text.size();) {
    const size_t n =
        std::min(utf8_sequence_length(static_cast<uint8_t>(text[offset])), text.size() - offset);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, offset + n == text.size() ? -1 : index + 1, offset, n});
    offset += n;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto try_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[left];
    const Symbol& r = symbols[right];
    const TokenId id = find_token(text.substr(l.offset, l.n + r.n));
    if (id < 0) return;
    queue.push({left, right, scores_[id], l.n + r.n});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_pair(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[b.left];
    Symbol& r = symbols[b.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.n) continue;
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    try_pair(l.prev, b.left);
    try_pair(b.left, l.next);
  }

  // A merged piece is always a token (merges only form tokens), so a piece that is
  // not one is an original character the vocabulary lacks: spell it in bytes.
  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[i].next) {
    const Symbol& s = symbols[i];
    const std::string_view piece = text.substr(s.offset, s.n);
    const TokenId id = find_token(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (char c : piece) {
      const TokenId byte = byte_tokens_[static_cast<uint8_t>(c)];
      if (byte >= 0) {
        out.push_back(byte);
      } else if (unk_ >= 0) {
        out.push_back(unk_);  // a vocabulary without byte tokens
      }
    }
  }
}

}  // namespace runnel
