// Repacking of 8 weight rows into the SIMD128 x8 layouts (simd128_x8_layout.h) and back
// (unpack_x8_row: the embedding lookups of a matrix that is also the output projection).
// Bit moves only: a group keeps every bit of its rows, and unpacking gives them back
// byte for byte (checked in tests/kernels/wasm/simd128_x8_test.cpp).
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/ref/blocks.h"
#include "kernels/ref/k_quants_common.h"
#include "kernels/ref/lut4_values.h"
#include "kernels/wasm/relaxed/relaxed_layout.h"
#include "kernels/wasm/simd128.h"
#include "kernels/wasm/simd128_x8_layout.h"

namespace runnel::simd128 {

using namespace x8;

namespace {

// f16 scale <-> the float the layout holds. fp16_to_fp32 is exact for every half, NaN
// payloads included; back, NaNs keep their payload bits (fp32_to_fp16 would quiet them).
float scale_of(uint16_t h) {
  return fp16_to_fp32(h);
}
uint16_t half_of(float f) {
  const uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7c00u | ((x >> 13) & 0x3ffu));
  return fp32_to_fp16(f);
}

// MXFP4's exponent byte <-> the float 2^(e - 128) the layout holds: e = 0 and 1 are the
// subnormals 2^-128 and 2^-127 (bits 0x00200000 << e), the rest the normal (e - 1) << 23.
float mxfp4_scale_of(uint8_t e) {
  return ref::e8m0_to_fp32_half(e);
}
uint8_t exponent_of(float f) {
  const uint32_t x = f32_bits(f);
  if (x < 0x00800000u) return x == 0x00200000u ? 0 : 1;
  return static_cast<uint8_t>((x >> 23) + 1);
}

template <typename Block>
const Block& row_block(const void* rows, size_t row_stride, int r, int64_t b) {
  return reinterpret_cast<const Block*>(static_cast<const uint8_t*>(rows) +
                                        static_cast<size_t>(r) * row_stride)[b];
}

// 32 nibbles (element e at q[e], each in [0, 15]) -> 16 bytes in lane order.
void put_lane_order(const uint8_t* q, uint8_t* out) {
  for (int k = 0; k < 8; ++k) {
    out[2 * k] = static_cast<uint8_t>(q[k] | q[8 + k] << 4);
    out[2 * k + 1] = static_cast<uint8_t>(q[16 + k] | q[24 + k] << 4);
  }
}

// The inverse: 16 bytes in lane order -> q[0..32).
void get_lane_order(const uint8_t* in, uint8_t* q) {
  for (int k = 0; k < 8; ++k) {
    q[k] = in[2 * k] & 0x0F;
    q[8 + k] = in[2 * k] >> 4;
    q[16 + k] = in[2 * k + 1] & 0x0F;
    q[24 + k] = in[2 * k + 1] >> 4;
  }
}

// A legacy block's 16 bytes (low nibbles: elements 0..15, high: 16..31) <-> lane order.
void legacy_to_lane_order(const uint8_t* qs, uint8_t* out) {
  uint8_t q[kQK];
  for (int i = 0; i < 16; ++i) {
    q[i] = qs[i] & 0x0F;
    q[16 + i] = qs[i] >> 4;
  }
  put_lane_order(q, out);
}

void lane_order_to_legacy(const uint8_t* in, uint8_t* qs) {
  uint8_t q[kQK];
  get_lane_order(in, q);
  for (int i = 0; i < 16; ++i) qs[i] = static_cast<uint8_t>(q[i] | q[16 + i] << 4);
}

// A Q6_K block's 256 quants (the loop of ref's dequantize_row_q6_k: for half h and l < 32,
// one ql / qh byte pair gives 4 elements) into row r of an x8 group in the SIMD128 layout,
// element 32 c + i of row r at q[r / 4][c][r % 4][i], as q + kBias: int8 q - 32 there,
// uint8 q for the relaxed repack, which packs them from this layout.
template <int kBias, typename T>
void q6_k_quants(const ref::BlockQ6_K& blk, int r, T (&q)[2][8][4][32]) {
  const auto chunk = [&](int c) -> T* { return q[r / 4][c][r % 4]; };
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = blk.ql + 64 * h;
    const uint8_t* qh = blk.qh + 32 * h;
    for (int l = 0; l < 32; ++l) {
      chunk(4 * h)[l] = static_cast<T>(((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) + kBias);
      chunk(4 * h + 1)[l] =
          static_cast<T>(((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) + kBias);
      chunk(4 * h + 2)[l] = static_cast<T>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) + kBias);
      chunk(4 * h + 3)[l] = static_cast<T>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) + kBias);
    }
  }
}

