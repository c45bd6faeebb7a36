// ExpertSlots' policy without any file: which fetches miss (ask for reads) and which hit,
// when a token's experts do not all fit, and the reads' block alignment.
#include "core/host/expert_slots.h"

#include <catch2/catch.hpp>

namespace runnel {
namespace {

// 2 layers of 8 experts, 2 stacks a layer (1000 and 3000 bytes an expert), unaligned.
std::vector<ExpertSlots::Stack> two_layers() {
  return {{0, 0, 100, 1000}, {0, 0, 20000, 3000}, {1, 0, 50032, 1000}, {1, 0, 70016, 3000}};
}

}  // namespace

TEST_CASE("expert slots: reads cover each missing expert in whole blocks, hits read nothing", "[experts]") {
  const std::vector<ExpertSlots::Stack> stacks = two_layers();
  const uint64_t slot = ExpertSlots::slot_bytes(stacks);
  CHECK(slot == (4096 + 4096) + (4096 + 4096));  // each stack's expert rounded up, plus a block
  ExpertSlots slots(stacks, 2, 8, 6 * slot, 4);
  REQUIRE(slots.n_slots() == 6);
  const int picks[] = {7};
  const std::span<const ExpertSlots::Read> reads = slots.fetch(1, picks);
  REQUIRE(reads.size() == 2);
  // layer 1, expert 7: stack 2 at 50032 + 7000 = 57032, stack 3 at 70016 + 21000 = 91016
  CHECK(reads[0].offset == 57032 / 4096 * 4096);
  CHECK(reads[0].offset + reads[0].n_needed == 57032 + 1000);
  CHECK(reads[0].n_bytes % 4096 == 0);
  CHECK(reads[0].offset + reads[0].n_bytes >= 58032);
  CHECK(reads[1].offset == 91016 / 4096 * 4096);
  CHECK(reads[1].offset + reads[1].n_needed == 94016);
  CHECK(reinterpret_cast<uintptr_t>(reads[0].dst) % 4096 == 0);
  CHECK(slots.bytes(3, 7).data() == reads[1].dst + (91016 % 4096));
  slots.unpin(1);
  CHECK(slots.fetch(1, picks).empty());  // cached now
  const ExpertCacheStats s = slots.stats();
  CHECK(s.hits == 1);
  CHECK(s.misses == 1);
  CHECK(s.bytes_read == 4000);
}

TEST_CASE("expert slots: hot experts stay when a token's experts do not all fit", "[experts]") {
  const std::vector<ExpertSlots::Stack> stacks = two_layers();
  // 8 slots, 2 of them transit: every "token" picks 5 experts in each of 2 layers, 10
  // in all. LRU would miss every pick of this cycle; the policy keeps 6 and misses at most
  // 4 a token.
  ExpertSlots slots(stacks, 2, 8, 8 * ExpertSlots::slot_bytes(stacks), 2);
  const int layer0[] = {0, 1, 2, 3, 4}, layer1[] = {3, 4, 5, 6, 7};
  const auto token = [&] {
    slots.fetch(0, layer0);
    slots.unpin(0);
    slots.fetch(1, layer1);
    slots.unpin(1);
  };
  for (int i = 0; i < 50; ++i) token();
  const ExpertCacheStats s = slots.stats();
  CHECK(s.hits + s.misses == 50 * 10);
  CHECK(s.hit_rate() > 0.55);
  // a burst of one-off picks in layer 0 (2 misses, as many as the transit slots) does not
  // evict the hot experts
  const uint64_t misses_before = s.misses;
  const int cold[] = {5, 6};
  slots.fetch(0, cold);
  slots.unpin(0);
  token();
  CHECK(slots.stats().misses - misses_before <= 2 + 4);
}

TEST_CASE("expert slots: a hotter expert replaces a colder one", "[experts]") {
  const std::vector<ExpertSlots::Stack> stacks = two_layers();
  // 4 slots, 2 transit: 2 cached
  ExpertSlots slots(stacks, 2, 8, 4 * ExpertSlots::slot_bytes(stacks), 2);
  const int a[] = {0}, b[] = {1}, c[] = {2};
  const auto use = [&](const int* e, int n) {
    for (int i = 0; i < n; ++i) {
      slots.fetch(0, std::span<const int>(e, 1));
      slots.unpin(0);
    }
  };
  use(a, 1);  // cached
  use(b, 1);  // cached
  use(c, 8);  // first in transit, then hot: it displaces the colder of a and b
  const uint64_t misses = slots.stats().misses;
  use(c, 1);
  CHECK(slots.stats().misses == misses);  // c stays
  CHECK_THROWS_WITH(ExpertSlots(stacks, 2, 8, 3 * ExpertSlots::slot_bytes(stacks), 4),
                    Catch::Contains("holds 3 experts") && Catch::Contains("at least 4 are needed"));
  const int five[] = {0, 1, 2, 3, 4};
  CHECK_THROWS_WITH(slots.fetch(0, five), Catch::Contains("5 experts pinned at once, 4 slots"));
}

}  // namespace runnel
