// Repacking of 8 weight rows into the x8 layouts of x8_layout.h (TypeKernels::repack_x8).
// Bit and byte moves only, so this is baseline x86-64 code; the group keeps every bit of the
// rows (x8_test checks that the rows' dots come out the same through gemm_x8).
#include <cstring>

#include "kernels/ref/blocks.h"
#include "kernels/ref/k_quants_common.h"
#include "kernels/ref/lut4_values.h"
#include "kernels/x86/x8.h"
#include "kernels/x86/x8_layout.h"

namespace runnel::x8 {
namespace {

template <typename Block>
const Block& row_block(const void* rows, size_t row_stride, int r, int64_t b) {
  return reinterpret_cast<const Block*>(static_cast<const uint8_t*>(rows) + static_cast<size_t>(r) * row_stride)[b];
}

// The 6-bit value (q + 32) of element 128h + 32i + l of a Q6_K block (l < 32): see
// dequantize_row_q6_k; set_q6_value ORs it in (ql and qh start zeroed).
uint8_t q6_value(const ref::BlockQ6_K& blk, int h, int i, int l) {
  const int ql = blk.ql[64 * h + 32 * (i % 2) + l] >> (4 * (i / 2));
  const int qh = blk.qh[32 * h + l] >> (2 * i);
  return static_cast<uint8_t>((ql & 0x0F) | (qh & 3) << 4);
}

void set_q6_value(ref::BlockQ6_K& blk, int h, int i, int l, uint8_t v) {
  blk.ql[64 * h + 32 * (i % 2) + l] |= static_cast<uint8_t>((v & 0x0F) << (4 * (i / 2)));
  blk.qh[32 * h + l] |= static_cast<uint8_t>((v >> 4) << (2 * i));
}

// The fifth bits of a Q5 block (its qh, element e in bit e) as the bit plane of
// BlockQ5_0x8 / BlockQ5_1x8: bit j of h[i] is element 4j + i's. fifth_bits_to_qh undoes it.
void qh_to_fifth_bits(const uint8_t* qh, uint8_t* h) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  for (int i = 0; i < 4; ++i) {
    h[i] = 0;
    for (int j = 0; j < 8; ++j) h[i] = static_cast<uint8_t>(h[i] | ((bits >> (4 * j + i)) & 1) << j);
  }
}

void fifth_bits_to_qh(const uint8_t* h, uint8_t* qh) {
  uint32_t bits = 0;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 8; ++j) bits |= static_cast<uint32_t>((h[i] >> j) & 1) << (4 * j + i);
  }
  std::memcpy(qh, &bits, sizeof bits);
}

}  // namespace

void repack_q4_0(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockQ4_0x8*>(group);
  for (int64_t b = 0; b < n / kQK; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ4_0>(rows, row_stride, r, b);
      g[b].d[r] = blk.d;
      for (int j = 0; j < 4; ++j) std::memcpy(g[b].q[j][r], blk.qs + 4 * j, 4);
    }
  }
}

void repack_q4_1(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockQ4_1x8*>(group);
  for (int64_t b = 0; b < n / kQK; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ4_1>(rows, row_stride, r, b);
      g[b].d[r] = blk.d;
      g[b].m[r] = blk.m;
      for (int j = 0; j < 4; ++j) std::memcpy(g[b].q[j][r], blk.qs + 4 * j, 4);
    }
  }
}

void repack_q5_0(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockQ5_0x8*>(group);
  for (int64_t b = 0; b < n / kQK; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ5_0>(rows, row_stride, r, b);
      g[b].d[r] = blk.d;
      qh_to_fifth_bits(blk.qh, g[b].h[r]);
      for (int j = 0; j < 4; ++j) std::memcpy(g[b].q[j][r], blk.qs + 4 * j, 4);
    }
  }
}

void repack_q5_1(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockQ5_1x8*>(group);
  for (int64_t b = 0; b < n / kQK; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ5_1>(rows, row_stride, r, b);
      g[b].d[r] = blk.d;
      g[b].m[r] = blk.m;
      qh_to_fifth_bits(blk.qh, g[b].h[r]);
      for (int j = 0; j < 4; ++j) std::memcpy(g[b].q[j][r], blk.qs + 4 * j, 4);
    }
  }
}

void repack_q8_0(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockQ8_0x8*>(group);
  for (int64_t b = 0; b < n / kQK; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ8_0>(rows, row_stride, r, b);
      g[b].d[r] = blk.d;
      for (int k = 0; k < kQK / 4; ++k) std::memcpy(g[b].q[k][r], blk.qs + 4 * k, 4);
    }
  }
}