// The inverse gather: row r's 256 quants in element order as q - 32 (q6_k_pack's input).
template <int kBias, typename T>
void q6_k_row_quants(const T (&q)[2][8][4][32], int r, int8_t* out) {
  for (int i = 0; i < kQK_K; ++i) {
    out[i] = static_cast<int8_t>(q[r / 4][i / 32][r % 4][i % 32] - kBias - 32);
  }
}

// The inverse: 256 quants q - 32 back into ql / qh.
void q6_k_pack(const int8_t* q, ref::BlockQ6_K& blk) {
  for (int h = 0; h < 2; ++h) {
    uint8_t* ql = blk.ql + 64 * h;
    uint8_t* qh = blk.qh + 32 * h;
    const int8_t* y = q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      const int q1 = y[l] + 32, q2 = y[l + 32] + 32, q3 = y[l + 64] + 32, q4 = y[l + 96] + 32;
      ql[l] = static_cast<uint8_t>((q1 & 0x0F) | (q3 & 0x0F) << 4);
      ql[l + 32] = static_cast<uint8_t>((q2 & 0x0F) | (q4 & 0x0F) << 4);
      qh[l] = static_cast<uint8_t>((q1 >> 4) | (q2 >> 4) << 2 | (q3 >> 4) << 4 | (q4 >> 4) << 6);
    }
  }
}

// Quant e in [0, 32) of sub-block s of a Q4_K block: sub-blocks 2c and 2c + 1 share the
// 32 bytes of chunk c, in the low and the high nibbles.
inline int q4_k_quant(const ref::BlockQ4_K& blk, int s, int e) {
  return (blk.qs[32 * (s / 2) + e] >> (4 * (s % 2))) & 0x0F;
}

// A legacy Q5 block's 32 quants (nibble | fifth bit << 4) into row r of a BlockQ5_0x8 /
// BlockQ5_1x8 (q3 of the row's half: only its bits of the row are set, zeroed beforehand).
template <typename Group, typename Block>
void put_q5(const Block& blk, int r, Group& g) {
  uint32_t qh;
  std::memcpy(&qh, blk.qh, sizeof qh);
  uint16_t q[kQK];
  for (int i = 0; i < 16; ++i) {
    q[i] = static_cast<uint16_t>((blk.qs[i] & 0x0F) | ((qh >> i) & 1) << 4);
    q[16 + i] = static_cast<uint16_t>((blk.qs[i] >> 4) | ((qh >> (16 + i)) & 1) << 4);
  }
  for (int k = 0; k < 8; ++k) {
    const uint16_t lane = static_cast<uint16_t>(q[k] | q[8 + k] << 5 | q[16 + k] << 10 | (q[24 + k] >> 4) << 15);
    std::memcpy(g.qs[r] + 2 * k, &lane, sizeof lane);
    uint16_t q3;
    std::memcpy(&q3, g.q3[r / 4] + 2 * k, sizeof q3);
    q3 = static_cast<uint16_t>(q3 | (q[24 + k] & 0x0F) << (4 * (r % 4)));
    std::memcpy(g.q3[r / 4] + 2 * k, &q3, sizeof q3);
  }
}

// The inverse: row r's quants back into the block's qs and qh.
template <typename Group, typename Block>
void get_q5(const Group& g, int r, Block& out) {
  uint16_t q[kQK];
  for (int k = 0; k < 8; ++k) {
    uint16_t lane, q3;
    std::memcpy(&lane, g.qs[r] + 2 * k, sizeof lane);
    std::memcpy(&q3, g.q3[r / 4] + 2 * k, sizeof q3);
    q[k] = lane & 0x1F;
    q[8 + k] = (lane >> 5) & 0x1F;
    q[16 + k] = (lane >> 10) & 0x1F;
    q[24 + k] = static_cast<uint16_t>(((q3 >> (4 * (r % 4))) & 0x0F) | (lane >> 15) << 4);
  }
  uint32_t qh = 0;
  for (int i = 0; i < 16; ++i) {
    out.qs[i] = static_cast<uint8_t>((q[i] & 0x0F) | (q[16 + i] & 0x0F) << 4);
    qh |= static_cast<uint32_t>(q[i] >> 4) << i | static_cast<uint32_t>(q[16 + i] >> 4) << (16 + i);
  }
  std::memcpy(out.qh, &qh, sizeof qh);
}

