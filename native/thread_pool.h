// ThreadPool: the native Parallel. Persistent worker threads wait for work by
// spinning briefly on the work word (the gap between two matmuls of a forward pass is
// microseconds), then sleep on a condition variable. The calling thread runs tasks
// too. Tasks are claimed one at a time from a single atomic word holding (generation,
// task count, next task), and run() returns once every task has finished: it never
// waits for a thread that holds no task, so a worker the OS has descheduled (a busy
// machine) delays a run by at most the one task it claimed.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/host/parallel.h"

namespace runnel {

class ThreadPool : public Parallel {
 public:
  // n_threads >= 1 counts the caller: n_threads - 1 workers are started.
  // Throws std::invalid_argument otherwise.
  explicit ThreadPool(int n_threads);
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  static constexpr int kMaxTasks = 0xffff;  // per run (the work word's field width)

  int n_threads() const override { return static_cast<int>(workers_.size()) + 1; }
  // Tasks are claimed in index order by whichever thread is free. Not re-entrant:
  // one run() at a time, and fn must not call run() on this pool. Throws
  // std::invalid_argument for more than kMaxTasks tasks.
  void run(int n_tasks, const std::function<void(int task)>& fn) override;

 private:
  void worker_loop();
  bool run_one(uint32_t generation);  // claims and runs one task; false when none is left

  std::vector<std::thread> workers_;
  // [generation: 32 bits][n_tasks: 16][next task: 16]; a new run publishes a new word.
  std::atomic<uint64_t> work_{0};
  std::atomic<int> n_done_{0};  // tasks of the current run that have finished
  uint32_t generation_ = 0;     // written by the caller only
  const std::function<void(int)>* fn_ = nullptr;
  std::mutex mutex_;  // taken to publish work so that sleepers never miss a wake-up
  std::condition_variable wake_;
  std::atomic<bool> stop_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace runnel
