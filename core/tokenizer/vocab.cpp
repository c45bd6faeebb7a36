// Loading the vocabulary and the special tokens, following llama.cpp's
// llama_vocab::load so that the same GGUF gives the same ids, attributes and
// end-of-generation set.
#include "core/tokenizer/vocab.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>

#include "core/tokenizer/byte_encoding.h"
#include "core/tokenizer/utf8.h"

namespace runnel {
namespace {

constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";

// llama.cpp's attribute bits for GGUF token types 0..6 (undefined, normal,
// unknown, control, user-defined, unused, byte); other values are undefined.
uint16_t bits_of_type(int64_t type) {
  static constexpr uint16_t kBits[] = {
      0, kAttrNormal, kAttrUnknown, kAttrControl, kAttrUserDefined, kAttrUnused, kAttrByte};
  return (type >= 0 && type <= 6) ? kBits[type] : 0;
}

TokenAttr attr_of_type(int64_t type) {
  return (type >= 0 && type <= 6) ? static_cast<TokenAttr>(type) : TokenAttr::Undefined;
}

// The spellings llama.cpp recognises for each special role (llama_vocab::load).
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>",        "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>",   "<EOT>",      "_<EOT>",  "[EOT]",         "<｜end▁of▁sentence｜>",
    "<end_of_utterance>"};
constexpr std::string_view kEomTexts[] = {"<|eom_id|>"};
constexpr std::string_view kFimPreTexts[] = {"<|fim_prefix|>",  "<fim-prefix>", "<fim_prefix>",
                                             "<｜fim▁begin｜>", "<PRE>",        "▁<PRE>",
                                             "<|code_prefix|>", "<|prefix|>"};
constexpr std::string_view kFimSufTexts[] = {"<|fim_suffix|>",  "<fim-suffix>", "<fim_suffix>",
                                             "<｜fim▁hole｜>",  "<SUF>",        "▁<SUF>",
                                             "<|code_suffix|>", "<|suffix|>"};
constexpr std::string_view kFimMidTexts[] = {"<|fim_middle|>",  "<fim-middle>", "<fim_middle>",
                                             "<｜fim▁end｜>",   "<MID>",        "▁<MID>",
                                             "<|code_middle|>", "<|middle|>"};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>",
                                             "[PAD]"};
constexpr std::string_view kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                             "<REPO>", "<reponame>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};
// Tokens that end generation whatever their type (they are made control tokens).
constexpr std::string_view kEogTexts[] = {"<|eot_id|>",
                                          "<|im_end|>",
                                          "<|end|>",
                                          "<|return|>",
                                          "<|call|>",
                                          "<|flush|>",
                                          "<|calls|>",
                                          "<end_of_turn>",
                                          "<|endoftext|>",
                                          "</s>",
                                          "<|eom_id|>",
                                          "<EOT>",
                                          "_<EOT>",
                                          "[EOT]",
                                          "[EOS]",
                                          "<|end_of_text|>",
                                          "<end_of_utterance>",
                                          "<eos>",
                                          "<turn|>",
                                          "<|tool_response>",
                                          "<｜end▁of▁sentence｜>",
                                          "[e~["};
// gpt-oss renders these, so llama.cpp makes them plain user-defined tokens.
constexpr std::string_view kRenderedTexts[] = {"<|channel|>", "<|message|>", "<|start|>",
                                               "<|constrain|>"};