// Row r's Q4_K scales in a group block (BlockQ4_Kx8 and the relaxed BlockQ4_Kx8R hold d,
// dmin and the scales alike): d and dmin as floats, the 6-bit scales unpacked; the mins
// go to mins[r] (the SIMD128 group's own m, a buffer the relaxed repack packs).
template <typename Group>
void put_q4_k_scales(const ref::BlockQ4_K& blk, int r, Group& g, uint8_t (&mins)[kRows][8]) {
  g.d[r] = scale_of(blk.d);
  g.dmin[r] = scale_of(blk.dmin);
  for (int s = 0; s < 8; ++s) ref::unpack_scale_min_k4(s, blk.scales, &g.sc[s][r], &mins[r][s]);
}

// The inverse, with row r's 8 mins.
template <typename Group>
void get_q4_k_scales(const Group& g, int r, const uint8_t (&mins)[8], ref::BlockQ4_K& out) {
  out.d = half_of(g.d[r]);
  out.dmin = half_of(g.dmin[r]);
  uint8_t sc[8];
  for (int s = 0; s < 8; ++s) sc[s] = g.sc[s][r];
  ref::pack_scale_min_k4(sc, mins, out.scales);
}

}  // namespace

void repack_x8_q4_0(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockQ4_0x8*>(group);
  for (int64_t b = 0; b < n / kQK; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ4_0>(rows, row_stride, r, b);
      g[b].d[r] = scale_of(blk.d);
      legacy_to_lane_order(blk.qs, g[b].qs[r]);
    }
  }
}

void repack_x8_q4_1(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockQ4_1x8*>(group);
  for (int64_t b = 0; b < n / kQK; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ4_1>(rows, row_stride, r, b);
      g[b].d[r] = scale_of(blk.d);
      g[b].m[r] = scale_of(blk.m);
      legacy_to_lane_order(blk.qs, g[b].qs[r]);
    }
  }
}

void repack_x8_q5_0(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockQ5_0x8*>(group);
  for (int64_t b = 0; b < n / kQK; ++b) {
    std::memset(g[b].q3, 0, sizeof g[b].q3);
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ5_0>(rows, row_stride, r, b);
      g[b].d[r] = scale_of(blk.d);
      put_q5(blk, r, g[b]);
    }
  }
}

void repack_x8_q5_1(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockQ5_1x8*>(group);
  for (int64_t b = 0; b < n / kQK; ++b) {
    std::memset(g[b].q3, 0, sizeof g[b].q3);
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ5_1>(rows, row_stride, r, b);
      g[b].d[r] = scale_of(blk.d);
      g[b].m[r] = scale_of(blk.m);
      put_q5(blk, r, g[b]);
    }
  }
}

void repack_x8_q8_0(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockQ8_0x8*>(group);
  for (int64_t b = 0; b < n / kQK; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ8_0>(rows, row_stride, r, b);
      g[b].d[r] = scale_of(blk.d);
      std::memcpy(g[b].qs[r], blk.qs, kQK);
    }
  }
}

void repack_x8_q4_k(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockQ4_Kx8*>(group);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ4_K>(rows, row_stride, r, b);
      put_q4_k_scales(blk, r, g[b], g[b].m);
      // 32-byte chunk c: low nibbles are sub-block 2c, high nibbles sub-block 2c + 1.
      for (int c = 0; c < 4; ++c) {
        uint8_t lo[kQK], hi[kQK];
        for (int i = 0; i < kQK; ++i) {
          lo[i] = blk.qs[32 * c + i] & 0x0F;
          hi[i] = blk.qs[32 * c + i] >> 4;
        }
        put_lane_order(lo, g[b].qs[r / 4][2 * c][r % 4]);
        put_lane_order(hi, g[b].qs[r / 4][2 * c + 1][r % 4]);
      }
    }
  }
}

void repack_x8_q6_k(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockQ6_Kx8*>(group);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ6_K>(rows, row_stride, r, b);
      g[b].d[r] = scale_of(blk.d);
      std::memcpy(g[b].scales[r], blk.scales, sizeof blk.scales);
      q6_k_quants<-32>(blk, r, g[b].q);
    }
  }
}

