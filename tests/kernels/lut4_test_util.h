// Hand-checked dots of the 4-bit lookup formats (MXFP4, IQ4_NL, IQ4_XS), shared by the ref
// and per-ISA tests: blocks built byte by byte from the format definitions, activations
// chosen so that every product and partial sum is an integer (times a power of two) below
// 2^24, so any correct kernel returns the expected value exactly, whatever its order.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/ref/blocks.h"
#include "kernels/types.h"

namespace runnel::test {

struct Lut4Case {
  std::string what;
  GgmlType type;
  int64_t n;
  std::vector<uint8_t> w;  // weight row
  std::vector<uint8_t> a;  // activation row (Q8_0 or Q8_K)
  float expected;
};

// 16 code bytes: low nibble j (element j) = j, high nibble (element 16 + j) = (5j + 3) % 16,
// so every code occurs in both halves in a scrambled order.
inline void scrambled_codes(uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(j | ((5 * j + 3) % 16) << 4);
}

// IQ4_XS: sub-block s's scale field ls = value + 32 (6 bits) into scales_l / scales_h.
inline void set_iq4_xs_scale(ref::BlockIq4Xs& b, int s, int value) {
  const int ls = value + 32;
  b.scales_l[s / 2] = static_cast<uint8_t>(b.scales_l[s / 2] | (ls & 15) << (4 * (s % 2)));
  b.scales_h = static_cast<uint16_t>(b.scales_h | (ls >> 4) << (2 * s));
}

template <typename T>
std::vector<uint8_t> bytes_of(const T* p, size_t count) {
  std::vector<uint8_t> v(sizeof(T) * count);
  std::memcpy(v.data(), p, v.size());
  return v;
}

inline std::vector<Lut4Case> lut4_hand_cases() {
  std::vector<Lut4Case> cases;
  // Activations a_i = i - 13 for elements 0 .. 31, d_a = 1.
  ref::BlockQ8_0 ramp{};
  ramp.d = 0x3C00;
  for (int i = 0; i < 32; ++i) ramp.qs[i] = static_cast<int8_t>(i - 13);

  {  // IQ4_NL, d = 1: elements are -127 -104 -83 -65 -49 -35 -22 -10 1 13 25 38 53 69 89 113
     // then -65 1 69 -83 -10 53 -104 -22 38 -127 -35 25 113 -49 13 89; sum v_i (i - 13) = 5828
    ref::BlockIq4Nl w{};
    w.d = 0x3C00;
    scrambled_codes(w.qs);
    cases.push_back({"IQ4_NL every code, d = 1", GgmlType::IQ4_NL, 32, bytes_of(&w, 1),
                     bytes_of(&ramp, 1), 5828.0f});
  }
  {  // MXFP4, e = 128 (half scale 2^0 = 1): elements 0 1 2 3 4 6 8 12 0 -1 -2 -3 -4 -6 -8 -12
     // then 3 0 -6 2 12 -4 1 8 -3 0 6 -2 -12 4 -1 -8; sum v_i (i - 13) = -416
    ref::BlockMxfp4 w{};
    w.e = 128;
    scrambled_codes(w.qs);
    cases.push_back({"MXFP4 every code, e = 128", GgmlType::MXFP4, 32, bytes_of(&w, 1),
                     bytes_of(&ramp, 1), -416.0f});
  }
  {  // Extremes, two blocks: IQ4_NL code 0 (-127) against 127 and code 15 (113) against -127,
     // d = 0.5, d_a = 2: (-127 * 127 - 113 * 127) * 32 = -975360
    ref::BlockIq4Nl w[2]{};
    ref::BlockQ8_0 a[2]{};
    std::memset(w[1].qs, 0xFF, sizeof w[1].qs);
    for (int b = 0; b < 2; ++b) {
      w[b].d = 0x3800;
      a[b].d = 0x4000;
      for (auto& q : a[b].qs) q = static_cast<int8_t>(b == 0 ? 127 : -127);
    }
    cases.push_back({"IQ4_NL -127 x 127 and 113 x -127", GgmlType::IQ4_NL, 64, bytes_of(w, 2),
                     bytes_of(a, 2), -975360.0f});
  }
  {  // MXFP4 with the subnormal half scales: e = 0 (2^-128) and e = 1 (2^-127), codes 7 (12)
     // and 15 (-12) against 127: 12 * 127 * 32 * (2^-128 - 2^-127) = -48768 * 2^-128
    ref::BlockMxfp4 w[2]{};
    ref::BlockQ8_0 a[2]{};
    w[0].e = 0;
    w[1].e = 1;
    std::memset(w[0].qs, 0x77, sizeof w[0].qs);
    std::memset(w[1].qs, 0xFF, sizeof w[1].qs);
    for (auto& b : a) {
      b.d = 0x3C00;
      for (auto& q : b.qs) q = 127;
    }
    cases.push_back({"MXFP4 subnormal scales", GgmlType::MXFP4, 64, bytes_of(w, 2), bytes_of(a, 2),
                     -48768.0f * 0x1p-128f});
  }
  {  // IQ4_XS, d = 1, d_a = 1, every code 0 (-127) against 127 in sub-blocks whose scales
     // are all -32: 8 * 32 * (-127 * 127) * -32 = 132128768 (= 16129 * 2^13, exact)
    ref::BlockIq4Xs w{};
    ref::BlockQ8_K a{};
    w.d = 0x3C00;
    for (int s = 0; s < 8; ++s) set_iq4_xs_scale(w, s, -32);
    a.d = 1.0f;
    for (auto& q : a.qs) q = 127;
    for (auto& s : a.bsums) s = 16 * 127;
    cases.push_back({"IQ4_XS -127 x 127, scales -32", GgmlType::IQ4_XS, 256, bytes_of(&w, 1),
                     bytes_of(&a, 1), 132128768.0f});
  }
  {  // IQ4_XS, d = 0.25, d_a = 2, the scrambled codes in every sub-block against a ramp
     // a_i = i % 32 - 13, sub-block scales -32 31 -1 0 1 15 -16 7 (sum 5):
     // 5828 * 5 * 0.5 = 14570
    ref::BlockIq4Xs w{};
    ref::BlockQ8_K a{};
    w.d = 0x3400;
    const int scales[8] = {-32, 31, -1, 0, 1, 15, -16, 7};
    for (int s = 0; s < 8; ++s) {
      set_iq4_xs_scale(w, s, scales[s]);
      scrambled_codes(w.qs + 16 * s);
    }
    a.d = 2.0f;
    for (int i = 0; i < 256; ++i) a.qs[i] = static_cast<int8_t>(i % 32 - 13);
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += a.qs[16 * g + i];
      a.bsums[g] = static_cast<int16_t>(sum);
    }
    cases.push_back({"IQ4_XS every code and scale sign", GgmlType::IQ4_XS, 256, bytes_of(&w, 1),
                     bytes_of(&a, 1), 14570.0f});
  }
  return cases;
}

}  // namespace runnel::test
