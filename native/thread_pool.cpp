#include "native/thread_pool.h"

#include <stdexcept>
#include <string>

namespace runnel {
namespace {

// Spin iterations before a waiting thread sleeps (workers) or yields (the caller).
constexpr int kSpinsBeforeSleep = 1 << 14;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

constexpr uint64_t pack(uint32_t generation, uint32_t n_tasks, uint32_t next) {
  return (static_cast<uint64_t>(generation) << 32) | (static_cast<uint64_t>(n_tasks) << 16) | next;
}
constexpr uint32_t generation_of(uint64_t w) {
  return static_cast<uint32_t>(w >> 32);
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads < 1) {
    throw std::invalid_argument("thread count must be >= 1, got " + std::to_string(n_threads));
  }
  workers_.reserve(n_threads - 1);
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    work_.store(pack(generation_ + 1, 0, 0), std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

bool ThreadPool::run_one(uint32_t generation) {
  uint64_t w = work_.load(std::memory_order_acquire);
  for (;;) {
    const uint32_t n_tasks = (w >> 16) & 0xffff;
    const uint32_t next = w & 0xffff;
    if (generation_of(w) != generation || next >= n_tasks) return false;
    // Owning task `next` of this generation means the run is still waiting for it,
    // so fn_ is the run's function until n_done_ says otherwise.
    if (work_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
      try {
        (*fn_)(static_cast<int>(next));
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
      }
      n_done_.fetch_add(1, std::memory_order_release);
      return true;
    }
  }
}

void ThreadPool::worker_loop() {
  uint32_t seen = 0;
  for (;;) {
    uint32_t gen = generation_of(work_.load(std::memory_order_acquire));
    for (int spin = 0; gen == seen && spin < kSpinsBeforeSleep; ++spin) {
      cpu_relax();
      gen = generation_of(work_.load(std::memory_order_acquire));
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock,
                 [&] { return generation_of(work_.load(std::memory_order_acquire)) != seen; });
      gen = generation_of(work_.load(std::memory_order_acquire));
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = gen;
    while (run_one(seen)) {
    }
  }
}

void ThreadPool::run(int n_tasks, const std::function<void(int task)>& fn) {
  if (n_tasks <= 0) return;
  if (n_tasks > kMaxTasks) {
    throw std::invalid_argument("ThreadPool::run: " + std::to_string(n_tasks) + " tasks, at most " +
                                std::to_string(kMaxTasks));
  }
  if (workers_.empty() || n_tasks == 1) {
    for (int t = 0; t < n_tasks; ++t) fn(t);
    return;
  }
  fn_ = &fn;
  error_ = nullptr;
  n_done_.store(0, std::memory_order_relaxed);
  ++generation_;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    work_.store(pack(generation_, static_cast<uint32_t>(n_tasks), 0), std::memory_order_release);
  }
  wake_.notify_all();
  while (run_one(generation_)) {
  }
  // The barrier: every task has finished (not every worker has looked).
  for (int spin = 0; n_done_.load(std::memory_order_acquire) != n_tasks; ++spin) {
    if (spin < kSpinsBeforeSleep) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
  if (error_) std::rethrow_exception(error_);
}

}  // namespace runnel
