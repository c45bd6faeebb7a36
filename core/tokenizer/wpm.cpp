// WordPiece as llama.cpp runs it on converted BERT vocabularies: the converter
// writes word-initial pieces as "▁word" and continuation pieces "##ing" as "ing",
// so a word is matched as "▁" + word, greedily, longest token first.
#include "core/tokenizer/wpm.h"

#include "core/tokenizer/unicode.h"
#include "core/tokenizer/utf8.h"

namespace runnel {
namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581

// BERT's CJK ranges (the Unicode blocks of CJK ideographs, with HF's own bounds).
bool is_chinese_char(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

}  // namespace

WpmTokenizer::WpmTokenizer(const GgufMetadata& md)
    : VocabTokenizer(md, Kind::Wpm,
                     VocabDefaults{.bos = 101,
                                   .eos = -1,
                                   .unk = 100,
                                   .sep = 102,
                                   .pad = 0,
                                   .add_bos = true,
                                   .add_eos = false,
                                   .add_sep = true,
                                   .add_space_prefix = false,
                                   .clean_spaces = true}) {
  lowercase_ = md.find_bool("tokenizer.ggml.normalizer.lowercase").value_or(true);
  strip_accents_ = md.find_bool("tokenizer.ggml.normalizer.strip_accents").value_or(lowercase_);
  if (bos_ < 0) throw GgufError("bert tokenizer: no [CLS] token (tokenizer.ggml.bos_token_id)");
  if (sep_ < 0) {
    throw GgufError("bert tokenizer: no [SEP] token (tokenizer.ggml.seperator_token_id)");
  }
}

std::vector<TokenId> WpmTokenizer::encode(std::string_view text, bool add_special,
                                          bool parse_special) const {
  std::vector<TokenId> out;
  if (add_special) out.push_back(bos_);  // [CLS]
  for (const Fragment& f : partition(text, parse_special)) {
    if (f.is_token) {
      out.push_back(f.token);
      continue;
    }
    for (const std::string& word : pre_tokenize(text.substr(f.offset, f.length))) {
      encode_word(word, out);
    }
  }
  if (add_special) out.push_back(sep_);  // [SEP]
  return out;
}

std::vector<std::string> WpmTokenizer::pre_tokenize(std::string_view text) const {
  std::vector<std::string> words(1);
  for (uint32_t cpt : utf8_to_codepoints(text)) {
    // llama.cpp keeps only the first code point of each canonical decomposition;
    // with the marks dropped below, that is the base letter.
    if (strip_accents_) cpt = unicode_decompose_first(cpt);
    const CodepointFlags f = unicode_flags(cpt);
    if (f.is_whitespace()) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (cpt == 0 || cpt == kReplacementChar || f.is_control()) continue;
    if (strip_accents_ && f.is_mark()) continue;
    const uint32_t c = lowercase_ ? unicode_tolower(cpt) : cpt;
    if (f.is_punctuation() || (cpt < 0x7F && f.is_symbol()) || is_chinese_char(cpt)) {
      if (!words.back().empty()) words.emplace_back();
      append_utf8(words.back(), c);  // a word of its own
      words.emplace_back();
    } else {
      append_utf8(words.back(), c);
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

void WpmTokenizer::encode_word(std::string_view word, std::vector<TokenId>& out) const {
  if (word.empty()) return;
  std::string text(kWordStart);
  text += word;
  const size_t n = text.size();
  const size_t start = out.size();
  for (size_t i = 0; i < n;) {
    size_t matched = 0;
    for (size_t j = std::min(n, i + max_token_bytes_ + 1); j > i; --j) {
      const TokenId id = find_token(std::string_view(text).substr(i, j - i));
      if (id >= 0) {
        out.push_back(id);
        matched = j - i;
        break;
      }
    }
    if (matched == 0) {  // a piece no token covers: the whole word is unknown
      out.resize(start);
      break;
    }
    i += matched;
  }
  if (out.size() == start && unk_ >= 0) out.push_back(unk_);
}

}  // namespace runnel
