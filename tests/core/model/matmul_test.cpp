// matmul: job groups sharing an input, split over tasks, against float loops over
// the dequantized weights and activations.
#include "core/model/matmul.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "core/kv/kv_cache.h"
#include "kernels/fp16.h"
#include "kernels/kernels.h"
#include "tests/kernels/test_util.h"
#include "tests/test_isa.h"

namespace runnel {
namespace {

struct QuantMatrix {
  std::vector<uint8_t> bytes;
  std::vector<float> values;  // dequantized [n_out][n_in]
  Matrix m;
};

QuantMatrix make_matrix(GgmlType type, int n_in, int n_out, int seed) {
  QuantMatrix q;
  q.values.resize(static_cast<size_t>(n_in) * n_out);
  for (size_t i = 0; i < q.values.size(); ++i) {
    q.values[i] = std::sin(0.37f * static_cast<float>(i) + static_cast<float>(seed));
  }
  const size_t rb = row_bytes(type, n_in);
  q.bytes.resize(rb * n_out);
  const TypeKernels& k = kernels().of(type);
  for (int r = 0; r < n_out; ++r) {
    k.quantize_row(&q.values[static_cast<size_t>(r) * n_in], &q.bytes[r * rb], n_in);
    k.dequantize_row(&q.bytes[r * rb], &q.values[static_cast<size_t>(r) * n_in], n_in);
  }
  q.m = Matrix{q.bytes.data(), type, n_in, n_out};
  return q;
}

// x rounded through the weight's partner format, as matmul's activations are.
std::vector<float> partner_round(GgmlType weight_type, const std::vector<float>& x, int n_in) {
  const GgmlType fmt = kernels().of(weight_type).vec_dot_type;
  std::vector<float> out(x.size());
  std::vector<uint8_t> buf(row_bytes(fmt, n_in));
  for (size_t t = 0; t < x.size() / n_in; ++t) {
    kernels().of(fmt).quantize_row(&x[t * n_in], buf.data(), n_in);
    kernels().of(fmt).dequantize_row(buf.data(), &out[t * n_in], n_in);
  }
  return out;
}

class CountingParallel : public Parallel {
 public:
  explicit CountingParallel(int n) : n_(n) {}
  int n_threads() const override { return n_; }
  void run(int n_tasks, const std::function<void(int)>& fn) override {
    for (int t = n_tasks - 1; t >= 0; --t) fn(t);
    last_tasks = n_tasks;
  }
  int last_tasks = 0;

 private:
  int n_;
};

// The feed-forward's pair: gate (Q8_0) and up (Q4_1) of n_out rows over n_tokens inputs
// x[i] = cos(step * i), and their outputs g0 / u0 from a plain matmul on one thread.
struct GateUp {
  GateUp(int n_in, int n_out, int n_tokens, int seed, float step)
      : gate(make_matrix(GgmlType::Q8_0, n_in, n_out, seed)),
        up(make_matrix(GgmlType::Q4_1, n_in, n_out, seed + 1)),
        x(static_cast<size_t>(n_tokens) * n_in),
        g0(static_cast<size_t>(n_tokens) * n_out),
        u0(static_cast<size_t>(n_tokens) * n_out),
        scratch(n_tokens, activation_row_bytes(GgmlType::F32, n_in)) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(step * static_cast<float>(i));
    const MatmulJob plain[] = {{gate.m, g0.data(), nullptr}, {up.m, u0.data(), nullptr}};
    InlineParallel one;
    matmul(one, x.data(), n_tokens, plain, scratch);
  }
  QuantMatrix gate, up;
  std::vector<float> x, g0, u0;
  MatmulScratch scratch;
};

// A matrix repacked for the selected kernels' gemm_x8 (n_out a multiple of kX8Rows).
struct X8Matrix {
  QuantMatrix q;
  std::vector<uint8_t> groups;
  Matrix m;
};

X8Matrix make_x8_matrix(GgmlType type, int n_in, int n_out, int seed) {
  X8Matrix x{make_matrix(type, n_in, n_out, seed), {}, {}};
  const TypeKernels& k = kernels().of(type);
  const size_t group_bytes = x8_group_bytes(k, type, n_in), rb = row_bytes(type, n_in);
  x.groups.resize(group_bytes * static_cast<size_t>(n_out / kX8Rows));
  for (int g = 0; g < n_out / kX8Rows; ++g) {
    k.repack_x8(n_in, x.q.bytes.data() + static_cast<size_t>(g) * kX8Rows * rb, rb,
                x.groups.data() + static_cast<size_t>(g) * group_bytes);
  }
  x.m = x.q.m;
  x.m.data = x.groups.data();
  x.m.x8 = true;
  return x;
}

}  // namespace

