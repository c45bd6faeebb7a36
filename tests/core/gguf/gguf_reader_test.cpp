// GgufFile::parse on valid input: typed metadata access, header-only prefixes,
// vocab-only files, the tokenizer test files and (hidden) a real model.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/gguf/gguf_writer.h"
#include "tests/core/gguf/malformed_corpus.h"
#include "tests/test_models.h"

using namespace runnel;

namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
}

GgufMetadata sample_metadata() {
  GgufWriter w;
  w.set_u32("u32", 7);
  w.set_i32("neg", -3);
  w.set_i32("pos", 12);
  w.set("big", GgufValue{GgufType::U64, GgufType::U8, ~uint64_t{0}});
  w.set_f32("eps", 1e-6f);
  w.set_bool("flag", true);
  w.set_string("name", "smol");
  w.set_string_array("tokens", {"a", "b"});
  w.set("scores", GgufValue{GgufType::ARRAY, GgufType::F32, std::vector<double>{-1.5, 2}});
  w.set("types", GgufValue{GgufType::ARRAY, GgufType::I32, std::vector<int64_t>{1, -2}});
  w.set("ids", GgufValue{GgufType::ARRAY, GgufType::U32, std::vector<uint64_t>{4, 5}});
  w.set("huge_ids", GgufValue{GgufType::ARRAY, GgufType::U64, std::vector<uint64_t>{~uint64_t{0}}});
  const std::vector<uint8_t> bytes = w.bytes();
  return GgufFile::parse(bytes, "md.gguf").metadata();
}

}  // namespace

TEST_CASE("metadata typed access converts integers when they fit", "[gguf]") {
  const GgufMetadata md = sample_metadata();
  CHECK(md.get_u64("u32") == 7);
  CHECK(md.get_i64("u32") == 7);
  CHECK(md.get_u64("pos") == 12);
  CHECK(md.get_i64("neg") == -3);
  CHECK(md.get_f64("neg") == -3.0);
  CHECK(md.get_f64("eps") == static_cast<double>(1e-6f));
  CHECK(md.get_bool("flag"));
  CHECK(md.get_string("name") == "smol");
  CHECK(md.get_u64("big") == ~uint64_t{0});
  CHECK_THROWS_WITH(md.get_i64("big"),
                    "metadata key 'big' value 18446744073709551615 does not fit i64");
  CHECK_THROWS_WITH(md.get_u64("neg"), "metadata key 'neg' value -3 does not fit u64");
  CHECK_THROWS_WITH(md.get_string("u32"), "metadata key 'u32' has type u32, expected string");
  CHECK_THROWS_WITH(md.get_u64("eps"), "metadata key 'eps' has type f32, expected an integer");
  CHECK_THROWS_WITH(md.get_bool("name"), "metadata key 'name' has type string, expected bool");
  CHECK_THROWS_WITH(md.get_f64("tokens"),
                    "metadata key 'tokens' has type array of string, expected a number");
  CHECK_THROWS_WITH(md.get_u64("absent"), "metadata key 'absent' is missing");
  CHECK_FALSE(md.find_u64("absent").has_value());
  CHECK_FALSE(md.find_string("absent").has_value());
  CHECK(md.find("absent") == nullptr);
  CHECK(md.has("eps"));
  CHECK_FALSE(md.has("ep"));
}

TEST_CASE("metadata arrays convert by element class", "[gguf]") {
  const GgufMetadata md = sample_metadata();
  CHECK(*md.find_string_array("tokens") == std::vector<std::string>{"a", "b"});
  CHECK(*md.find_f64_array("scores") == std::vector<double>{-1.5, 2});
  CHECK(*md.find_f64_array("types") == std::vector<double>{1, -2});
  CHECK(*md.find_i64_array("types") == std::vector<int64_t>{1, -2});
  CHECK(*md.find_i64_array("ids") == std::vector<int64_t>{4, 5});
  CHECK(md.find("ids")->array_size() == 2);
  CHECK(md.find("u32")->array_size() == 0);
  CHECK(md.find_string_array("absent") == nullptr);
  CHECK_FALSE(md.find_i64_array("absent").has_value());
  CHECK_THROWS_WITH(md.find_string_array("types"),
                    "metadata key 'types' has type array of i32, expected array of string");
  CHECK_THROWS_WITH(md.find_i64_array("scores"),
                    "metadata key 'scores' has type array of f32, expected array of integers");
  CHECK_THROWS_WITH(md.find_i64_array("huge_ids"), Catch::Contains("does not fit i64"));
  CHECK_THROWS_WITH(md.find_f64_array("u32"), Catch::Contains("expected array of numbers"));
}

TEST_CASE("tensor info shapes", "[gguf]") {
  GgufTensorInfo t;
  t.dims = {64, 3, 2};
  CHECK(t.n_elements() == 384);
  CHECK(t.n_rows() == 6);
  t.dims = {10};
  CHECK(t.n_rows() == 1);
}

