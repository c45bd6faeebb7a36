// The kernel set a test process runs on: RUNNEL_ISA when set (scripts/test.sh runs the
// [real] tests once per kernel set the host executes), else the reference kernels.
#pragma once

#include <cstdlib>
#include <string>

#include "kernels/kernels.h"

namespace runnel::test {

inline std::string process_isa() {
  const char* isa = std::getenv("RUNNEL_ISA");
  return isa != nullptr && *isa != '\0' ? isa : "ref";
}

// Selects process_isa(); false when this CPU or build lacks it.
inline bool select_process_isa() { return select_kernels(process_isa()); }

}  // namespace runnel::test
