// The relaxed-SIMD kernel table: the SIMD128 table with Q4_0, Q4_1, Q4_K and Q6_K x8 products from
// the relaxed kernel module (relaxed/relaxed_kernels.cpp, built by clang++-16 and embedded
// as bytes by relaxed/embed.cmake).
//
// How the module is reached: on first use in each thread, rn_relaxed_install compiles the
// embedded bytes, instantiates them over this module's memory and puts their exports in
// this module's function table at the same indices in every thread (tables are per
// thread, memory is shared). The x8 entries then call those indices as ordinary function
// pointers: a wasm-to-wasm call_indirect, no JavaScript in between. Where the engine does
// not validate relaxed SIMD (Node 20 without --experimental-wasm-relaxed-simd, older
// browsers), the install fails and simd128_relaxed_kernels() is null: automatic selection
// then takes the SIMD128 table.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/ref/blocks.h"
#include "kernels/wasm/relaxed/relaxed_layout.h"
#include "kernels/wasm/simd128.h"
#include "kernels/wasm/wasm.h"

#if defined(RUNNEL_HAVE_RELAXED_MODULE)
#include <emscripten.h>

#include "relaxed_kernels_wasm.h"

// Compiles and instantiates the module (bytes at code, size bytes) over this memory and
// stores its four products at table indices at .. at + 3 (at < 0: at the table's end).
// Returns the first index, or -1 when the engine refuses relaxed SIMD.
// clang-format off
EM_JS(int, rn_relaxed_install, (const unsigned char* code, int size, int at), {
  try {
    const bytes = new Uint8Array(wasmMemory.buffer, code >>> 0, size).slice();
    if (!WebAssembly.validate(bytes)) return -1;
    const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { memory: wasmMemory } });
    const e = instance.exports;
    const fns = [e.gemm_x8_q4_0, e.gemm_x8_q4_1, e.gemm_x8_q4_k, e.gemm_x8_q6_k];
    if (at < 0) at = wasmTable.length;
    if (wasmTable.length < at + fns.length) wasmTable.grow(at + fns.length - wasmTable.length);
    for (let i = 0; i < fns.length; i++) wasmTable.set(at + i, fns[i]);
    return at;
  } catch (e) {
    return -1;
  }
});
// clang-format on
#endif

namespace runnel {
namespace {

namespace rx = simd128::relaxed;
static_assert(sizeof(rx::ActQ8_0) == sizeof(ref::BlockQ8_0));
static_assert(sizeof(rx::ActQ8_1) == sizeof(ref::BlockQ8_1));
static_assert(offsetof(rx::ActQ8_1, s) == offsetof(ref::BlockQ8_1, s));
static_assert(offsetof(rx::ActQ8_1, qs) == offsetof(ref::BlockQ8_1, qs));
static_assert(sizeof(rx::ActQ8K) == sizeof(ref::BlockQ8_K));
static_assert(offsetof(rx::ActQ8K, qs) == offsetof(ref::BlockQ8_K, qs));
static_assert(offsetof(rx::ActQ8K, bsums) == offsetof(ref::BlockQ8_K, bsums));

#if defined(RUNNEL_HAVE_RELAXED_MODULE)

// The module's export type: (blocks per row, group, activation rows, their stride in
// bytes, block sums, rows, out, out stride in floats, scratch).
using ModuleGemm = void (*)(int32_t, const void*, const void*, int32_t, const int32_t*, int32_t,
                            float*, int32_t, float*);
enum Entry { kQ4_0 = 0, kQ4_1 = 1, kQ4_K = 2, kQ6_K = 3 };

int g_first_index = -1;  // set once, by the thread that builds the table
thread_local bool t_installed = false;

ModuleGemm module_entry(Entry e) {
  if (!t_installed) {
    // A worker's first product: the same indices as the building thread's.
    if (rn_relaxed_install(kRelaxedKernelsWasm, sizeof kRelaxedKernelsWasm, g_first_index) !=
        g_first_index) {
      std::fprintf(stderr, "runnel: the relaxed SIMD kernels did not load in a worker thread\n");
      std::abort();
    }
    t_installed = true;
  }
  return reinterpret_cast<ModuleGemm>(static_cast<uintptr_t>(g_first_index + e));
}

// The legacy products widen the activation scales into this thread's scratch.
float* scratch_floats(int64_t blocks) {
  thread_local std::vector<float> scratch;
  const size_t need = 2 * static_cast<size_t>((blocks + 7) / 8 * 8);
  if (scratch.size() < need) scratch.resize(need);
  return scratch.data();
}

template <Entry e, int kBlock>
void gemm_x8(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums,
             int nc, float* out, size_t out_stride) {
  const int64_t nb = n / kBlock;
  float* scratch = kBlock == kQK ? scratch_floats(nb) : nullptr;
  module_entry(e)(static_cast<int32_t>(nb), group, a, static_cast<int32_t>(a_stride), a_sums, nc,
                  out, static_cast<int32_t>(out_stride), scratch);
}

const KernelTable* build_relaxed_table() {
  g_first_index = rn_relaxed_install(kRelaxedKernelsWasm, sizeof kRelaxedKernelsWasm, -1);
  if (g_first_index < 0) return nullptr;
  t_installed = true;
  static KernelTable t = *simd128_kernels();
  t.isa = "simd128-relaxed";
  auto x8 = [](auto... args) { set_x8(t, args...); };
  x8(GgmlType::Q4_0, simd128::repack_x8_q4_0_relaxed, gemm_x8<kQ4_0, kQK>,
     simd128::unpack_x8_row_q4_0_relaxed, sizeof(rx::BlockQ4_0x8R));
  x8(GgmlType::Q4_1, simd128::repack_x8_q4_1_relaxed, gemm_x8<kQ4_1, kQK>,
     simd128::unpack_x8_row_q4_1_relaxed, sizeof(rx::BlockQ4_1x8R));
  x8(GgmlType::Q4_K, simd128::repack_x8_q4_k_relaxed, gemm_x8<kQ4_K, kQK_K>,
     simd128::unpack_x8_row_q4_k_relaxed, sizeof(rx::BlockQ4_Kx8R));
  x8(GgmlType::Q6_K, simd128::repack_x8_q6_k_relaxed, gemm_x8<kQ6_K, kQK_K>,
     simd128::unpack_x8_row_q6_k_relaxed, sizeof(rx::BlockQ6_Kx8R));
  return &t;
}

#endif

}  // namespace

const KernelTable* simd128_relaxed_kernels() {
#if defined(RUNNEL_HAVE_RELAXED_MODULE)
  static const KernelTable* const table = build_relaxed_table();
  return table;
#else
  return nullptr;
#endif
}

}  // namespace runnel
