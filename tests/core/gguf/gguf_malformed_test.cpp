// The reader against the malformed corpus, every prefix of a valid file, and random
// corruption: each bad input is refused with one GgufError line naming the problem.
#include <catch2/catch.hpp>
#include <random>
#include <set>

#include "tests/core/gguf/malformed_corpus.h"

using namespace runnel;

namespace {

// The GgufError message of parsing `bytes`, or "" when it parses. Any other exception
// type escapes and fails the test.
std::string parse_error(const std::vector<uint8_t>& bytes, const std::string& name) {
  try {
    GgufFile::parse(bytes, name);
  } catch (const GgufError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("malformed corpus: the base file is valid", "[gguf]") {
  const std::vector<uint8_t> base = malformed_base_file();
  const GgufFile f = GgufFile::parse(base, "base.gguf");
  CHECK(f.version() == 3);
  CHECK(f.metadata().entries().size() == 8);
  CHECK(f.metadata().get_string("general.architecture") == "llama");
  CHECK(f.metadata().find_string_array("tokenizer.ggml.tokens")->at(5) == "runnel");
  REQUIRE(f.tensors().size() == 3);
  CHECK(f.tensors()[1].name == "blk.0.attn_q.weight");
  CHECK(f.tensors()[1].n_bytes == 2 * 2 * 34);
  CHECK(f.data_offset() % 32 == 0);
  CHECK(f.data_offset() + f.tensors()[2].offset + f.tensors()[2].n_bytes == base.size());
}

TEST_CASE("malformed corpus: every case is refused with its message", "[gguf]") {
  const std::vector<MalformedCase> corpus = malformed_gguf_corpus();
  REQUIRE(corpus.size() >= 40);
  for (const MalformedCase& c : corpus) {
    INFO("case: " << c.name);
    const std::string message = parse_error(c.bytes, "case.gguf");
    INFO("message: " << message);
    CHECK(message.find(c.expected_error_substring) != std::string::npos);
    CHECK(message.rfind("case.gguf: ", 0) == 0);
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("malformed corpus: case names are unique", "[gguf]") {
  std::set<std::string> names;
  for (const MalformedCase& c : malformed_gguf_corpus()) CHECK(names.insert(c.name).second);
}

TEST_CASE("every proper prefix of a valid file is refused", "[gguf]") {
  const std::vector<uint8_t> base = malformed_base_file();
  // The header ends with the offset field of the last tensor info.
  const size_t header_end = malformed_detail::tensor_at(base, "blk.0.attn_k.weight", 2).offset + 8;
  REQUIRE(header_end < GgufFile::parse(base, "base.gguf").data_offset());
  for (size_t n = 0; n < base.size(); ++n) {
    const std::vector<uint8_t> prefix(base.begin(), base.begin() + static_cast<long>(n));
    const std::string message = parse_error(prefix, "p.gguf");
    INFO("prefix of " << n << " bytes: " << message);
    REQUIRE(!message.empty());
    if (n < header_end) {
      CHECK(message.find("truncated header") != std::string::npos);
    } else {
      CHECK(message.find("exceeds file size") != std::string::npos);
    }
  }
}

TEST_CASE("random corruption of the header gives GgufError or a valid parse", "[gguf]") {
  const std::vector<uint8_t> base = malformed_base_file();
  const size_t header_bytes = GgufFile::parse(base, "b").data_offset();
  std::mt19937 rng(20240611);
  int refused = 0;
  int accepted = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::vector<uint8_t> b = base;
    const int n_flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < n_flips; ++i) {
      const size_t at = rng() % header_bytes;
      const uint8_t flipped = static_cast<uint8_t>(b[at] ^ (1u << (rng() % 8)));
      b[at] = iter % 3 == 0 ? static_cast<uint8_t>(rng()) : flipped;
    }
    const std::string message = parse_error(b, "r.gguf");
    if (message.empty()) {
      ++accepted;
    } else {
      ++refused;
      CHECK(message.find('\n') == std::string::npos);
    }
  }
  // Most flips land in lengths, ids, counts and names; some hit values and still parse.
  CHECK(refused > 1000);
  CHECK(accepted > 100);
}
