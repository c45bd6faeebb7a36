// The SIMD128 and relaxed-SIMD row-interleaved (x8) products against ref (compiled only into
// the wasm build): repack / unpack round trips, gemm_x8 within vec_dot's bound of
// 1e-5 * S + 1e-30 (tests/kernels/x8_test_util.h) and equal to the table's own vec_dot bit
// for bit (a streamed layer is dotted in the file's layout, a resident one repacked), the
// largest int16 pair sums, and the relaxed products equal to the SIMD128 ones bit for bit.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/blocks.h"
#include "kernels/wasm/simd128.h"
#include "kernels/wasm/wasm.h"
#include "tests/kernels/isa_test_util.h"
#include "tests/kernels/test_util.h"
#include "tests/kernels/wasm/wasm_test_tables.h"
#include "tests/kernels/x8_test_util.h"

namespace runnel {
namespace {

using test::make_row;
using test::quantize_with;
using test::Rng;
using test::RowKind;
constexpr auto& kLengths = test::kSuperBlockLengths;
constexpr auto& kLegacyLengths = test::kBlockLengths;

const KernelTable& simd() {
  return test::simd128_table();
}
const KernelTable& relaxed() {
  return test::relaxed_table();
}

// ---------------------------------------------------------------- SIMD128 x8 products

TEST_CASE(
    "SIMD128 x8 products match ref's vec_dot on random and adversarial rows, and SIMD128's "
    "vec_dot bit for bit",
    "[simd128]") {
  // A streamed layer is dotted in the file's layout (vec_dot), a resident one repacked
  // (gemm_x8): the same bits make a streamed run give the resident run's tokens.
  test::check_x8_table(simd(), /*same_bits=*/true);
}

TEST_CASE("SIMD128 x8: Q4_0 nibble 0 (-8) against -127 in every element, with the block sum",
          "[simd128]") {
  // The offset -8 goes through the activation's block sum: check it on a hand-computed case.
  const int64_t n = 64;
  std::vector<uint8_t> rows(kX8Rows * row_bytes(GgmlType::Q4_0, n), 0);
  for (int r = 0; r < kX8Rows; ++r) {
    auto* blk = reinterpret_cast<ref::BlockQ4_0*>(rows.data() + r * row_bytes(GgmlType::Q4_0, n));
    for (int b = 0; b < 2; ++b) blk[b].d = fp32_to_fp16(0.5f * static_cast<float>(r + 1));
  }
  std::vector<ref::BlockQ8_0> act(2);
  for (auto& blk : act) {
    blk.d = fp32_to_fp16(2.0f);
    for (auto& q : blk.qs) q = -127;
  }
  const TypeKernels& k = simd().of(GgmlType::Q4_0);
  std::vector<uint8_t> group(x8_group_bytes(k, GgmlType::Q4_0, n));
  k.repack_x8(n, rows.data(), row_bytes(GgmlType::Q4_0, n), group.data());
  int32_t sums[2];
  simd().of(GgmlType::Q8_0).block_sums(n, act.data(), sums);
  CHECK(sums[0] == -127 * 32);
  float out[kX8Rows];
  k.gemm_x8(n, group.data(), act.data(), 0, sums, 1, out, kX8Rows);
  for (int r = 0; r < kX8Rows; ++r) {
    // 64 elements of (0.5 (r + 1) * -8) * (2 * -127)
    CHECK(out[r] == 64.0f * 0.5f * static_cast<float>(r + 1) * 8.0f * 254.0f);
  }
}

// ---------------------------------------------------------------- relaxed-SIMD x8 products

TEST_CASE("Relaxed-SIMD x8 products match ref's vec_dot on random and adversarial rows",
          "[simd128][relaxed]") {
  test::check_x8_table(relaxed(), /*same_bits=*/true);
}

// An activation row of n quants all equal to a (scales 1, sums to match) in format at.
std::vector<uint8_t> constant_activation(GgmlType at, int64_t n, int8_t a) {
  std::vector<uint8_t> act(row_bytes(at, n));
  if (at == GgmlType::Q8_K) {
    auto* blk = reinterpret_cast<ref::BlockQ8_K*>(act.data());
    for (int64_t b = 0; b < n / kQK_K; ++b) {
      blk[b].d = 1.0f;
      for (auto& q : blk[b].qs) q = a;
      for (auto& s : blk[b].bsums) s = static_cast<int16_t>(16 * a);
    }
  } else if (at == GgmlType::Q8_1) {
    auto* blk = reinterpret_cast<ref::BlockQ8_1*>(act.data());
    for (int64_t b = 0; b < n / kQK; ++b) {
      blk[b].d = fp32_to_fp16(1.0f);
      blk[b].s = fp32_to_fp16(32.0f * a);
      for (auto& q : blk[b].qs) q = a;
    }
  } else {
    auto* blk = reinterpret_cast<ref::BlockQ8_0*>(act.data());
    for (int64_t b = 0; b < n / kQK; ++b) {
      blk[b].d = fp32_to_fp16(1.0f);
      for (auto& q : blk[b].qs) q = a;
    }
  }
  return act;
}

// A row of n weights of a 4-bit lookup type (MXFP4, IQ4_NL, IQ4_XS) with code_byte in every
// code byte (both nibbles alike), scale 1 (MXFP4 e = 128, else d = 1) and, for IQ4_XS,
// scale_byte in every byte of the 6-bit sub-block scale fields (0x00: -32, 0xFF: 31).
std::vector<uint8_t> uniform_lut4_row(GgmlType wt, int64_t n, uint8_t code_byte,
                                      uint8_t scale_byte) {
  std::vector<uint8_t> row(row_bytes(wt, n));
  if (wt == GgmlType::MXFP4) {
    auto* blk = reinterpret_cast<ref::BlockMxfp4*>(row.data());
    for (int64_t b = 0; b < n / kQK; ++b) {
      blk[b].e = 128;
      std::memset(blk[b].qs, code_byte, sizeof blk[b].qs);
    }
  } else if (wt == GgmlType::IQ4_NL) {
    auto* blk = reinterpret_cast<ref::BlockIq4Nl*>(row.data());
    for (int64_t b = 0; b < n / kQK; ++b) {
      blk[b].d = fp32_to_fp16(1.0f);
      std::memset(blk[b].qs, code_byte, sizeof blk[b].qs);
    }
  } else {
    auto* blk = reinterpret_cast<ref::BlockIq4Xs*>(row.data());
    for (int64_t b = 0; b < n / kQK_K; ++b) {
      blk[b].d = fp32_to_fp16(1.0f);
      blk[b].scales_h = static_cast<uint16_t>(scale_byte | scale_byte << 8);
      std::memset(blk[b].scales_l, scale_byte, sizeof blk[b].scales_l);
      std::memset(blk[b].qs, code_byte, sizeof blk[b].qs);
    }
  }
  return row;
}

TEST_CASE("SIMD128 x8 and vec_dot: MXFP4, IQ4_NL, IQ4_XS at the value tables' extremes",
          "[simd128]") {
  // vec_dot sums two products w a per int16 lane (MXFP4 four): 2 * 127 * 128 and 4 * 12 * 128
  // are <= 32767; gemm_x8 widens the weights to int16 and sums the products in int32. An
  // IQ4_XS block is at most 256 * 32 * 127 * 128 < 2^31. Every code at a table's extreme
  // (IQ4 -127 / 113 with sub-block scale -32 / 31, MXFP4 12 / -12), scales 1, against
  // activations of +-127 (Q8_K also -128, which its quantizer can give): the sums are
  // integers times powers of two exact in float, so both give n * w * a exactly.
  const int64_t n = 512;
  struct Extreme {
    GgmlType type;
    uint8_t code_byte[2];   // even rows, odd rows
    uint8_t scale_byte[2];  // IQ4_XS
    int weight[2];          // the value of each weight, sub-block scale included
  };
  const Extreme cases[] = {
      {GgmlType::MXFP4, {0x77, 0xFF}, {0, 0}, {12, -12}},
      {GgmlType::IQ4_NL, {0x00, 0xFF}, {0, 0}, {-127, 113}},
      {GgmlType::IQ4_XS, {0x00, 0xFF}, {0x00, 0xFF}, {-127 * -32, 113 * 31}},
  };
  for (const Extreme& c : cases) {
    const GgmlType at = simd().of(c.type).vec_dot_type;
    for (int a : {127, -127, -128}) {
      if (a == -128 && at != GgmlType::Q8_K) continue;  // Q8_0 quants are in [-127, 127]
      INFO("type " << traits(c.type).name << ", activation quants " << a);
      std::vector<std::vector<uint8_t>> rows;
      std::vector<uint8_t> packed;
      for (int r = 0; r < kX8Rows; ++r) {
        rows.push_back(uniform_lut4_row(c.type, n, c.code_byte[r % 2], c.scale_byte[r % 2]));
        packed.insert(packed.end(), rows.back().begin(), rows.back().end());
      }
      const auto act = constant_activation(at, n, static_cast<int8_t>(a));
      const TypeKernels& k = simd().of(c.type);
      std::vector<uint8_t> group(x8_group_bytes(k, c.type, n));
      k.repack_x8(n, packed.data(), row_bytes(c.type, n), group.data());
      float out[kX8Rows];
      k.gemm_x8(n, group.data(), act.data(), 0, nullptr, 1, out, kX8Rows);
      for (int r = 0; r < kX8Rows; ++r) {
        const float expected = static_cast<float>(n) * static_cast<float>(c.weight[r % 2] * a);
        INFO("row " << r);
        CHECK(out[r] == expected);
        CHECK(k.vec_dot(n, rows[r].data(), act.data()) == expected);
        CHECK(ref_kernels().of(c.type).vec_dot(n, rows[r].data(), act.data()) == expected);
      }
      test::check_gemm_x8(simd(), c.type, rows, {act, act, act}, n, /*same_bits=*/true);
    }
  }
}

constexpr GgmlType kRelaxedTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q4_K,
                                      GgmlType::Q6_K};

TEST_CASE("Relaxed-SIMD x8: the largest int16 pair sums (4-bit 15 x -128, Q6_K 63 x -128)",
          "[simd128][relaxed]") {
  // i16x8.relaxed_dot_i8x16_i7x16_s sums neighbouring products in int16: the largest
  // quants against the activation bytes -128 and 127, with the largest scales and mins.
  const int64_t n = 512;
  for (GgmlType wt : kRelaxedTypes) {
    for (int8_t a : {int8_t{-128}, int8_t{127}}) {
      INFO("type " << traits(wt).name << ", activation quants " << int{a});
      Rng rng(7);
      std::vector<std::vector<uint8_t>> rows;
      for (int r = 0; r < kX8Rows; ++r) {
        rows.push_back(raw_weight_row(wt, n, rng,
                                      r % 2 ? test::ByteMode::kAllOnes : test::ByteMode::kAllZero));
      }
      const auto act = constant_activation(relaxed().of(wt).vec_dot_type, n, a);
      test::check_gemm_x8(relaxed(), wt, rows, {act, act, act}, n);
    }
  }
}

TEST_CASE("Relaxed-SIMD x8 products equal the SIMD128 x8 products bit for bit",
          "[simd128][relaxed]") {
  // Both sum the same exact integers per block and scale them with the same float steps,
  // so a model gives the same tokens with either table.
  for (GgmlType wt : kRelaxedTypes) {
    const bool k_quant = traits(wt).block_size == kQK_K;
    const GgmlType at = relaxed().of(wt).vec_dot_type;
    for (int64_t n : k_quant ? kLengths : kLegacyLengths) {
      INFO("type " << traits(wt).name << ", n " << n);
      Rng rng(static_cast<uint64_t>(n) + 3);
      std::vector<uint8_t> rows, acts;
      for (int r = 0; r < kX8Rows; ++r) {
        const auto row = r < 6 ? quantize_with(ref_kernels(), wt, make_row(RowKind::kBell, rng, n))
                               : raw_weight_row(wt, n, rng, test::ByteMode::kRandom);
        rows.insert(rows.end(), row.begin(), row.end());
      }
      const int nc = 3;
      std::vector<int32_t> sums(static_cast<size_t>(nc * (n / kQK)));
      for (int c = 0; c < nc; ++c) {
        const auto act = c == 2
                             ? raw_activation_row(at, n, rng, true)
                             : quantize_with(ref_kernels(), at, make_row(RowKind::kHeavy, rng, n));
        if (simd().of(at).block_sums) simd().of(at).block_sums(n, act.data(), &sums[c * (n / kQK)]);
        acts.insert(acts.end(), act.begin(), act.end());
      }
      std::vector<float> out[2];
      int t = 0;
      for (const KernelTable* table : {&simd(), &relaxed()}) {
        const TypeKernels& k = table->of(wt);
        std::vector<uint8_t> group(x8_group_bytes(k, wt, n));
        k.repack_x8(n, rows.data(), row_bytes(wt, n), group.data());
        out[t].assign(nc * kX8Rows, 0.0f);
        k.gemm_x8(n, group.data(), acts.data(), row_bytes(at, n), sums.data(), nc, out[t].data(),
                  kX8Rows);
        ++t;
      }
      for (size_t i = 0; i < out[0].size(); ++i) {
        INFO("output " << i << ": " << out[0][i] << " vs " << out[1][i]);
        CHECK(test::bits_of(out[0][i]) == test::bits_of(out[1][i]));
      }
    }
  }
}

TEST_CASE("The relaxed table is the SIMD128 table with its 4-bit and Q6_K x8 entries replaced",
          "[simd128][relaxed]") {
  const KernelTable& t = relaxed();
  CHECK(t.isa == "simd128-relaxed");
  int replaced = 0;
  for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
    const TypeKernels& s = simd().types[id];
    const TypeKernels& x = t.types[id];
    INFO("type id " << id);
    CHECK(x.vec_dot == s.vec_dot);
    CHECK(x.quantize_row == s.quantize_row);
    CHECK(x.gemm == s.gemm);
    CHECK(x.gemm_x8_reads_sums == s.gemm_x8_reads_sums);  // the relaxed Q4_0 reads them too
    // same group sizes, but for Q6_K's packed quants (6.6 bits a weight, not 8.6) and
    // Q4_K's packed mins (4.69, not 4.75)
    if (id == static_cast<uint32_t>(GgmlType::Q6_K)) {
      CHECK(x.x8_block_bytes == 1696);
      CHECK(s.x8_block_bytes == 2208);
    } else if (id == static_cast<uint32_t>(GgmlType::Q4_K)) {
      CHECK(x.x8_block_bytes == 1200);
      CHECK(s.x8_block_bytes == 1216);
    } else {
      CHECK(x.x8_block_bytes == s.x8_block_bytes);
    }
    replaced += (x.repack_x8 != s.repack_x8) + (x.gemm_x8 != s.gemm_x8) +
                (x.unpack_x8_row != s.unpack_x8_row);
  }
  CHECK(replaced == 12);  // repack, product and unpack of Q4_0, Q4_1, Q4_K and Q6_K
  CHECK(t.of(GgmlType::Q4_0).repack_x8 == simd128::repack_x8_q4_0_relaxed);
  CHECK(t.of(GgmlType::Q4_1).repack_x8 == simd128::repack_x8_q4_1_relaxed);
  CHECK(t.of(GgmlType::Q4_K).repack_x8 == simd128::repack_x8_q4_k_relaxed);
  CHECK(t.of(GgmlType::Q6_K).repack_x8 == simd128::repack_x8_q6_k_relaxed);
}
}  // namespace
}  // namespace runnel
