// Repacked weights (the kernels' x8 layouts, LlamaModel::repack_weights) against the
// GGUF layout through the native store: the same tiny model through an MmapStore (which
// offers copy_space, so resident matrices are repacked into anonymous memory and the
// mapped originals are dropped) and through a SpanStore (which does not), on the same
// kernel table and a 2-thread pool (bounds: tests/core/model/repacked_check.h).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "native/mmap_store.h"
#include "native/thread_pool.h"
#include "tests/core/model/repacked_check.h"

namespace runnel {

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
        const std::string path = (std::filesystem::temp_directory_path() /
                                  ("runnel_x8_" + std::to_string(::getpid()) + ".gguf")).string();
        {
          std::ofstream f(path, std::ios::binary);
          f.write(reinterpret_cast<const char*>(m.bytes.data()), static_cast<std::streamsize>(m.bytes.size()));
        }
        const test::TinyRun repacked =
            test::run_tiny(MmapStore::open(path), std::make_shared<ThreadPool>(2));
        std::filesystem::remove(path);
        const test::TinyRun plain = test::run_tiny(m.store(), std::make_shared<ThreadPool>(2));
        test::check_same_output(repacked, plain);
        ++n_checked;
      }
    }
  }
#if defined(__x86_64__)
  CHECK(n_checked >= 10);  // every x86 CPU we run on has AVX2, and AVX2 repacks all five types
#endif
}

}  // namespace runnel
