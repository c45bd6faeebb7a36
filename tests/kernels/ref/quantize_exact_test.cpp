// (5) Quantizers produce the exact blocks ggml's reference quantizers produce, checked on
// hand-worked inputs: for each case the scale, every quant and the packing are derived
// by hand in the comments (ggml's rules: Q8 rounds half away from zero, Q4/Q5 round
// half up via truncation of x/d + offset + 0.5, k-quants round half to even).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/kernels.h"
#include "kernels/ref/blocks.h"
#include "kernels/ref/ref.h"
#include "tests/kernels/test_util.h"

namespace runnel {
namespace {

using namespace runnel::ref;
using test::Rng;

template <typename Block>
Block quantize_one(GgmlType type, const std::vector<float>& x) {
  Block b;
  std::memset(&b, 0xEE, sizeof b);  // garbage: every byte must be written
  ref_kernels().of(type).quantize_row(x.data(), &b, static_cast<int64_t>(x.size()));
  return b;
}

// Legacy 32-element blocks: nibble j = element j, high nibble = element j + 16.
void expect_nibbles(const uint8_t* qs, const int* q) {
  for (int j = 0; j < 16; ++j) {
    INFO("byte " << j);
    CHECK(qs[j] == ((q[j] & 15) | ((q[j + 16] & 15) << 4)));
  }
}

uint32_t qh_word(const uint8_t* qh) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 |
         static_cast<uint32_t>(qh[2]) << 16 | static_cast<uint32_t>(qh[3]) << 24;
}

uint32_t expected_qh(const int* q) {
  uint32_t bits = 0;
  for (int j = 0; j < 32; ++j) bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  return bits;
}

TEST_CASE("Q8_0 quantizer: d = amax / 127, round half away from zero", "[kernels]") {
  // amax 63.5 -> d = 0.5 exactly, 1/d = 2: q = round(2x).
  std::vector<float> x(32, 0.0f);
  const float in[8] = {-63.5f, 0.25f, -0.25f, 0.75f, 10.1f, 63.5f, -0.2f, 31.75f};
  const int q[8] = {-127, 1 /* 0.5 */, -1 /* -0.5 */, 2 /* 1.5 */,
                    20,   127,         0 /* -0.4 */,  64 /* 63.5 */};
  for (int j = 0; j < 8; ++j) x[4 * j] = in[j];
  const auto b = quantize_one<BlockQ8_0>(GgmlType::Q8_0, x);
  CHECK(b.d == 0x3800);
  for (int j = 0; j < 32; ++j) CHECK(b.qs[j] == (j % 4 == 0 ? q[j / 4] : 0));

  const auto c = quantize_one<BlockQ8_1>(GgmlType::Q8_1, x);
  CHECK(c.d == 0x3800);
  for (int j = 0; j < 32; ++j) CHECK(c.qs[j] == b.qs[j]);
  // s = d * sum(q) = 0.5 * 86 = 43 = 1.34375 * 2^5 -> f16 0x5160.
  CHECK(c.s == 0x5160);

  const auto z = quantize_one<BlockQ8_0>(GgmlType::Q8_0, std::vector<float>(32, 0.0f));
  CHECK(z.d == 0);
  for (int j = 0; j < 32; ++j) CHECK(z.qs[j] == 0);
}

TEST_CASE("Q4_0 quantizer: d = signed absmax / -8, q = min(15, trunc(x/d + 8.5))", "[kernels]") {
  SECTION("extreme negative: d = 1") {
    std::vector<float> x(32, 0.0f);  // zeros -> trunc(8.5) = 8
    const float in[11] = {-8.0f, 7.0f, 7.4f, 3.5f, -3.5f, 0.49f, -0.5f, 7.9f, -7.6f, 2.0f, -1.2f};
    const int qv[11] = {0, 15, 15, 12, 5, 8, 8, 15 /* 16.4 clamped */, 0, 10, 7};
    const int at[11] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 17};
    int q[32];
    for (int j = 0; j < 32; ++j) q[j] = 8;
    for (int k = 0; k < 11; ++k) {
      x[at[k]] = in[k];
      q[at[k]] = qv[k];
    }
    const auto b = quantize_one<BlockQ4_0>(GgmlType::Q4_0, x);
    CHECK(b.d == 0x3C00);
    expect_nibbles(b.qs, q);
  }
  SECTION("extreme positive: d = -0.5, so 1/d = -2") {
    std::vector<float> x(32, 0.0f);
    x[0] = 4.0f;    // -8 + 8.5 -> 0 (decodes to +4)
    x[1] = -3.9f;   // 7.8 + 8.5 = 16.3 -> 15
    x[2] = 1.0f;    // -2 + 8.5 -> 6
    x[3] = 0.25f;   // -0.5 + 8.5 -> 8
    x[20] = -0.3f;  // 0.6 + 8.5 -> 9
    int q[32];
    for (int j = 0; j < 32; ++j) q[j] = 8;
    q[0] = 0;
    q[1] = 15;
    q[2] = 6;
    q[3] = 8;
    q[20] = 9;
    const auto b = quantize_one<BlockQ4_0>(GgmlType::Q4_0, x);
    CHECK(b.d == 0xB800);
    expect_nibbles(b.qs, q);
  }
}

