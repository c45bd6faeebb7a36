// Catch2's main lives alone: it takes ~20 s to compile and never changes. Before the
// tests run it selects the kernel set RUNNEL_ISA names (default ref), so the same tests
// run on each set the host executes.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>

#include "tests/test_isa.h"

int main(int argc, char* argv[]) {
  if (!runnel::test::select_process_isa()) {
    std::fprintf(stderr, "RUNNEL_ISA: unknown or unsupported ISA '%s'\n",
                 runnel::test::process_isa().c_str());
    return 2;
  }
  return Catch::Session().run(argc, argv);
}
