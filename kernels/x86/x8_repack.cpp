// Repacking of 8 weight rows into the x8 layouts of x8_layout.h (TypeKernels::repack_x8).
// Byte moves only, so this is baseline x86-64 code; the group keeps every bit of the
// rows (x8_test checks that the rows' dots come out the same through gemm_x8).
#include <cstring>

#include "kernels/ref/blocks.h"
#include "kernels/ref/k_quants_common.h"
#include "kernels/x86/x8.h"
#include "kernels/x86/x8_layout.h"

namespace runnel::x8 {
namespace {

template <typename Block>
const Block& row_block(const void* rows, size_t row_stride, int r, int64_t b) {
  return reinterpret_cast<const Block*>(static_cast<const uint8_t*>(rows) + static_cast<size_t>(r) * row_stride)[b];
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

void repack_q6_k(int64_t n, const void* rows, size_t row_stride, void* group) {
  auto* g = static_cast<BlockQ6_Kx8*>(group);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const auto& blk = row_block<ref::BlockQ6_K>(rows, row_stride, r, b);
      g[b].d[r] = blk.d;
      for (int s = 0; s < kQK_K / 16; ++s) g[b].scales[s / 2][r][s % 2] = blk.scales[s];
      for (int h = 0; h < 2; ++h) {
        for (int k = 0; k < 4; ++k) {
          std::memcpy(g[b].ql[h][0][k][r], blk.ql + 64 * h + 8 * k, 8);
          std::memcpy(g[b].ql[h][1][k][r], blk.ql + 64 * h + 32 + 8 * k, 8);
          std::memcpy(g[b].qh[h][k][r], blk.qh + 32 * h + 8 * k, 8);
        }
      }
    }
  }
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

void unpack_row_q6_k(int64_t n, const void* group, int r, void* row) {
  const auto* g = static_cast<const BlockQ6_Kx8*>(group);
  auto* out = static_cast<ref::BlockQ6_K*>(row);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    out[b].d = g[b].d[r];
    for (int s = 0; s < kQK_K / 16; ++s) out[b].scales[s] = g[b].scales[s / 2][r][s % 2];
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < 4; ++k) {
        std::memcpy(out[b].ql + 64 * h + 8 * k, g[b].ql[h][0][k][r], 8);
        std::memcpy(out[b].ql + 64 * h + 32 + 8 * k, g[b].ql[h][1][k][r], 8);
        std::memcpy(out[b].qh + 32 * h + 8 * k, g[b].qh[h][k][r], 8);
      }
    }
  }
}

}  // namespace runnel::x8