void repack_x8_mxfp4(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockMxfp4x8*>(group);
  for (int64_t b = 0; b < n / kQK; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockMxfp4>(rows, row_stride, r, b);
      g[b].d[r] = mxfp4_scale_of(blk.e);
      std::memcpy(g[b].qs[r], blk.qs, sizeof blk.qs);
    }
  }
}

void repack_x8_iq4_nl(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockIq4Nlx8*>(group);
  for (int64_t b = 0; b < n / kQK; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockIq4Nl>(rows, row_stride, r, b);
      g[b].d[r] = scale_of(blk.d);
      std::memcpy(g[b].qs[r], blk.qs, sizeof blk.qs);
    }
  }
}

void repack_x8_iq4_xs(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockIq4Xsx8*>(group);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockIq4Xs>(rows, row_stride, r, b);
      g[b].d[r] = scale_of(blk.d);
      for (int s = 0; s < 8; ++s) {
        g[b].sc[s][r] = static_cast<int8_t>(ref::iq4_xs_scale(blk, s));
        std::memcpy(g[b].qs[s][r], blk.qs + 16 * s, 16);
      }
    }
  }
}

void unpack_x8_row_q4_0(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockQ4_0x8*>(group);
  auto* out = static_cast<ref::BlockQ4_0*>(row);
  for (int64_t b = 0; b < n / kQK; ++b) {
    out[b].d = half_of(g[b].d[r]);
    lane_order_to_legacy(g[b].qs[r], out[b].qs);
  }
}

void unpack_x8_row_q4_1(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockQ4_1x8*>(group);
  auto* out = static_cast<ref::BlockQ4_1*>(row);
  for (int64_t b = 0; b < n / kQK; ++b) {
    out[b].d = half_of(g[b].d[r]);
    out[b].m = half_of(g[b].m[r]);
    lane_order_to_legacy(g[b].qs[r], out[b].qs);
  }
}

void unpack_x8_row_q5_0(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockQ5_0x8*>(group);
  auto* out = static_cast<ref::BlockQ5_0*>(row);
  for (int64_t b = 0; b < n / kQK; ++b) {
    out[b].d = half_of(g[b].d[r]);
    get_q5(g[b], r, out[b]);
  }
}

void unpack_x8_row_q5_1(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockQ5_1x8*>(group);
  auto* out = static_cast<ref::BlockQ5_1*>(row);
  for (int64_t b = 0; b < n / kQK; ++b) {
    out[b].d = half_of(g[b].d[r]);
    out[b].m = half_of(g[b].m[r]);
    get_q5(g[b], r, out[b]);
  }
}

void unpack_x8_row_q8_0(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockQ8_0x8*>(group);
  auto* out = static_cast<ref::BlockQ8_0*>(row);
  for (int64_t b = 0; b < n / kQK; ++b) {
    out[b].d = half_of(g[b].d[r]);
    std::memcpy(out[b].qs, g[b].qs[r], kQK);
  }
}

void unpack_x8_row_q4_k(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockQ4_Kx8*>(group);
  auto* out = static_cast<ref::BlockQ4_K*>(row);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    get_q4_k_scales(g[b], r, g[b].m[r], out[b]);
    for (int c = 0; c < 4; ++c) {
      uint8_t lo[kQK], hi[kQK];
      get_lane_order(g[b].qs[r / 4][2 * c][r % 4], lo);
      get_lane_order(g[b].qs[r / 4][2 * c + 1][r % 4], hi);
      for (int i = 0; i < kQK; ++i)
        out[b].qs[32 * c + i] = static_cast<uint8_t>(lo[i] | hi[i] << 4);
    }
  }
}

void unpack_x8_row_q6_k(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockQ6_Kx8*>(group);
  auto* out = static_cast<ref::BlockQ6_K*>(row);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    out[b].d = half_of(g[b].d[r]);
    std::memcpy(out[b].scales, g[b].scales[r], sizeof out[b].scales);
    int8_t q[kQK_K];
    q6_k_row_quants<-32>(g[b].q, r, q);
    q6_k_pack(q, out[b]);
  }
}

void unpack_x8_row_mxfp4(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockMxfp4x8*>(group);
  auto* out = static_cast<ref::BlockMxfp4*>(row);
  for (int64_t b = 0; b < n / kQK; ++b) {
    out[b].e = exponent_of(g[b].d[r]);
    std::memcpy(out[b].qs, g[b].qs[r], sizeof out[b].qs);
  }
}

