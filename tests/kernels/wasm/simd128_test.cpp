// The SIMD128 kernel set against kernels/ref, entry by entry (the wasm build only; run
// under node by ctest).
//  - Quantized dots: |simd128 - ref| <= 1e-5 * S + 1e-30, S = sum_i |w_i a_i| over the
//    decoded rows plus, for Q4_1 / Q5_1, sum_b |m_b s_b| (the min terms). Both sides do
//    exact integer sums per block; only the float accumulation order differs.
//  - Float dots (F32, F16, BF16): |simd128 - ref| <= (n / 16 + 16) * 2^-24 * S + 1e-30:
//    16 float add chains of n / 16 steps and a 4-level reduction, against ref's double
//    sum rounded once. f16 decoding is exact (every one of the 65536 halfs).
//  - Float ops: element-wise ops exact where ref's are one rounding (add, mul, scale,
//    axpy: same operations); exp-based ones (silu, swiglu, softmax) within 8 ulp-ish
//    relative bounds stated per test; rms_norm within 4 float roundings.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "kernels/ref/blocks.h"
#include "kernels/wasm/simd128.h"
#include "kernels/wasm/wasm.h"
#include "tests/kernels/test_util.h"

namespace runnel {
namespace {

using test::Rng;

const KernelTable* simd128_table() {
  return simd128_kernels();
}

const int64_t kLengths[] = {256, 768, 1792, 4096};     // 1, 3 and 7 super-blocks, 4096
const int64_t kLegacyLengths[] = {32, 96, 224, 4096};  // 1, 3 and 7 blocks, 4096

// ---------------------------------------------------------------- rows

enum class RowKind {
  kBell,
  kHeavy,
  kZero,
  kHalves,
  kNegativeMax,
  kSignTie,
  kOneHot,
  kSmall,
  kTiny,
  kHuge
};

std::vector<float> make_row(RowKind kind, Rng& rng, int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float& v = x[static_cast<size_t>(i)];
    switch (kind) {
      case RowKind::kBell:
        v = rng.bell();
        break;
      case RowKind::kHeavy:
        v = rng.heavy();
        break;
      case RowKind::kZero:
        v = 0.0f;
        break;
      // amax 127 in every 32-block -> d = 1, x * id = k + 0.5 exactly: tests the rounding
      // rule (half away from zero for Q8_0/Q8_1, ties to even for Q8_K).
      case RowKind::kHalves:
        v = i % 32 == 0 ? 127.0f
                        : static_cast<float>(static_cast<int>(rng.next() % 253) - 126) + 0.5f;
        break;
      case RowKind::kNegativeMax:
        v = i % 32 == 5 ? -9.0f : rng.symmetric();
        break;
      // +amax and -amax in one block: the first one fixes the sign of the Q8_K scale.
      case RowKind::kSignTie:
        v = i % 64 == 3 ? -4.0f : i % 64 == 40 ? 4.0f : rng.symmetric();
        break;
      case RowKind::kOneHot:
        v = i % 97 == 13 ? -3.25f : 0.0f;
        break;
      case RowKind::kSmall:
        v = rng.symmetric() * 1e-35f;
        break;  // subnormal d, finite 1/d
      case RowKind::kTiny:
        v = rng.symmetric() * 1e-38f;
        break;  // subnormal quotients
      case RowKind::kHuge:
        v = rng.symmetric() * 1e30f;
        break;  // f16 scale overflows
    }
  }
  return x;
}

// ---------------------------------------------------------------- dots of quantized rows

// Adversarial f16 scales: zero, largest normal, negative, smallest subnormal, ordinary.
const uint16_t kScaleBits[] = {0x0000, 0x7BFF, 0xFBFF, 0x0001, 0x3C00, 0xB400, 0x2E66, 0x1400};

uint16_t pick_scale(Rng& rng) {
  return kScaleBits[rng.next() % (sizeof kScaleBits / sizeof kScaleBits[0])];
}

void put_u16(uint8_t* p, uint16_t v) {
  std::memcpy(p, &v, sizeof v);
}

// Fills raw blocks with random (or extreme) bytes, then sets the scale fields.
// byte_mode: 0 random, 1 all 0x00, 2 all 0xFF.
std::vector<uint8_t> raw_weight_row(GgmlType type, int64_t n, Rng& rng, int byte_mode) {
  const TypeTraits tr = traits(type);
  std::vector<uint8_t> w(row_bytes(type, n));
  for (auto& b : w)
    b = byte_mode == 0 ? static_cast<uint8_t>(rng.next()) : byte_mode == 1 ? 0x00 : 0xFF;
  for (int64_t b = 0; b < n / tr.block_size; ++b) {
    uint8_t* block = w.data() + b * tr.type_size;
    switch (type) {
      case GgmlType::Q4_1:
      case GgmlType::Q5_1:
      case GgmlType::Q4_K:  // d, then m / dmin
      case GgmlType::Q5_K:
        put_u16(block, pick_scale(rng));
        put_u16(block + 2, pick_scale(rng));
        break;
      case GgmlType::Q6_K:
        put_u16(block + offsetof(ref::BlockQ6_K, d), pick_scale(rng));
        break;
      case GgmlType::Q3_K:
        put_u16(block + offsetof(ref::BlockQ3_K, d), pick_scale(rng));
        break;
      case GgmlType::Q2_K:
        put_u16(block + offsetof(ref::BlockQ2_K, d), pick_scale(rng));
        put_u16(block + offsetof(ref::BlockQ2_K, dmin), pick_scale(rng));
        break;
      default:  // Q4_0, Q5_0, Q8_0: d first
        put_u16(block, pick_scale(rng));
        break;
    }
  }
  return w;
}

// Raw activation blocks obeying the quantizers' contract: q in [-127, 127], Q8_K bsums
// equal to the sums of their 16 quants; scales adversarial.
std::vector<uint8_t> raw_activation_row(GgmlType type, int64_t n, Rng& rng, bool extreme) {
  std::vector<uint8_t> a(row_bytes(type, n));
  auto quant = [&rng, extreme]() -> int8_t {
    if (extreme) return rng.next() % 2 ? 127 : -127;
    return static_cast<int8_t>(static_cast<int>(rng.next() % 255) - 127);
  };
  if (type == GgmlType::Q8_K) {
    for (int64_t b = 0; b < n / kQK_K; ++b) {
      ref::BlockQ8_K blk;
      blk.d = fp16_to_fp32(pick_scale(rng));
      for (auto& q : blk.qs) q = quant();
      for (int g = 0; g < kQK_K / 16; ++g) {
        int sum = 0;
        for (int i = 0; i < 16; ++i) sum += blk.qs[16 * g + i];
        blk.bsums[g] = static_cast<int16_t>(sum);
      }
      std::memcpy(a.data() + b * sizeof blk, &blk, sizeof blk);
    }
    return a;
  }
  const size_t block_bytes = traits(type).type_size;
  const size_t header = type == GgmlType::Q8_1 ? 4 : 2;  // d (and s)
  for (int64_t b = 0; b < n / kQK; ++b) {
    uint8_t* block = a.data() + b * block_bytes;
    put_u16(block, pick_scale(rng));
    if (type == GgmlType::Q8_1) put_u16(block + 2, pick_scale(rng));
    for (int j = 0; j < kQK; ++j) block[header + j] = static_cast<uint8_t>(quant());
  }
  return a;
}

// S of the header comment: sum |w_i a_i| over decoded rows, plus Q4_1/Q5_1 min terms.
double dot_magnitude(GgmlType wt, const std::vector<uint8_t>& w, const std::vector<uint8_t>& a,
                     int64_t n) {
  const GgmlType at = ref_kernels().of(wt).vec_dot_type;
  const auto wd = test::dequantize(wt, w, n);
  const auto ad = test::dequantize(at, a, n);
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += std::fabs(static_cast<double>(wd[i]) * ad[i]);
  if (wt == GgmlType::Q4_1 || wt == GgmlType::Q5_1) {
    for (int64_t b = 0; b < n / kQK; ++b) {
      uint16_t m, sa;
      std::memcpy(&m, w.data() + b * traits(wt).type_size + 2, 2);
      std::memcpy(&sa, a.data() + b * sizeof(ref::BlockQ8_1) + 2, 2);
      s += std::fabs(static_cast<double>(fp16_to_fp32(m)) * fp16_to_fp32(sa));
    }
  }
  return s;
}

void check_dot(const KernelTable& simd, GgmlType wt, const std::vector<uint8_t>& w,
               const std::vector<uint8_t>& a, int64_t n) {
  const float expected = ref_kernels().of(wt).vec_dot(n, w.data(), a.data());
  const float got = simd.of(wt).vec_dot(n, w.data(), a.data());
  const double bound = 1e-5 * dot_magnitude(wt, w, a, n) + 1e-30;
  INFO("ref " << expected << ", simd " << got << ", bound " << bound);
  REQUIRE(std::isfinite(expected));
  CHECK(std::fabs(static_cast<double>(got) - expected) <= bound);
}

const GgmlType kQuantWeightTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                                      GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q4_K,
                                      GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q5_K,
                                      GgmlType::Q6_K};

