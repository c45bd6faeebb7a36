#include "wasm/src/wasm_thread_pool.h"

#include <stdexcept>
#include <string>

namespace runnel::wasm {

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads < 1) {
    throw std::invalid_argument("threads must be >= 1, got " + std::to_string(n_threads));
  }
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    work_.store(uint64_t{++generation_} << 32, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_tasks(uint32_t generation) {
  uint64_t word = work_.load(std::memory_order_acquire);
  while (true) {
    if (static_cast<uint32_t>(word >> 32) != generation) return;
    const int n_tasks = static_cast<int>((word >> 16) & 0xffff);
    const int task = static_cast<int>(word & 0xffff);
    if (task >= n_tasks) return;
    if (!work_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel)) continue;
    try {
      (*fn_)(task);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
    n_done_.fetch_add(1, std::memory_order_acq_rel);
    word = work_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop() {
  uint32_t seen = 0;
  while (true) {
    // Spin a little: the next matmul of a forward pass follows within microseconds.
    auto current = [this] { return static_cast<uint32_t>(work_.load(std::memory_order_acquire) >> 32); };
    uint32_t now = current();
    for (int spin = 0; now == seen && spin < 20000; ++spin) now = current();
    if (now == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return current() != seen; });
      now = current();
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    run_tasks(now);
  }
}

void ThreadPool::run(int n_tasks, const std::function<void(int task)>& fn) {
  if (n_tasks <= 0) return;
  if (n_tasks > kMaxTasks) {
    throw std::invalid_argument("ThreadPool::run: at most " + std::to_string(kMaxTasks) +
                                " tasks per run, got " + std::to_string(n_tasks));
  }
  if (workers_.empty() || n_tasks == 1) {
    for (int t = 0; t < n_tasks; ++t) fn(t);
    return;
  }
  fn_ = &fn;
  n_done_.store(0, std::memory_order_relaxed);
  const uint32_t generation = ++generation_;
  {
    std::lock_guard<std::mutex> lock(mutex_);  // sleepers never miss the wake-up
    work_.store((uint64_t{generation} << 32) | (static_cast<uint64_t>(n_tasks) << 16),
                std::memory_order_release);
  }
  wake_.notify_all();
  run_tasks(generation);
  while (n_done_.load(std::memory_order_acquire) < n_tasks) {
  }
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    std::swap(error, error_);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace runnel::wasm
