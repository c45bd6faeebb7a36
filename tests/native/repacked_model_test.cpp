// Repacked weights (the kernels' x8 layouts, LlamaModel::repack_weights) against the
// GGUF layout: the same tiny model through an MmapStore (which offers copy_space, so
// resident matrices are repacked) and through a SpanStore (which does not), on the same
// kernel table. Only float accumulation order differs, so the logits agree closely and
// greedy tokens are the same; a tied embedding matrix is read back through
// unpack_x8_row, so a wrong row would change every token's input.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/runtime/engine.h"
#include "kernels/kernels.h"
#include "native/mmap_store.h"
#include "native/thread_pool.h"
#include "tests/core/model/tiny_model.h"

namespace runnel {
namespace {

struct Run {
  std::vector<float> prefill_logits;  // after the prompt, [n_vocab]
  std::vector<TokenId> greedy;
};

Run run(std::unique_ptr<WeightStore> store) {
  EngineOptions o;
  o.n_ctx = 64;
  o.parallel = std::make_shared<ThreadPool>(2);
  std::unique_ptr<Engine> e = Engine::load(std::move(store), o);
  std::unique_ptr<Session> s = e->new_session();
  // 11 tokens: a whole batched group of 8 and a partial one.
  const std::vector<TokenId> prompt = {1, 4, 9, 16, 25, 36, 3, 7, 12, 30, 22};
  std::span<float> logits = s->eval(prompt);
  Run r;
  r.prefill_logits.assign(logits.begin(), logits.end());
  for (int i = 0; i < 8; ++i) {
    r.greedy.push_back(static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    logits = s->eval(std::span<const TokenId>(&r.greedy.back(), 1));
  }
  return r;
}

}  // namespace

// Selects `isa` for the scope (the tests otherwise run on the reference table).
struct SelectIsa {
  explicit SelectIsa(std::string_view isa) : ok(select_kernels(isa)) {}
  ~SelectIsa() { select_kernels("ref"); }
  bool ok;
};

TEST_CASE("repacked (x8) weights give the GGUF layout's logits and tokens", "[model][x8]") {
  int n_checked = 0;
  for (const char* isa : {"avx2", "avx512", "neon"}) {
    const SelectIsa selected(isa);
    if (!selected.ok) continue;  // not this CPU
    const KernelTable& k = kernels();
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
      if (!k.of(type).repack_x8) continue;  // this kernel set keeps the GGUF layout
      for (bool tied : {true, false}) {
        INFO("kernels " << k.isa << ", type " << traits(type).name << (tied ? ", tied output" : ""));
        test::TinySpec spec;
        spec.n_embd = 256;  // k-quant rows are 256 long
        spec.n_ff = 512;
        spec.n_head = 4;
        spec.n_head_kv = 2;
        spec.n_vocab = 48;  // a multiple of 8: the output (and a tied embedding) repack too
        spec.tied = tied;
        spec.matrix_type = type;
        spec.embd_type = type;
        const test::TinyModel m = test::build_tiny_model(spec);
        const std::string path = (std::filesystem::temp_directory_path() /
                                  ("runnel_x8_" + std::to_string(::getpid()) + ".gguf")).string();
        {
          std::ofstream f(path, std::ios::binary);
          f.write(reinterpret_cast<const char*>(m.bytes.data()), static_cast<std::streamsize>(m.bytes.size()));
        }
        const Run repacked = run(MmapStore::open(path));
        std::filesystem::remove(path);
        const Run plain = run(m.store());

        double max_diff = 0, max_ref = 0;
        for (size_t i = 0; i < plain.prefill_logits.size(); ++i) {
          max_diff = std::max(max_diff, std::fabs(static_cast<double>(repacked.prefill_logits[i]) - plain.prefill_logits[i]));
          max_ref = std::max(max_ref, std::fabs(static_cast<double>(plain.prefill_logits[i])));
        }
        INFO("max |logit difference| " << max_diff << " of max |logit| " << max_ref);
        REQUIRE(max_ref > 0);
        CHECK(max_diff <= 1e-3 * max_ref);
        CHECK(repacked.greedy == plain.greedy);
        ++n_checked;
      }
    }
  }
#if defined(__x86_64__)
  CHECK(n_checked >= 10);  // every x86 CPU we run on has AVX2, and AVX2 repacks all five types
#endif
}

}  // namespace runnel
