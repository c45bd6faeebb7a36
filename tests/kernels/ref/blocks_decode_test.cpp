// (1) Bit-exact decoding of hand-built blocks, every type. Each case writes raw block
// bytes from the format definition (explicit f16 scale bits, explicit nibble / high-bit /
// scale packing) and computes the expected floats independently. Scales are powers of two
// and quants small integers, so every expected value is exact and compared with ==.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/blocks.h"

namespace runnel {
namespace {

using namespace runnel::ref;

std::vector<float> decode(GgmlType type, const void* block, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n), -12345.0f);
  ref_kernels().of(type).dequantize_row(block, y.data(), n);
  return y;
}

// f16 bit patterns used below (exact values).
constexpr uint16_t kHalf1 = 0x3C00;       // 1.0
constexpr uint16_t kHalf0_5 = 0x3800;     // 0.5
constexpr uint16_t kHalf0_25 = 0x3400;    // 0.25
constexpr uint16_t kHalf0_0625 = 0x2C00;  // 0.0625
constexpr uint16_t kHalf2 = 0x4000;       // 2.0
constexpr uint16_t kHalfMinus2 = 0xC000;  // -2.0

TEST_CASE("F32, F16 and BF16 rows decode their raw bits", "[kernels]") {
  const float f32[4] = {1.5f, -0.0f, 3.0e-40f /* denormal */, -65504.0f};
  const auto y32 = decode(GgmlType::F32, f32, 4);
  for (int i = 0; i < 4; ++i) CHECK(std::memcmp(&y32[i], &f32[i], 4) == 0);

  const uint16_t f16[6] = {0x3C00, 0xC000, 0x0001, 0x7BFF, 0x8000, 0x3555};
  const auto y16 = decode(GgmlType::F16, f16, 6);
  CHECK(y16[0] == 1.0f);
  CHECK(y16[1] == -2.0f);
  CHECK(y16[2] == 0x1p-24f);         // smallest subnormal half
  CHECK(y16[3] == 65504.0f);         // largest half
  CHECK(std::signbit(y16[4]));       // -0
  CHECK(y16[5] == 0.333251953125f);  // 0x155 / 1024 * 2^-2 + 2^-2

  const uint16_t bf16[4] = {0x3F80, 0xC0A0, 0x0001, 0x7F7F};
  const auto yb = decode(GgmlType::BF16, bf16, 4);
  CHECK(yb[0] == 1.0f);
  CHECK(yb[1] == -5.0f);
  CHECK(yb[2] == 0x1p-133f);  // the bf16 bits are the top half of the float
  CHECK(yb[3] == 0x1.FEp127f);
}

TEST_CASE("Q4_0 block: d * (nibble - 8), low nibbles first", "[kernels]") {
  BlockQ4_0 b{};
  b.d = kHalf0_5;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = decode(GgmlType::Q4_0, &b, 32);
  for (int j = 0; j < 16; ++j) {
    CHECK(y[j] == 0.5f * static_cast<float>(j - 8));
    CHECK(y[j + 16] == 0.5f * static_cast<float>(7 - j));
  }
  CHECK(y[0] == -4.0f);
  CHECK(y[16] == 3.5f);
}

TEST_CASE("Q4_1 block: d * nibble + m", "[kernels]") {
  BlockQ4_1 b{};
  b.d = kHalf0_25;
  b.m = kHalfMinus2;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (((5 * j) % 16) << 4));
  const auto y = decode(GgmlType::Q4_1, &b, 32);
  for (int j = 0; j < 16; ++j) {
    CHECK(y[j] == 0.25f * static_cast<float>(j) - 2.0f);
    CHECK(y[j + 16] == 0.25f * static_cast<float>((5 * j) % 16) - 2.0f);
  }
}