TEST_CASE("matmul: a group of Q4_1, Q8_0 and F32 matrices over a batch", "[model]") {
  const int n_in = 64, n_tokens = 5;
  const QuantMatrix a = make_matrix(GgmlType::Q4_1, n_in, 37, 1);
  const QuantMatrix b = make_matrix(GgmlType::Q8_0, n_in, 11, 2);
  const QuantMatrix c = make_matrix(GgmlType::F32, n_in, 3, 3);
  std::vector<float> x(static_cast<size_t>(n_tokens) * n_in);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.11f * static_cast<float>(i));
  std::vector<float> bias(11);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.5f * static_cast<float>(i);

  std::vector<float> ya(n_tokens * 37), yb(n_tokens * 11), yc(n_tokens * 3);
  const MatmulJob jobs[] = {
      {a.m, ya.data(), nullptr}, {b.m, yb.data(), bias.data()}, {c.m, yc.data(), nullptr}};
  MatmulScratch scratch(n_tokens, activation_row_bytes(GgmlType::F32, n_in));
  const int n_threads = GENERATE(1, 2, 7);
  CountingParallel par(n_threads);
  matmul(par, x.data(), n_tokens, jobs, scratch);
  CHECK(par.last_tasks == (n_threads == 1 ? 1 : n_threads * kTasksPerThread));

  // Q8_1 keeps each block's sum s = d * sum(q) as f16, so a Q4_1 dot carries an extra
  // sum over blocks of |min| * |s| * 2^-11 (|min| <= 1 here); the other formats are exact
  // up to float summation order.
  auto margin_of = [&](GgmlType type, int t) {
    if (type != GgmlType::Q4_1) return 1e-4;
    double bound = 1e-4;
    for (int b = 0; b < n_in / kQK; ++b) {
      double block_sum = 0;
      for (int i = 0; i < kQK; ++i) block_sum += x[static_cast<size_t>(t) * n_in + b * kQK + i];
      bound += std::fabs(block_sum) * std::ldexp(1.0, -10);
    }
    return bound;
  };
  auto check = [&](const QuantMatrix& q, const std::vector<float>& y, const float* bias_or_null) {
    const std::vector<float> xr = partner_round(q.m.type, x, n_in);
    for (int t = 0; t < n_tokens; ++t) {
      const double margin = margin_of(q.m.type, t);
      for (int r = 0; r < q.m.n_out; ++r) {
        double sum = bias_or_null ? bias_or_null[r] : 0.0;
        for (int i = 0; i < n_in; ++i) {
          sum += static_cast<double>(q.values[static_cast<size_t>(r) * n_in + i]) *
                 xr[static_cast<size_t>(t) * n_in + i];
        }
        INFO("type " << static_cast<int>(q.m.type) << " token " << t << " row " << r);
        CHECK(y[static_cast<size_t>(t) * q.m.n_out + r] ==
              Approx(sum).margin(margin).epsilon(1e-4));
      }
    }
  };
  check(a, ya, nullptr);
  check(b, yb, bias.data());
  check(c, yc, nullptr);
}

