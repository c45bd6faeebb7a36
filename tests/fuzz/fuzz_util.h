// Helpers shared by the fuzz targets: test data read once per process, and inputs cut
// into parts at a separator (a split GGUF set, a template and its messages).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/gguf/gguf.h"
#include "core/tokenizer/tokenizer.h"

namespace runnel::fuzz {

inline std::string data_path(const std::string& relative) {
  return std::string(RUNNEL_TEST_DATA) + "/" + relative;
}

// Test data the target cannot run without: a missing file ends the process with its
// name (a set-up problem, not a finding).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fuzz: cannot open %s\n", path.c_str());
    std::exit(2);
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The tokenizer of a vocab-only GGUF in tests/data/tokenizer (e.g. "ggml-vocab-gpt-2.gguf").
inline std::unique_ptr<Tokenizer> load_vocab(const std::string& name) {
  const std::string text = read_file(data_path("tokenizer/" + name));
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  return Tokenizer::from_metadata(GgufFile::parse(bytes, name).metadata());
}

// `input` cut at each occurrence of `separator` (no separator: one part).
inline std::vector<std::string_view> split_input(std::string_view input, std::string_view separator) {
  std::vector<std::string_view> parts;
  for (;;) {
    const size_t at = input.find(separator);
    if (at == std::string_view::npos) break;
    parts.push_back(input.substr(0, at));
    input.remove_prefix(at + separator.size());
  }
  parts.push_back(input);
  return parts;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace runnel::fuzz
