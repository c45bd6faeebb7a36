#include "native/memory_budget.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace runnel {
namespace {

// "max" or absent -> 0; limits at or above 2^60 (v1's "unlimited") -> 0.
uint64_t read_limit(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  try {
    const uint64_t v = std::stoull(text);
    return v >= (1ull << 60) ? 0 : v;
  } catch (...) {
    return 0;
  }
}

uint64_t read_field_kib(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      std::istringstream fields(line.substr(key.size()));
      uint64_t kib = 0;
      fields >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

}  // namespace

uint64_t cgroup_memory_limit(const std::string& proc_root, const std::string& cgroup_root) {
  std::ifstream in(proc_root + "/self/cgroup");
  std::string line;
  uint64_t limit = 0;
  // Lines are "ID:controllers:path"; v2 has "0::path", v1 a "memory" controller line.
  while (std::getline(in, line)) {
    const size_t a = line.find(':');
    const size_t b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    uint64_t l = 0;
    if (controllers.empty()) {
      l = read_limit(cgroup_root + path + "/memory.max");
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      l = read_limit(cgroup_root + "/memory" + path + "/memory.limit_in_bytes");
    }
    if (l != 0 && (limit == 0 || l < limit)) limit = l;
  }
  return limit;
}

MemoryBudget detect_memory_budget() {
  if (const uint64_t cg = cgroup_memory_limit(); cg != 0) return {cg, "(cgroup limit)"};
  return {read_field_kib("/proc/meminfo", "MemAvailable:"), "(MemAvailable)"};
}

uint64_t process_rss_bytes() { return read_field_kib("/proc/self/status", "VmRSS:"); }

uint64_t process_read_bytes() {
  std::ifstream in("/proc/self/io");
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) {
    if (key == "read_bytes:") return value;
  }
  return 0;
}

}  // namespace runnel