TEST_CASE("Q4_1 quantizer: d = (max - min) / 15, m = min, q = trunc((x - min)/d + 0.5)",
          "[kernels]") {
  std::vector<float> x(32, 0.0f);  // zeros: (0 + 1) + 0.5 -> 1
  int q[32];
  for (int j = 0; j < 32; ++j) q[j] = 1;
  const float in[6] = {-1.0f, 14.0f, 0.5f, 2.49f, 6.5f, 13.6f};
  const int qv[6] = {0, 15, 2 /* 1.5 rounds up */, 3 /* 3.99 */, 8, 15 /* 15.1 */};
  const int at[6] = {0, 1, 2, 3, 18, 31};
  for (int k = 0; k < 6; ++k) {
    x[at[k]] = in[k];
    q[at[k]] = qv[k];
  }
  const auto b = quantize_one<BlockQ4_1>(GgmlType::Q4_1, x);
  CHECK(b.d == 0x3C00);
  CHECK(b.m == 0xBC00);
  expect_nibbles(b.qs, q);

  // A constant block: d = 0, every quant 0, m carries the value.
  const auto c = quantize_one<BlockQ4_1>(GgmlType::Q4_1, std::vector<float>(32, 3.0f));
  CHECK(c.d == 0);
  CHECK(c.m == 0x4200);
  for (int j = 0; j < 16; ++j) CHECK(c.qs[j] == 0);
}

TEST_CASE("Q5_0 quantizer: d = signed absmax / -16, fifth bits in qh", "[kernels]") {
  std::vector<float> x(32, 0.0f);  // zeros -> trunc(16.5) = 16: bit 4 set
  int q[32];
  for (int j = 0; j < 32; ++j) q[j] = 16;
  const float in[8] = {-16.0f, 15.0f, 15.6f, 0.5f, -0.5f, 2.4f, -9.0f, 9.0f};
  const int qv[8] = {0, 31, 31 /* 32.1 clamped */, 17, 16, 18, 7, 25};
  const int at[8] = {0, 1, 2, 3, 4, 5, 20, 31};
  for (int k = 0; k < 8; ++k) {
    x[at[k]] = in[k];
    q[at[k]] = qv[k];
  }
  const auto b = quantize_one<BlockQ5_0>(GgmlType::Q5_0, x);
  CHECK(b.d == 0x3C00);
  expect_nibbles(b.qs, q);
  CHECK(qh_word(b.qh) == expected_qh(q));
  CHECK(qh_word(b.qh) == 0xFFEFFFFEu);  // only q[0] = 0 and q[20] = 7 are below 16
}

TEST_CASE("Q5_1 quantizer: d = (max - min) / 31, q = trunc((x - min)/d + 0.5)", "[kernels]") {
  std::vector<float> x(32, 0.0f);
  int q[32] = {};
  const float in[5] = {31.0f, 15.5f, 16.49f, 7.0f, 30.5f};
  const int qv[5] = {31, 16, 16, 7, 31};
  const int at[5] = {1, 2, 17, 18, 30};
  for (int k = 0; k < 5; ++k) {
    x[at[k]] = in[k];
    q[at[k]] = qv[k];
  }
  const auto b = quantize_one<BlockQ5_1>(GgmlType::Q5_1, x);
  CHECK(b.d == 0x3C00);
  CHECK(b.m == 0x0000);
  expect_nibbles(b.qs, q);
  CHECK(qh_word(b.qh) == expected_qh(q));
  CHECK(qh_word(b.qh) == ((1u << 1) | (1u << 2) | (1u << 17) | (1u << 30)));
}

