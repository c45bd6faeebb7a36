#include "core/host/parallel.h"

namespace runnel {

Parallel::~Parallel() = default;

void InlineParallel::run(int n_tasks, const std::function<void(int task)>& fn) {
  for (int t = 0; t < n_tasks; ++t) fn(t);
}

}  // namespace runnel