TEST_CASE("SIMD128 quantized dots match ref on quantized random rows", "[simd128]") {
  const KernelTable* simd = simd128_table();
  REQUIRE(simd != nullptr);
  for (GgmlType wt : kQuantWeightTypes) {
    const GgmlType at = ref_kernels().of(wt).vec_dot_type;
    const bool k_quant = traits(wt).block_size == kQK_K;
    for (int64_t n : k_quant ? kLengths : kLegacyLengths) {
      for (uint64_t seed = 0; seed < 6; ++seed) {
        INFO("type " << traits(wt).name << ", n " << n << ", seed " << seed);
        Rng rng(1000 + seed);
        const RowKind wk = seed % 2 ? RowKind::kHeavy : RowKind::kBell;
        const RowKind ak = seed == 4   ? RowKind::kSignTie
                           : seed == 5 ? RowKind::kOneHot
                                       : RowKind::kBell;
        const auto w = test::quantize(wt, make_row(wk, rng, n));
        const auto a = test::quantize(at, make_row(ak, rng, n));
        check_dot(*simd, wt, w, a, n);
        // The real magnitude of the result, so a kernel returning 0 cannot pass.
        if (seed < 4) CHECK(std::fabs(simd->of(wt).vec_dot(n, w.data(), a.data())) > 0.0f);
      }
    }
  }
}