void unpack_x8_row_iq4_nl(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockIq4Nlx8*>(group);
  auto* out = static_cast<ref::BlockIq4Nl*>(row);
  for (int64_t b = 0; b < n / kQK; ++b) {
    out[b].d = half_of(g[b].d[r]);
    std::memcpy(out[b].qs, g[b].qs[r], sizeof out[b].qs);
  }
}

// The 6-bit fields ls = scale + 32 go back into scales_l (low 4 bits, two sub-blocks a
// byte) and scales_h (high 2 bits, 2 per sub-block).
void unpack_x8_row_iq4_xs(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockIq4Xsx8*>(group);
  auto* out = static_cast<ref::BlockIq4Xs*>(row);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    out[b].d = half_of(g[b].d[r]);
    uint16_t scales_h = 0;
    std::memset(out[b].scales_l, 0, sizeof out[b].scales_l);
    for (int s = 0; s < 8; ++s) {
      const int ls = g[b].sc[s][r] + 32;
      uint8_t& low = out[b].scales_l[s / 2];
      low = static_cast<uint8_t>(low | (ls & 0x0F) << (4 * (s % 2)));
      scales_h = static_cast<uint16_t>(scales_h | (ls >> 4) << (2 * s));
      std::memcpy(out[b].qs + 16 * s, g[b].qs[s][r], 16);
    }
    out[b].scales_h = scales_h;
  }
}

// ---------------------------------------------------------------- relaxed-SIMD layouts

void repack_x8_q4_0_relaxed(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<relaxed::BlockQ4_0x8R*>(group);
  for (int64_t b = 0; b < n / kQK; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ4_0>(rows, row_stride, r, b);
      g[b].d[r] = scale_of(blk.d);
      std::memcpy(g[b].qs[r], blk.qs, sizeof blk.qs);
    }
  }
}

void repack_x8_q4_1_relaxed(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<relaxed::BlockQ4_1x8R*>(group);
  for (int64_t b = 0; b < n / kQK; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ4_1>(rows, row_stride, r, b);
      g[b].d[r] = scale_of(blk.d);
      g[b].m[r] = scale_of(blk.m);
      std::memcpy(g[b].qs[r], blk.qs, sizeof blk.qs);
    }
  }
}

void unpack_x8_row_q4_0_relaxed(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const relaxed::BlockQ4_0x8R*>(group);
  auto* out = static_cast<ref::BlockQ4_0*>(row);
  for (int64_t b = 0; b < n / kQK; ++b) {
    out[b].d = half_of(g[b].d[r]);
    std::memcpy(out[b].qs, g[b].qs[r], sizeof out[b].qs);
  }
}

void unpack_x8_row_q4_1_relaxed(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const relaxed::BlockQ4_1x8R*>(group);
  auto* out = static_cast<ref::BlockQ4_1*>(row);
  for (int64_t b = 0; b < n / kQK; ++b) {
    out[b].d = half_of(g[b].d[r]);
    out[b].m = half_of(g[b].m[r]);
    std::memcpy(out[b].qs, g[b].qs[r], sizeof out[b].qs);
  }
}

namespace {

// The relaxed Q4_K group's packed mins (relaxed_layout.h): min i is m(r, s), i = 8 r + s.
void pack_q4_k_relaxed_mins(const uint8_t (&mins)[kRows][8], relaxed::BlockQ4_Kx8R& g) {
  const auto m6 = [&](int i) { return mins[i / 8][i % 8]; };
  for (int j = 0; j < 32; ++j)
    g.mlo[j] = static_cast<uint8_t>((m6(j) & 0x0F) | (m6(j + 32) & 0x0F) << 4);
  for (int j = 0; j < 16; ++j) {
    g.mhi[j] = static_cast<uint8_t>(m6(j) >> 4 | (m6(j + 16) >> 4) << 2 | (m6(j + 32) >> 4) << 4 |
                                    (m6(j + 48) >> 4) << 6);
  }
}
int q4_k_relaxed_min(const relaxed::BlockQ4_Kx8R& g, int i) {
  return ((g.mlo[i % 32] >> (4 * (i / 32))) & 0x0F) | ((g.mhi[i % 16] >> (2 * (i / 16))) & 3) << 4;
}

}  // namespace

