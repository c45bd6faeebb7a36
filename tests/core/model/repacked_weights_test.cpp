// Repacked weights (the kernels' x8 layouts, Model::repack_weights) against the
// GGUF layout, on every kernel set of the build that has x8 layouts (AVX2 / AVX-512
// natively, SIMD128 under node): the same tiny model through a store that offers
// copy_space (so resident matrices are repacked) and through a SpanStore (which does
// not), on the same kernel table (bounds: repacked_check.h). A tied embedding matrix is
// read back through unpack_x8_row, so a wrong row would change every token's input.
// (tests/native/repacked_model_test.cpp does the same through the native MmapStore.)
#include <catch2/catch.hpp>
#include <map>
#include <stdexcept>

#include "core/host/parallel.h"
#include "tests/core/model/repacked_check.h"

namespace runnel {
namespace {

// A SpanStore that keeps repacked copies in vectors and refuses reads of dropped originals.
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

}  // namespace

TEST_CASE("repacked (x8) weights give the GGUF layout's logits and tokens on every kernel set",
          "[model][x8]") {
  int n_checked = 0;
  for (const char* isa : {"avx2", "avx512", "neon", "simd128"}) {
    const test::SelectIsa selected(isa);
    if (!selected.ok) continue;  // not this build or CPU
    const KernelTable& k = kernels();
    for (GgmlType type : test::kRepackTypes) {
      if (!k.of(type).repack_x8) continue;  // this kernel set keeps the GGUF layout
      for (bool tied : {true, false}) {
        INFO("kernels " << k.isa << ", type " << traits(type).name
                        << (tied ? ", tied output" : ""));
        const test::TinySpec spec = test::x8_tiny_spec(type, tied);
        const test::TinyModel m = test::build_tiny_model(spec);
        std::vector<GgufFile> files;
        files.push_back(GgufFile::parse(m.bytes, "tiny.gguf"));
        auto copying = std::make_unique<CopyingStore>(
            GgufModel::join(std::move(files)), std::vector<std::span<const uint8_t>>{m.bytes});
        size_t n_copies = 0;
        const test::TinyRun repacked = test::run_tiny(
            std::move(copying), std::make_shared<InlineParallel>(),
            [&](WeightStore& s) { n_copies = dynamic_cast<CopyingStore&>(s).n_copies(); });
        CHECK(n_copies ==
              7 * static_cast<size_t>(spec.n_layer) + 1);  // every matrix and the output
        const test::TinyRun plain = test::run_tiny(m.store(), std::make_shared<InlineParallel>());
        test::check_same_output(repacked, plain);
        ++n_checked;
      }
    }
  }
#if defined(__x86_64__) || defined(__wasm__)
  CHECK(n_checked >= 20);  // AVX2 (every x86 CPU we run on) and SIMD128 repack all ten types
#endif
}

}  // namespace runnel
