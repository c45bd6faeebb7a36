// ExpertCache: the native store's expert cache. ExpertSlots decides which expert goes in
// which slot; this reads the missing ones from the GGUF file, several at once on a few
// I/O threads, bypassing the page cache (O_DIRECT where the file system allows; else
// buffered reads whose pages are given back), so the slots are the only copy and memory
// stays within the budget.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/host/expert_slots.h"

namespace runnel {

class ExpertCache {
 public:
  struct File {
    std::string path;
    int fd = -1;         // buffered reads (the fallback); not owned
    int direct_fd = -1;  // O_DIRECT, or -1 where the file system refuses it; not owned
  };

  // The slots as ExpertSlots makes them (its errors pass through).
  ExpertCache(std::vector<File> files, std::vector<ExpertSlots::Stack> stacks, int n_layers, int n_experts,
              uint64_t budget_bytes, int min_slots, int n_io_threads = 4);
  ~ExpertCache();
  ExpertCache(const ExpertCache&) = delete;
  ExpertCache& operator=(const ExpertCache&) = delete;

  // Brings experts `ids` of `layer` into slots (reading the missing ones) and pins them.
  // Throws std::runtime_error naming the file on a failed read (nothing stays pinned).
  void fetch(int layer, std::span<const int> ids);
  // fetch() in two halves (WeightStore::fetch_experts_begin): pins `ids`, hands the
  // missing ones' reads to the I/O threads and returns at once, the cached experts moved
  // to the front of `ids` and counted; wait() blocks until the reads are done (throwing
  // like fetch()). One fetch at a time.
  int begin(int layer, std::span<int> ids);
  void wait();
  void unpin(int layer) { slots_.unpin(layer); }
  std::span<const uint8_t> bytes(size_t stack, int e) const { return slots_.bytes(stack, e); }
  int n_slots() const { return slots_.n_slots(); }
  ExpertCacheStats stats() const { return slots_.stats(); }

 private:
  void start_reads(std::span<const ExpertSlots::Read> reads);
  void io_loop();
  void read_one(const ExpertSlots::Read& r);

  std::vector<File> files_;
  ExpertSlots slots_;

  // The reads of one fetch(), done by the I/O threads until wait() sees them done.
  std::span<const ExpertSlots::Read> reads_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  size_t next_read_ = 0, reads_done_ = 0;
  std::string read_error_;
  bool stop_ = false;
  std::vector<std::thread> io_threads_;
};

}  // namespace runnel