TEST_CASE("SIMD128 quantized dots match ref on adversarial blocks", "[simd128]") {
  const KernelTable* simd = simd128_table();
  REQUIRE(simd != nullptr);
  for (GgmlType wt : kQuantWeightTypes) {
    const GgmlType at = ref_kernels().of(wt).vec_dot_type;
    const bool k_quant = traits(wt).block_size == kQK_K;
    for (int64_t n : k_quant ? kLengths : kLegacyLengths) {
      for (int byte_mode = 0; byte_mode < 3; ++byte_mode) {
        for (int extreme = 0; extreme < 2; ++extreme) {
          INFO("type " << traits(wt).name << ", n " << n << ", bytes " << byte_mode
                       << ", extreme activations " << extreme);
          Rng rng(static_cast<uint64_t>(n) * 7 + static_cast<uint64_t>(byte_mode) * 3 +
                  static_cast<uint64_t>(extreme));
          const auto w = raw_weight_row(wt, n, rng, byte_mode);
          const auto a = raw_activation_row(at, n, rng, extreme != 0);
          check_dot(*simd, wt, w, a, n);
        }
      }
    }
  }
}

TEST_CASE("SIMD128 dots: hand-checked extreme blocks", "[simd128]") {
  const KernelTable* simd = simd128_table();
  REQUIRE(simd != nullptr);
  SECTION("Q8_0 weight -128 against activation 127, d = 1") {
    ref::BlockQ8_0 w{}, a{};
    w.d = a.d = 0x3C00;
    for (int j = 0; j < 32; ++j) {
      w.qs[j] = -128;
      a.qs[j] = 127;
    }
    CHECK(simd->of(GgmlType::Q8_0).vec_dot(32, &w, &a) == -128.0f * 127.0f * 32.0f);
  }
  SECTION("Q4_0 nibbles 0 (-8) against -127, d = 0.5, da = 2") {
    ref::BlockQ4_0 w{};
    ref::BlockQ8_0 a{};
    w.d = 0x3800;
    a.d = 0x4000;
    for (auto& q : a.qs) q = -127;
    CHECK(simd->of(GgmlType::Q4_0).vec_dot(32, &w, &a) == 8.0f * 127.0f * 32.0f);
  }
  SECTION("Q5_0 with every fifth bit set and nibble 15: q - 16 = 15") {
    ref::BlockQ5_0 w{};
    ref::BlockQ8_0 a{};
    w.d = a.d = 0x3C00;
    std::memset(w.qh, 0xFF, sizeof w.qh);
    std::memset(w.qs, 0xFF, sizeof w.qs);
    for (int j = 0; j < 32; ++j) a.qs[j] = static_cast<int8_t>(j - 16);
    // 15 * sum(j - 16) = 15 * -16 = -240
    CHECK(simd->of(GgmlType::Q5_0).vec_dot(32, &w, &a) == -240.0f);
  }
}

