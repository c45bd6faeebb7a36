// How core code fans work out without owning threads. The native build plugs in a
// persistent thread pool (native/thread_pool.h); wasm without cross-origin isolation
// and the tests use InlineParallel. Callers partition statically: task t of T takes
// rows [t*n/T, (t+1)*n/T) (or tapered_begin's cut), so results never depend on
// scheduling.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

namespace runnel {

class Parallel {
 public:
  virtual ~Parallel();
  virtual int n_threads() const = 0;
  // Runs fn(0) .. fn(n_tasks - 1), possibly concurrently, and returns when all have
  // finished (a barrier). fn must not throw in the hot path; if it does, one of the
  // exceptions is rethrown here after every task has ended.
  virtual void run(int n_tasks, const std::function<void(int task)>& fn) = 0;
};

// Runs every task in order on the calling thread.
class InlineParallel : public Parallel {
 public:
  int n_threads() const override { return 1; }
  void run(int n_tasks, const std::function<void(int task)>& fn) override;
};

// Work is cut into a few tasks per thread: the threads that are running then pick up
// the share of one the OS has paused (a busy machine), while the cut stays static.
constexpr int kTasksPerThread = 4;

// How many tasks to cut n_items into for `par` (at least 1, at most n_items).
inline int n_tasks_for(const Parallel& par, int64_t n_items) {
  const int64_t most = par.n_threads() == 1 ? 1 : int64_t{par.n_threads()} * kTasksPerThread;
  return static_cast<int>(std::max<int64_t>(1, std::min(n_items, most)));
}

// Start of task t's share when n items are split over n_tasks tasks.
inline int64_t split_begin(int64_t n, int task, int n_tasks) {
  return n * task / n_tasks;
}

// The same with shares that shrink by round (n_tasks_for's full cut: kTasksPerThread
// rounds of n_threads tasks, weighing 4, 2, 1, 1): threads claim the large shares first
// and end on small ones, so at the barrier the first to finish waits for at most a
// sixteenth of the work instead of an eighth. Fewer than 4 items for the smallest
// share, or any other n_tasks: split_begin.
inline int64_t tapered_begin(int64_t n, int task, int n_tasks, int n_threads) {
  static_assert(kTasksPerThread == 4, "the weights below are one per round");
  if (n_threads < 2 || n_tasks != n_threads * kTasksPerThread || n < 32 * int64_t{n_threads})
    return split_begin(n, task, n_tasks);
  constexpr int64_t kRoundWeight[kTasksPerThread] = {4, 2, 1, 1};
  constexpr int64_t kThreadWeight = kRoundWeight[0] + kRoundWeight[1] + kRoundWeight[2] + kRoundWeight[3];
  const int round = task / n_threads;
  int64_t weight = 0;  // of tasks 0 .. task - 1
  for (int r = 0; r < round; ++r) weight += kRoundWeight[r] * n_threads;
  if (round < kTasksPerThread) weight += kRoundWeight[round] * (task % n_threads);
  return n * weight / (kThreadWeight * n_threads);
}

}  // namespace runnel
