// MmapStore: spans point into the mapping, split parts are found by name, and bad
// paths fail with messages that name them.
#include "native/mmap_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/gguf/gguf_writer.h"
#include "tests/core/gguf/malformed_corpus.h"
#include "tests/test_models.h"

using namespace runnel;

namespace {

// A fresh directory under /tmp, removed with its files at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "runnel-mmap-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::vector<uint8_t> pattern(size_t n, uint8_t start) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(start + 13 * i);
  return v;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

bool inside(std::span<const uint8_t> inner, std::span<const uint8_t> outer) {
  return inner.data() >= outer.data() && inner.data() + inner.size() <= outer.data() + outer.size();
}

std::string open_error(const std::string& path) {
  try {
    MmapStore::open(path);
  } catch (const GgufError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("MmapStore serves tensor bytes straight from the mapping", "[gguf][mmap]") {
  TempDir dir;
  const std::vector<uint8_t> norm = pattern(4 * 16, 1);
  const std::vector<uint8_t> q = pattern(3 * 34, 2);
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.add_tensor("output_norm.weight", GgmlType::F32, {16}, norm);
  w.add_tensor("blk.0.attn_q.weight", GgmlType::Q8_0, {32, 3}, q);
  const std::string path = dir.file("m.gguf");
  w.write_file(path);

  std::unique_ptr<MmapStore> store = MmapStore::open(path);
  const GgufModel& model = store->model();
  CHECK(model.metadata.get_string("general.architecture") == "llama");
  REQUIRE(model.tensors.size() == 2);
  CHECK(store->mapped_bytes(0).size() == std::filesystem::file_size(path));

  const std::span<const uint8_t> a = store->tensor_bytes(*model.find_tensor("output_norm.weight"));
  const std::span<const uint8_t> b = store->tensor_bytes(*model.find_tensor("blk.0.attn_q.weight"));
  CHECK(std::vector<uint8_t>(a.begin(), a.end()) == norm);
  CHECK(std::vector<uint8_t>(b.begin(), b.end()) == q);
  CHECK(inside(a, store->mapped_bytes(0)));
  CHECK(inside(b, store->mapped_bytes(0)));
  CHECK(b.data() - store->mapped_bytes(0).data() ==
        static_cast<ptrdiff_t>(model.files[0].data_offset() + 64));

  // Hints change nothing observable; they must not fault either.
  store->prefetch(0);
  store->prefetch(-1);
  store->prefetch(7);
  store->acquire(0);
  store->release(0);
  CHECK(std::vector<uint8_t>(b.begin(), b.end()) == q);
}

TEST_CASE("MmapStore copies sit one after another in huge-page-aligned arenas", "[gguf][mmap]") {
  // Resident copies (repacked weights) are read whole every token: packed into 2 MiB
  // aligned arenas, every 2 MiB page of them can be a transparent huge page, where a
  // mapping per copy left the pages at each mapping's edges at 4 KiB.
  TempDir dir;
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.add_tensor("blk.0.attn_q.weight", GgmlType::Q8_0, {32, 3}, pattern(3 * 34, 2));
  w.add_tensor("blk.0.attn_k.weight", GgmlType::Q8_0, {32, 3}, pattern(3 * 34, 3));
  w.add_tensor("blk.1.attn_q.weight", GgmlType::Q8_0, {32, 3}, pattern(3 * 34, 4));
  const std::string path = dir.file("m.gguf");
  w.write_file(path);
  std::unique_ptr<MmapStore> store = MmapStore::open(path);
  const GgufModel& model = store->model();

  constexpr size_t kHuge = size_t{2} << 20;
  const size_t sizes[] = {3 * kHuge + 100, 5000, 7 * kHuge};
  const char* names[] = {"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.1.attn_q.weight"};
  std::vector<uint8_t*> copies;
  for (int i = 0; i < 3; ++i) {
    uint8_t* p = store->copy_space(*model.find_tensor(names[i]), sizes[i]);
    REQUIRE(p != nullptr);
    std::memset(p, 0x40 + i, sizes[i]);  // writable, every byte
    copies.push_back(p);
  }
  CHECK(reinterpret_cast<uintptr_t>(copies[0]) % kHuge == 0);
  for (int i = 1; i < 3; ++i) {
    CHECK(reinterpret_cast<uintptr_t>(copies[i]) % 4096 == 0);
    CHECK(copies[i] >= copies[i - 1] + sizes[i - 1]);  // no overlap
    CHECK(copies[i] < copies[i - 1] + sizes[i - 1] + 4096);  // no gap beyond a page
  }
  for (int i = 0; i < 3; ++i) {
    CHECK(copies[i][0] == 0x40 + i);
    CHECK(copies[i][sizes[i] - 1] == 0x40 + i);
  }
  CHECK(store->copy_bytes() == sizes[0] + sizes[1] + sizes[2]);
  CHECK(store->copy_space(*model.find_tensor(names[0]), 0) == nullptr);
}

TEST_CASE("MmapStore opens every part of a split model from the first", "[gguf][mmap]") {
  TempDir dir;
  auto part = [&](int no, const std::string& tensor, uint8_t seed) {
    GgufWriter w;
    if (no == 0) w.set_string("general.architecture", "llama");
    w.set("split.no", GgufValue{GgufType::U16, GgufType::U8, static_cast<uint64_t>(no)});
    w.set("split.count", GgufValue{GgufType::U16, GgufType::U8, uint64_t{2}});
    w.set_i32("split.tensors.count", 2);
    w.add_tensor(tensor, GgmlType::F32, {8}, pattern(32, seed));
    w.write_file(dir.file("m-0000" + std::to_string(no + 1) + "-of-00002.gguf"));
  };
  part(0, "token_embd.weight", 10);
  part(1, "blk.0.ffn_up.weight", 20);

  std::unique_ptr<MmapStore> store = MmapStore::open(dir.file("m-00001-of-00002.gguf"));
  const GgufModel& model = store->model();
  REQUIRE(model.files.size() == 2);
  REQUIRE(model.tensors.size() == 2);
  const GgufTensorInfo& up = *model.find_tensor("blk.0.ffn_up.weight");
  CHECK(up.file_index == 1);
  const std::span<const uint8_t> bytes = store->tensor_bytes(up);
  CHECK(std::vector<uint8_t>(bytes.begin(), bytes.end()) == pattern(32, 20));
  CHECK(inside(bytes, store->mapped_bytes(1)));
  CHECK_FALSE(inside(bytes, store->mapped_bytes(0)));
  store->prefetch(0);

  std::filesystem::remove(dir.file("m-00002-of-00002.gguf"));
  CHECK(open_error(dir.file("m-00001-of-00002.gguf")) ==
        "cannot open " + dir.file("m-00002-of-00002.gguf") + ": No such file or directory");
}

TEST_CASE("MmapStore names bad paths", "[gguf][mmap]") {
  TempDir dir;
  CHECK(open_error(dir.file("absent.gguf")) ==
        "cannot open " + dir.file("absent.gguf") + ": No such file or directory");
  CHECK(open_error(dir.path().string()) ==
        dir.path().string() + ": is a directory, not a GGUF file");
  write_bytes(dir.file("empty.gguf"), {});
  CHECK(open_error(dir.file("empty.gguf")) ==
        dir.file("empty.gguf") + ": empty file (0 bytes), not a GGUF file");
  const std::string text = "# not a model\n";
  write_bytes(dir.file("notes.txt"), std::vector<uint8_t>(text.begin(), text.end()));
  CHECK(open_error(dir.file("notes.txt")) ==
        dir.file("notes.txt") + ": not a GGUF file (magic 0x23206e6f \"# no\", expected \"GGUF\")");
}

TEST_CASE("MmapStore refuses every malformed corpus file", "[gguf][mmap]") {
  TempDir dir;
  int index = 0;
  for (const MalformedCase& c : malformed_gguf_corpus()) {
    INFO("case: " << c.name);
    const std::string path = dir.file("case" + std::to_string(index++) + ".gguf");
    write_bytes(path, c.bytes);
    const std::string message = open_error(path);
    INFO("message: " << message);
    CHECK(message.rfind(path + ": ", 0) == 0);
    CHECK(message.find(c.expected_error_substring) != std::string::npos);
  }
}

TEST_CASE("layer_of_tensor reads blk.N. prefixes", "[gguf][mmap]") {
  CHECK(layer_of_tensor("blk.0.attn_q.weight") == 0);
  CHECK(layer_of_tensor("blk.27.ffn_down.weight") == 27);
  CHECK(layer_of_tensor("token_embd.weight") == -1);
  CHECK(layer_of_tensor("blk.x.attn_q.weight") == -1);
  CHECK(layer_of_tensor("blk.3") == -1);
  CHECK(layer_of_tensor("blk..a") == -1);
  CHECK(layer_of_tensor("blk.99999999999.a") == -1);
}

TEST_CASE("MmapStore maps the real model", "[.real]") {
  const std::string path = test::kSmolLm2Path;
  if (!std::filesystem::exists(path)) {
    WARN("no model at " << path);
    return;
  }
  std::unique_ptr<MmapStore> store = MmapStore::open(path);
  const GgufTensorInfo* embd = store->model().find_tensor("token_embd.weight");
  REQUIRE(embd != nullptr);
  const std::span<const uint8_t> bytes = store->tensor_bytes(*embd);
  CHECK(bytes.size() == embd->n_bytes);
  CHECK(inside(bytes, store->mapped_bytes(0)));
  for (int layer = -1; layer < 30; ++layer) store->prefetch(layer);
}
