// How much memory this process may use, and how much it uses: the inputs of the
// memory plan (core/runtime/memory_plan.h) and of the streaming statistics.
#pragma once

#include <cstdint>
#include <string>

namespace runnel {

struct MemoryBudget {
  uint64_t bytes = 0;
  std::string source;  // "(--mem-budget)", "(cgroup limit)", "(MemAvailable)"
};

// The cgroup memory limit of this process (v2 memory.max or v1
// memory.limit_in_bytes), else /proc/meminfo's MemAvailable.
MemoryBudget detect_memory_budget();

// The cgroup limit alone (0 when there is none); `proc_root`/`cgroup_root` let tests
// point at fake trees.
uint64_t cgroup_memory_limit(const std::string& proc_root = "/proc",
                             const std::string& cgroup_root = "/sys/fs/cgroup");

uint64_t process_rss_bytes();   // VmRSS: anonymous + mapped file pages resident
uint64_t process_read_bytes();  // /proc/self/io read_bytes: bytes fetched from storage

}  // namespace runnel
