// GgufWriter: exact bytes for a small file, and round trips through the reader.
#include "core/gguf/gguf_writer.h"

#include <catch2/catch.hpp>
#include <cstring>

using namespace runnel;

namespace {

std::vector<uint8_t> f32_bytes(std::initializer_list<float> values) {
  std::vector<uint8_t> out(values.size() * 4);
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

std::vector<uint8_t> pattern(size_t n, uint8_t start) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(start + i * 7);
  return v;
}

bool same_value(const GgufValue& a, const GgufValue& b) {
  return a.type == b.type && (a.type != GgufType::ARRAY || a.elem_type == b.elem_type) &&
         a.value == b.value;
}

}  // namespace

TEST_CASE("GgufWriter writes a small file byte for byte", "[gguf]") {
  GgufWriter w;
  w.set_u32("a.b", 7);
  w.set_string("s", "hi");
  w.add_tensor("t", GgmlType::F32, {2}, f32_bytes({1.0f, -2.0f}));

  // Worked out by hand from the GGUF v3 layout.
  std::vector<uint8_t> expected = {'G', 'G', 'U', 'F', 3, 0, 0, 0,  // magic, version
                                   1, 0, 0, 0, 0, 0, 0, 0,          // n_tensors
                                   2, 0, 0, 0, 0, 0, 0, 0,          // n_kv
                                   // "a.b" = u32 7
                                   3, 0, 0, 0, 0, 0, 0, 0, 'a', '.', 'b', 4, 0, 0, 0, 7, 0, 0, 0,
                                   // "s" = string "hi"
                                   1, 0, 0, 0, 0, 0, 0, 0, 's', 8, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
                                   'h', 'i',
                                   // tensor "t": n_dims 1, ne {2}, type F32 (0), offset 0
                                   1, 0, 0, 0, 0, 0, 0, 0, 't', 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
                                   0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  REQUIRE(expected.size() == 99);
  expected.resize(128, 0);  // pad the header to the 32-byte alignment
  const uint8_t data[] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0};  // 1.0f, -2.0f
  expected.insert(expected.end(), std::begin(data), std::end(data));
  expected.resize(160, 0);  // each tensor is padded to the alignment too

  CHECK(w.bytes() == expected);

  expected[4] = 2;
  CHECK(w.bytes(2) == expected);
}

TEST_CASE("GgufWriter output round-trips through the reader", "[gguf]") {
  using V = GgufValue;
  // Every scalar kind and every array class, as the reader must give them back.
  const std::vector<std::pair<std::string, GgufValue>> values = {
      {"k.u8", V{GgufType::U8, GgufType::U8, uint64_t{255}}},
      {"k.i8", V{GgufType::I8, GgufType::U8, int64_t{-128}}},
      {"k.u16", V{GgufType::U16, GgufType::U8, uint64_t{65535}}},
      {"k.i16", V{GgufType::I16, GgufType::U8, int64_t{-32768}}},
      {"k.u32", V{GgufType::U32, GgufType::U8, uint64_t{4000000000u}}},
      {"k.i32", V{GgufType::I32, GgufType::U8, int64_t{-2000000000}}},
      {"k.f32", V{GgufType::F32, GgufType::U8, static_cast<double>(0.1f)}},
      {"k.bool", V{GgufType::BOOL, GgufType::U8, true}},
      {"k.string", V{GgufType::STRING, GgufType::U8, std::string("a\0b", 3)}},
      {"k.u64", V{GgufType::U64, GgufType::U8, ~uint64_t{0}}},
      {"k.i64", V{GgufType::I64, GgufType::U8, int64_t{-1} << 63}},
      {"k.f64", V{GgufType::F64, GgufType::U8, 1e300}},
      {"a.u16", V{GgufType::ARRAY, GgufType::U16, std::vector<uint64_t>{1, 2, 65535}}},
      {"a.i8", V{GgufType::ARRAY, GgufType::I8, std::vector<int64_t>{-1, 0, 127}}},
      {"a.f32", V{GgufType::ARRAY, GgufType::F32, std::vector<double>{0.5, -0.25}}},
      {"a.f64", V{GgufType::ARRAY, GgufType::F64, std::vector<double>{}}},
      {"a.bool", V{GgufType::ARRAY, GgufType::BOOL, std::vector<bool>{true, false, true}}},
      {"a.string", V{GgufType::ARRAY, GgufType::STRING, std::vector<std::string>{"", "x", "hi"}}},
  };
  GgufWriter w;
  w.set_u32("k.u32", 5);  // replaced below, keeps this first position
  for (const auto& [key, value] : values) w.set(key, value);

  const std::vector<uint8_t> q4 = pattern(2 * 18, 1);      // Q4_0 [64, 1]
  const std::vector<uint8_t> f16 = pattern(3 * 4 * 2, 2);  // F16 [3, 4]
  const std::vector<uint8_t> q6k = pattern(2 * 210, 3);    // Q6_K [256, 1, 2]
  w.add_tensor("blk.0.a", GgmlType::Q4_0, {64, 1}, q4);
  w.add_tensor("blk.0.b", GgmlType::F16, {3, 4}, f16);
  w.add_tensor("c", GgmlType::Q6_K, {256, 1, 2}, q6k);

  for (uint32_t version : {2u, 3u}) {
    const std::vector<uint8_t> bytes = w.bytes(version);
    const GgufFile f = GgufFile::parse(bytes, "rt.gguf");
    CHECK(f.version() == version);
    CHECK(f.alignment() == 32);
    CHECK(f.file_size() == bytes.size());

    const GgufMetadata& md = f.metadata();
    REQUIRE(md.entries().size() == values.size());
    CHECK(md.entries()[0].first == "k.u32");
    for (const auto& [key, value] : values) {
      INFO(key);
      const GgufValue* got = md.find(key);
      REQUIRE(got != nullptr);
      CHECK(same_value(*got, value));
    }
    CHECK(md.get_u64("k.u32") == 4000000000u);
    CHECK(md.get_i64("k.i8") == -128);
    CHECK(md.get_f64("k.f32") == static_cast<double>(0.1f));
    CHECK(md.get_string("k.string") == std::string("a\0b", 3));
    CHECK(md.find("a.bool")->array_size() == 3);
    CHECK(*md.find_string_array("a.string") == std::vector<std::string>{"", "x", "hi"});

    REQUIRE(f.tensors().size() == 3);
    const std::vector<uint8_t>* data[] = {&q4, &f16, &q6k};
    for (size_t i = 0; i < 3; ++i) {
      const GgufTensorInfo& t = f.tensors()[i];
      INFO(t.name);
      CHECK(t.offset % 32 == 0);
      CHECK(t.n_bytes == data[i]->size());
      const uint8_t* p = bytes.data() + f.data_offset() + t.offset;
      CHECK(std::vector<uint8_t>(p, p + t.n_bytes) == *data[i]);
    }
    CHECK(f.tensors()[2].dims == std::vector<int64_t>{256, 1, 2});
    CHECK(f.tensors()[2].n_rows() == 2);
    CHECK(f.tensors()[1].type == GgmlType::F16);
    CHECK(bytes.size() % 32 == 0);
  }
}

