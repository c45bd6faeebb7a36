// The wasm kernel tables the tests under tests/kernels/wasm check (compiled only into the
// wasm build).
#pragma once

#include <catch2/catch.hpp>

#include "kernels/kernels.h"
#include "kernels/wasm/wasm.h"

namespace runnel::test {

inline const KernelTable& simd128_table() {
  return *simd128_kernels();
}

// The relaxed table exists where the engine validates relaxed SIMD: test.sh runs node with
// --experimental-wasm-relaxed-simd (Node 22 and Chromium have it on by default).
inline const KernelTable& relaxed_table() {
  const KernelTable* t = simd128_relaxed_kernels();
  INFO(
      "no relaxed-SIMD table: run node with --experimental-wasm-relaxed-simd, and build with "
      "clang++-16");
  REQUIRE(t != nullptr);
  return *t;
}

}  // namespace runnel::test
