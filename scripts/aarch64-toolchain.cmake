# Cross build for aarch64 Linux (the NEON kernels), run under qemu user-mode emulation.
# Debian 12: apt-get install g++-aarch64-linux-gnu qemu-user (scripts/setup.sh --tests does).
#
#   cmake -S . -B build-neon -G Ninja -DCMAKE_BUILD_TYPE=Release \
#     -DCMAKE_TOOLCHAIN_FILE=scripts/aarch64-toolchain.cmake
#   ninja -C build-neon unit_tests && ctest --test-dir build-neon --output-on-failure
#
# Only the unit_tests target is meant to build here (the native/ part needs aarch64
# builds of cpp-httplib and its dependencies, which the host does not have).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# g++ fuses a * b + c into one fmadd on aarch64 by default (x86-64 baseline code has no
# FMA to fuse into). kernels/ref must keep ggml's separately rounded steps: its
# quantizers are pinned to ggml's bytes (tests/kernels/ref/ggml_golden_test.cpp fails
# with contraction on). Intrinsics (vfmaq_f32) still fuse where the NEON code asks.
set(CMAKE_CXX_FLAGS_INIT "-ffp-contract=off")

# The target's libraries and headers live under /usr/aarch64-linux-gnu; never search the
# host's /usr/include or /usr/lib for them (tests/CMakeLists.txt links in the host's
# header-only Catch2 on its own).
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# ctest runs the test binaries through qemu. `-cpu max` has the dot-product extension
# (and everything else qemu emulates), so both NEON tables are exercised; run a binary
# with `qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu cortex-a53` to see a CPU without it.
set(CMAKE_CROSSCOMPILING_EMULATOR "qemu-aarch64;-L;/usr/aarch64-linux-gnu;-cpu;max")
