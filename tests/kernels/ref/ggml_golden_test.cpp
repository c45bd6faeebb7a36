// Bit-identity with llama.cpp on realistic rows. The fingerprints below are FNV-1a hashes
// of the bytes that ggml's own quantize_row_*_ref produced for golden_row(0..7) (1024
// elements each), and of the float bits its scalar ggml_vec_dot_*_generic returned for
// weight row r against activation row r + 101 quantized to the partner type. They were
// recorded from ggml commit d99724f2 (github.com/ggml-org/ggml, Aug 2026) built as a
// plain C library; golden_row only uses integer ops and exact float ops, so the rows are
// the same on every platform (native and wasm). A changed hash means a quantizer or a dot
// product no longer matches llama.cpp bit for bit.
// MXFP4, IQ4_NL and IQ4_XS were recorded the same way from the llama.cpp source that
// tests/parity's node-llama-cpp bundles (llama/gitRelease.bundle; ggml-quants.c and
// ggml-cpu/quants.c built as plain C): quantize_row_mxfp4_ref, and for IQ4_NL / IQ4_XS
// llama-quantize's quantize_iq4_nl / quantize_iq4_xs (without, and in the second test
// with, importance weights); their dots from ggml_vec_dot_mxfp4_q8_0_generic,
// ggml_vec_dot_iq4_nl_q8_0_generic and ggml_vec_dot_iq4_xs_q8_K_generic.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "tests/kernels/test_util.h"

