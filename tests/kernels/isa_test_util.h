// Rows and blocks for testing a per-ISA kernel table against kernels/ref (used by the
// per-ISA tests under tests/kernels/): random and adversarial float rows for the
// quantizers, raw weight / activation blocks with extreme scales and bytes for the
// dots, and the magnitude S = sum |w_i a_i| that the dot error bounds are relative to.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/kernels.h"
#include "kernels/ref/blocks.h"
#include "kernels/ref/k_quants_common.h"
#include "kernels/types.h"
#include "tests/kernels/test_util.h"

namespace runnel::test {

// Row lengths: 1, 3 and 7 (super-)blocks, and 4096.
inline constexpr int64_t kSuperBlockLengths[] = {256, 768, 1792, 4096};
inline constexpr int64_t kBlockLengths[] = {32, 96, 224, 4096};

// Every weight type with a quantized dot.
inline constexpr GgmlType kQuantWeightTypes[] = {
    GgmlType::Q4_0,  GgmlType::Q4_1,   GgmlType::Q5_0,  GgmlType::Q5_1, GgmlType::Q8_0,
    GgmlType::Q2_K,  GgmlType::Q3_K,   GgmlType::Q4_K,  GgmlType::Q5_K, GgmlType::Q6_K,
    GgmlType::MXFP4, GgmlType::IQ4_NL, GgmlType::IQ4_XS};

// ---------------------------------------------------------------- float rows

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
inline constexpr RowKind kRowKinds[] = {
    RowKind::kBell,    RowKind::kHeavy,  RowKind::kZero,  RowKind::kHalves, RowKind::kNegativeMax,
    RowKind::kSignTie, RowKind::kOneHot, RowKind::kSmall, RowKind::kTiny,   RowKind::kHuge};

inline std::vector<float> make_row(RowKind kind, Rng& rng, int64_t n) {
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
      case RowKind::kSmall:  // subnormal d, finite 1/d
        v = rng.symmetric() * 1e-35f;
        break;
      case RowKind::kTiny:  // subnormal quotients, 1/d overflows
        v = rng.symmetric() * 1e-38f;
        break;
      case RowKind::kHuge:  // f16 scale overflows
        v = rng.symmetric() * 1e30f;
        break;
    }
  }
  return x;
}

// x quantized with table t's quantizer for `type`, into a poisoned buffer (every byte
// must be written).
inline std::vector<uint8_t> quantize_with(const KernelTable& t, GgmlType type,
                                          const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(row_bytes(type, n), 0xAB);
  t.of(type).quantize_row(x.data(), q.data(), n);
  return q;
}

// ---------------------------------------------------------------- raw blocks

// Adversarial f16 scales: zero, largest normal (both signs), smallest subnormal, ordinary.
inline constexpr uint16_t kScaleBits[] = {0x0000, 0x7BFF, 0xFBFF, 0x0001,
                                          0x3C00, 0xB400, 0x2E66, 0x1400};

inline uint16_t pick_scale(Rng& rng) {
  return kScaleBits[rng.next() % (sizeof kScaleBits / sizeof kScaleBits[0])];
}

// Adversarial MXFP4 exponents (E8M0, scale 2^(e - 127)): the two float-subnormal half
// scales, the smallest normal one, ordinary ones, and large ones that keep a 4096-element
// dot against f16-max activations finite.
inline constexpr uint8_t kE8m0Bits[] = {0, 1, 2, 64, 120, 127, 128, 200};

inline void put_u16(uint8_t* p, uint16_t v) {
  std::memcpy(p, &v, sizeof v);
}

enum class ByteMode { kRandom, kAllZero, kAllOnes };  // 0x00 / 0xFF in every quant byte

