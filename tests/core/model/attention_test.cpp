// attention(): grouped-query heads against a double-precision loop over the f16 cache,
// with the reference kernels and with this machine's best.
#include "core/model/attention.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "core/host/parallel.h"
#include "kernels/fp16.h"
#include "kernels/kernels.h"
#include "tests/test_isa.h"

namespace runnel {
namespace {

ModelConfig gqa_config() {
  ModelConfig c;
  c.n_embd = 256;
  c.n_layer = 2;
  c.n_ff = 512;
  c.n_head = 8;
  c.n_head_kv = 2;  // 4 query heads per kv head
  c.head_dim = c.head_dim_v = 64;
  c.n_rot = 64;
  c.n_vocab = 32;
  return c;
}

float round_f16(float x) {
  return fp16_to_fp32(fp32_to_fp16(x));
}

// A cache of n_pos positions with smooth pseudo-random keys and values (some large
// enough to matter in the softmax), and queries for n_tokens tokens.
struct Filled {
  KvCache kv;
  std::vector<float> q;
};

Filled fill(const ModelConfig& c, int layer, int n_pos, int n_tokens, int n_ctx = 64) {
  Filled f{KvCache(c.n_layer, n_ctx, c.kv_dim(), c.v_dim()), {}};
  std::vector<float> k(c.kv_dim()), v(c.v_dim());
  for (int p = 0; p < n_pos; ++p) {
    for (int i = 0; i < c.kv_dim(); ++i) k[i] = 2.0f * std::sin(0.71f * i + 1.3f * p);
    for (int i = 0; i < c.v_dim(); ++i) v[i] = std::cos(0.37f * i - 0.9f * p);
    f.kv.store(layer, p, k.data(), v.data());
  }
  f.q.resize(static_cast<size_t>(n_tokens) * c.q_dim());
  for (size_t i = 0; i < f.q.size(); ++i) f.q[i] = std::sin(0.13f * static_cast<float>(i) + 0.5f);
  return f;
}

// out[i][h] in double from the f16 cache, with the query and probabilities rounded to
// f16 like the kernels (so only summation order separates the two).
std::vector<double> reference(const ModelConfig& c, const Filled& f, int layer, int n_tokens,
                              int pos0) {
  std::vector<double> out(static_cast<size_t>(n_tokens) * c.attn_out_dim());
  const int group = c.n_head / c.n_head_kv;
  for (int i = 0; i < n_tokens; ++i) {
    const int n = pos0 + i + 1;
    for (int h = 0; h < c.n_head; ++h) {
      const int g = h / group;
      std::vector<double> s(n);
      double top = -1e300;
      for (int t = 0; t < n; ++t) {
        double dot = 0;
        for (int d = 0; d < c.head_dim; ++d) {
          dot += round_f16(f.q[static_cast<size_t>(i) * c.q_dim() + h * c.head_dim + d]) *
                 fp16_to_fp32(f.kv.k(layer, t)[g * c.head_dim + d]);
        }
        s[t] = dot / std::sqrt(static_cast<double>(c.head_dim));
        top = std::max(top, s[t]);
      }
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - top));
      for (int d = 0; d < c.head_dim_v; ++d) {
        double acc = 0;
        for (int t = 0; t < n; ++t) {
          acc += round_f16(static_cast<float>(s[t] / sum)) *
                 fp16_to_fp32(f.kv.v_row(layer, g * c.head_dim_v + d)[t]);
        }
        out[static_cast<size_t>(i) * c.attn_out_dim() + h * c.head_dim_v + d] = acc;
      }
    }
  }
  return out;
}

// Selects this machine's best kernels for a test's life, then the process's set again
// (the default the other tests expect).
struct BestKernels {
  BestKernels() { REQUIRE(select_kernels("")); }
  ~BestKernels() { test::select_process_isa(); }
};

}  // namespace

TEST_CASE("attention over grouped-query heads matches a double loop over the f16 cache",
          "[model]") {
  const ModelConfig c = gqa_config();
  const int layer = 1, n_tokens = 3, pos0 = 37;
  Filled f = fill(c, layer, pos0 + n_tokens, n_tokens);
  const std::vector<double> want = reference(c, f, layer, n_tokens, pos0);
  InlineParallel par;
  const bool best = GENERATE(false, true);
  std::unique_ptr<BestKernels> select;
  if (best) select = std::make_unique<BestKernels>();
  INFO("kernels " << kernels().isa);
  AttentionScratch scratch(4, 64, c.head_dim);
  std::vector<float> got(want.size());
  attention(par, c, f.kv, layer, f.q.data(), n_tokens, pos0, scratch, got.data());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("output " << i << ": " << got[i] << " vs " << want[i]);
    CHECK(std::fabs(got[i] - want[i]) <= 1e-5 + 1e-4 * std::fabs(want[i]));
  }
}

