// Small hand-made vocabularies (GGUF metadata built in memory) for tests that
// need to control every token, score and merge.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/gguf/gguf.h"
#include "core/tokenizer/byte_encoding.h"
#include "core/tokenizer/utf8.h"

namespace runnel::tokenizer_test {

inline GgufValue gguf_string(std::string s) {
  GgufValue v;
  v.type = GgufType::STRING;
  v.value = std::move(s);
  return v;
}

inline GgufValue gguf_u32(uint64_t x) {
  GgufValue v;
  v.type = GgufType::U32;
  v.value = x;
  return v;
}

inline GgufValue gguf_bool(bool b) {
  GgufValue v;
  v.type = GgufType::BOOL;
  v.value = b;
  return v;
}

inline GgufValue gguf_strings(std::vector<std::string> xs) {
  GgufValue v;
  v.type = GgufType::ARRAY;
  v.elem_type = GgufType::STRING;
  v.value = std::move(xs);
  return v;
}

inline GgufValue gguf_i32s(std::vector<int64_t> xs) {
  GgufValue v;
  v.type = GgufType::ARRAY;
  v.elem_type = GgufType::I32;
  v.value = std::move(xs);
  return v;
}

inline GgufValue gguf_f32s(std::vector<double> xs) {
  GgufValue v;
  v.type = GgufType::ARRAY;
  v.elem_type = GgufType::F32;
  v.value = std::move(xs);
  return v;
}

// A vocabulary under construction: (text, token type, score) per token, in id order.
struct VocabBuilder {
  std::vector<std::string> texts;
  std::vector<int64_t> types;
  std::vector<double> scores;

  int add(std::string text, int type = 1, double score = 0.0) {
    texts.push_back(std::move(text));
    types.push_back(type);
    scores.push_back(score);
    return static_cast<int>(texts.size()) - 1;
  }

  // The 256 SPM byte tokens <0x00>..<0xFF>.
  void add_spm_bytes() {
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) add(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">", 6);
  }

  // The 256 single-character tokens of GPT-2's byte alphabet.
  void add_gpt2_bytes() {
    for (int b = 0; b < 256; ++b)
      add(codepoint_to_utf8(gpt2_byte_to_codepoint(static_cast<uint8_t>(b))));
  }

  int id(const std::string& text) const {
    for (size_t i = 0; i < texts.size(); ++i) {
      if (texts[i] == text) return static_cast<int>(i);
    }
    return -1;
  }

  GgufMetadata metadata(const std::string& model) const {
    GgufMetadata md;
    md.set("tokenizer.ggml.model", gguf_string(model));
    md.set("tokenizer.ggml.tokens", gguf_strings(texts));
    md.set("tokenizer.ggml.token_type", gguf_i32s(types));
    md.set("tokenizer.ggml.scores", gguf_f32s(scores));
    return md;
  }
};

}  // namespace runnel::tokenizer_test
