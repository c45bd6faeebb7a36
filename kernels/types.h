// ggml tensor types as GGUF stores them: ids, block geometry and names.
// Leaf header: everything above (kernels, core, native, wasm) uses these ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace runnel {

// Numeric ids are the ggml / GGUF on-disk values; never renumber.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ4_NL = 20,
  IQ4_XS = 23,
  BF16 = 30,
  MXFP4 = 39,
};

constexpr uint32_t kGgmlTypeIdLimit = 40;  // ids are < this (table size)
constexpr int kQK = 32;                    // elements per legacy block (Q4_0 .. Q8_1)
constexpr int kQK_K = 256;                 // elements per k-quant super-block

struct TypeTraits {
  std::string_view name;
  int64_t block_size;  // elements per block
  size_t type_size;    // bytes per block
};

// Traits for a type id read from a file; nullopt for ids runnel does not know.
std::optional<TypeTraits> type_traits(uint32_t type_id);

// Traits for a known type (asserts it is known).
TypeTraits traits(GgmlType type);

// Bytes of a row of n elements (n must be a multiple of the block size).
size_t row_bytes(GgmlType type, int64_t n);

}  // namespace runnel
