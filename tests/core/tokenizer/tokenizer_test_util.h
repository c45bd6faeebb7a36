// Loading tokenizers from GGUF files for the tokenizer tests.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/gguf/gguf.h"
#include "core/tokenizer/tokenizer.h"

namespace runnel::tokenizer_test {

inline std::string tokenizer_data(const std::string& name) {
  return std::string(RUNNEL_TEST_DATA) + "/tokenizer/" + name;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Parses the metadata of a GGUF file, reading only as much of it as the header
// needs (a model's tensor data is not read).
inline GgufMetadata load_metadata(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open " + path);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  for (uint64_t prefix = 8u << 20;; prefix *= 2) {
    const uint64_t n = std::min(prefix, file_size);
    std::vector<uint8_t> bytes(n);
    in.seekg(0);
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(n));
    try {
      return GgufFile::parse(bytes, file_size, path).metadata();
    } catch (const GgufError&) {
      if (n == file_size) throw;  // a real error, not a short prefix
    }
  }
}

inline std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  return Tokenizer::from_metadata(load_metadata(path));
}

}  // namespace runnel::tokenizer_test