TEST_CASE("a header-only prefix parses against the full file size", "[gguf]") {
  const std::vector<uint8_t> base = malformed_base_file();
  const GgufFile whole = GgufFile::parse(base, "whole.gguf");
  const size_t header_end = malformed_detail::tensor_at(base, "blk.0.attn_k.weight", 2).offset + 8;

  const GgufFile head = GgufFile::parse(std::span(base).first(header_end), base.size(), "h.gguf");
  CHECK(head.file_size() == base.size());
  CHECK(head.data_offset() == whole.data_offset());
  REQUIRE(head.tensors().size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(head.tensors()[i].name == whole.tensors()[i].name);
    CHECK(head.tensors()[i].offset == whole.tensors()[i].offset);
    CHECK(head.tensors()[i].n_bytes == whole.tensors()[i].n_bytes);
  }
  CHECK(head.find_tensor("blk.0.attn_q.weight")->dims == std::vector<int64_t>{64, 2});
  CHECK(head.find_tensor("blk.0.attn_v.weight") == nullptr);

  CHECK_THROWS_WITH(
      GgufFile::parse(std::span(base).first(header_end - 1), base.size(), "h.gguf"),
      Catch::Contains("truncated header") && Catch::Contains("only the first 0x28b of 0x420"));
  CHECK_THROWS_WITH(GgufFile::parse(std::span(base), base.size() - 1, "h.gguf"),
                    Catch::Contains("1056 bytes given for a file of 1055 bytes"));
}

TEST_CASE("files without tensors load", "[gguf]") {
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  const std::vector<uint8_t> bytes = w.bytes();
  const GgufFile f = GgufFile::parse(bytes, "vocab.gguf");
  CHECK(f.tensors().empty());
  CHECK(f.metadata().get_string("tokenizer.ggml.model") == "llama");
  // Without tensors the data section starts right after the header (as in ggml).
  CHECK(f.data_offset() == 24 + 8 + 20 + 4 + 8 + 5);
  // llama.cpp's own vocab files stop at the header without padding.
  const std::vector<uint8_t> unpadded(bytes.begin(), bytes.begin() + 69);
  CHECK(GgufFile::parse(unpadded, "vocab.gguf").data_offset() == 69);
}

TEST_CASE("non-GGUF input is named as such", "[gguf]") {
  const std::string text = "hello world\n";
  const std::vector<uint8_t> bytes(text.begin(), text.end());
  CHECK_THROWS_WITH(GgufFile::parse(bytes, "notes.txt"),
                    "notes.txt: not a GGUF file (magic 0x68656c6c \"hell\", expected \"GGUF\")");
  const std::vector<uint8_t> two = {'G', 'X'};
  CHECK_THROWS_WITH(GgufFile::parse(two, "x"), Catch::Contains("not a GGUF file (magic 0x4758"));
  CHECK_THROWS_WITH(GgufFile::parse(std::vector<uint8_t>{}, "empty"),
                    "empty: truncated header: the magic at offset 0x0 needs 4 bytes, but the "
                    "file ends at 0x0");
}

TEST_CASE("the tokenizer test files parse", "[gguf]") {
  int n_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(RUNNEL_TEST_DATA "/tokenizer")) {
    if (entry.path().extension() != ".gguf") continue;
    ++n_files;
    const std::string path = entry.path().string();
    INFO(path);
    const std::vector<uint8_t> bytes = read_file(path);
    const GgufFile f = GgufFile::parse(bytes, path);
    CHECK(f.version() == 3);
    CHECK(f.tensors().empty());
    const std::vector<std::string>* tokens =
        f.metadata().find_string_array("tokenizer.ggml.tokens");
    REQUIRE(tokens != nullptr);
    CHECK(tokens->size() > 30000);
    CHECK(f.metadata().find_i64_array("tokenizer.ggml.token_type")->size() == tokens->size());
    CHECK_FALSE(f.metadata().get_string("general.architecture").empty());
    CHECK(f.metadata().find_string("tokenizer.ggml.model").has_value());
  }
  CHECK(n_files == 6);
}

TEST_CASE("a real model parses", "[.real]") {
  const std::string path = test::kSmolLm2Path;
  if (!std::filesystem::exists(path)) {
    WARN("no model at " << path);
    return;
  }
  const std::vector<uint8_t> bytes = read_file(path);
  const GgufFile f = GgufFile::parse(bytes, path);
  const GgufMetadata& md = f.metadata();
  CHECK(md.get_string("general.architecture") == "llama");
  const uint64_t n_layers = md.get_u64("llama.block_count");
  CHECK(n_layers == 30);
  CHECK(f.tensors().size() == 2 + 9 * n_layers);  // token_embd, output_norm, 9 per layer
  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  REQUIRE(embd != nullptr);
  CHECK(embd->dims == std::vector<int64_t>{576, 49152});
  CHECK(embd->dims[1] ==
        static_cast<int64_t>(md.find_string_array("tokenizer.ggml.tokens")->size()));
  const GgufTensorInfo& last = f.tensors().back();
  CHECK(f.data_offset() + last.offset + last.n_bytes <= f.file_size());
}