TEST_CASE("Q5_0 block: fifth bit j of the little-endian qh word", "[kernels]") {
  BlockQ5_0 b{};
  b.d = kHalf1;
  const uint32_t qh = 0xA5A5F00Fu;  // bits 0-3 set, 12-15 set, then 0xA5 0xA5
  b.qh[0] = 0x0F;
  b.qh[1] = 0xF0;
  b.qh[2] = 0xA5;
  b.qh[3] = 0xA5;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(((3 * j) % 16) | ((j ^ 9) << 4));
  const auto y = decode(GgmlType::Q5_0, &b, 32);
  for (int j = 0; j < 16; ++j) {
    const int lo = ((3 * j) % 16) | static_cast<int>(((qh >> j) & 1) << 4);
    const int hi = (j ^ 9) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
    CHECK(y[j] == static_cast<float>(lo - 16));
    CHECK(y[j + 16] == static_cast<float>(hi - 16));
  }
  CHECK(y[0] == 0.0f);   // nibble 0 + bit 0 set = 16 -> 0
  CHECK(y[4] == -4.0f);  // nibble 12, bit 4 clear -> 12 - 16
  CHECK(y[16] == 9.0f);  // nibble 9 | bit 16 (0xA5 bit 0) set -> 25 - 16
}

TEST_CASE("Q5_1 block: d * (nibble | bit << 4) + m", "[kernels]") {
  BlockQ5_1 b{};
  b.d = kHalf0_5;
  b.m = kHalf1;
  const uint32_t qh = 0x12345678u;
  for (int k = 0; k < 4; ++k) b.qh[k] = static_cast<uint8_t>(qh >> (8 * k));
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>((15 - j) | (j << 4));
  const auto y = decode(GgmlType::Q5_1, &b, 32);
  for (int j = 0; j < 16; ++j) {
    const int lo = (15 - j) | static_cast<int>(((qh >> j) & 1) << 4);
    const int hi = j | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
    CHECK(y[j] == 0.5f * static_cast<float>(lo) + 1.0f);
    CHECK(y[j + 16] == 0.5f * static_cast<float>(hi) + 1.0f);
  }
}

TEST_CASE("Q8_0 and Q8_1 blocks: d * q", "[kernels]") {
  BlockQ8_0 b{};
  b.d = kHalf0_0625;
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(8 * j - 128);
  const auto y = decode(GgmlType::Q8_0, &b, 32);
  for (int j = 0; j < 32; ++j) CHECK(y[j] == 0.0625f * static_cast<float>(8 * j - 128));
  CHECK(y[0] == -8.0f);

  BlockQ8_1 c{};
  c.d = kHalf2;
  c.s = 0x7C00;  // the sum field is not part of the decoded values
  for (int j = 0; j < 32; ++j) c.qs[j] = static_cast<int8_t>(127 - 8 * j);
  const auto z = decode(GgmlType::Q8_1, &c, 32);
  for (int j = 0; j < 32; ++j) CHECK(z[j] == 2.0f * static_cast<float>(127 - 8 * j));
}

// ---- k-quants: a test-local packer writes each layout from its definition.

// 2-bit field of element e (0..255): byte 32 * (e / 128) + e % 32, bits 2 * ((e % 128) / 32).
void put_2bit(uint8_t* qs, int e, int v) {
  qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>(v << (2 * ((e % 128) / 32)));
}

TEST_CASE("Q2_K super-block: d * (sc & 15) * q - dmin * (sc >> 4)", "[kernels]") {
  BlockQ2_K b{};
  b.d = kHalf1;
  b.dmin = kHalf0_5;
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto q_of = [](int e) { return (7 * e + e / 16) % 4; };
  for (int e = 0; e < 256; ++e) put_2bit(b.qs, e, q_of(e));
  const auto y = decode(GgmlType::Q2_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 16;
    CHECK(y[e] == 1.0f * static_cast<float>(j * q_of(e)) - 0.5f * static_cast<float>(15 - j));
  }
  // Literal bits: qs[0] = 0b11'10'01'00 would put 0, 1, 2, 3 in elements 0, 32, 64, 96.
  BlockQ2_K c{};
  c.d = kHalf1;
  for (int j = 0; j < 16; ++j) c.scales[j] = 1;
  c.qs[0] = 0xE4;
  c.qs[32] = 0x1B;  // elements 128, 160, 192, 224 = 3, 2, 1, 0
  const auto z = decode(GgmlType::Q2_K, &c, 256);
  CHECK(z[0] == 0.0f);
  CHECK(z[32] == 1.0f);
  CHECK(z[64] == 2.0f);
  CHECK(z[96] == 3.0f);
  CHECK(z[128] == 3.0f);
  CHECK(z[160] == 2.0f);
  CHECK(z[192] == 1.0f);
  CHECK(z[224] == 0.0f);
  CHECK(z[1] == 0.0f);
}