// A weight row of raw blocks: random or extreme bytes, then adversarial scale fields
// (0xFF bytes also mean the largest 6-bit scales and mins of the k-quants; 0x00 the
// lowest quants, i.e. the most negative values for the zero-point types).
inline std::vector<uint8_t> raw_weight_row(GgmlType type, int64_t n, Rng& rng, ByteMode mode) {
  const TypeTraits tr = traits(type);
  std::vector<uint8_t> w(row_bytes(type, n));
  for (auto& b : w) {
    b = mode == ByteMode::kRandom    ? static_cast<uint8_t>(rng.next())
        : mode == ByteMode::kAllZero ? 0x00
                                     : 0xFF;
  }
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
      case GgmlType::MXFP4:  // one exponent byte
        block[0] = kE8m0Bits[rng.next() % (sizeof kE8m0Bits / sizeof kE8m0Bits[0])];
        break;
      default:  // Q4_0, Q5_0, Q8_0, IQ4_NL, IQ4_XS: d first
        put_u16(block, pick_scale(rng));
        break;
    }
  }
  return w;
}

// Raw activation blocks obeying the quantizers' contract: q in [-127, 127], Q8_K bsums
// equal to the sums of their 16 quants; adversarial scales. extreme: every q is +-127.
inline std::vector<uint8_t> raw_activation_row(GgmlType type, int64_t n, Rng& rng, bool extreme) {
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

// S = sum |w_i a_i| over the decoded rows, plus for Q4_1 / Q5_1 the min terms
// sum_b |m_b s_b| and for Q2_K / Q4_K / Q5_K sum_i |dmin m_s(i) a_i|: the magnitude a quantized
// dot's rounding error is relative to (kernels scale and round the d and the min parts
// separately, and a decoded w_i can be their near cancellation).
inline double dot_magnitude(GgmlType wt, const std::vector<uint8_t>& w,
                            const std::vector<uint8_t>& a, int64_t n) {
  const GgmlType at = ref_kernels().of(wt).vec_dot_type;
  const auto wd = dequantize(wt, w, n);
  const auto ad = dequantize(at, a, n);
  double s = 0.0;
  for (size_t i = 0; i < static_cast<size_t>(n); ++i)
    s += std::fabs(static_cast<double>(wd[i]) * ad[i]);
  if (wt == GgmlType::Q4_1 || wt == GgmlType::Q5_1) {
    for (int64_t b = 0; b < n / kQK; ++b) {
      uint16_t m, sa;
      std::memcpy(&m, w.data() + b * traits(wt).type_size + 2, 2);
      std::memcpy(&sa, a.data() + b * sizeof(ref::BlockQ8_1) + 2, 2);
      s += std::fabs(static_cast<double>(fp16_to_fp32(m)) * fp16_to_fp32(sa));
    }
  }
  if (wt == GgmlType::Q4_K || wt == GgmlType::Q5_K) {
    // both blocks start with d, dmin, scales[12]
    for (int64_t b = 0; b < n / kQK_K; ++b) {
      const uint8_t* blk = w.data() + b * traits(wt).type_size;
      uint16_t dmin;
      std::memcpy(&dmin, blk + 2, 2);
      for (int sub = 0; sub < kQK_K / 32; ++sub) {
        uint8_t sc, m;
        ref::unpack_scale_min_k4(sub, blk + 4, &sc, &m);
        const double dm = std::fabs(static_cast<double>(fp16_to_fp32(dmin)) * m);
        const float* as = ad.data() + b * kQK_K + 32 * sub;
        for (int i = 0; i < 32; ++i) s += dm * std::fabs(static_cast<double>(as[i]));
      }
    }
  }
  if (wt == GgmlType::Q2_K) {
    // 16 sub-blocks of 16, min m = scales[j] >> 4
    for (int64_t b = 0; b < n / kQK_K; ++b) {
      const uint8_t* blk = w.data() + b * sizeof(ref::BlockQ2_K);
      uint16_t dmin;
      std::memcpy(&dmin, blk + offsetof(ref::BlockQ2_K, dmin), 2);
      for (int sub = 0; sub < kQK_K / 16; ++sub) {
        const uint8_t m = blk[offsetof(ref::BlockQ2_K, scales) + sub] >> 4;
        const double dm = std::fabs(static_cast<double>(fp16_to_fp32(dmin)) * m);
        const float* as = ad.data() + b * kQK_K + 16 * sub;
        for (int i = 0; i < 16; ++i) s += dm * std::fabs(static_cast<double>(as[i]));
      }
    }
  }
  return s;
}

}  // namespace runnel::test
