#include "native/expert_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace runnel {

ExpertCache::ExpertCache(std::vector<File> files, std::vector<ExpertSlots::Stack> stacks, int n_layers,
                         int n_experts, uint64_t budget_bytes, int min_slots, int n_io_threads)
    : files_(std::move(files)), slots_(std::move(stacks), n_layers, n_experts, budget_bytes, min_slots) {
  for (int i = 0; i < n_io_threads; ++i) io_threads_.emplace_back([this] { io_loop(); });
}

ExpertCache::~ExpertCache() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : io_threads_) t.join();
}

void ExpertCache::fetch(int layer, std::span<const int> ids) {
  start_reads(slots_.fetch(layer, ids));
  wait();
}

int ExpertCache::begin(int layer, std::span<int> ids) {
  const std::span<const ExpertSlots::Read> reads = slots_.fetch(layer, ids);
  const auto missed = [&](int e) {
    return std::any_of(reads.begin(), reads.end(), [e](const ExpertSlots::Read& r) { return r.expert == e; });
  };
  const auto ready_end = std::stable_partition(ids.begin(), ids.end(), [&](int e) { return !missed(e); });
  start_reads(reads);
  return static_cast<int>(ready_end - ids.begin());
}

void ExpertCache::start_reads(std::span<const ExpertSlots::Read> reads) {
  std::lock_guard<std::mutex> lock(mu_);
  reads_ = reads;
  next_read_ = 0;
  reads_done_ = 0;
  read_error_.clear();
  if (!reads.empty()) work_cv_.notify_all();
}

void ExpertCache::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return reads_done_ == reads_.size(); });
  reads_ = {};
  if (!read_error_.empty()) {
    slots_.forget_pinned();  // their bytes are partial
    throw std::runtime_error(read_error_);
  }
}

void ExpertCache::io_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [this] { return stop_ || next_read_ < reads_.size(); });
    if (stop_) return;
    const ExpertSlots::Read r = reads_[next_read_++];
    lock.unlock();
    std::string error;
    try {
      read_one(r);
    } catch (const std::exception& e) {
      error = e.what();
    }
    lock.lock();
    if (!error.empty() && read_error_.empty()) read_error_ = error;
    if (++reads_done_ == reads_.size()) done_cv_.notify_all();
  }
}

void ExpertCache::read_one(const ExpertSlots::Read& r) {
  const File& f = files_[r.file_index];
  const auto fail = [&](const char* what, int err) {
    throw std::runtime_error("expert cache: cannot read " + std::to_string(r.offset + r.n_needed - r.expert_offset) +
                             " bytes at offset " + std::to_string(r.expert_offset) + " of " + f.path + ": " +
                             (err ? std::strerror(err) : what));
  };
  uint64_t done = 0;
  bool direct = f.direct_fd >= 0;
  while (done < r.n_bytes) {
    const ssize_t got = ::pread(direct ? f.direct_fd : f.fd, r.dst + done, static_cast<size_t>(r.n_bytes - done),
                                static_cast<off_t>(r.offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && direct && errno == EINVAL) {  // the file system refuses this direct read
      direct = false;
      continue;
    }
    if (got < 0) fail("", errno);
    if (got == 0) break;  // the end of the file
    done += static_cast<uint64_t>(got);
  }
  if (done < r.n_needed) fail("the file ends before the expert does", 0);
  // A buffered read leaves the bytes in the page cache too: give those pages back.
  if (!direct) {
    (void)::posix_fadvise(f.fd, static_cast<off_t>(r.offset), static_cast<off_t>(r.n_bytes), POSIX_FADV_DONTNEED);
  }
}

}  // namespace runnel
