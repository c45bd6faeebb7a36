// Budget detection from fake cgroup trees (v1 and v2), and streaming residency in
// MmapStore: released layers read back the same bytes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "native/memory_budget.h"
#include "native/mmap_store.h"

namespace runnel {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

}  // namespace

TEST_CASE("memory budget: cgroup v1 and v2 limits", "[memory]") {
  const fs::path root = fs::temp_directory_path() / "runnel_cgroup_test";
  fs::remove_all(root);
  SECTION("v2") {
    write(root / "proc/self/cgroup", "0::/user.slice/test\n");
    write(root / "cg/user.slice/test/memory.max", "6442450944\n");
    CHECK(cgroup_memory_limit((root / "proc").string(), (root / "cg").string()) == 6442450944ull);
    write(root / "cg/user.slice/test/memory.max", "max\n");
    CHECK(cgroup_memory_limit((root / "proc").string(), (root / "cg").string()) == 0);
  }
  SECTION("v1") {
    write(root / "proc/self/cgroup", "5:cpu,cpuacct:/x\n4:memory:/runnel-test\n");
    write(root / "cg/memory/runnel-test/memory.limit_in_bytes", "2684354560\n");
    CHECK(cgroup_memory_limit((root / "proc").string(), (root / "cg").string()) == 2684354560ull);
    // v1's "no limit" is a huge number
    write(root / "cg/memory/runnel-test/memory.limit_in_bytes", "9223372036854771712\n");
    CHECK(cgroup_memory_limit((root / "proc").string(), (root / "cg").string()) == 0);
  }
  SECTION("none") {
    CHECK(cgroup_memory_limit((root / "nothing").string(), (root / "cg").string()) == 0);
  }
  fs::remove_all(root);
  const MemoryBudget b = detect_memory_budget();
  CHECK(b.bytes > 0);
  CHECK(!b.source.empty());
  CHECK(process_rss_bytes() > 0);
}

TEST_CASE("mmap store: streamed layers are dropped and read back intact", "[memory][real]") {
  const char* path = std::getenv("RUNNEL_MODEL");
  if (!path) {
    WARN("RUNNEL_MODEL is not set: skipping");
    return;
  }
  auto store = MmapStore::open(path);
  CHECK(!store->streaming());
  // Budget for about 5 layers: 3 resident next to 2 in transit, the rest streamed.
  uint64_t layer0 = 0;
  for (const GgufTensorInfo& t : store->model().tensors) {
    if (layer_of_tensor(t.name) == 0) layer0 += t.n_bytes;
  }
  const int n_streamed = store->set_streaming(5 * layer0 + layer0 / 2);
  CHECK(n_streamed == 30 - 3);
  CHECK(store->streaming());
  const GgufTensorInfo* t = store->model().find_tensor("blk.20.ffn_down.weight");
  REQUIRE(t);
  store->acquire(20);
  const std::span<const uint8_t> bytes = store->tensor_bytes(*t);
  const std::vector<uint8_t> before(bytes.begin(), bytes.end());
  store->release(20);
  const std::span<const uint8_t> again = store->tensor_bytes(*t);
  CHECK(std::equal(again.begin(), again.end(), before.begin()));
  CHECK(store->set_streaming(uint64_t{1} << 40) == 0);  // everything fits: no streaming
  CHECK(!store->streaming());
}

}  // namespace runnel