// ---------------------------------------------------------------- float dots

TEST_CASE("SIMD128 F32, F16 and BF16 dots match ref", "[simd128]") {
  const KernelTable* simd = simd128_table();
  REQUIRE(simd != nullptr);
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
    for (int64_t n : {1, 7, 8, 31, 32, 33, 64, 100, 576, 4096}) {
      for (int kind = 0; kind < 4; ++kind) {
        INFO("type " << traits(t).name << ", n " << n << ", kind " << kind);
        Rng rng(static_cast<uint64_t>(n) * 13 + static_cast<uint64_t>(kind));
        std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          switch (kind) {
            case 0:
              x[i] = rng.bell();
              y[i] = rng.bell();
              break;
            case 1:
              x[i] = rng.heavy() * 100.0f;
              y[i] = rng.symmetric() + 0.5f;
              break;
            case 2:
              x[i] = 65504.0f * (i % 2 ? 1.0f : -1.0f);
              y[i] = rng.symmetric() * 60000.0f;
              break;
            default:
              x[i] = rng.symmetric() * 1e-6f;
              y[i] = rng.symmetric() * 1e-3f;
              break;  // f16 subnormals
          }
        }
        const auto w = test::quantize(t, x);
        const auto a = test::quantize(t, y);
        const auto wd = test::dequantize(t, w, n);
        const auto ad = test::dequantize(t, a, n);
        double s = 0.0;
        for (int64_t i = 0; i < n; ++i) s += std::fabs(static_cast<double>(wd[i]) * ad[i]);
        const double bound = (static_cast<double>(n) / 16 + 16) * 0x1p-24 * s + 1e-30;
        const float expected = ref_kernels().of(t).vec_dot(n, w.data(), a.data());
        const float got = simd->of(t).vec_dot(n, w.data(), a.data());
        INFO("ref " << expected << ", simd " << got << ", bound " << bound);
        CHECK(std::fabs(static_cast<double>(got) - expected) <= bound);
        CHECK(got != 0.0f);
      }
    }
  }
}

// ---------------------------------------------------------------- f16 decoding

TEST_CASE("SIMD128 f16 rows decode exactly like ref, all 65536 halfs", "[simd128]") {
  std::vector<uint16_t> h(65536 + 5);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> got(h.size()), want(h.size());
  simd128::dequantize_row_f16(h.data(), got.data(), static_cast<int64_t>(h.size()));
  ref_kernels().of(GgmlType::F16).dequantize_row(h.data(), want.data(), static_cast<int64_t>(h.size()));
  int bad = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    const bool same = std::memcmp(&got[i], &want[i], 4) == 0 || (std::isnan(got[i]) && std::isnan(want[i]));
    if (!same && bad++ < 5) FAIL_CHECK("half 0x" << std::hex << h[i] << ": " << got[i] << " vs " << want[i]);
  }
  CHECK(bad == 0);
}

// ---------------------------------------------------------------- float ops

namespace {

std::vector<float> ops_row(Rng& rng, int64_t n, float spread) {
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = rng.symmetric() * spread;
  return x;
}

// |got - want| <= rel * |want| + abs_bound, element by element.
void check_close(const std::vector<float>& got, const std::vector<float>& want, double rel, double abs_bound) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": simd128 " << got[i] << ", ref " << want[i]);
    REQUIRE(std::fabs(static_cast<double>(got[i]) - want[i]) <= rel * std::fabs(want[i]) + abs_bound);
  }
}

}  // namespace

