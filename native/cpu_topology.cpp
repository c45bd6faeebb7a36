#include "native/cpu_topology.h"

#include <sched.h>

#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace runnel {
namespace {

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

}  // namespace

int count_physical_cores(const std::string& cpu_root, const std::vector<int>& cpus) {
  std::set<std::string> cores;  // one sibling list ("0,4" or "0-1") per physical core
  for (const int cpu : cpus) {
    std::ifstream in(cpu_root + "/cpu" + std::to_string(cpu) + "/topology/thread_siblings_list");
    std::string siblings;
    if (!in || !std::getline(in, siblings) || siblings.empty()) return 0;
    cores.insert(siblings);
  }
  return static_cast<int>(cores.size());
}

int physical_core_count() {
  const std::vector<int> cpus = allowed_cpus();
  if (!cpus.empty()) {
    const int cores = count_physical_cores("/sys/devices/system/cpu", cpus);
    return cores > 0 ? cores : static_cast<int>(cpus.size());
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

int logical_cpu_count() {
  const std::vector<int> cpus = allowed_cpus();
  if (!cpus.empty()) return static_cast<int>(cpus.size());
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

}  // namespace runnel