namespace {

// Where element l (< 32) of a BlockQ6_Kx8 quarter sits: q[h][i][k][r][byte] with
// 8k + byte = q6_slot(l) (x8_layout.h): l itself, or in pair order.
int q6_slot(int l, bool pairs) {
  if (!pairs) return l;
  return 8 * (l % 16 / 4) + 4 * (l / 16) + l % 4;
}

void repack_q6_k_in(int64_t n, const void* rows, size_t row_stride, void* group, bool pairs) {
  auto* g = static_cast<BlockQ6_Kx8*>(group);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ6_K>(rows, row_stride, r, b);
      g[b].d[r] = blk.d;
      for (int s = 0; s < kQK_K / 16; ++s) g[b].scales[s / 2][r][s % 2] = blk.scales[s];
      for (int h = 0; h < 2; ++h) {
        for (int l = 0; l < 32; ++l) {
          const uint8_t v3 = q6_value(blk, h, 3, l);
          const int slot = q6_slot(l, pairs);
          for (int i = 0; i < 3; ++i) {
            g[b].q[h][i][slot / 8][r][slot % 8] =
                static_cast<uint8_t>(q6_value(blk, h, i, l) | ((v3 >> (2 * i)) & 3) << 6);
          }
        }
      }
    }
  }
}

void unpack_row_q6_k_in(int64_t n, const void* group, int r, void* row, bool pairs) {
  const auto* g = static_cast<const BlockQ6_Kx8*>(group);
  auto* out = static_cast<ref::BlockQ6_K*>(row);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    out[b].d = g[b].d[r];
    for (int s = 0; s < kQK_K / 16; ++s) out[b].scales[s] = g[b].scales[s / 2][r][s % 2];
    std::memset(out[b].ql, 0, sizeof out[b].ql);
    std::memset(out[b].qh, 0, sizeof out[b].qh);
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 32; ++l) {
        const int slot = q6_slot(l, pairs);
        int v3 = 0;
        for (int i = 0; i < 3; ++i) {
          const uint8_t packed = g[b].q[h][i][slot / 8][r][slot % 8];
          set_q6_value(out[b], h, i, l, packed & 0x3F);
          v3 |= (packed >> 6) << (2 * i);
        }
        set_q6_value(out[b], h, 3, l, static_cast<uint8_t>(v3));
      }
    }
  }
}

}  // namespace

void repack_q6_k(int64_t n, const void* rows, size_t row_stride, void* group) {
  repack_q6_k_in(n, rows, row_stride, group, false);
}

void repack_q6_k_pairs(int64_t n, const void* rows, size_t row_stride, void* group) {
  repack_q6_k_in(n, rows, row_stride, group, true);
}

void unpack_row_q6_k(int64_t n, const void* group, int r, void* row) {
  unpack_row_q6_k_in(n, group, r, row, false);
}

void unpack_row_q6_k_pairs(int64_t n, const void* group, int r, void* row) {
  unpack_row_q6_k_in(n, group, r, row, true);
}

void repack_q4_k(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockQ4_Kx8*>(group);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ4_K>(rows, row_stride, r, b);
      g[b].dm[r][0] = blk.d;
      g[b].dm[r][1] = blk.dmin;
      for (int s = 0; s < 8; ++s) {
        ref::unpack_scale_min_k4(s, blk.scales, &g[b].sc[s / 2][r][s % 2],
                                 &g[b].m[s / 4][r][s / 2 % 2][s % 2]);
      }
      for (int c = 0; c < 4; ++c) {
        for (int k = 0; k < 4; ++k) std::memcpy(g[b].qs[c][k][r], blk.qs + 32 * c + 8 * k, 8);
      }
    }
  }
}

void repack_mxfp4(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockMxfp4x8*>(group);
  for (int64_t b = 0; b < n / kQK; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockMxfp4>(rows, row_stride, r, b);
      g[b].e[r] = blk.e;
      for (int j = 0; j < 4; ++j) std::memcpy(g[b].q[j][r], blk.qs + 4 * j, 4);
    }
  }
}

void repack_iq4_xs(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockIq4Xsx8*>(group);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockIq4Xs>(rows, row_stride, r, b);
      g[b].d[r] = blk.d;
      for (int s = 0; s < kQK_K / 32; ++s) {
        g[b].sc[s][r] = static_cast<int8_t>(ref::iq4_xs_scale(blk, s));
        for (int j = 0; j < 4; ++j) std::memcpy(g[b].q[s][j][r], blk.qs + 16 * s + 4 * j, 4);
      }
    }
  }
}

