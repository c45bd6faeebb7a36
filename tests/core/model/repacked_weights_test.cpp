// Repacked weights (the kernels' x8 layouts, LlamaModel::repack_weights) against the
// GGUF layout, on every kernel set of the build that has x8 layouts (AVX2 / AVX-512
// natively, SIMD128 under node): the same tiny model through a store that offers
// copy_space (so resident matrices are repacked) and through a SpanStore (which does
// not), on the same kernel table. Only float accumulation order differs, so the logits
// agree closely and greedy tokens are the same; a tied embedding matrix is read back
// through unpack_x8_row, so a wrong row would change every token's input. "Closely" is
// 2% of the largest logit: a 1e-7 difference in an activation can move one of its Q8
// quants across a rounding boundary, and in this random tiny model that shows as up to
// 0.6% in the logits (measured on SIMD128 against ref, with and without x8), while a
// wiring error (a wrong row, group or token) changes logits by their own size.
// (tests/native/repacked_model_test.cpp does the same through the native MmapStore.)
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "core/runtime/engine.h"
#include "core/runtime/parallel.h"
#include "kernels/kernels.h"
#include "tests/core/model/tiny_model.h"

namespace runnel {
namespace {

// A SpanStore that keeps repacked copies in vectors and forgets dropped originals.
class CopyingStore : public SpanStore {
 public:
  using SpanStore::SpanStore;
  std::span<const uint8_t> tensor_bytes(const GgufTensorInfo& t) override {
    if (dropped_.count(t.name)) throw std::logic_error("dropped tensor read: " + t.name);
    return SpanStore::tensor_bytes(t);
  }
  uint8_t* copy_space(const GgufTensorInfo& t, size_t n_bytes) override {
    std::vector<uint8_t>& v = copies_[t.name];
    v.assign(n_bytes, 0xCD);
    return v.data();
  }
  void drop(const GgufTensorInfo& t) override { dropped_[t.name] = true; }
  size_t n_copies() const { return copies_.size(); }

 private:
  std::map<std::string, std::vector<uint8_t>> copies_;
  std::map<std::string, bool> dropped_;
};

struct Run {
  std::vector<float> prefill_logits;  // after the prompt, [n_vocab]
  std::vector<TokenId> greedy;
  size_t n_copies = 0;  // matrices the model repacked (CopyingStore)
};

Run run(std::unique_ptr<WeightStore> store) {
  EngineOptions o;
  o.n_ctx = 64;
  o.parallel = std::make_shared<InlineParallel>();
  std::unique_ptr<Engine> e = Engine::load(std::move(store), o);
  Run r;
  if (const auto* c = dynamic_cast<CopyingStore*>(&e->store())) r.n_copies = c->n_copies();
  std::unique_ptr<Session> s = e->new_session();
  // 11 tokens: a whole batched group of 8 and a partial one.
  const std::vector<TokenId> prompt = {1, 4, 9, 16, 25, 36, 3, 7, 12, 30, 22};
  std::span<float> logits = s->eval(prompt);
  r.prefill_logits.assign(logits.begin(), logits.end());
  for (int i = 0; i < 8; ++i) {
    r.greedy.push_back(static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    logits = s->eval(std::span<const TokenId>(&r.greedy.back(), 1));
  }
  return r;
}

// Selects `isa` for the scope (the tests otherwise run on the reference table).
struct SelectIsa {
  explicit SelectIsa(std::string_view isa) : ok(select_kernels(isa)) {}
  ~SelectIsa() { select_kernels("ref"); }
  bool ok;
};

}  // namespace

TEST_CASE("repacked (x8) weights give the GGUF layout's logits and tokens on every kernel set", "[model][x8]") {
  int n_checked = 0;
  for (const char* isa : {"avx2", "avx512", "neon", "simd128"}) {
    const SelectIsa selected(isa);
    if (!selected.ok) continue;  // not this build or CPU
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
        std::vector<GgufFile> files;
        files.push_back(GgufFile::parse(m.bytes, "tiny.gguf"));
        auto copying = std::make_unique<CopyingStore>(GgufModel::join(std::move(files)),
                                                      std::vector<std::span<const uint8_t>>{m.bytes});
        const Run repacked = run(std::move(copying));
        CHECK(repacked.n_copies == 7 * static_cast<size_t>(spec.n_layer) + 1);  // every matrix and the output
        const Run plain = run(m.store());
        CHECK(plain.n_copies == 0);

        double max_diff = 0, max_ref = 0;
        for (size_t i = 0; i < plain.prefill_logits.size(); ++i) {
          max_diff = std::max(max_diff, std::fabs(static_cast<double>(repacked.prefill_logits[i]) - plain.prefill_logits[i]));
          max_ref = std::max(max_ref, std::fabs(static_cast<double>(plain.prefill_logits[i])));
        }
        INFO("max |logit difference| " << max_diff << " of max |logit| " << max_ref);
        REQUIRE(max_ref > 0);
        CHECK(max_diff <= 2e-2 * max_ref);
        CHECK(repacked.greedy == plain.greedy);
        ++n_checked;
      }
    }
  }
#if defined(__x86_64__) || defined(__wasm__)
  CHECK(n_checked >= 10);  // AVX2 (every x86 CPU we run on) and SIMD128 repack all five types
#endif
}

}  // namespace runnel