TEST_CASE("GgufWriter with a non-default alignment records general.alignment", "[gguf]") {
  GgufWriter w(64);
  w.set_string("general.architecture", "llama");
  w.add_tensor("x", GgmlType::F32, {3}, f32_bytes({1, 2, 3}));
  w.add_tensor("y", GgmlType::F32, {1}, f32_bytes({4}));
  const std::vector<uint8_t> bytes = w.bytes();
  const GgufFile f = GgufFile::parse(bytes, "a64.gguf");
  CHECK(f.alignment() == 64);
  CHECK(f.metadata().entries().back().first == "general.alignment");
  CHECK(f.metadata().get_u64("general.alignment") == 64);
  CHECK(f.data_offset() % 64 == 0);
  CHECK(f.tensors()[1].offset == 64);
  CHECK(bytes.size() == f.data_offset() + 128);
  float y = 0;
  std::memcpy(&y, bytes.data() + f.data_offset() + 64, 4);
  CHECK(y == 4.0f);
}

TEST_CASE("GgufWriter refuses inconsistent input", "[gguf]") {
  GgufWriter w;
  const std::vector<uint8_t> four(4);
  CHECK_THROWS_WITH(w.add_tensor("t", GgmlType::F32, {2}, four),
                    Catch::Contains("data has 4 bytes, expected 8"));
  CHECK_THROWS_WITH(w.add_tensor("t", GgmlType::Q4_0, {16}, four),
                    Catch::Contains("row length 16 is not a multiple of the block size 32"));
  CHECK_THROWS_WITH(w.add_tensor("t", GgmlType::F32, {}, four), Catch::Contains("1..4 dims"));
  CHECK_THROWS_WITH(w.add_tensor("t", GgmlType::F32, {1, 0}, four),
                    Catch::Contains("dimension 1 is 0"));
  CHECK_THROWS_WITH(w.add_tensor(std::string(64, 'n'), GgmlType::F32, {1}, four),
                    Catch::Contains("name must be 1..63 bytes"));
  w.add_tensor("t", GgmlType::F32, {1}, four);
  CHECK_THROWS_WITH(w.add_tensor("t", GgmlType::F32, {1}, four), Catch::Contains("added twice"));

  GgufWriter v;
  v.set("small", GgufValue{GgufType::U8, GgufType::U8, uint64_t{256}});
  CHECK_THROWS_WITH(v.bytes(), Catch::Contains("key 'small': 256 does not fit u8"));
  v.set("small", GgufValue{GgufType::I16, GgufType::U8, int64_t{-40000}});
  CHECK_THROWS_WITH(v.bytes(), Catch::Contains("-40000 does not fit i16"));
  v.set("small", GgufValue{GgufType::U32, GgufType::U8, std::string("x")});
  CHECK_THROWS_WITH(v.bytes(), Catch::Contains("does not hold a u32"));
  v.set("small", GgufValue{GgufType::ARRAY, GgufType::ARRAY, std::vector<uint64_t>{}});
  CHECK_THROWS_WITH(v.bytes(), Catch::Contains("is not a scalar type"));
  v.set("small", GgufValue{GgufType::U8, GgufType::U8, uint64_t{1}});
  CHECK_THROWS_WITH(v.bytes(4), Catch::Contains("version 2 or 3, not 4"));
  v.set_u32("general.alignment", 16);
  CHECK_THROWS_WITH(v.bytes(), Catch::Contains("general.alignment must be a u32 equal"));
  CHECK_THROWS_WITH(GgufWriter(24).bytes(), Catch::Contains("alignment 24 is not a power of two"));
}