// ---- k-quants on inputs every search resolves exactly (the first candidate scale fits
// with zero error, so no other candidate can win): the expected blocks follow by hand.

TEST_CASE("Q8_K quantizer: iscale = -127 / signed absmax, round half to even", "[kernels]") {
  std::vector<float> x(256, 0.0f);
  x[0] = -127.0f;  // iscale = 1, d = 1
  x[1] = 2.5f;     // -> 2 (ties to even)
  x[2] = 3.5f;     // -> 4
  x[3] = -0.5f;    // -> 0
  x[17] = -1.5f;   // -> -2
  x[18] = 126.5f;  // -> 126
  x[255] = 100.4f;
  const auto b = quantize_one<BlockQ8_K>(GgmlType::Q8_K, x);
  CHECK(b.d == 1.0f);
  CHECK(b.qs[0] == -127);
  CHECK(b.qs[1] == 2);
  CHECK(b.qs[2] == 4);
  CHECK(b.qs[3] == 0);
  CHECK(b.qs[17] == -2);
  CHECK(b.qs[18] == 126);
  CHECK(b.qs[255] == 100);
  CHECK(b.bsums[0] == -127 + 2 + 4);
  CHECK(b.bsums[1] == -2 + 126);
  CHECK(b.bsums[15] == 100);
  for (int g = 2; g < 15; ++g) CHECK(b.bsums[g] == 0);

  // Positive extreme: iscale = -127 / 254 = -0.5, d = -2.
  std::vector<float> y(256, 1.0f);  // -0.5 -> 0 (ties to even)
  y[7] = 254.0f;
  y[8] = 3.0f;  // -1.5 -> -2
  const auto c = quantize_one<BlockQ8_K>(GgmlType::Q8_K, y);
  CHECK(c.d == -2.0f);
  CHECK(c.qs[7] == -127);
  CHECK(c.qs[8] == -2);
  CHECK(c.qs[0] == 0);
}

TEST_CASE("Q6_K quantizer: exactly representable integers", "[kernels]") {
  // Each 16-element group holds -32 and integers in [-31, 31]: every group's fit is
  // scale 1 (iscale -32 / -32); the super-block iscale is -128 / 1, so d = -1/128 (f16
  // 0xA000), every int8 scale is -128, and quants are x + 32.
  std::vector<float> x(256);
  for (int e = 0; e < 256; ++e) x[e] = e % 16 == 0 ? -32.0f : static_cast<float>((7 * e) % 63 - 31);
  const auto b = quantize_one<BlockQ6_K>(GgmlType::Q6_K, x);
  CHECK(b.d == 0xA000);
  for (int j = 0; j < 16; ++j) CHECK(b.scales[j] == -128);
  std::vector<float> y(256);
  ref_kernels().of(GgmlType::Q6_K).dequantize_row(&b, y.data(), 256);
  for (int e = 0; e < 256; ++e) CHECK(y[e] == x[e]);
  // Element 1 = -24 -> u = 8 stored as low nibble 8 of ql[1], qh[1] bits 0-1 = 0.
  CHECK((b.ql[1] & 15) == ((static_cast<int>(x[1]) + 32) & 15));
}

