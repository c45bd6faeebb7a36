// Quantized KV caches (q8_0, q4_0) against f16: the same model's logits within stated
// bounds, the cache layouts and sizes, position moves, and refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/kv/kv_cache.h"
#include "core/runtime/engine.h"
#include "tests/core/model/tiny_model.h"

namespace runnel {
namespace {

test::TinySpec spec_32() {
  test::TinySpec s;
  s.n_embd = 128;
  s.n_head = 4;  // head_dim 32: one q8_0/q4_0 block per head slice
  s.n_head_kv = 2;
  s.n_ff = 160;
  return s;
}

std::vector<float> last_logits(const test::TinyModel& m, GgmlType kv, const std::vector<TokenId>& tokens) {
  EngineOptions o;
  o.n_ctx = 64;
  o.n_batch = 8;
  o.kv_type = kv;
  auto engine = Engine::load(m.store(), o);
  auto s = engine->new_session();
  std::span<float> l = s->eval(tokens);
  return {l.begin(), l.end()};
}

}  // namespace

TEST_CASE("kv: q8_0 and q4_0 caches stay close to f16", "[kv]") {
  const test::TinyModel m = test::build_tiny_model(spec_32());
  std::vector<TokenId> tokens;
  for (int i = 0; i < 40; ++i) tokens.push_back(3 + (i * 7) % 37);
  const std::vector<float> ref = last_logits(m, GgmlType::F16, tokens);
  float max_abs = 0;
  for (float x : ref) max_abs = std::max(max_abs, std::fabs(x));
  // Bounds relative to the largest logit: q8_0 rounds to 1/127 of a block's max,
  // q4_0 to 1/8; errors in K and V propagate through two layers.
  for (const auto& [type, bound] : {std::pair{GgmlType::Q8_0, 0.02f}, std::pair{GgmlType::Q4_0, 0.25f}}) {
    INFO(kv_type_name(type));
    const std::vector<float> got = last_logits(m, type, tokens);
    float max_err = 0;
    for (size_t i = 0; i < ref.size(); ++i) max_err = std::max(max_err, std::fabs(got[i] - ref[i]));
    CHECK(max_err <= bound * max_abs);
    CHECK(max_err > 0);  // it really is a different cache
  }
}

TEST_CASE("kv: sizes, layout and refusals", "[kv]") {
  CHECK(kv_cache_bytes(16, 4096, 512, 512, GgmlType::F16) == 134217728ull);   // 1B-shaped: 128 MiB
  CHECK(kv_cache_bytes(16, 4096, 512, 512, GgmlType::Q8_0) == 71303168ull);   // 16 blocks x 34 B per row
  CHECK(kv_cache_bytes(16, 4096, 512, 512, GgmlType::Q4_0) == 37748736ull);   // 16 blocks x 18 B per row
  CHECK(kv_cache_bytes(32, 8192, 1024, 1024, GgmlType::Q8_0) == 570425344ull);
  KvCache kv(2, 8, 64, 64, GgmlType::Q8_0);
  CHECK(kv.n_bytes() == 2 * 8 * 2 * 68ull);
  CHECK(!kv.v_transposed());
  REQUIRE_THROWS_WITH(KvCache(1, 4, 48, 48, GgmlType::Q8_0), Catch::Contains("multiples of 32"));
  REQUIRE_THROWS_WITH(KvCache(1, 4, 64, 64, GgmlType::Q4_1), Catch::Contains("not supported"));
  REQUIRE_THROWS_WITH(parse_kv_type("q5"), Catch::Contains("'q5'"));
  CHECK(parse_kv_type("q4_0") == GgmlType::Q4_0);
  // Engine refuses a quantized cache for heads that are not whole blocks.
  EngineOptions o;
  o.kv_type = GgmlType::Q8_0;
  const test::TinyModel m = test::build_tiny_model({});  // head_dim 16
  REQUIRE_THROWS_WITH(Engine::load(m.store(), o), Catch::Contains("multiple of 32"));
}

TEST_CASE("kv: move_positions and save/load of positions round-trip", "[kv]") {
  for (GgmlType type : {GgmlType::F16, GgmlType::Q8_0}) {
    KvCache kv(2, 8, 32, 32, type);
    std::vector<float> k(32), v(32);
    for (int p = 0; p < 8; ++p) {
      for (int i = 0; i < 32; ++i) {
        k[i] = static_cast<float>(p * 100 + i);
        v[i] = static_cast<float>(-p - i);
      }
      kv.store(0, p, k.data(), v.data());
      kv.store(1, p, v.data(), k.data());
    }
    std::vector<uint8_t> saved;
    kv.save_positions(8, saved);
    CHECK(saved.size() == 8 * kv.position_bytes() + 2 * sizeof(uint32_t));  // + each layer's first position
    kv.move_positions(5, 2, 3);  // positions 5,6,7 -> 2,3,4
    std::vector<uint8_t> moved;
    kv.save_positions(8, moved);
    KvCache fresh(2, 8, 32, 32, type);
    REQUIRE(fresh.load_positions(8, saved.data(), saved.size()));
    CHECK(std::equal(fresh.k_row(1, 7), fresh.k_row(1, 7) + fresh.k_row_bytes(), kv.k_row(1, 4)));
    CHECK(std::equal(fresh.k_row(0, 1), fresh.k_row(0, 1) + fresh.k_row_bytes(), kv.k_row(0, 1)));
    if (type == GgmlType::F16) {
      CHECK(fresh.v_row(0, 3)[6] == kv.v_row(0, 3)[3]);
    } else {
      CHECK(std::equal(fresh.v_pos(0, 6), fresh.v_pos(0, 6) + fresh.v_row_bytes(), kv.v_pos(0, 3)));
    }
    CHECK(!fresh.load_positions(8, saved.data(), saved.size() - 1));
  }
}


TEST_CASE("kv: a sliding layer keeps its window in fewer slots, saves and loads it", "[kv]") {
  // layer 0 slides with a window of 4, batches of 2: 2 * 4 + 1 = 9 slots; layer 1 keeps all 64
  KvCache kv(2, 64, 32, 32, GgmlType::F16, {4, 0}, 2);
  CHECK(kv.cells(0) == 9);
  CHECK(kv.cells(1) == 64);
  CHECK(kv_cache_bytes(2, 64, 32, 32, GgmlType::F16, {4, 0}, 2) == (9 + 64) * 2 * 64);
  std::vector<float> k(32), v(32);
  auto fill = [&](int p) {
    for (int i = 0; i < 32; ++i) {
      k[i] = static_cast<float>(p * 10 + i);
      v[i] = static_cast<float>(-p);
    }
  };
  for (int p = 0; p < 20; ++p) {
    kv.make_room(p, 1);
    fill(p);
    kv.store(0, p, k.data(), v.data());
    kv.store(1, p, k.data(), v.data());
  }
  // the window of the next position (20) is 17..19: held, in order
  CHECK(kv.first_pos(0) > 0);
  CHECK(kv.first_pos(0) <= 17);
  for (int p = kv.first_pos(0); p < 20; ++p) {
    CHECK(fp16_to_fp32(kv.k(0, p)[1]) == static_cast<float>(p * 10 + 1));
    CHECK(fp16_to_fp32(kv.v_row(0, 5)[kv.cell(0, p)]) == static_cast<float>(-p));
  }
  CHECK(kv.resume_at(19));
  std::vector<uint8_t> saved;
  kv.save_positions(20, saved);
  SECTION("loaded into the same layout") {
    KvCache other(2, 64, 32, 32, GgmlType::F16, {4, 0}, 2);
    REQUIRE(other.load_positions(20, saved.data(), saved.size()));
    CHECK(other.first_pos(0) == kv.first_pos(0));
    CHECK(fp16_to_fp32(other.k(0, 19)[3]) == 193.0f);
    CHECK(fp16_to_fp32(other.k(1, 0)[3]) == 3.0f);
  }
  SECTION("loaded where the layer has more slots") {
    KvCache other(2, 64, 32, 32, GgmlType::F16, {4, 0}, 64);
    REQUIRE(other.load_positions(20, saved.data(), saved.size()));
    CHECK(fp16_to_fp32(other.k(0, 19)[3]) == 193.0f);
  }
  SECTION("a layer that does not slide must hold everything") {
    KvCache other(2, 64, 32, 32, GgmlType::F16, {0, 0}, 2);
    CHECK_FALSE(other.load_positions(20, saved.data(), saved.size()));
  }
  SECTION("resuming before the held window forgets it") {
    CHECK_FALSE(kv.resume_at(5));
    CHECK(kv.first_pos(0) == 0);
  }
}

}  // namespace runnel