TEST_CASE("matmul with an epilogue: each task's row range of every job, then the epilogue on it",
          "[model]") {
  // gate / up of 200 rows (3 full ranges of kEpilogueRows and a short last one), 3 tokens:
  // the outputs equal a plain matmul's bit for bit, and the epilogue sees each row once,
  // after both jobs computed it, in ranges starting on multiples of kEpilogueRows.
  const int n_in = 64, n_out = 200, n_tokens = 3;
  GateUp f(n_in, n_out, n_tokens, 4, 0.23f);

  const int n_threads = GENERATE(1, 2, 7);
  CountingParallel par(n_threads);
  std::vector<float> g(n_tokens * n_out, -1.0f), u(n_tokens * n_out, -1.0f);
  std::vector<int> seen(n_out, 0);
  const auto fn = [&](int64_t r0, int64_t r1) {
    CHECK(r0 % kEpilogueRows == 0);
    CHECK(r0 < r1);
    CHECK(r1 <= n_out);
    for (int64_t r = r0; r < r1; ++r) {
      ++seen[r];
      for (int t = 0; t < n_tokens; ++t) {
        CHECK(g[t * n_out + r] == f.g0[t * n_out + r]);  // both jobs done for these rows
        CHECK(u[t * n_out + r] == f.u0[t * n_out + r]);
        g[t * n_out + r] *= 2.0f;
      }
    }
  };
  const RowEpilogue epilogue = std::ref(fn);
  const MatmulJob jobs[] = {{f.gate.m, g.data(), nullptr}, {f.up.m, u.data(), nullptr}};
  matmul(par, f.x.data(), n_tokens, jobs, f.scratch, &epilogue);
  CHECK(par.last_tasks == (n_threads == 1 ? 1 : 4));  // 4 ranges of rows
  for (int r = 0; r < n_out; ++r) CHECK(seen[r] == 1);
  for (size_t i = 0; i < g.size(); ++i) {
    CHECK(g[i] == 2.0f * f.g0[i]);
    CHECK(u[i] == f.u0[i]);
  }

  // jobs of different n_out cannot share row ranges
  const QuantMatrix other = make_matrix(GgmlType::Q8_0, n_in, n_out - 8, 6);
  std::vector<float> o(n_tokens * (n_out - 8));
  const MatmulJob mixed[] = {{f.gate.m, g.data(), nullptr}, {other.m, o.data(), nullptr}};
  CHECK_THROWS_WITH(matmul(par, f.x.data(), n_tokens, mixed, f.scratch, &epilogue),
                    Catch::Contains("one n_out"));
}

TEST_CASE("matmul on several threads: tapered shares give every row once, the same bits", "[model]") {
  // Enough rows for tapered_begin's shares (core/host/parallel.h), with and without an
  // epilogue; outputs start as NaN, so a row no task computed shows.
  const int n_in = 64, n_tokens = 4;
  const int n_out = 64 * kEpilogueRows + 24;
  GateUp f(n_in, n_out, n_tokens, 7, 0.19f);

  const int n_threads = GENERATE(2, 3);
  CountingParallel par(n_threads);
  std::vector<float> g(n_tokens * n_out, NAN), u(n_tokens * n_out, NAN);
  const MatmulJob jobs[] = {{f.gate.m, g.data(), nullptr}, {f.up.m, u.data(), nullptr}};
  matmul(par, f.x.data(), n_tokens, jobs, f.scratch);
  CHECK(par.last_tasks == n_threads * kTasksPerThread);
  CHECK(std::memcmp(g.data(), f.g0.data(), g.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(u.data(), f.u0.data(), u.size() * sizeof(float)) == 0);

  std::fill(g.begin(), g.end(), NAN);
  std::fill(u.begin(), u.end(), NAN);
  std::vector<int> seen(n_out, 0);
  const auto fn = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) ++seen[r];
  };
  const RowEpilogue epilogue = std::ref(fn);
  matmul(par, f.x.data(), n_tokens, jobs, f.scratch, &epilogue);
  CHECK(par.last_tasks == n_threads * kTasksPerThread);
  for (int r = 0; r < n_out; ++r) CHECK(seen[r] == 1);
  CHECK(std::memcmp(g.data(), f.g0.data(), g.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(u.data(), f.u0.data(), u.size() * sizeof(float)) == 0);
}

