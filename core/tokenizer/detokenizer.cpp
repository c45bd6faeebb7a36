// Token ids back to text: Tokenizer::decode (llama.cpp's detokenizer) and the
// StreamingDetokenizer that never splits a UTF-8 sequence.
#include <string>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/utf8.h"

namespace runnel {
namespace {

// llama.cpp's clean_up_tokenization for BPE/WPM vocabularies: " ?" " !" " ." " ,"
// lose the space, " ' " becomes "'", and " 's" " 'm" " 're" " 've" lose the space.
std::string clean_spaces(const std::string& in) {
  std::string a;
  a.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const char x = in[i];
    if (i > 0 && in[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) a.pop_back();
    a.push_back(x);
  }
  // The second pass blanks the space after " ' " so that it cannot start another
  // match, as llama.cpp's in-place version does.
  std::string src = a, b;
  b.reserve(a.size());
  for (size_t i = 0; i < src.size(); ++i) {
    const char x = src[i];
    if (i > 0 && x == '\'' && i + 1 < src.size() && src[i - 1] == ' ' && src[i + 1] == ' ') {
      b.pop_back();  // the space before
      b.push_back(x);
      src[++i] = '\0';  // and the one after
      continue;
    }
    b.push_back(x);
  }
  std::string c;
  c.reserve(b.size());
  for (size_t i = 0; i < b.size(); ++i) {
    const char x = b[i];
    if (i > 0 && b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
      const char x1 = b[i + 1];
      const char x2 = i + 2 < b.size() ? b[i + 2] : '\0';
      if (x1 == 's' || x1 == 'm' || (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) {
        c.pop_back();
      }
    }
    c.push_back(x);
  }
  return c;
}

}  // namespace

std::string Tokenizer::decode(const std::vector<TokenId>& ids, bool special) const {
  std::string text;
  bool strip_space = add_space_prefix_;  // the space SPM put before the first word
  for (TokenId id : ids) {
    const std::string piece = token_to_piece(id, special);
    const bool strip = strip_space && !piece.empty() && piece[0] == ' ';
    text.append(piece, strip ? 1 : 0);
    strip_space = false;
  }
  return clean_spaces_ ? clean_spaces(text) : text;
}

std::string StreamingDetokenizer::push(TokenId id) {
  pending_ += tok_.token_to_piece(id, special_);
  const size_t n = utf8_complete_prefix(pending_);
  std::string ready = utf8_sanitize(std::string_view(pending_).substr(0, n));
  pending_.erase(0, n);
  return ready;
}

std::string StreamingDetokenizer::flush() {
  std::string rest = utf8_sanitize(pending_);
  pending_.clear();
  return rest;
}

}  // namespace runnel
