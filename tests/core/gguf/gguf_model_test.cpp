// GgufModel::join (split models) and split_paths.
#include <catch2/catch.hpp>

#include "core/gguf/gguf_writer.h"

using namespace runnel;

namespace {

// Part `no` of an `count`-part model holding the tensors named in `names` (F32 [4]),
// with the split.* keys gguf-split writes (split.tensors.count = `total`).
std::vector<uint8_t> split_part(int no, int count, int total,
                                const std::vector<std::string>& names) {
  GgufWriter w;
  if (no == 0) w.set_string("general.architecture", "llama");
  w.set("split.no", GgufValue{GgufType::U16, GgufType::U8, static_cast<uint64_t>(no)});
  w.set("split.count", GgufValue{GgufType::U16, GgufType::U8, static_cast<uint64_t>(count)});
  w.set_i32("split.tensors.count", total);
  for (const std::string& n : names) w.add_tensor(n, GgmlType::F32, {4}, std::vector<uint8_t>(16));
  return w.bytes();
}

std::vector<GgufFile> parse_all(const std::vector<std::vector<uint8_t>>& parts) {
  std::vector<GgufFile> files;
  for (size_t i = 0; i < parts.size(); ++i) {
    files.push_back(GgufFile::parse(parts[i], "m-0000" + std::to_string(i + 1) + "-of-0000" +
                                                  std::to_string(parts.size()) + ".gguf"));
  }
  return files;
}

}  // namespace

TEST_CASE("join of a single file keeps its tensors and metadata", "[gguf]") {
  GgufWriter w;
  w.set_string("general.architecture", "qwen2");
  w.add_tensor("a", GgmlType::F32, {1}, std::vector<uint8_t>(4));
  w.add_tensor("b", GgmlType::F32, {2}, std::vector<uint8_t>(8));
  const std::vector<uint8_t> bytes = w.bytes();
  std::vector<GgufFile> files;
  files.push_back(GgufFile::parse(bytes, "one.gguf"));
  const GgufModel m = GgufModel::join(std::move(files));
  CHECK(m.files.size() == 1);
  CHECK(m.metadata.get_string("general.architecture") == "qwen2");
  REQUIRE(m.tensors.size() == 2);
  CHECK(m.find_tensor("b")->offset == 32);
  CHECK(m.find_tensor("b")->file_index == 0);
  CHECK(m.find_tensor("c") == nullptr);
}

TEST_CASE("join of split parts tags tensors with their file", "[gguf]") {
  const std::vector<std::vector<uint8_t>> parts = {
      split_part(0, 3, 5, {"token_embd.weight", "blk.0.attn_q.weight"}),
      split_part(1, 3, 5, {"blk.0.attn_k.weight"}),
      split_part(2, 3, 5, {"blk.1.attn_q.weight", "output.weight"}),
  };
  const GgufModel m = GgufModel::join(parse_all(parts));
  REQUIRE(m.files.size() == 3);
  REQUIRE(m.tensors.size() == 5);
  CHECK(m.metadata.get_string("general.architecture") == "llama");
  CHECK(m.tensors[2].name == "blk.0.attn_k.weight");
  CHECK(m.find_tensor("blk.0.attn_k.weight")->file_index == 1);
  CHECK(m.find_tensor("output.weight")->file_index == 2);
  CHECK(m.find_tensor("output.weight")->offset == 32);
  CHECK(m.find_tensor("token_embd.weight")->file_index == 0);
  // the per-file tables keep file_index 0; the joined table carries the part
  CHECK(m.files[2].tensors()[1].name == "output.weight");
}