TEST_CASE("Q3_K super-block: 6-bit signed scales, hmask high bit", "[kernels]") {
  BlockQ3_K b{};
  b.d = kHalf0_5;
  auto scale6 = [](int j) { return (5 * j + 3) % 64; };  // stored value; the scale is - 32
  for (int j = 0; j < 16; ++j) {
    const int s = scale6(j);
    if (j < 8) {
      b.scales[j] |= static_cast<uint8_t>(s & 15);
    } else {
      b.scales[j - 8] |= static_cast<uint8_t>((s & 15) << 4);
    }
    b.scales[8 + j % 4] |= static_cast<uint8_t>((s >> 4) << (2 * (j / 4)));
  }
  auto q_of = [](int e) { return (3 * e + e / 32) % 8 - 4; };  // in [-4, 3]
  for (int e = 0; e < 256; ++e) {
    const int u = q_of(e) + 4;  // high bit set <=> q >= 0
    put_2bit(b.qs, e, u & 3);
    if (u & 4) b.hmask[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
  }
  const auto y = decode(GgmlType::Q3_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    CHECK(y[e] == 0.5f * static_cast<float>((scale6(e / 16) - 32) * q_of(e)));
  }
  // Literal bits: low bits 0 and no high bit decode to -4 * scale.
  BlockQ3_K c{};
  c.d = kHalf1;
  c.scales[0] = 0x01;  // sub-block 0 low nibble 1, sub-block 8 low nibble 0
  c.scales[8] = 0x02;  // sub-block 0 high bits 2 -> 33 - 32 = 1; sub-block 4: 0 -> -32
  const auto z = decode(GgmlType::Q3_K, &c, 256);
  CHECK(z[0] == -4.0f);    // scale 1, q = 0 - 4
  CHECK(z[64] == 128.0f);  // sub-block 4: scale -32, q = -4
  c.hmask[0] = 0x01;
  c.qs[0] = 0x03;
  CHECK(decode(GgmlType::Q3_K, &c, 256)[0] == 3.0f);
}

// Q4_K / Q5_K six-bit scale and min packing, from its definition.
void pack_k4_scales(uint8_t* b, const int* sc, const int* m) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      b[j] |= static_cast<uint8_t>(sc[j]);
      b[j + 4] |= static_cast<uint8_t>(m[j]);
    } else {
      b[j + 4] |= static_cast<uint8_t>((sc[j] & 15) | ((m[j] & 15) << 4));
      b[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
      b[j] |= static_cast<uint8_t>((m[j] >> 4) << 6);
    }
  }
}

TEST_CASE("Q4_K super-block: 8 x 32 with 6-bit scales and mins", "[kernels]") {
  BlockQ4_K b{};
  b.d = kHalf1;
  b.dmin = kHalf0_25;
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = 10 + 7 * j;  // up to 59: exercises the high bits for j >= 4
    m[j] = 63 - 5 * j;
  }
  pack_k4_scales(b.scales, sc, m);
  auto q_of = [](int e) { return (11 * e) % 16; };
  for (int e = 0; e < 256; ++e) {
    // 64-element chunk c: elements 64c + l in low nibbles of qs[32c + l], 64c + 32 + l high.
    const int c = e / 64, r = e % 64;
    b.qs[32 * c + r % 32] |= static_cast<uint8_t>(q_of(e) << (r < 32 ? 0 : 4));
  }
  const auto y = decode(GgmlType::Q4_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    CHECK(y[e] == static_cast<float>(sc[j] * q_of(e)) - 0.25f * static_cast<float>(m[j]));
  }
}

