// ExpertCache on a file of known bytes: what a fetch pins is the file's bytes of that
// expert, every stack of the layer, read directly and buffered; hits and misses are
// counted; errors name the problem (the policy: tests/core/host/expert_slots_test.cpp).
#include "native/expert_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <vector>

#include "tests/native/scratch_dir.h"

namespace runnel {
namespace {

// A file of `n_bytes` where byte i is a hash of i (so any misplaced span shows).
uint8_t byte_at(uint64_t i) { return static_cast<uint8_t>((i * 2654435761u) >> 13); }

std::string write_pattern(const test::ScratchDir& dir, uint64_t n_bytes) {
  const std::string path = dir.file("experts.bin");
  std::vector<char> bytes(n_bytes);
  for (uint64_t i = 0; i < n_bytes; ++i) bytes[i] = static_cast<char>(byte_at(i));
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// 2 layers of 8 experts, 2 stacks a layer ("gate" of 1000 bytes an expert, "down" of
// 3000), at unaligned offsets; the stacks of a layer are not adjacent.
struct Layout {
  std::vector<ExpertSlots::Stack> stacks = {
      {0, 0, 100, 1000}, {0, 0, 20000, 3000}, {1, 0, 50032, 1000}, {1, 0, 70016, 3000}};
  static constexpr int kLayers = 2, kExperts = 8;
  static constexpr uint64_t kFileBytes = 100000;
};

struct Opened {
  int fd = -1, direct_fd = -1;
  explicit Opened(const std::string& path, bool direct) {
    fd = ::open(path.c_str(), O_RDONLY);
    if (direct) direct_fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
  }
  ~Opened() {
    ::close(fd);
    if (direct_fd >= 0) ::close(direct_fd);
  }
};

void check_bytes(const ExpertCache& cache, const Layout& layout, size_t stack, int e) {
  const ExpertSlots::Stack& st = layout.stacks[stack];
  const std::span<const uint8_t> got = cache.bytes(stack, e);
  REQUIRE(got.size() == st.expert_bytes);
  const uint64_t start = st.offset + static_cast<uint64_t>(e) * st.expert_bytes;
  for (uint64_t i = 0; i < got.size(); ++i) {
    if (got[i] != byte_at(start + i)) FAIL("stack " << stack << " expert " << e << ": byte " << i << " differs");
  }
}

}  // namespace

TEST_CASE("expert cache: a fetch pins the file's bytes of every stack, direct and buffered", "[experts]") {
  test::ScratchDir dir;
  const std::string path = write_pattern(dir, Layout::kFileBytes);
  const Layout layout;
  for (const bool direct : {true, false}) {
    INFO((direct ? "O_DIRECT" : "buffered"));
    const Opened f(path, direct);
    const uint64_t slot = ExpertSlots::slot_bytes(layout.stacks);
    ExpertCache cache({{path, f.fd, f.direct_fd}}, layout.stacks, Layout::kLayers, Layout::kExperts, 6 * slot, 4);
    REQUIRE(cache.n_slots() == 6);
    const int picks[] = {7, 0, 3};
    cache.fetch(1, picks);
    for (const int e : picks) {
      check_bytes(cache, layout, 2, e);
      check_bytes(cache, layout, 3, e);
    }
    cache.unpin(1);
    cache.fetch(1, std::span<const int>(picks, 1));  // a hit
    check_bytes(cache, layout, 3, 7);
    const ExpertCacheStats s = cache.stats();
    CHECK(s.misses == 3);
    CHECK(s.hits == 1);
    CHECK(s.bytes_read == 3 * 4000);
    CHECK(s.n_slots == 6);
    CHECK(s.n_experts == 16);
    // an expert not fetched (or no longer pinned) is a programming error, named
    cache.unpin(1);
    CHECK_THROWS_WITH(cache.bytes(3, 7), Catch::Contains("expert 7 of layer 1 used without fetch()"));
  }
}

TEST_CASE("expert cache: begin() puts the cached experts first; wait() completes the rest", "[experts]") {
  test::ScratchDir dir;
  const std::string path = write_pattern(dir, Layout::kFileBytes);
  const Layout layout;
  const Opened f(path, true);
  ExpertCache cache({{path, f.fd, f.direct_fd}}, layout.stacks, Layout::kLayers, Layout::kExperts,
                    6 * ExpertSlots::slot_bytes(layout.stacks), 4);
  const int cached[] = {5, 2};
  cache.fetch(0, cached);
  cache.unpin(0);
  int picks[] = {1, 5, 6, 2};
  CHECK(cache.begin(0, picks) == 2);
  // the cached ones, usable now, in their order; then the ones being read
  CHECK(std::vector<int>(picks, picks + 4) == std::vector<int>{5, 2, 1, 6});
  check_bytes(cache, layout, 0, 5);
  check_bytes(cache, layout, 1, 2);
  cache.wait();
  for (const int e : picks) {
    check_bytes(cache, layout, 0, e);
    check_bytes(cache, layout, 1, e);
  }
  cache.unpin(0);
  int again[] = {6, 1};
  CHECK(cache.begin(0, again) == 2);  // nothing to read: wait() returns at once
  cache.wait();
  const ExpertCacheStats s = cache.stats();
  CHECK(s.misses == 4);
  CHECK(s.hits == 4);
  cache.unpin(0);
  // a failed read surfaces at wait(), and leaves nothing pinned
  const std::string short_path = dir.file("short.bin");
  std::filesystem::copy_file(path, short_path);
  std::filesystem::resize_file(short_path, 80000);
  const Opened g(short_path, false);
  ExpertCache cut({{short_path, g.fd, -1}}, layout.stacks, 2, 8, 4 * ExpertSlots::slot_bytes(layout.stacks), 4);
  int last[] = {7};
  CHECK(cut.begin(1, last) == 0);
  CHECK_THROWS_WITH(cut.wait(), Catch::Contains("the file ends before the expert does"));
  const int first[] = {0};
  cut.fetch(1, first);
  check_bytes(cut, layout, 3, 0);
}

TEST_CASE("expert cache: a read past the end of the file is an error naming it", "[experts]") {
  test::ScratchDir dir;
  const Layout layout;
  const std::string path = write_pattern(dir, Layout::kFileBytes);
  const Opened f(path, false);
  const uint64_t slot = ExpertSlots::slot_bytes(layout.stacks);
  // a file cut short: the last expert of layer 1's second stack is past its end
  const std::string short_path = dir.file("short.bin");
  std::filesystem::copy_file(path, short_path);
  std::filesystem::resize_file(short_path, 80000);
  const Opened g(short_path, false);
  ExpertCache cut({{short_path, g.fd, -1}}, layout.stacks, 2, 8, 4 * slot, 4);
  const int last[] = {7};
  CHECK_THROWS_WITH(cut.fetch(1, last), Catch::Contains("cannot read 3000 bytes at offset 91016 of " + short_path) &&
                                            Catch::Contains("the file ends before the expert does"));
  // the failed fetch leaves nothing pinned or cached: a good expert still reads
  const int first[] = {0};
  cut.fetch(1, first);
  check_bytes(cut, layout, 3, 0);
}

}  // namespace runnel
