// Shared by the repacked-weights tests (tests/core/model/repacked_weights_test.cpp with a
// store that copies into vectors, tests/native/repacked_model_test.cpp through the native
// MmapStore): the tiny model they run, one run's output, and the comparison of a
// repacked run with a plain one on the same kernel table.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "core/runtime/engine.h"
#include "kernels/kernels.h"
#include "tests/core/model/tiny_model.h"
#include "tests/test_isa.h"

namespace runnel::test {

// Every x8 type and both output layouts: matrices and embeddings of `type`, rows of 256
// (k-quant blocks), 48 outputs (a multiple of 8, so the output and a tied embedding
// repack too).
inline TinySpec x8_tiny_spec(GgmlType type, bool tied) {
  TinySpec spec;
  spec.n_embd = 256;
  spec.n_ff = 512;
  spec.n_head = 4;
  spec.n_head_kv = 2;
  spec.n_vocab = 48;
  spec.tied = tied;
  spec.matrix_type = type;
  spec.embd_type = type;
  return spec;
}

inline constexpr GgmlType kRepackTypes[] = {
    GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,  GgmlType::Q5_1,   GgmlType::Q8_0,
    GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::MXFP4, GgmlType::IQ4_NL, GgmlType::IQ4_XS};

struct TinyRun {
  std::vector<float> prefill_logits;  // after the prompt, [n_vocab]
  std::vector<TokenId> greedy;
};

// An 11-token prompt (a whole batched group of 8 and a partial one), then 8 greedy tokens.
// after_load sees the store once the model is loaded (and repacked).
inline TinyRun run_tiny(std::unique_ptr<WeightStore> store, std::shared_ptr<Parallel> par,
                        const std::function<void(WeightStore&)>& after_load = nullptr) {
  EngineOptions o;
  o.n_ctx = 64;
  o.parallel = std::move(par);
  std::unique_ptr<Engine> e = Engine::load(std::move(store), o);
  if (after_load) after_load(e->store());
  std::unique_ptr<Session> s = e->new_session();
  const std::vector<TokenId> prompt = {1, 4, 9, 16, 25, 36, 3, 7, 12, 30, 22};
  std::span<float> logits = s->eval(prompt);
  TinyRun r;
  r.prefill_logits.assign(logits.begin(), logits.end());
  for (int i = 0; i < 8; ++i) {
    r.greedy.push_back(
        static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    logits = s->eval(std::span<const TokenId>(&r.greedy.back(), 1));
  }
  return r;
}

// Only float accumulation order differs, so the logits agree closely and greedy tokens
// are the same. "Closely" is 2% of the largest logit: a 1e-7 difference in an activation
// can move one of its Q8 quants across a rounding boundary, and in this random tiny model
// that shows as up to 0.6% in the logits (measured on SIMD128 against ref, with and
// without x8), while a wiring error (a wrong row, group or token) changes logits by their
// own size.
inline void check_same_output(const TinyRun& repacked, const TinyRun& plain) {
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < plain.prefill_logits.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(repacked.prefill_logits[i]) -
                                            plain.prefill_logits[i]));
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(plain.prefill_logits[i])));
  }
  INFO("max |logit difference| " << max_diff << " of max |logit| " << max_ref);
  REQUIRE(max_ref > 0);
  CHECK(max_diff <= 2e-2 * max_ref);
  CHECK(repacked.greedy == plain.greedy);
}

// Selects `isa` for the scope (the tests otherwise run on the reference table).
struct SelectIsa {
  explicit SelectIsa(std::string_view isa) : ok(select_kernels(isa)) {}
  ~SelectIsa() { select_process_isa(); }  // back to the process's set
  bool ok;
};

}  // namespace runnel::test