std::string lowercase_ascii(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains_any(std::string_view s, std::initializer_list<std::string_view> parts) {
  for (std::string_view p : parts) {
    if (s.find(p) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

VocabTokenizer::VocabTokenizer(const GgufMetadata& md, Kind kind, const VocabDefaults& defaults)
    : kind_(kind) {
  model_ = md.get_string("tokenizer.ggml.model");
  pre_ = md.find_string("tokenizer.ggml.pre").value_or("");
  add_space_prefix_ =
      md.find_bool("tokenizer.ggml.add_space_prefix").value_or(defaults.add_space_prefix);
  clean_spaces_ = defaults.clean_spaces;
  load_tokens(md);
  const TokenId eom = load_special_ids(md, defaults);
  detect_special_by_text(md, eom);

  for (TokenId id = 0; id < n_vocab(); ++id) {
    if (has_bits(id, kAttrControl | kAttrUserDefined | kAttrUnknown)) {
      special_by_length_.push_back(id);
    }
  }
  // Longest first; equal lengths by id so the order never depends on the sort.
  std::stable_sort(special_by_length_.begin(), special_by_length_.end(),
                   [&](TokenId a, TokenId b) { return tokens_[a].size() > tokens_[b].size(); });

  // Per-model strip flags llama.cpp sets by name (its GGUFs do not carry them).
  const std::string name = lowercase_ascii(md.find_string("general.name").value_or(""));
  const std::string arch = md.find_string("general.architecture").value_or("");
  auto set_bits = [&](std::string_view text, uint16_t bits, bool on) {
    const TokenId id = find_token(text);
    if (id < 0) return;
    attr_bits_[id] = on ? (attr_bits_[id] | bits) : (attr_bits_[id] & ~bits);
  };
  if (contains_any(pre_, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
      contains_any(arch, {"nomic-bert-moe", "jina-bert-v3"})) {
    set_bits("<mask>", kAttrLstrip, true);
  } else if (contains_any(name, {"phi-3", "phi3"})) {
    for (TokenId id : special_by_length_) attr_bits_[id] |= kAttrRstrip;
    set_bits("</s>", kAttrRstrip, true);
    for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) set_bits(t, kAttrRstrip, false);
  } else if (contains_any(name, {"modern-bert"})) {
    set_bits("[MASK]", kAttrLstrip, true);
  }
}

void VocabTokenizer::load_tokens(const GgufMetadata& md) {
  const std::vector<std::string>* tokens = md.find_string_array(kTokensKey);
  if (tokens == nullptr) throw GgufError("metadata key 'tokenizer.ggml.tokens' is missing");
  const size_t n = tokens->size();
  if (n == 0) throw GgufError("tokenizer.ggml.tokens is empty");
  if (n > static_cast<size_t>(INT32_MAX)) {
    throw GgufError("tokenizer.ggml.tokens has " + std::to_string(n) + " entries, too many");
  }

  std::vector<double> scores;
  if (md.has(kScoresKey)) {
    scores = md.find_f64_array(kScoresKey).value();
    if (scores.size() < n) {
      throw GgufError("tokenizer.ggml.scores has " + std::to_string(scores.size()) +
                      " entries, expected " + std::to_string(n) + " (one per token)");
    }
  }
  std::vector<int64_t> types;
  if (md.has(kTypesKey)) {
    types = md.find_i64_array(kTypesKey).value();
    if (types.size() < n) {
      throw GgufError("tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                      " entries, expected " + std::to_string(n) + " (one per token)");
    }
  }

  tokens_.resize(n);
  scores_.assign(n, 0.0f);
  attrs_.assign(n, TokenAttr::Normal);
  attr_bits_.assign(n, kAttrNormal);
  ids_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string text = (*tokens)[i];
    // llama.cpp renames empty tokens so that every token has a distinct text.
    if (text.empty()) text = "[EMPTY_" + std::to_string(i) + "]";
    const auto [it, inserted] = ids_.emplace(text, static_cast<TokenId>(i));
    if (!inserted) {
      throw GgufError("duplicate token in vocabulary: '" + text + "' has ids " +
                      std::to_string(it->second) + " and " + std::to_string(i));
    }
    max_token_bytes_ = std::max(max_token_bytes_, text.size());
    tokens_[i] = std::move(text);
    if (!scores.empty()) scores_[i] = static_cast<float>(scores[i]);
    if (!types.empty()) {
      attrs_[i] = attr_of_type(types[i]);
      attr_bits_[i] = bits_of_type(types[i]);
    }
  }
}

TokenId VocabTokenizer::load_special_ids(const GgufMetadata& md, const VocabDefaults& defaults) {
  const TokenId n = n_vocab();
  bos_ = defaults.bos;
  eos_ = defaults.eos;
  unk_ = defaults.unk;
  sep_ = defaults.sep;
  pad_ = defaults.pad;
  TokenId eom = -1;
  // A default outside the vocabulary is dropped (llama.cpp warns and does the same).
  auto read = [&](std::string_view key, TokenId& id) {
    if (id >= n) id = -1;
    read_token_id(md, key, id);
  };
  read("tokenizer.ggml.bos_token_id", bos_);
  if (!md.has("tokenizer.ggml.bos_token_id")) read("tokenizer.ggml.cls_token_id", bos_);
  read("tokenizer.ggml.eos_token_id", eos_);
  read("tokenizer.ggml.eot_token_id", eot_);
  read("tokenizer.ggml.eom_token_id", eom);
  read("tokenizer.ggml.unknown_token_id", unk_);
  read("tokenizer.ggml.seperator_token_id", sep_);  // sic: llama.cpp's key name
  read("tokenizer.ggml.padding_token_id", pad_);

  add_bos_ = md.find_bool("tokenizer.ggml.add_bos_token").value_or(defaults.add_bos);
  add_eos_ = md.find_bool("tokenizer.ggml.add_eos_token").value_or(defaults.add_eos);
  add_sep_ = md.find_bool("tokenizer.ggml.add_sep_token").value_or(defaults.add_sep);
  auto require = [](bool add, TokenId id, const char* add_key, const char* id_key) {
    if (add && id < 0) {
      throw GgufError(std::string(add_key) + " is true, but " + id_key +
                      " names no token of the vocabulary");
    }
  };
  require(add_bos_, bos_, "tokenizer.ggml.add_bos_token", "tokenizer.ggml.bos_token_id");
  require(add_eos_, eos_, "tokenizer.ggml.add_eos_token", "tokenizer.ggml.eos_token_id");
  require(add_sep_, sep_, "tokenizer.ggml.add_sep_token", "tokenizer.ggml.seperator_token_id");
  return eom;
}

void VocabTokenizer::read_token_id(const GgufMetadata& md, std::string_view key,
                                   TokenId& id) const {
  // An id outside the vocabulary (or negative) is ignored in favour of the
  // default, as llama.cpp does.
  const std::optional<int64_t> v = md.find_i64(key);
  if (v && *v >= 0 && *v < n_vocab()) id = static_cast<TokenId>(*v);
}

void VocabTokenizer::mark_control(TokenId id) {
  if (!has_bits(id, kAttrControl)) {
    attr_bits_[id] |= kAttrControl;
    attrs_[id] = TokenAttr::Control;
  }
}

// llama.cpp recognises end-of-turn and fill-in-the-middle tokens by their text
// (converters do not always record them) and forces them to be control tokens;
// the end-of-generation set is built from the same lists.
void VocabTokenizer::detect_special_by_text(const GgufMetadata& md, TokenId eom) {
  TokenId fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
  read_token_id(md, "tokenizer.ggml.fim_pre_token_id", fim_pre);
  read_token_id(md, "tokenizer.ggml.fim_suf_token_id", fim_suf);
  read_token_id(md, "tokenizer.ggml.fim_mid_token_id", fim_mid);
  read_token_id(md, "tokenizer.ggml.prefix_token_id", fim_pre);  // deprecated names win,
  read_token_id(md, "tokenizer.ggml.suffix_token_id", fim_suf);  // as llama.cpp reads
  read_token_id(md, "tokenizer.ggml.middle_token_id", fim_mid);  // them last
  read_token_id(md, "tokenizer.ggml.fim_pad_token_id", fim_pad);
  read_token_id(md, "tokenizer.ggml.fim_rep_token_id", fim_rep);
  read_token_id(md, "tokenizer.ggml.fim_sep_token_id", fim_sep);

  // Each role the metadata left unset takes the lowest-id token whose text is one
  // of its known spellings, and that token becomes a control token.
  auto detect = [&](TokenId& slot, const auto& names) {
    if (slot >= 0) return;
    for (std::string_view name : names) {
      const TokenId id = find_token(name);
      if (id >= 0 && (slot < 0 || id < slot)) slot = id;
    }
    if (slot >= 0) mark_control(slot);
  };
  detect(eot_, kEotTexts);
  detect(eom, kEomTexts);
  detect(fim_pre, kFimPreTexts);
  detect(fim_suf, kFimSufTexts);
  detect(fim_mid, kFimMidTexts);
  detect(fim_pad, kFimPadTexts);
  detect(fim_rep, kFimRepTexts);
  detect(fim_sep, kFimSepTexts);

  std::vector<TokenId> eog;
  for (TokenId id : {fim_pad, fim_rep, fim_sep}) {
    if (id >= 0) eog.push_back(id);
  }
  for (std::string_view text : kEogTexts) {
    if (const TokenId id = find_token(text); id >= 0) {
      eog.push_back(id);
      mark_control(id);
    }
  }
  for (std::string_view text : kRenderedTexts) {
    if (const TokenId id = find_token(text); id >= 0) {
      attr_bits_[id] = kAttrUserDefined;
      attrs_[id] = TokenAttr::UserDefined;
    }
  }
  for (TokenId id : {eos_, eot_, eom}) {
    if (id >= 0) eog.push_back(id);
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());

  // o200k_harmony / solar-open: "<|end|>" ends a message there, not generation.
  auto eog_text = [&](std::string_view t) {
    return std::any_of(eog.begin(), eog.end(), [&](TokenId id) { return tokens_[id] == t; });
  };
  const bool has_end = eog_text("<|end|>");
  if (has_end && (eog_text("<|call|>") || eog_text("<|calls|>")) &&
      (eog_text("<|return|>") || eog_text("<|flush|>"))) {
    const TokenId end = find_token("<|end|>");
    eog.erase(std::remove(eog.begin(), eog.end(), end), eog.end());
    attr_bits_[end] = kAttrUserDefined;
    attrs_[end] = TokenAttr::UserDefined;
  }
  // gemma4 / paddleocr: "</s>" is an ordinary token when "<|tool_response>" exists.
  if (eog_text("<|tool_response>") && eog_text("</s>")) {
    const TokenId s = find_token("</s>");
    eog.erase(std::remove(eog.begin(), eog.end(), s), eog.end());
    attr_bits_[s] = kAttrNormal;
    attrs_[s] = TokenAttr::Normal;
  }
  eog_ids_ = std::move(eog);
}

int VocabTokenizer::byte_token_value(std::string_view text) {
  // "<0xXX>"; llama.cpp parses the two characters after "<0x" as hex.
  if (text.size() < 5) return -1;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) return -1;
    value = value * 16 + d;
  }
  return value;
}

std::vector<Fragment> VocabTokenizer::partition(std::string_view text, bool parse_special) const {
  return partition_special_tokens(text, special_by_length_, tokens_, attr_bits_, parse_special);
}

std::string VocabTokenizer::token_to_piece(TokenId id, bool special) const {
  if (id < 0 || id >= n_vocab()) {
    throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                            std::to_string(n_vocab() - 1) + ")");
  }
  const uint16_t bits = attr_bits_[id];
  if (!special && (bits & (kAttrUnknown | kAttrControl))) return "";
  const std::string& text = tokens_[id];
  if (bits & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return text;
  if (bits & kAttrNormal) {
    if (kind_ == Kind::Bpe) {
      // Undo the byte alphabet; a code point outside it is shown, not dropped.
      std::string out;
      for (uint32_t cpt : utf8_to_codepoints(text)) {
        const int byte = gpt2_codepoint_to_byte(cpt);
        if (byte >= 0) {
          out.push_back(static_cast<char>(byte));
          continue;
        }
        static constexpr char kHex[] = "0123456789abcdef";
        out += "[UNK_BYTE_0x";
        for (char c : codepoint_to_utf8(cpt)) {
          out.push_back(kHex[static_cast<uint8_t>(c) >> 4]);
          out.push_back(kHex[static_cast<uint8_t>(c) & 15]);
        }
        out += text + "]";
      }
      return out;
    }
    // SPM and WPM spell a space as U+2581.
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
      if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
        out.push_back(' ');
        i += 3;
      } else {
        out.push_back(text[i++]);
      }
    }
    return out;
  }
  if (bits & kAttrByte) {
    const int value = byte_token_value(text);
    return value >= 0 ? std::string(1, static_cast<char>(value)) : std::string();
  }
  return "";
}

}  // namespace runnel