TEST_CASE("Q5_K super-block: Q4_K plus a fifth bit per element in qh", "[kernels]") {
  BlockQ5_K b{};
  b.d = kHalf0_5;
  b.dmin = kHalf1;
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = 63 - 6 * j;
    m[j] = 3 + 8 * j;
  }
  pack_k4_scales(b.scales, sc, m);
  auto q_of = [](int e) { return (13 * e + 5) % 32; };
  for (int e = 0; e < 256; ++e) {
    const int c = e / 64, r = e % 64;
    b.qs[32 * c + r % 32] |= static_cast<uint8_t>((q_of(e) & 15) << (r < 32 ? 0 : 4));
    if (q_of(e) & 16) b.qh[r % 32] |= static_cast<uint8_t>(1 << (2 * c + (r < 32 ? 0 : 1)));
  }
  const auto y = decode(GgmlType::Q5_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    CHECK(y[e] == 0.5f * static_cast<float>(sc[j] * q_of(e)) - static_cast<float>(m[j]));
  }
}

TEST_CASE("Q6_K super-block: int8 scales, 4 + 2 bit quants minus 32", "[kernels]") {
  BlockQ6_K b{};
  b.d = kHalf0_25;
  auto sc_of = [](int j) { return (13 * j) % 31 - 15; };  // negative scales too
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(sc_of(j));
  auto q_of = [](int e) { return (29 * e) % 64 - 32; };
  for (int e = 0; e < 256; ++e) {
    const int u = q_of(e) + 32;
    const int h = e / 128, r = e % 128, quarter = r / 32, l = r % 32;
    // Quarters 0, 1 use low nibbles of ql[l], ql[l + 32]; quarters 2, 3 the high nibbles.
    b.ql[64 * h + l + 32 * (quarter % 2)] |=
        static_cast<uint8_t>((u & 15) << (quarter < 2 ? 0 : 4));
    b.qh[32 * h + l] |= static_cast<uint8_t>((u >> 4) << (2 * quarter));
  }
  const auto y = decode(GgmlType::Q6_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    CHECK(y[e] == 0.25f * static_cast<float>(sc_of(e / 16) * q_of(e)));
  }
}

TEST_CASE("Q8_K block: float d * q", "[kernels]") {
  BlockQ8_K b{};
  b.d = 0.125f;
  for (int e = 0; e < 256; ++e) b.qs[e] = static_cast<int8_t>((3 * e) % 255 - 127);
  const auto y = decode(GgmlType::Q8_K, &b, 256);
  for (int e = 0; e < 256; ++e) CHECK(y[e] == 0.125f * static_cast<float>((3 * e) % 255 - 127));
}

// The lookup types: code bytes qs[j] = j | ((5j + 3) % 16) << 4, so elements 0-15 take codes
// 0 .. 15 in order and elements 16-31 codes 3 8 13 2 7 12 1 6 11 0 5 10 15 4 9 14.
void scrambled_codes(uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(j | ((5 * j + 3) % 16) << 4);
}

TEST_CASE("IQ4_NL block: d times the non-linear table value of each code", "[kernels]") {
  BlockIq4Nl b{};
  b.d = kHalf0_5;
  scrambled_codes(b.qs);
  // 0.5 * {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}
  const float expect[32] = {-63.5f, -52.0f, -41.5f, -32.5f, -24.5f, -17.5f, -11.0f, -5.0f,
                            0.5f,   6.5f,   12.5f,  19.0f,  26.5f,  34.5f,  44.5f,  56.5f,
                            -32.5f, 0.5f,   34.5f,  -41.5f, -5.0f,  26.5f,  -52.0f, -11.0f,
                            19.0f,  -63.5f, -17.5f, 12.5f,  56.5f,  -24.5f, 6.5f,   44.5f};
  const auto y = decode(GgmlType::IQ4_NL, &b, 32);
  for (int i = 0; i < 32; ++i) {
    INFO("element " << i);
    CHECK(y[i] == expect[i]);
  }
}