// The inverses: row r of a group back in the type's own blocks (embedding lookups of a
// matrix that is also the output projection).
void unpack_row_q4_0(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockQ4_0x8*>(group);
  auto* out = static_cast<ref::BlockQ4_0*>(row);
  for (int64_t b = 0; b < n / kQK; ++b) {
    out[b].d = g[b].d[r];
    for (int j = 0; j < 4; ++j) std::memcpy(out[b].qs + 4 * j, g[b].q[j][r], 4);
  }
}

void unpack_row_q4_1(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockQ4_1x8*>(group);
  auto* out = static_cast<ref::BlockQ4_1*>(row);
  for (int64_t b = 0; b < n / kQK; ++b) {
    out[b].d = g[b].d[r];
    out[b].m = g[b].m[r];
    for (int j = 0; j < 4; ++j) std::memcpy(out[b].qs + 4 * j, g[b].q[j][r], 4);
  }
}

void unpack_row_q5_0(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockQ5_0x8*>(group);
  auto* out = static_cast<ref::BlockQ5_0*>(row);
  for (int64_t b = 0; b < n / kQK; ++b) {
    out[b].d = g[b].d[r];
    fifth_bits_to_qh(g[b].h[r], out[b].qh);
    for (int j = 0; j < 4; ++j) std::memcpy(out[b].qs + 4 * j, g[b].q[j][r], 4);
  }
}

void unpack_row_q5_1(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockQ5_1x8*>(group);
  auto* out = static_cast<ref::BlockQ5_1*>(row);
  for (int64_t b = 0; b < n / kQK; ++b) {
    out[b].d = g[b].d[r];
    out[b].m = g[b].m[r];
    fifth_bits_to_qh(g[b].h[r], out[b].qh);
    for (int j = 0; j < 4; ++j) std::memcpy(out[b].qs + 4 * j, g[b].q[j][r], 4);
  }
}

void unpack_row_q8_0(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockQ8_0x8*>(group);
  auto* out = static_cast<ref::BlockQ8_0*>(row);
  for (int64_t b = 0; b < n / kQK; ++b) {
    out[b].d = g[b].d[r];
    for (int k = 0; k < kQK / 4; ++k) std::memcpy(out[b].qs + 4 * k, g[b].q[k][r], 4);
  }
}

void unpack_row_q4_k(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockQ4_Kx8*>(group);
  auto* out = static_cast<ref::BlockQ4_K*>(row);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    out[b].d = g[b].dm[r][0];
    out[b].dmin = g[b].dm[r][1];
    uint8_t sc[8];
    uint8_t m[8];
    for (int s = 0; s < 8; ++s) {
      sc[s] = g[b].sc[s / 2][r][s % 2];
      m[s] = g[b].m[s / 4][r][s / 2 % 2][s % 2];
    }
    ref::pack_scale_min_k4(sc, m, out[b].scales);
    for (int c = 0; c < 4; ++c) {
      for (int k = 0; k < 4; ++k) std::memcpy(out[b].qs + 32 * c + 8 * k, g[b].qs[c][k][r], 8);
    }
  }
}

void unpack_row_mxfp4(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockMxfp4x8*>(group);
  auto* out = static_cast<ref::BlockMxfp4*>(row);
  for (int64_t b = 0; b < n / kQK; ++b) {
    out[b].e = g[b].e[r];
    for (int j = 0; j < 4; ++j) std::memcpy(out[b].qs + 4 * j, g[b].q[j][r], 4);
  }
}

void unpack_row_iq4_xs(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockIq4Xsx8*>(group);
  auto* out = static_cast<ref::BlockIq4Xs*>(row);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    out[b].d = g[b].d[r];
    out[b].scales_h = 0;
    std::memset(out[b].scales_l, 0, sizeof out[b].scales_l);
    for (int s = 0; s < kQK_K / 32; ++s) {
      const int ls = g[b].sc[s][r] + 32;
      out[b].scales_l[s / 2] = static_cast<uint8_t>(out[b].scales_l[s / 2] | (ls & 0x0F) << (4 * (s % 2)));
      out[b].scales_h = static_cast<uint16_t>(out[b].scales_h | (ls >> 4) << (2 * s));
      for (int j = 0; j < 4; ++j) std::memcpy(out[b].qs + 16 * s + 4 * j, g[b].q[s][j][r], 4);
    }
  }
}

}  // namespace runnel::x8