void repack_x8_q4_k_relaxed(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<relaxed::BlockQ4_Kx8R*>(group);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const ref::BlockQ4_K* blk[kRows];
    uint8_t mins[kRows][8];
    for (int r = 0; r < kRows; ++r) {
      blk[r] = &row_block<ref::BlockQ4_K>(rows, row_stride, r, b);
      put_q4_k_scales(*blk[r], r, g[b], mins);
    }
    pack_q4_k_relaxed_mins(mins, g[b]);
    for (int s = 0; s < 8; ++s) {
      for (int e = 0; e < 32; ++e) {
        for (int r = 0; r < 4; ++r) {
          g[b].qs[s][e / 4][4 * r + e % 4] =
              static_cast<uint8_t>(q4_k_quant(*blk[r], s, e) | q4_k_quant(*blk[r + 4], s, e) << 4);
        }
      }
    }
  }
}

void unpack_x8_row_q4_k_relaxed(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const relaxed::BlockQ4_Kx8R*>(group);
  auto* out = static_cast<ref::BlockQ4_K*>(row);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    uint8_t m[8];
    for (int s = 0; s < 8; ++s) m[s] = static_cast<uint8_t>(q4_k_relaxed_min(g[b], 8 * r + s));
    get_q4_k_scales(g[b], r, m, out[b]);
    std::memset(out[b].qs, 0, sizeof out[b].qs);
    for (int s = 0; s < 8; ++s) {
      for (int e = 0; e < 32; ++e) {
        const int q = (g[b].qs[s][e / 4][4 * (r % 4) + e % 4] >> (4 * (r / 4))) & 0x0F;
        out[b].qs[32 * (s / 2) + e] |= static_cast<uint8_t>(q << (4 * (s % 2)));
      }
    }
  }
}

void repack_x8_q6_k_relaxed(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<relaxed::BlockQ6_Kx8R*>(group);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    uint8_t q[2][8][4][32];  // the 8 rows' quants in [0, 63], q6_k_quants' layout
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ6_K>(rows, row_stride, r, b);
      g[b].d[r] = scale_of(blk.d);
      for (int s = 0; s < 8; ++s) {
        g[b].sub[s].scales[r / 4][2 * (r % 4)] = blk.scales[2 * s];
        g[b].sub[s].scales[r / 4][2 * (r % 4) + 1] = blk.scales[2 * s + 1];
      }
      q6_k_quants<0>(blk, r, q);
    }
    const auto quant = [&](int r, int e) { return q[r / 4][e / 32][r % 4][e % 32]; };
    for (int s = 0; s < 8; ++s) {
      for (int p = 0; p < 4; ++p) {
        for (int i = 0; i < 16; ++i) {  // i = 4 r + k: rows r and r + 4, element k of a chunk
          const int r = i / 4, e0 = 32 * s + 8 * p + i % 4, e1 = e0 + 4;
          const int last = quant(r + 4, e1);  // spread over the top 2 bits of the three bytes
          uint8_t(&out)[3][16] = g[b].sub[s].q[p];
          out[0][i] = static_cast<uint8_t>(quant(r, e0) | (last & 3) << 6);
          out[1][i] = static_cast<uint8_t>(quant(r + 4, e0) | (last >> 2 & 3) << 6);
          out[2][i] = static_cast<uint8_t>(quant(r, e1) | (last >> 4) << 6);
        }
      }
    }
  }
}

void unpack_x8_row_q6_k_relaxed(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const relaxed::BlockQ6_Kx8R*>(group);
  auto* out = static_cast<ref::BlockQ6_K*>(row);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    out[b].d = half_of(g[b].d[r]);
    int8_t q[kQK_K];  // q - 32, q6_k_pack's input
    for (int s = 0; s < 8; ++s) {
      const relaxed::SubQ6_Kx8R& sub = g[b].sub[s];
      out[b].scales[2 * s] = sub.scales[r / 4][2 * (r % 4)];
      out[b].scales[2 * s + 1] = sub.scales[r / 4][2 * (r % 4) + 1];
      for (int e = 0; e < 32; ++e) {
        const int c = e / 4, i = 4 * (r % 4) + e % 4;
        const uint8_t(&in)[3][16] = sub.q[c / 2];
        int quant;
        if (c % 2 == 1 && r >= 4) {  // the pair's fourth vector: the three bytes' top bits
          quant = in[0][i] >> 6 | (in[1][i] >> 6) << 2 | (in[2][i] >> 6) << 4;
        } else {
          quant = in[c % 2 == 0 ? r / 4 : 2][i] & 0x3F;
        }
        q[32 * s + e] = static_cast<int8_t>(quant - 32);
      }
    }
    q6_k_pack(q, out[b]);
  }
}

}  // namespace runnel::simd128
