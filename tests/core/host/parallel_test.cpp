// tapered_begin: the shrinking shares matmul hands its tasks.
#include "core/host/parallel.h"

#include <catch2/catch.hpp>

namespace runnel {

TEST_CASE("tapered_begin: shares cover [0, n) in order and shrink by round", "[parallel]") {
  for (int n_threads : {1, 2, 3, 4, 16}) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{31}, int64_t{63}, int64_t{64}, int64_t{200},
                      int64_t{4097}, int64_t{128256}}) {
      const int n_tasks = n_threads == 1 ? 1 : static_cast<int>(std::min<int64_t>(
                                                   std::max<int64_t>(n, 1), n_threads * kTasksPerThread));
      INFO(n_threads << " threads, " << n << " items, " << n_tasks << " tasks");
      CHECK(tapered_begin(n, 0, n_tasks, n_threads) == 0);
      CHECK(tapered_begin(n, n_tasks, n_tasks, n_threads) == n);
      const bool tapered = n_threads >= 2 && n_tasks == n_threads * kTasksPerThread && n >= 32 * n_threads;
      for (int t = 0; t < n_tasks; ++t) {
        const int64_t share = tapered_begin(n, t + 1, n_tasks, n_threads) - tapered_begin(n, t, n_tasks, n_threads);
        if (!tapered) {
          CHECK(tapered_begin(n, t, n_tasks, n_threads) == split_begin(n, t, n_tasks));
          continue;
        }
        CHECK(share >= 4);  // the smallest weight (1 of 8 a thread) of at least 32 a thread
        const int round = t / n_threads;
        const int64_t weight = round == 0 ? 4 : round == 1 ? 2 : 1;
        // weight / (8 * threads) of n, give or take the rounding of both ends
        CHECK(share >= n * weight / (8 * n_threads) - 1);
        CHECK(share <= n * weight / (8 * n_threads) + 1);
      }
    }
  }
}

}  // namespace runnel
