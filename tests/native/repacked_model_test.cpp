// Repacked weights (the kernels' x8 layouts, Model::repack_weights) against the
// GGUF layout through the native store: the same tiny model through an MmapStore (which
// offers copy_space, so resident matrices are repacked into anonymous memory and the
// mapped originals are dropped) and through a SpanStore (which does not), on the same
// kernel table and a 2-thread pool (bounds: tests/core/model/repacked_check.h). On x86
// the file layout's products repeat the x8 products' float steps, so there an MmapStore
// streaming every layer gives the resident one's logits bit for bit, and so does one
// that streams its experts through an ExpertCache.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "native/mmap_store.h"
#include "native/thread_pool.h"
#include "tests/core/model/repacked_check.h"

namespace runnel {

namespace {

// The tiny model of `type` written to a temporary file (removed by the caller).
std::string write_tiny_model(const test::TinyModel& m, const char* tag) {
  const std::string path =
      (std::filesystem::temp_directory_path() /
       (std::string("runnel_") + tag + "_" + std::to_string(::getpid()) + ".gguf"))
          .string();
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(m.bytes.data()),
          static_cast<std::streamsize>(m.bytes.size()));
  return path;
}

// The logits after test::run_tiny's 11-token prompt (prompt tiles) and after each of 8
// greedy tokens (per-token dots), one after the other.
std::vector<float> all_logits(std::unique_ptr<WeightStore> store) {
  EngineOptions o;
  o.n_ctx = 64;
  o.parallel = std::make_shared<ThreadPool>(2);
  std::unique_ptr<Engine> e = Engine::load(std::move(store), o);
  std::unique_ptr<Session> s = e->new_session();
  const std::vector<TokenId> prompt = {1, 4, 9, 16, 25, 36, 3, 7, 12, 30, 22};
  std::span<float> logits = s->eval(prompt);
  std::vector<float> all(logits.begin(), logits.end());
  for (int i = 0; i < 8; ++i) {
    const auto t =
        static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    logits = s->eval(std::span<const TokenId>(&t, 1));
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

// The same shape with 8 experts of 512 rows, 2 a token (qwen3moe): expert stacks are
// repacked per expert.
test::TinySpec moe_spec(GgmlType type) {
  test::TinySpec spec = test::x8_tiny_spec(type, false);
  spec.arch = "qwen3moe";
  spec.n_expert = 8;
  spec.n_expert_used = 2;
  spec.n_ff_exp = spec.n_ff;
  return spec;
}

}  // namespace

TEST_CASE("repacked (x8) weights give the GGUF layout's logits and tokens", "[model][x8]") {
  int n_checked = 0;
  for (const char* isa : {"avx2", "avx512", "neon"}) {
    const test::SelectIsa selected(isa);
    if (!selected.ok) continue;  // not this CPU
    const KernelTable& k = kernels();
    for (GgmlType type : test::kRepackTypes) {
      if (!k.of(type).repack_x8) continue;  // this kernel set keeps the GGUF layout
      for (bool tied : {true, false}) {
        INFO("kernels " << k.isa << ", type " << traits(type).name << (tied ? ", tied output" : ""));
        const test::TinyModel m = test::build_tiny_model(test::x8_tiny_spec(type, tied));
        const std::string path = write_tiny_model(m, "x8");
        const test::TinyRun repacked =
            test::run_tiny(MmapStore::open(path), std::make_shared<ThreadPool>(2));
        std::filesystem::remove(path);
        const test::TinyRun plain = test::run_tiny(m.store(), std::make_shared<ThreadPool>(2));
        test::check_same_output(repacked, plain);
        ++n_checked;
      }
      INFO("kernels " << k.isa << ", type " << traits(type).name << ", experts");
      const test::TinyModel moe = test::build_tiny_model(moe_spec(type));
      const std::string path = write_tiny_model(moe, "x8moe");
      const test::TinyRun repacked = test::run_tiny(MmapStore::open(path), std::make_shared<ThreadPool>(2));
      std::filesystem::remove(path);
      test::check_same_output(repacked, test::run_tiny(moe.store(), std::make_shared<ThreadPool>(2)));
    }
  }
#if defined(__x86_64__)
  CHECK(n_checked >= 20);  // every x86 CPU we run on has AVX2, and AVX2 repacks all ten types
#endif
}

TEST_CASE("x86: streamed (GGUF layout) layers give the repacked (x8) run's logits bit for bit",
          "[model][x8]") {
  // A model under a memory budget streams its layers in the file's layout (gemm for the
  // 11-token prompt, vec_dot per token after it) while a resident one is repacked
  // (gemm_x8): the x86 tables make the two give the same bits (kernels/x86/x8_steps.h).
  // The output matrix stays resident (repacked) in both runs.
  int n_checked = 0;
  for (const char* isa : {"avx2", "avx512"}) {
    const test::SelectIsa selected(isa);
    if (!selected.ok) continue;  // not this CPU
    for (const bool experts : {false, true})
    for (GgmlType type : test::kRepackTypes) {
      INFO("kernels " << isa << ", type " << traits(type).name << (experts ? ", experts" : ""));
      const test::TinyModel m = test::build_tiny_model(experts ? moe_spec(type) : test::x8_tiny_spec(type, false));
      const std::string path = write_tiny_model(m, "streamed");
      const std::vector<float> resident = all_logits(MmapStore::open(path));
      std::unique_ptr<MmapStore> streaming = MmapStore::open(path);
      CHECK(streaming->set_streaming(0) > 0);  // every layer
      const std::vector<float> streamed = all_logits(std::move(streaming));
      std::filesystem::remove(path);
      REQUIRE(streamed.size() == resident.size());
      const auto diff =
          std::mismatch(streamed.begin(), streamed.end(), resident.begin(),
                        [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; });
      INFO("first different logit: " << diff.first - streamed.begin() << " of " << streamed.size());
      CHECK(diff.first == streamed.end());
      ++n_checked;
    }
  }
#if defined(__x86_64__)
  CHECK(n_checked >= 20);  // every x86 CPU we run on has AVX2
#endif
}

TEST_CASE("experts streamed through the expert cache give the resident run's logits bit for bit",
          "[model][x8][experts]") {
  // The cache holds the file's layout; on x86 resident stacks are repacked (x8), and the
  // tables give the same bits. 4 slots hold fewer than the 8 experts the 11-token prompt
  // picks in a layer, so the prompt runs its experts in groups; 16 hold every expert.
  int n_checked = 0;
  for (const char* isa : {"ref", "avx2", "avx512"}) {
    const test::SelectIsa selected(isa);
    if (!selected.ok) continue;  // not this CPU
    for (GgmlType type : test::kRepackTypes) {
      const test::TinyModel m = test::build_tiny_model(moe_spec(type));
      const std::string path = write_tiny_model(m, "experts");
      const std::vector<float> resident = all_logits(MmapStore::open(path));
      for (const int n_slots : {4, 16}) {
        INFO("kernels " << isa << ", type " << traits(type).name << ", " << n_slots << " slots");
        std::unique_ptr<MmapStore> streaming = MmapStore::open(path);
        const uint64_t slot = ExpertSlots::slot_bytes(ExpertSlots::stacks_of(streaming->model()));
        REQUIRE(streaming->set_expert_streaming(n_slots * slot, 4) == n_slots);
        const std::vector<float> streamed = all_logits(std::move(streaming));
        REQUIRE(streamed.size() == resident.size());
        const auto diff =
            std::mismatch(streamed.begin(), streamed.end(), resident.begin(),
                          [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; });
        INFO("first different logit: " << diff.first - streamed.begin() << " of " << streamed.size());
        CHECK(diff.first == streamed.end());
        ++n_checked;
      }
      std::filesystem::remove(path);
    }
  }
  CHECK(n_checked >= 10);
}

}  // namespace runnel