// With the best kernels of this machine: a prompt of 11 tokens (a group of 8 and one of
// 3) on F16 / BF16 / F32 weights takes the float gemm when the table has one (x86, NEON:
// bit for bit the packed tiles) and the per-token dots otherwise (2 tokens, or SIMD128);
// either way within vec_dot's bound of the per-token dots.
TEST_CASE("matmul: a float-weight prompt takes the float gemm where the kernels have one",
          "[model]") {
  REQUIRE(select_kernels(""));
  const KernelTable& table = kernels();
  InlineParallel par;
  for (GgmlType type : {GgmlType::F16, GgmlType::BF16, GgmlType::F32}) {
    const int64_t n_in = 203, n_out = 13;  // a row tail of 3; row runs of 8 + 5
    INFO("kernels " << table.isa << ", type " << traits(type).name);
    test::Rng rng(7 + static_cast<uint64_t>(type));
    const size_t rb = row_bytes(type, n_in);
    std::vector<uint8_t> w(rb * n_out);
    std::vector<float> row(static_cast<size_t>(n_in));
    for (int64_t r = 0; r < n_out; ++r) {
      for (float& v : row) v = rng.bell();
      ref_kernels().of(type).quantize_row(row.data(), w.data() + r * rb, n_in);
    }
    const Matrix m{w.data(), type, n_in, n_out};
    const TypeKernels& k = table.of(type);
    const TypeKernels& ak = table.of(k.vec_dot_type);
    REQUIRE(k.vec_dot_type == type);
    const bool has_gemm = k.gemm != nullptr && ak.gemm_pack != nullptr;
    if (!has_gemm) WARN("kernels " << table.isa << " have no " << traits(type).name << " gemm");
    CHECK(activation_pack_bytes(type, n_in) == (has_gemm ? ak.gemm_pack_bytes(n_in) : 0));
    for (int n_tokens : {2, 11}) {
      INFO("tokens " << n_tokens);
      std::vector<float> x(static_cast<size_t>(n_in * n_tokens));
      for (float& v : x) v = rng.bell();
      std::vector<float> y(static_cast<size_t>(n_tokens * n_out), -1.0f);
      const MatmulJob jobs[] = {{m, y.data(), nullptr}};
      MatmulScratch scratch(n_tokens, activation_row_bytes(type, n_in),
                            activation_pack_bytes(type, n_in));
      matmul(par, x.data(), n_tokens, jobs, scratch);

      // The same products by hand: per-token dots and the packed tiles.
      std::vector<uint8_t> act(static_cast<size_t>(n_tokens) * rb);
      for (int t = 0; t < n_tokens; ++t)
        ak.quantize_row(&x[static_cast<size_t>(t * n_in)], act.data() + t * rb, n_in);
      std::vector<float> by_dot(y.size()), by_gemm(y.size());
      for (int t = 0; t < n_tokens; ++t)
        for (int64_t r = 0; r < n_out; ++r)
          by_dot[static_cast<size_t>(t * n_out + r)] =
              k.vec_dot(n_in, w.data() + r * rb, act.data() + t * rb);
      if (has_gemm) {
        std::vector<uint8_t> packed(ak.gemm_pack_bytes(n_in));
        for (int t0 = 0; t0 < n_tokens; t0 += kGemmCols) {
          const int nc = std::min(kGemmCols, n_tokens - t0);
          ak.gemm_pack(n_in, act.data() + t0 * rb, rb, nc, packed.data());
          for (int64_t r = 0; r < n_out; r += kGemmRows) {
            const int nr = static_cast<int>(std::min<int64_t>(kGemmRows, n_out - r));
            k.gemm(n_in, w.data() + r * rb, rb, nr, packed.data(), nc,
                   &by_gemm[static_cast<size_t>(t0 * n_out + r)], static_cast<size_t>(n_out));
          }
        }
      }
      const bool gemm_path = has_gemm && n_tokens >= 3;
      const std::vector<float>& want = gemm_path ? by_gemm : by_dot;
      int mismatches = 0, differs_from_dot = 0;
      for (int t = 0; t < n_tokens; ++t) {
        const std::vector<float> wd =
            test::dequantize(type, std::vector<uint8_t>(w.begin(), w.end()), n_in * n_out);
        const std::vector<float> ad = test::dequantize(
            type, std::vector<uint8_t>(act.begin() + t * rb, act.begin() + (t + 1) * rb), n_in);
        for (int64_t r = 0; r < n_out; ++r) {
          const size_t i = static_cast<size_t>(t * n_out + r);
          mismatches += y[i] != want[i];
          differs_from_dot += by_gemm[i] != by_dot[i];
          double s = 0.0;
          for (int64_t e = 0; e < n_in; ++e)
            s += std::fabs(static_cast<double>(wd[r * n_in + e]) * ad[e]);
          // both within vec_dot's bound of ref, so within twice that of each other
          CHECK(std::fabs(static_cast<double>(y[i]) - by_dot[i]) <=
                2 * (n_in / 32.0 + 16) * 0x1p-24 * s);
        }
      }
      CHECK(mismatches == 0);  // bit for bit: matmul took that path
      // The two paths round differently somewhere, so the check above tells them apart.
      if (gemm_path) CHECK(differs_from_dot > 0);
    }
  }
  CHECK(test::select_process_isa());  // leave the process on its set for other tests
}