TEST_CASE("MXFP4 block: fp4 (E2M1) codes times the E8M0 scale 2^(e - 127)", "[kernels]") {
  BlockMxfp4 b{};
  b.e = 125;  // 2^-2
  scrambled_codes(b.qs);
  // E2M1: sign bit 3, then 0, 0.5, 1, 1.5, 2, 3, 4, 6; times 0.25
  const float expect[32] = {0.0f,    0.125f,  0.25f,  0.375f,  0.5f,  0.75f,  1.0f,    1.5f,
                            -0.0f,   -0.125f, -0.25f, -0.375f, -0.5f, -0.75f, -1.0f,   -1.5f,
                            0.375f,  -0.0f,   -0.75f, 0.25f,   1.5f,  -0.5f,  0.125f,  1.0f,
                            -0.375f, 0.0f,    0.75f,  -0.25f,  -1.5f, 0.5f,   -0.125f, -1.0f};
  const auto y = decode(GgmlType::MXFP4, &b, 32);
  for (int i = 0; i < 32; ++i) {
    INFO("element " << i);
    CHECK(y[i] == expect[i]);
  }
  // The scale's extremes: e = 0 is 2^-127 (0.5 of it a float subnormal), e = 254 is 2^127.
  b.e = 0;
  std::memset(b.qs, 0x71, sizeof b.qs);  // codes 1 (0.5) and 7 (6)
  auto z = decode(GgmlType::MXFP4, &b, 32);
  CHECK(z[0] == 0x1p-128f);
  CHECK(z[16] == 6.0f * 0x1p-127f);
  b.e = 254;
  std::memset(b.qs, 0x31, sizeof b.qs);  // codes 1 (0.5) and 3 (1.5; from 2 up the value overflows)
  z = decode(GgmlType::MXFP4, &b, 32);
  CHECK(z[0] == 0x1p126f);
  CHECK(z[31] == 0x1.8p127f);
}

TEST_CASE("IQ4_XS super-block: 6-bit signed sub-block scales on the IQ4_NL grid", "[kernels]") {
  BlockIq4Xs b{};
  b.d = kHalf0_25;
  // sub-block s: scale field ls = 6-bit; value ls - 32. Low 4 bits in nibble s % 2 of
  // scales_l[s / 2], high 2 bits at bits 2s of scales_h.
  const int ls[8] = {0, 63, 31, 32, 33, 47, 16, 39};  // -32, 31, -1, 0, 1, 15, -16, 7
  for (int s = 0; s < 8; ++s) {
    b.scales_l[s / 2] = static_cast<uint8_t>(b.scales_l[s / 2] | (ls[s] & 15) << (4 * (s % 2)));
    b.scales_h = static_cast<uint16_t>(b.scales_h | (ls[s] >> 4) << (2 * s));
  }
  CHECK(b.scales_l[0] == 0xF0);
  CHECK(b.scales_h == 0x9A9C);  // high bits 0 3 1 2 2 2 1 2, sub-block 0 lowest
  // every sub-block: code 15 (113) then 0 (-127), and the rest 8 (1)
  for (int s = 0; s < 8; ++s) {
    std::memset(b.qs + 16 * s, 0x88, 16);
    b.qs[16 * s] = 0x8F;
    b.qs[16 * s + 1] = 0x80;
  }
  const auto y = decode(GgmlType::IQ4_XS, &b, 256);
  const float scale[8] = {-8.0f, 7.75f, -0.25f, 0.0f, 0.25f, 3.75f, -4.0f, 1.75f};  // d (ls - 32)
  for (int s = 0; s < 8; ++s) {
    INFO("sub-block " << s);
    CHECK(y[32 * s] == scale[s] * 113.0f);
    CHECK(y[32 * s + 1] == scale[s] * -127.0f);
    for (int i = 2; i < 32; ++i) CHECK(y[32 * s + i] == scale[s]);
  }
  CHECK(y[0] == -904.0f);
  CHECK(y[33] == -984.25f);
}

TEST_CASE("Multi-block rows decode block after block", "[kernels]") {
  BlockQ8_0 b[3]{};
  for (int k = 0; k < 3; ++k) {
    b[k].d = static_cast<uint16_t>(kHalf1 + (k << 10));  // 1, 2, 4
    for (int j = 0; j < 32; ++j) b[k].qs[j] = static_cast<int8_t>(j - k);
  }
  const auto y = decode(GgmlType::Q8_0, b, 96);
  for (int k = 0; k < 3; ++k) {
    for (int j = 0; j < 32; ++j) CHECK(y[32 * k + j] == static_cast<float>((j - k) * (1 << k)));
  }
}

}  // namespace
}  // namespace runnel
