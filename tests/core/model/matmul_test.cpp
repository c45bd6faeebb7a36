// matmul: job groups sharing an input, split over tasks, against float loops over
// the dequantized weights and activations.
#include "core/model/matmul.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "core/kv/kv_cache.h"
#include "kernels/fp16.h"
#include "kernels/kernels.h"

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