// Repacked jobs of several types in one call read the activation ints their gemm_x8
// needs (Q8_0 block sums, a type's own x8_prepare: AVX-512 Q4_K and Q6_K both prepare
// Q8_K rows, as a Q4_K_M file's fused q / k / v does), each made once a call, and get
// the bits each job gets alone; so do routed jobs over two inputs.
TEST_CASE("matmul: repacked jobs of mixed types in one call give each job's bits alone", "[model][x8]") {
  const int n_in = 512, n_out = 16;
  for (const char* isa : {"ref", "avx2", "avx512"}) {
    if (!select_kernels(isa)) continue;
    INFO("kernels " << isa);
    std::vector<GgmlType> types;
    for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q4_0}) {
      if (kernels().of(t).repack_x8 && kernels().of(t).gemm_x8) types.push_back(t);
    }
    if (types.size() < 2) continue;
    std::vector<X8Matrix> ws;
    size_t max_row_bytes = 0;
    for (size_t i = 0; i < types.size(); ++i) {
      ws.push_back(make_x8_matrix(types[i], n_in, n_out, 11 + static_cast<int>(i)));
      max_row_bytes = std::max(max_row_bytes, activation_row_bytes(types[i], n_in));
    }
    const int n_a = 3, n_b = 2;  // tokens of the two inputs
    std::vector<float> xa(static_cast<size_t>(n_a) * n_in), xb(static_cast<size_t>(n_b) * n_in);
    for (size_t i = 0; i < xa.size(); ++i) xa[i] = std::cos(0.07f * static_cast<float>(i));
    for (size_t i = 0; i < xb.size(); ++i) xb[i] = std::sin(0.05f * static_cast<float>(i) + 1.0f);
    CountingParallel par(2);
    const auto alone = [&](const X8Matrix& w, const std::vector<float>& x, int n_tokens) {
      std::vector<float> y(static_cast<size_t>(n_tokens) * n_out, NAN);
      MatmulScratch scratch(n_tokens, max_row_bytes);
      const MatmulJob job[] = {{w.m, y.data(), nullptr}};
      matmul(par, x.data(), n_tokens, job, scratch);
      // and alone, the float dot of the dequantized rows and the rounded activations
      const std::vector<float> xr = partner_round(w.m.type, x, n_in);
      for (int t = 0; t < n_tokens; ++t) {
        for (int r = 0; r < n_out; ++r) {
          double sum = 0;
          for (int i = 0; i < n_in; ++i) {
            sum += static_cast<double>(w.q.values[static_cast<size_t>(r) * n_in + i]) *
                   xr[static_cast<size_t>(t) * n_in + i];
          }
          INFO(traits(w.m.type).name << " alone, token " << t << " row " << r);
          CHECK(y[static_cast<size_t>(t) * n_out + r] == Approx(sum).margin(1e-3).epsilon(1e-4));
        }
      }
      return y;
    };
    const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };

    std::vector<std::vector<float>> ya, yb;
    for (const X8Matrix& w : ws) {
      ya.push_back(alone(w, xa, n_a));
      yb.push_back(alone(w, xb, n_b));
    }

    MatmulScratch scratch(n_a + n_b, max_row_bytes);
    for (int call = 0; call < 2; ++call) {  // a second call reuses the scratch
      std::vector<std::vector<float>> y(ws.size(), std::vector<float>(static_cast<size_t>(n_a) * n_out, NAN));
      std::vector<MatmulJob> jobs;
      for (size_t i = 0; i < ws.size(); ++i) jobs.push_back({ws[i].m, y[i].data(), nullptr});
      matmul(par, xa.data(), n_a, jobs, scratch);
      for (size_t i = 0; i < ws.size(); ++i) {
        INFO("call " << call << ", job " << i << ": " << traits(types[i]).name);
        CHECK(same_bits(y[i], ya[i]));
      }
    }

    // Every type over both inputs, routed: jobs of one input share its rows and ints.
    std::vector<std::vector<float>> ra, rb;
    std::vector<RoutedJob> routed;
    for (size_t i = 0; i < ws.size(); ++i) {
      ra.emplace_back(static_cast<size_t>(n_a) * n_out, NAN);
      rb.emplace_back(static_cast<size_t>(n_b) * n_out, NAN);
    }
    for (size_t i = 0; i < ws.size(); ++i) {
      routed.push_back({ws[i].m, xa.data(), n_a, ra[i].data(), nullptr});
      routed.push_back({ws[i].m, xb.data(), n_b, rb[i].data(), nullptr});
    }
    REQUIRE(matmul_routed(par, routed, scratch));
    for (size_t i = 0; i < ws.size(); ++i) {
      INFO("routed job " << i << ": " << traits(types[i]).name);
      CHECK(same_bits(ra[i], ya[i]));
      CHECK(same_bits(rb[i], yb[i]));
    }
  }
  REQUIRE(test::select_process_isa());
}

