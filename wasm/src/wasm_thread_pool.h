// The wasm Parallel for the pthreads build (Emscripten pthreads = Web Workers over a
// shared memory; the page must be cross-origin isolated). Workers come from the
// runtime's pre-started pool, so creating them never waits for the event loop. Tasks
// are claimed from one atomic work word; idle workers spin briefly, then sleep on a
// condition variable (Atomics.wait underneath). The calling thread runs tasks too.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/host/parallel.h"

namespace runnel::wasm {

class ThreadPool : public Parallel {
 public:
  explicit ThreadPool(int n_threads);  // n_threads counts the caller; >= 1
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const override { return static_cast<int>(workers_.size()) + 1; }
  void run(int n_tasks, const std::function<void(int task)>& fn) override;

 private:
  static constexpr int kMaxTasks = 0xffff;  // per run (the work word's field width)

  void worker_loop();
  // Claims and runs tasks of job `generation` until none is left (or a newer job began).
  void run_tasks(uint32_t generation);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  // [generation: 32][n_tasks: 16][next task: 16]: a task is claimed by a CAS that also
  // checks the job, so a worker that wakes late never runs a task of the next job.
  std::atomic<uint64_t> work_{0};
  std::atomic<int> n_done_{0};
  uint32_t generation_ = 0;  // written by the caller only
  const std::function<void(int)>* fn_ = nullptr;
  std::atomic<bool> stop_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace runnel::wasm