TEST_CASE("SIMD128 float ops match ref", "[simd128]") {
  const FloatOps& r = ref_float_ops();
  const FloatOps& s = *simd128_float_ops();
  for (int64_t n : {1, 3, 4, 7, 64, 576, 1001, 8192}) {
    for (float spread : {1.0f, 20.0f, 100.0f}) {
      INFO("n " << n << ", spread " << spread);
      Rng rng(static_cast<uint64_t>(n) * 5 + static_cast<uint64_t>(spread));
      const auto a = ops_row(rng, n, spread);
      const auto b = ops_row(rng, n, 3.0f);
      std::vector<float> want(a.size()), got(a.size());

      // Same single operations as ref: bit-identical.
      r.add(a.data(), b.data(), want.data(), n);
      s.add(a.data(), b.data(), got.data(), n);
      check_close(got, want, 0, 0);
      r.mul(a.data(), b.data(), want.data(), n);
      s.mul(a.data(), b.data(), got.data(), n);
      check_close(got, want, 0, 0);
      want = a;
      got = a;
      r.scale(want.data(), n, 0.37f);
      s.scale(got.data(), n, 0.37f);
      check_close(got, want, 0, 0);
      want = b;
      got = b;
      r.axpy(a.data(), want.data(), n, -1.25f);
      s.axpy(a.data(), got.data(), n, -1.25f);
      check_close(got, want, 0, 0);

      // exp by polynomial: a few ulp of exp, then one division (and one product).
      r.silu(a.data(), want.data(), n);
      s.silu(a.data(), got.data(), n);
      check_close(got, want, 8 * 0x1p-24, 1e-37);
      r.swiglu(a.data(), b.data(), want.data(), n);
      s.swiglu(a.data(), b.data(), got.data(), n);
      check_close(got, want, 8 * 0x1p-24, 1e-37);
      want = a;
      got = a;
      r.softmax(want.data(), n);
      s.softmax(got.data(), n);
      check_close(got, want, 8 * 0x1p-24, 1e-37);

      // The sum of squares in double on both sides; the scaling in float either way.
      const auto w = ops_row(rng, n, 2.0f);
      r.rms_norm(a.data(), w.data(), want.data(), n, 1e-5f);
      s.rms_norm(a.data(), w.data(), got.data(), n, 1e-5f);
      check_close(got, want, 4 * 0x1p-24, 0);
      r.rms_norm(a.data(), nullptr, want.data(), n, 1e-5f);
      s.rms_norm(a.data(), nullptr, got.data(), n, 1e-5f);
      check_close(got, want, 4 * 0x1p-24, 0);
    }
  }
  SECTION("softmax of a masked row is zeros; extremes of exp") {
    std::vector<float> x(9, -std::numeric_limits<float>::infinity());
    s.softmax(x.data(), 9);
    for (float v : x) CHECK(v == 0.0f);
    std::vector<float> e = {-1000.0f, -88.0f, -87.0f, 0.0f, 10.0f, 88.0f, 89.0f, -0.0f};
    std::vector<float> got(e.size()), want(e.size());
    s.silu(e.data(), got.data(), static_cast<int64_t>(e.size()));
    r.silu(e.data(), want.data(), static_cast<int64_t>(e.size()));
    check_close(got, want, 8 * 0x1p-24, 1e-37);
  }
}

// ---------------------------------------------------------------- table and dispatch

TEST_CASE("The SIMD128 table is the ref table with the SIMD128 entries swapped in", "[simd128]") {
  const KernelTable* t = simd128_kernels();
  REQUIRE(t != nullptr);
  CHECK(t->isa == "simd128");
  int replaced = 0;
  for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
    const TypeKernels& r = ref_kernels().types[id];
    const TypeKernels& x = t->types[id];
    INFO("type id " << id);
    CHECK(x.supported == r.supported);
    CHECK(x.vec_dot_type == r.vec_dot_type);
    CHECK(x.quantize_row == r.quantize_row);
    CHECK((x.vec_dot == nullptr) == (r.vec_dot == nullptr));
    replaced += (x.vec_dot != r.vec_dot) + (x.dequantize_row != r.dequantize_row);
  }
  CHECK(replaced == 14);  // 13 dots + the f16 row decoder
  REQUIRE(simd128_float_ops() != nullptr);
  CHECK(simd128_float_ops()->isa == "simd128");
}

TEST_CASE("select_kernels picks SIMD128 automatically and can still force ref", "[simd128]") {
  CHECK(select_kernels(""));
  CHECK(&kernels() == simd128_kernels());
  CHECK(float_ops().isa == "simd128");
  CHECK(select_kernels("ref"));
  CHECK(&kernels() == &ref_kernels());
  CHECK(select_kernels("simd128"));
  CHECK(kernels().isa == "simd128");
  CHECK_FALSE(select_kernels("simd"));
  CHECK(select_kernels("ref"));  // leave the process on the default for other tests
}

}  // namespace
}  // namespace runnel