TEST_CASE("Q3_K quantizer: exactly representable integers", "[kernels]") {
  // Groups of 16 hold -4 and integers in [-4, 3]: each fit is scale 1, the super-block
  // iscale is -32 / 1, so d = -1/32 (f16 0xA800) and every 6-bit scale is
  // -32 + 32 = 0 (all scale bytes 0); decoded scale = -1/32 * -32 = 1.
  std::vector<float> x(256);
  for (int e = 0; e < 256; ++e) x[e] = e % 16 == 0 ? -4.0f : static_cast<float>((5 * e) % 8 - 4);
  const auto b = quantize_one<BlockQ3_K>(GgmlType::Q3_K, x);
  CHECK(b.d == 0xA800);
  for (int k = 0; k < 12; ++k) CHECK(b.scales[k] == 0);
  for (int e = 0; e < 256; ++e) {
    const int u = static_cast<int>(x[e]) + 4;
    CHECK(((b.hmask[e % 32] >> (e / 32)) & 1) == (u >> 2));
    CHECK(((b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3) == (u & 3));
  }
}

TEST_CASE("Q2_K quantizer: integers 0..3 with both ends in every group", "[kernels]") {
  // Each group's affine fit is exact (scale 1, min 0), so all 4-bit scales are 15, all
  // mins 0, d = f16(1/15) = 0x2C44 (= 273/4096), dmin = 0. Decoded step d * 15 = 4095/4096.
  std::vector<float> x(256);
  for (int e = 0; e < 256; ++e) {
    const int r = e % 16;
    x[e] = r == 0 ? 0.0f : r == 1 ? 3.0f : static_cast<float>((7 * e) % 4);
  }
  const auto b = quantize_one<BlockQ2_K>(GgmlType::Q2_K, x);
  CHECK(b.d == 0x2C44);
  CHECK(b.dmin == 0);
  for (int j = 0; j < 16; ++j) CHECK(b.scales[j] == 0x0F);
  std::vector<float> y(256);
  ref_kernels().of(GgmlType::Q2_K).dequantize_row(&b, y.data(), 256);
  for (int e = 0; e < 256; ++e) CHECK(y[e] == x[e] * (4095.0f / 4096.0f));
}

TEST_CASE("Q4_K and Q5_K quantizers: integers with both ends in every group", "[kernels]") {
  // Exact affine fits (scale 1, min 0) -> 6-bit scales 63, mins 0, d = f16(1/63) =
  // 0x2410 (= 65/4096), dmin = 0. Packing: bytes 0..3 = 63 | 3 << 6 (high bits of the
  // j >= 4 scales), bytes 4..7 = 0, bytes 8..11 = 63 & 15. Decoded step 63 d = 4095/4096.
  const uint8_t packed[12] = {0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0x0F, 0x0F, 0x0F, 0x0F};
  SECTION("Q4_K, 0..15") {
    std::vector<float> x(256);
    for (int e = 0; e < 256; ++e) {
      const int r = e % 32;
      x[e] = r == 0 ? 0.0f : r == 1 ? 15.0f : static_cast<float>((7 * e) % 16);
    }
    const auto b = quantize_one<BlockQ4_K>(GgmlType::Q4_K, x);
    CHECK(b.d == 0x2410);
    CHECK(b.dmin == 0);
    CHECK(std::memcmp(b.scales, packed, 12) == 0);
    for (int e = 0; e < 256; ++e) {
      const int c = e / 64, r = e % 64;
      CHECK(((b.qs[32 * c + r % 32] >> (r < 32 ? 0 : 4)) & 15) == static_cast<int>(x[e]));
    }
  }
  SECTION("Q5_K, 0..31") {
    std::vector<float> x(256);
    for (int e = 0; e < 256; ++e) {
      const int r = e % 32;
      x[e] = r == 0 ? 0.0f : r == 1 ? 31.0f : static_cast<float>((11 * e) % 32);
    }
    const auto b = quantize_one<BlockQ5_K>(GgmlType::Q5_K, x);
    CHECK(b.d == 0x2410);
    CHECK(b.dmin == 0);
    CHECK(std::memcmp(b.scales, packed, 12) == 0);
    std::vector<float> y(256);
    ref_kernels().of(GgmlType::Q5_K).dequantize_row(&b, y.data(), 256);
    for (int e = 0; e < 256; ++e) CHECK(y[e] == x[e] * (4095.0f / 4096.0f));
  }
}

// ---- 4-bit lookup types. Grid values as the formats define them (ggml-common.h).
constexpr float kIq4Grid[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                1,    13,   25,  38,  53,  69,  89,  113};

// Codes of a 32-element block: element j < 16 takes code j, element 16 + j code
// (5j + 3) % 16 (every code in both halves, scrambled); returns the code of element i.
int scrambled_code(int i) {
  return i < 16 ? i : (5 * (i - 16) + 3) % 16;
}

TEST_CASE("MXFP4 quantizer: e from floor(log2 amax), nearest fp4 value, first one on ties",
          "[kernels]") {
  SECTION("amax 6: e = 2 - 2 + 127, half scale 0.5, so x = 0.5 * table value") {
    std::vector<float> x(32, 0.0f);
    const float in[10] = {6.0f, -5.5f, 2.5f, 5.0f, -0.25f, 1.3f, 1.2f, -0.0f, -3.0f, 0.75f};
    // -5.5: -6 (code 15); 2.5: 2 and 3 tie, 2 (code 4) comes first; 5.0: 4 (code 6) before 6;
    // -0.25: 0 (code 0) before -0.5 (code 9); 1.3: 1.5 (code 3); 1.2: 1 (code 2); -0: 0;
    // -3: code 13; 0.75: 0.5 and 1 tie, code 1
    const int code[10] = {7, 15, 4, 6, 0, 3, 2, 0, 13, 1};
    const int at[10] = {0, 1, 2, 3, 4, 5, 6, 7, 16, 31};
    int q[32] = {};
    for (int k = 0; k < 10; ++k) {
      x[at[k]] = in[k];
      q[at[k]] = code[k];
    }
    const auto b = quantize_one<BlockMxfp4>(GgmlType::MXFP4, x);
    CHECK(b.e == 127);
    expect_nibbles(b.qs, q);
  }
  SECTION("amax just below a power of two keeps the lower exponent; 8 moves up one") {
    std::vector<float> x(64, 0.0f);
    x[3] = -7.99f;  // floor(log2 7.99) = 2: e = 127, decodes to -6 (code 15)
    x[40] = 8.0f;   // log2 8 = 3: e = 128, half scale 1: 8 is code 6
    x[41] = 11.0f;  // 12 (code 7)
    struct TwoBlocks {
      BlockMxfp4 b[2];
    };
    const auto two = quantize_one<TwoBlocks>(GgmlType::MXFP4, x);
    CHECK(two.b[0].e == 127);
    CHECK(two.b[1].e == 128);
    CHECK(two.b[0].qs[3] == 0x0F);
    CHECK(two.b[1].qs[8] == 0x06);
    CHECK(two.b[1].qs[9] == 0x07);
  }
  SECTION("all-zero and tiny blocks take e = 0") {
    const auto z = quantize_one<BlockMxfp4>(GgmlType::MXFP4, std::vector<float>(32, 0.0f));
    CHECK(z.e == 0);
    for (int j = 0; j < 16; ++j) CHECK(z.qs[j] == 0);
    // amax 2^-127: floor(log2) - 2 + 127 = -2 clamps to 0 (half scale 2^-128); 2^-130 is
    // nearer 0 than 2^-128, and -2^-127 is exactly code 10 (-2 doubled)
    std::vector<float> x(32, 0.0f);
    x[0] = 0x1p-130f;
    x[1] = -0x1p-127f;
    const auto t = quantize_one<BlockMxfp4>(GgmlType::MXFP4, x);
    CHECK(t.e == 0);
    CHECK(t.qs[0] == 0x00);
    CHECK(t.qs[1] == 0x0A);
  }
}

TEST_CASE("IQ4_NL quantizer: a block on the grid is found exactly, either sign", "[kernels]") {
  // x = c * grid[code(i)]: the scale search's candidate 1 / c (itry = 0) fits exactly and
  // no other can do better, so d = c and the codes are the scrambled ones.
  for (float c : {1.0f, -1.0f, 0.5f, -0.0078125f}) {
    INFO("c = " << c);
    std::vector<float> x(32);
    int q[32];
    for (int i = 0; i < 32; ++i) {
      q[i] = scrambled_code(i);
      x[i] = c * kIq4Grid[q[i]];
    }
    const auto b = quantize_one<BlockIq4Nl>(GgmlType::IQ4_NL, x);
    CHECK(b.d == fp32_to_fp16(c));
    expect_nibbles(b.qs, q);
  }
  // Exactly representable: 1.0, -1.0, 0.5, -2^-7 in f16 bits.
  CHECK(fp32_to_fp16(-0.0078125f) == 0xA000);
  SECTION("an all-zero block: d = 0 and every code 8 (the grid value 1 nearest 0)") {
    const auto z = quantize_one<BlockIq4Nl>(GgmlType::IQ4_NL, std::vector<float>(32, 0.0f));
    CHECK(z.d == 0);
    for (int j = 0; j < 16; ++j) CHECK(z.qs[j] == 0x88);
  }
}

TEST_CASE("IQ4_XS quantizer: sub-blocks on the grid with integer scales", "[kernels]") {
  // Sub-block s is 0.25 * l_s * grid[code]: each fit finds 0.25 l_s; the largest magnitude
  // (l = -32) sets d = -(-8) / 32 = 0.25, and the 6-bit fields are l_s + 32. Sub-block 4
  // is all zero: scale 0, field 32, every code 8.
  const int l[8] = {-32, 31, -1, 5, 0, 15, -16, 7};
  std::vector<float> x(256);
  for (int e = 0; e < 256; ++e)
    x[e] = 0.25f * static_cast<float>(l[e / 32]) * kIq4Grid[scrambled_code(e % 32)];
  const auto b = quantize_one<BlockIq4Xs>(GgmlType::IQ4_XS, x);
  CHECK(b.d == 0x3400);
  // fields 0 63 31 37 32 47 16 39: low nibbles 0 F F 5 0 F 0 7, high bits 0 3 1 2 2 2 1 2
  CHECK(b.scales_l[0] == 0xF0);
  CHECK(b.scales_l[1] == 0x5F);
  CHECK(b.scales_l[2] == 0xF0);
  CHECK(b.scales_l[3] == 0x70);
  CHECK(b.scales_h == 0x9A9C);
  for (int s = 0; s < 8; ++s) {
    INFO("sub-block " << s);
    int q[32];
    for (int i = 0; i < 32; ++i) q[i] = l[s] == 0 ? 8 : scrambled_code(i);
    expect_nibbles(b.qs + 16 * s, q);
  }
  std::vector<float> y(256);
  ref_kernels().of(GgmlType::IQ4_XS).dequantize_row(&b, y.data(), 256);
  for (int e = 0; e < 256; ++e) CHECK(y[e] == x[e]);
}

TEST_CASE("IQ4 quantizers with importance weights favour the weighted elements", "[kernels]") {
  // Weighted by x^2 alone, the block's fit follows its big elements; importance weights
  // that make the small elements count move the scale toward them. Both must differ, and
  // weighting every element equally must not be the x^2 fit (the weights become
  // sqrt(sigma2 + x^2), ggml's form).
  Rng rng(42);
  std::vector<float> x(256), ones(256, 1.0f), small_first(256);
  for (int i = 0; i < 256; ++i) {
    x[i] = rng.bell();
    small_first[i] = std::fabs(x[i]) < 0.5f ? 100.0f : 0.01f;
  }
  for (GgmlType t : {GgmlType::IQ4_NL, GgmlType::IQ4_XS}) {
    INFO("type " << traits(t).name);
    auto quant = [t, &x](const float* importance) {
      std::vector<uint8_t> q(row_bytes(t, 256));
      if (t == GgmlType::IQ4_NL) {
        quantize_row_iq4_nl_weighted(x.data(), q.data(), 256, importance);
      } else {
        quantize_row_iq4_xs_weighted(x.data(), q.data(), 256, importance);
      }
      return q;
    };
    const auto plain = quant(nullptr);
    CHECK(plain == test::quantize(t, x));  // nullptr is the table's quantizer
    const auto even = quant(ones.data());
    const auto small = quant(small_first.data());
    CHECK(even != plain);
    CHECK(small != plain);
    // the weighted error over the small elements is lower with their weights up
    auto small_error = [&](const std::vector<uint8_t>& q) {
      const auto y = test::dequantize(t, q, 256);
      double e = 0.0;
      for (int i = 0; i < 256; ++i) {
        if (std::fabs(x[i]) < 0.5f) e += (y[i] - x[i]) * (y[i] - x[i]);
      }
      return e;
    };
    CHECK(small_error(small) < small_error(plain));
  }
}

TEST_CASE("k-quant quantizers: an all-zero super-block is all zero bytes", "[kernels]") {
  const std::vector<float> zeros(256, 0.0f);
  auto check = [&](GgmlType type, size_t size) {
    std::vector<uint8_t> q(size, 0xEE);
    ref_kernels().of(type).quantize_row(zeros.data(), q.data(), 256);
    for (size_t i = 0; i < size; ++i) {
      INFO(traits(type).name << " byte " << i);
      CHECK(q[i] == 0);
    }
  };
  check(GgmlType::Q2_K, sizeof(BlockQ2_K));
  check(GgmlType::Q3_K, sizeof(BlockQ3_K));
  check(GgmlType::Q4_K, sizeof(BlockQ4_K));
  check(GgmlType::Q5_K, sizeof(BlockQ5_K));
  check(GgmlType::Q6_K, sizeof(BlockQ6_K));
  check(GgmlType::Q8_K, sizeof(BlockQ8_K));
}

}  // namespace
}  // namespace runnel
