// Encoding speed on ~10 kB of mixed text, per vocabulary. Hidden ([.]): it prints
// figures and asserts nothing about time; run with `unit_tests "[tokenizer-bench]"`.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "tests/core/tokenizer/tokenizer_test_util.h"
#include "tests/test_models.h"

namespace runnel {
namespace {

std::string sample_text(size_t n_bytes) {
  // The llama.cpp vector inputs: English, code-like text, CJK, emoji, Cyrillic.
  const std::string inputs =
      tokenizer_test::read_file(tokenizer_test::tokenizer_data("ggml-vocab-gpt-2.gguf.inp"));
  std::string text;
  while (text.size() < n_bytes) text += inputs;
  text.resize(n_bytes);
  while (!text.empty() && (static_cast<uint8_t>(text.back()) & 0xC0) == 0x80) text.pop_back();
  return text;
}

TEST_CASE("tokenizer encode speed", "[.][tokenizer-bench]") {
  const std::string text = sample_text(10 * 1024);
  std::vector<std::string> files;
  for (const char* name :
       {"ggml-vocab-llama-spm", "ggml-vocab-phi-3", "ggml-vocab-gpt-2", "ggml-vocab-deepseek-coder",
        "ggml-vocab-falcon", "ggml-vocab-bert-bge"}) {
    files.push_back(tokenizer_test::tokenizer_data(std::string(name) + ".gguf"));
  }
  const char* smol = test::kSmolLm2Path;
  if (std::filesystem::exists(smol)) files.push_back(smol);
  for (const std::string& file : files) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto tok = tokenizer_test::load_tokenizer(file);
    const auto t1 = std::chrono::steady_clock::now();
    size_t n_tokens = 0;
    const int reps = 5;
    for (int r = 0; r < reps; ++r) n_tokens = tok->encode(text, false, true).size();
    const auto t2 = std::chrono::steady_clock::now();
    const double load_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    const double enc_ms = std::chrono::duration<double, std::milli>(t2 - t1).count() / reps;
    std::cout << std::filesystem::path(file).filename().string() << ": load " << load_ms
              << " ms, encode " << text.size() << " bytes -> " << n_tokens << " tokens in "
              << enc_ms << " ms\n";
    CHECK(n_tokens > 0);
  }
}

}  // namespace
}  // namespace runnel