TEST_CASE("kv cache stores f16-rounded k rows and transposed v rows", "[model]") {
  KvCache kv(2, 4, 3, 2);
  const float k[] = {1.0f / 3.0f, -2.5f, 70000.0f};
  const float v[] = {0.1f, 1e-8f};
  kv.store(1, 2, k, v);
  CHECK(fp16_to_fp32(kv.k(1, 2)[0]) == fp16_to_fp32(fp32_to_fp16(1.0f / 3.0f)));
  CHECK(fp16_to_fp32(kv.k(1, 2)[1]) == -2.5f);
  CHECK(std::isinf(fp16_to_fp32(kv.k(1, 2)[2])));  // beyond f16's range
  // V is transposed: row d holds dimension d of every position.
  CHECK(fp16_to_fp32(kv.v_row(1, 0)[2]) == fp16_to_fp32(fp32_to_fp16(0.1f)));
  CHECK(kv.v_row(1, 1)[2] == 0);
  CHECK(kv.v_row(1, 0)[1] == 0);
  CHECK(kv.v_row(0, 0)[2] == 0);
  CHECK(kv.k(1, 1)[0] == 0);  // neighbours untouched
  CHECK(kv.k(0, 2)[0] == 0);
  CHECK(kv.n_bytes() == 2 * 4 * (3 + 2) * 2);
  CHECK_THROWS_AS(KvCache(0, 4, 3, 3), std::invalid_argument);
}

}  // namespace runnel
