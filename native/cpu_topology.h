// How many threads to use by default: the physical cores this process may run on.
// Hyper-threads share a core's execution units, and the matmuls are bound by them
// and by memory bandwidth, so a second thread per core rarely helps.
#pragma once

#include <string>
#include <vector>

namespace runnel {

// Physical cores among the CPUs this process may run on (sched_getaffinity), each
// core counted once via /sys/devices/system/cpu/cpuN/topology/thread_siblings_list.
// Falls back to the affinity count, then to std::thread::hardware_concurrency, then 1.
int physical_core_count();

// Logical CPUs this process may run on (sched_getaffinity), else
// std::thread::hardware_concurrency, else 1: the most threads that can run at once.
int logical_cpu_count();

// Physical cores of a sysfs tree rooted at `cpu_root` (".../devices/system/cpu") for
// the CPUs in `cpus`; 0 when a sibling list cannot be read. Exposed for tests.
int count_physical_cores(const std::string& cpu_root, const std::vector<int>& cpus);

}  // namespace runnel