namespace runnel {
namespace {

using test::fnv1a;
using test::Rng;

std::vector<float> golden_row(int r, int64_t n) {
  Rng rng(0x5EED0000u + static_cast<uint64_t>(r));
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    switch (r % 4) {
      case 0:
        x[i] = rng.bell();
        break;
      case 1:
        x[i] = rng.heavy();
        break;
      case 2:
        x[i] = rng.symmetric() * 0.02f;
        break;
      default:
        x[i] = (i % 5 == 0) ? 0.0f : rng.bell() * 0.1f + 0.05f;
        break;
    }
  }
  return x;
}

struct Golden {
  GgmlType type;
  uint64_t quant_hash;
  uint64_t dot_hash;  // 0: the type has no dot product of its own
};

constexpr Golden kGolden[] = {
    {GgmlType::Q4_0, 0x9aa8b2b3fe6d3795ull, 0x6c6f50e8e79a288aull},
    {GgmlType::Q4_1, 0xd77023b0c3450231ull, 0xf121dd4e81ecececull},
    {GgmlType::Q5_0, 0x42af3673ab067cadull, 0x820c0f72bf4aceb7ull},
    {GgmlType::Q5_1, 0x0ce0e1b406c255c2ull, 0xdddc7c5ee586afecull},
    {GgmlType::Q8_0, 0x2815d224322debcaull, 0xce752a16abfe30bbull},
    {GgmlType::Q8_1, 0xf4d88a4252b30adfull, 0},
    {GgmlType::Q2_K, 0xf8f4768e2044cefaull, 0xc680ba835bea8ddfull},
    {GgmlType::Q3_K, 0x580a4d752064342dull, 0xd85da724f9546b63ull},
    {GgmlType::Q4_K, 0x190b6dbaf975c61cull, 0xd6b53fcd7d5ff40full},
    {GgmlType::Q5_K, 0x1b34c3f38c741a61ull, 0x314ea81b3237e73dull},
    {GgmlType::Q6_K, 0xb5a1155c4ca5f4d6ull, 0xba3ce02c42839298ull},
    {GgmlType::Q8_K, 0x10d34e7b68d7b43full, 0},
    {GgmlType::MXFP4, 0xa7fe0635a32e9e85ull, 0xd10f45058ffd748cull},
    {GgmlType::IQ4_NL, 0xa502e73a05702d98ull, 0x97f690fe735acae2ull},
    {GgmlType::IQ4_XS, 0x6d620b267458f62bull, 0x67ac6d794e88de32ull},
};

TEST_CASE("Quantizers and dot products match ggml's bit for bit", "[kernels]") {
  constexpr int64_t kN = 1024;
  constexpr int kRows = 8;
  for (const Golden& g : kGolden) {
    INFO("type " << traits(g.type).name);
    const TypeKernels& k = ref_kernels().of(g.type);
    const TypeKernels& ak = ref_kernels().of(k.vec_dot_type);
    std::vector<uint8_t> w(row_bytes(g.type, kN));
    std::vector<uint8_t> a(row_bytes(k.vec_dot_type, kN));
    uint64_t quant_hash = 0xcbf29ce484222325ull;
    uint64_t dot_hash = 0xcbf29ce484222325ull;
    for (int r = 0; r < kRows; ++r) {
      const auto x = golden_row(r, kN);
      k.quantize_row(x.data(), w.data(), kN);
      quant_hash = fnv1a(w.data(), w.size(), quant_hash);
      if (g.dot_hash != 0) {
        const auto y = golden_row(r + 101, kN);
        ak.quantize_row(y.data(), a.data(), kN);
        const float s = k.vec_dot(kN, w.data(), a.data());
        dot_hash = fnv1a(&s, sizeof s, dot_hash);
      }
    }
    CHECK(quant_hash == g.quant_hash);
    if (g.dot_hash != 0) CHECK(dot_hash == g.dot_hash);
  }
}

// Importance weights for golden row r: positive and uneven, like an imatrix's mean squared
// activations (b^2 + 1/8 for bell values b; exact float ops only).
std::vector<float> golden_importance(int r, int64_t n) {
  Rng rng(0x1A7A0000u + static_cast<uint64_t>(r));
  std::vector<float> w(static_cast<size_t>(n));
  for (auto& v : w) {
    const float b = rng.bell();
    v = b * b + 0.125f;
  }
  return w;
}

// The legacy and k-quant hashes: ggml's quantize_q4_0 .. quantize_q6_K with quant_weights
// (one row of 1024 per call), from libggml-base of llama.cpp de3ff81 (the bundle's source,
// scripts/build_llama_cpp.sh), whose IQ4_NL hash is the one recorded above.
TEST_CASE("Quantizers with importance weights match ggml's bit for bit", "[kernels]") {
  constexpr int64_t kN = 1024;
  const struct {
    GgmlType type;
    void (*quantize)(const float*, void*, int64_t, const float*);
    uint64_t hash;
  } cases[] = {{GgmlType::IQ4_NL, ref::quantize_row_iq4_nl_weighted, 0xd969d5c3dc17e6d5ull},
               {GgmlType::IQ4_XS, ref::quantize_row_iq4_xs_weighted, 0xf15459680764a5e6ull},
               {GgmlType::Q4_0, ref::quantize_row_q4_0_weighted, 0x73834fc3f5c450c6ull},
               {GgmlType::Q4_1, ref::quantize_row_q4_1_weighted, 0x092ef829119fb592ull},
               {GgmlType::Q5_0, ref::quantize_row_q5_0_weighted, 0xbc1be3a9e52119acull},
               {GgmlType::Q5_1, ref::quantize_row_q5_1_weighted, 0x0f955c5bdbb46e6cull},
               {GgmlType::Q2_K, ref::quantize_row_q2_k_weighted, 0xe959a07997b4cd14ull},
               {GgmlType::Q3_K, ref::quantize_row_q3_k_weighted, 0x36ee0ca49691d067ull},
               {GgmlType::Q4_K, ref::quantize_row_q4_k_weighted, 0xd19cfa19043541a2ull},
               {GgmlType::Q5_K, ref::quantize_row_q5_k_weighted, 0x95a564c8f9f6475aull},
               {GgmlType::Q6_K, ref::quantize_row_q6_k_weighted, 0x92639ec67d9f48cfull}};
  for (const auto& c : cases) {
    INFO("type " << traits(c.type).name);
    std::vector<uint8_t> w(row_bytes(c.type, kN));
    uint64_t hash = 0xcbf29ce484222325ull;
    for (int r = 0; r < 8; ++r) {
      c.quantize(golden_row(r, kN).data(), w.data(), kN, golden_importance(r, kN).data());
      hash = fnv1a(w.data(), w.size(), hash);
    }
    CHECK(hash == c.hash);
  }
}

TEST_CASE("Golden rows are the documented distributions", "[kernels]") {
  // The fingerprints depend on this generator; check it still makes what it says.
  const auto r2 = golden_row(2, 4096);  // uniform in [-0.02, 0.02)
  double max_abs = 0.0;
  for (float v : r2) max_abs = std::max(max_abs, static_cast<double>(std::fabs(v)));
  CHECK(max_abs <= 0.02);
  CHECK(max_abs > 0.0199);
  const auto r3 = golden_row(3, 4096);  // every fifth element exactly 0
  for (size_t i = 0; i < r3.size(); i += 5) CHECK(r3[i] == 0.0f);
  CHECK(test::rms(golden_row(0, 4096)) == Approx(1.0).epsilon(0.05));  // unit variance
}

}  // namespace
}  // namespace runnel