TEST_CASE("join refuses inconsistent split parts", "[gguf]") {
  SECTION("parts out of order") {
    const std::vector<std::vector<uint8_t>> parts = {split_part(0, 2, 2, {"a"}),
                                                     split_part(0, 2, 2, {"b"})};
    CHECK_THROWS_WITH(GgufModel::join(parse_all(parts)),
                      "m-00002-of-00002.gguf: split.no is 0, expected 1 (file 2 of 2)");
  }
  SECTION("split.count disagrees with the number of files") {
    const std::vector<std::vector<uint8_t>> parts = {split_part(0, 3, 2, {"a"}),
                                                     split_part(1, 3, 2, {"b"})};
    CHECK_THROWS_WITH(GgufModel::join(parse_all(parts)),
                      "m-00001-of-00002.gguf: split.count is 3 but 2 files were given");
  }
  SECTION("split.tensors.count disagrees with the tensors found") {
    const std::vector<std::vector<uint8_t>> parts = {split_part(0, 2, 3, {"a"}),
                                                     split_part(1, 2, 3, {"b"})};
    CHECK_THROWS_WITH(GgufModel::join(parse_all(parts)),
                      "m-00001-of-00002.gguf: split.tensors.count is 3 but the 2 files hold 2 "
                      "tensors");
  }
  SECTION("the same tensor in two parts") {
    const std::vector<std::vector<uint8_t>> parts = {split_part(0, 2, 2, {"a"}),
                                                     split_part(1, 2, 2, {"a"})};
    CHECK_THROWS_WITH(GgufModel::join(parse_all(parts)),
                      "m-00002-of-00002.gguf: tensor a is also in m-00001-of-00002.gguf");
  }
  SECTION("a part without split keys") {
    GgufWriter w;
    w.add_tensor("b", GgmlType::F32, {1}, std::vector<uint8_t>(4));
    const std::vector<std::vector<uint8_t>> parts = {split_part(0, 2, 2, {"a"}), w.bytes()};
    CHECK_THROWS_WITH(GgufModel::join(parse_all(parts)),
                      "m-00002-of-00002.gguf: part 2 of a 2-file model has no split.count");
  }
  SECTION("split.no of the wrong type") {
    GgufWriter w;
    w.set_string("split.no", "1");
    w.set("split.count", GgufValue{GgufType::U16, GgufType::U8, uint64_t{2}});
    const std::vector<std::vector<uint8_t>> parts = {split_part(0, 2, 1, {"a"}), w.bytes()};
    CHECK_THROWS_WITH(GgufModel::join(parse_all(parts)),
                      "m-00002-of-00002.gguf: metadata key 'split.no' has type string, expected "
                      "an integer");
  }
  SECTION("only the first part of a split model") {
    const std::vector<std::vector<uint8_t>> parts = {split_part(0, 3, 3, {"a"})};
    CHECK_THROWS_WITH(GgufModel::join(parse_all(parts)),
                      Catch::Contains("split.count is 3 but only this file was given") &&
                          Catch::Contains("-00001-of-00003.gguf"));
  }
  SECTION("no files") {
    CHECK_THROWS_AS(GgufModel::join({}), GgufError);
  }
}

TEST_CASE("split_paths expands the first part of a split model", "[gguf]") {
  CHECK(split_paths("dir/m-00001-of-00003.gguf") ==
        std::vector<std::string>{"dir/m-00001-of-00003.gguf", "dir/m-00002-of-00003.gguf",
                                 "dir/m-00003-of-00003.gguf"});
  CHECK(split_paths("-00001-of-00002.gguf") ==
        std::vector<std::string>{"-00001-of-00002.gguf", "-00002-of-00002.gguf"});
  CHECK(split_paths("m-00001-of-00001.gguf") == std::vector<std::string>{"m-00001-of-00001.gguf"});
  CHECK(split_paths("model.gguf") == std::vector<std::string>{"model.gguf"});
  // not the first part, or not the 5-digit pattern: just the path
  CHECK(split_paths("m-00002-of-00003.gguf") == std::vector<std::string>{"m-00002-of-00003.gguf"});
  CHECK(split_paths("m-0001-of-0003.gguf") == std::vector<std::string>{"m-0001-of-0003.gguf"});
  CHECK(split_paths("m-00001-of-00003.bin") == std::vector<std::string>{"m-00001-of-00003.bin"});
  CHECK(split_paths("m-00001-of-00000.gguf") == std::vector<std::string>{"m-00001-of-00000.gguf"});
  CHECK(split_paths("m-0000a-of-00003.gguf") == std::vector<std::string>{"m-0000a-of-00003.gguf"});
  CHECK(split_paths("").size() == 1);
}