TEST_CASE("attention a kv head at a time equals a query head at a time bit for bit", "[model]") {
  // Where the kernels offer dot_f16_f32_multi (SIMD128), a scratch for whole groups makes
  // attention widen each K slice / V row once per kv head: the same products and sums.
  // Elsewhere both scratches take the per-head path.
  const ModelConfig c = gqa_config();
  const int layer = 0, n_tokens = 5, pos0 = 20;
  Filled f = fill(c, layer, pos0 + n_tokens, n_tokens);
  BestKernels select;
  INFO("kernels " << kernels().isa);
  InlineParallel par;
  std::vector<float> out[2];
  int k = 0;
  for (int group : {1, 4}) {
    AttentionScratch scratch(3, 64, c.head_dim, group);
    out[k].assign(static_cast<size_t>(n_tokens) * c.attn_out_dim(), 0.0f);
    attention(par, c, f.kv, layer, f.q.data(), n_tokens, pos0, scratch, out[k].data());
    ++k;
  }
  for (size_t i = 0; i < out[0].size(); ++i) {
    INFO("output " << i << ": " << out[0][i] << " vs " << out[1][i]);
    uint32_t a, b;
    std::memcpy(&a, &out[0][i], 4);
    std::memcpy(&b, &out[1][i], 4);
    CHECK(a == b);
  }
}


namespace {
// Cuts work as two threads would (kTasksPerThread tasks each), running the tasks in
// reverse order on the calling thread: task boundaries fall inside runs.
class TwoThreadsBackwards : public Parallel {
 public:
  int n_threads() const override { return 2; }
  void run(int n_tasks, const std::function<void(int)>& fn) override {
    for (int t = n_tasks - 1; t >= 0; --t) fn(t);
  }
};
}  // namespace

TEST_CASE("attention over several sequences in one dispatch equals each alone bit for bit", "[model]") {
  const ModelConfig c = gqa_config();
  const int layer = 1;
  const bool best = GENERATE(false, true);
  std::unique_ptr<BestKernels> select;
  if (best) select = std::make_unique<BestKernels>();
  INFO("kernels " << kernels().isa);
  TwoThreadsBackwards par;
  // three sequences: a decode step, a 3-token chunk and another step, at other positions
  const int n_tokens[] = {1, 3, 1}, pos0[] = {9, 20, 41};
  std::vector<Filled> seqs;
  for (int r = 0; r < 3; ++r) seqs.push_back(fill(c, layer, pos0[r] + n_tokens[r], n_tokens[r]));
  for (int group : {1, 4}) {
    INFO("scratch group " << group);
    AttentionScratch scratch(n_tasks_for(par, 1 << 20), 64, c.head_dim, group);
    std::vector<std::vector<float>> together(3), alone(3);
    std::vector<AttentionRun> runs;
    for (int r = 0; r < 3; ++r) {
      together[r].assign(static_cast<size_t>(n_tokens[r]) * c.attn_out_dim(), -1.0f);
      alone[r].assign(together[r].size(), -2.0f);
      runs.push_back({&seqs[r].kv, seqs[r].q.data(), together[r].data(), n_tokens[r], pos0[r]});
    }
    attention(par, c, runs, layer, scratch);
    for (int r = 0; r < 3; ++r) {
      attention(par, c, seqs[r].kv, layer, seqs[r].q.data(), n_tokens[r], pos0[r], scratch, alone[r].data());
      for (size_t i = 0; i < alone[r].size(); ++i) {
        INFO("sequence " << r << " output " << i << ": " << together[r][i] << " vs " << alone[r][i]);
        uint32_t a, b;
        std::memcpy(&a, &together[r][i], 4);
        std::memcpy(&b, &alone[r][i], 4);
        CHECK(a == b);
      }
    }
  }
}

TEST_CASE("deep decode steps split K positions among tasks with each head's bits", "[model]") {
  // One token per run at 512 keys or more: the scores of every head are computed a block
  // of positions at a time (whole K rows), then each head's softmax and V. With a scratch
  // too small for every head's scores the same call takes the head-at-a-time path.
  const ModelConfig c = gqa_config();
  const int layer = 1, n_ctx = 700;
  BestKernels select;
  INFO("kernels " << kernels().isa);
  TwoThreadsBackwards par;
  const int pos0[] = {511, 600, 699};
  std::vector<Filled> seqs;
  for (int p : pos0) seqs.push_back(fill(c, layer, p + 1, 1, n_ctx));
  AttentionScratch wide(n_tasks_for(par, 1 << 20), n_ctx, c.head_dim, 4);
  AttentionScratch narrow(1, n_ctx, c.head_dim, 1);
  std::vector<std::vector<float>> together(3), alone(3);
  std::vector<AttentionRun> runs;
  for (int r = 0; r < 3; ++r) {
    together[r].assign(static_cast<size_t>(c.attn_out_dim()), -1.0f);
    alone[r].assign(together[r].size(), -2.0f);
    runs.push_back({&seqs[r].kv, seqs[r].q.data(), together[r].data(), 1, pos0[r]});
  }
  attention(par, c, runs, layer, wide);
  for (int r = 0; r < 3; ++r) {
    attention(par, c, seqs[r].kv, layer, seqs[r].q.data(), 1, pos0[r], narrow, alone[r].data());
    const std::vector<double> want = reference(c, seqs[r], layer, 1, pos0[r]);
    for (size_t i = 0; i < alone[r].size(); ++i) {
      INFO("sequence " << r << " output " << i << ": " << together[r][i] << " vs " << alone[r][i] << ", reference "
                       << want[i]);
      uint32_t a, b;
      std::memcpy(&a, &together[r][i], 4);
      std::memcpy(&b, &alone[r][i], 4);
      CHECK(a == b);
      CHECK(std::fabs(together[r][i] - want[i]) <= 1e-5 + 1e-4 * std::fabs(want[i]));
    }
  }
}

}  // namespace runnel
