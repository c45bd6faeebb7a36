// llama.cpp's tokenizer test vectors (tests/data/tokenizer): for each vocab-only
// GGUF, the .inp file holds inputs separated by "\n__ggml_vocab_test__\n" (the
// newline before a separator is not part of the input) and the .out file one line
// of token ids per input, tokenized without BOS/EOS and without special parsing.
#include <catch2/catch.hpp>
#include <sstream>

#include "tests/core/tokenizer/tokenizer_test_util.h"

namespace runnel {
namespace {

std::vector<std::string> read_inputs(const std::string& path) {
  const std::string text = tokenizer_test::read_file(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  size_t begin = 0;
  while (true) {
    const size_t at = text.find(sep, begin);
    if (at == std::string::npos) break;
    inputs.push_back(text.substr(begin, at - begin));
    begin = at + sep.size();
  }
  return inputs;
}

std::vector<std::vector<TokenId>> read_outputs(const std::string& path) {
  std::istringstream in(tokenizer_test::read_file(path));
  std::vector<std::vector<TokenId>> outputs;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ids(line);
    std::vector<TokenId>& out = outputs.emplace_back();
    for (TokenId id; ids >> id;) out.push_back(id);
  }
  return outputs;
}

std::string show_ids(const std::vector<TokenId>& ids) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < ids.size(); ++i) s << (i ? " " : "") << ids[i];
  s << ']';
  return s.str();
}

// The input with control characters escaped, for failure messages.
std::string show_text(const std::string& text) {
  std::string s = "\"";
  for (char c : text) {
    if (c == '\n') {
      s += "\\n";
    } else if (c == '\t') {
      s += "\\t";
    } else if (c == '\r') {
      s += "\\r";
    } else {
      s += c;
    }
  }
  return s + "\"";
}

void check_vectors(const std::string& name) {
  const std::string gguf = tokenizer_test::tokenizer_data(name + ".gguf");
  const auto tok = tokenizer_test::load_tokenizer(gguf);
  const auto inputs = read_inputs(gguf + ".inp");
  const auto outputs = read_outputs(gguf + ".out");
  REQUIRE(inputs.size() == outputs.size());
  REQUIRE(inputs.size() > 40);

  size_t mismatches = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<TokenId> got = tok->encode(inputs[i], false, false);
    if (got == outputs[i]) continue;
    if (mismatches++ == 0) {
      FAIL_CHECK(name << ": input #" << i << " " << show_text(inputs[i]) << "\n  expected "
                      << show_ids(outputs[i]) << "\n  got      " << show_ids(got));
    }
  }
  INFO(name << ": " << mismatches << " of " << inputs.size() << " inputs differ");
  CHECK(mismatches == 0);
}

TEST_CASE("tokenizer matches llama.cpp's vectors", "[tokenizer]") {
  for (const char* name :
       {"ggml-vocab-llama-spm", "ggml-vocab-phi-3", "ggml-vocab-gpt-2", "ggml-vocab-deepseek-coder",
        "ggml-vocab-falcon", "ggml-vocab-bert-bge"}) {
    DYNAMIC_SECTION(name) {
      check_vectors(name);
    }
  }
}

TEST_CASE("test vector files parse as documented", "[tokenizer]") {
  const auto inputs = read_inputs(tokenizer_test::tokenizer_data("ggml-vocab-gpt-2.gguf.inp"));
  REQUIRE(inputs.size() == 46);
  CHECK(inputs[0] == "ied 4 \xC2\xBD months");
  CHECK(inputs[2].empty());
  CHECK(inputs[3] == " ");
  CHECK(inputs[7] == "\n");
  CHECK(inputs[8] == "\n\n");
  const auto outputs = read_outputs(tokenizer_test::tokenizer_data("ggml-vocab-gpt-2.gguf.out"));
  REQUIRE(outputs.size() == 46);
  CHECK(outputs[2].empty());
  CHECK(outputs[7] == std::vector<TokenId>{198});
}

}  // namespace
}  // namespace runnel
