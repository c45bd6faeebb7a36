// Quantization mixes: which ggml type each tensor of a model gets for a target such as
// Q4_K_M. The rules are llama.cpp's (llama-quant.cpp, llama_tensor_get_type), learned and
// rewritten here, so that `runnel quantize` and llama-quantize make the same per-tensor
// choices; core/quant/README.md has them as a table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/gguf/gguf.h"

namespace runnel {

// One target a user can name. file_type is llama.cpp's LLAMA_FTYPE value (the file's
// general.file_type); base is the type most matrices get.
struct QuantMix {
  std::string_view name;
  uint32_t file_type;
  GgmlType base;
};

// The mix named `name` (case-insensitive; llama-quantize's aliases Q3_K, Q4_K, Q5_K for
// the _M mixes, MXFP4 for MXFP4_MOE), or nullptr.
const QuantMix* find_quant_mix(std::string_view name);
// "F32, F16, BF16, Q4_0, ..." for error messages and --help.
std::string quant_mix_names();

// What the rules need to know of the model (from its metadata).
struct MixModelInfo {
  std::string arch;
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int n_expert = 0;
  int n_gqa() const { return n_head_kv > 0 ? n_head / n_head_kv : 0; }
  // llama.cpp's LLM_TYPE_70B (Llama 2/3 70B: 80 layers, grouped-query attention).
  bool is_70b() const { return arch == "llama" && n_layer == 80 && n_head != n_head_kv; }
};
// Throws GgufError when general.architecture or {arch}.block_count is missing.
MixModelInfo mix_model_info(const GgufMetadata& md);

struct MixOptions {
  bool pure = false;                         // base type everywhere (--pure)
  bool has_imatrix = false;                  // some rules differ with an importance matrix
  std::optional<GgmlType> output_type;       // --output-tensor-type
  std::optional<GgmlType> token_embd_type;   // --token-embedding-type
};

// The order llama-quantize processes and writes tensors in: tensors outside blk.N first,
// then by layer number, by name within each group. Returns indices into `tensors`.
std::vector<size_t> quantization_order(const std::vector<GgufTensorInfo>& tensors);

// Whether a tensor is quantized at all (matrices named *weight; not norms, the MoE
// router, or other small tables llama.cpp keeps as they are).
bool tensor_allows_quantization(const GgufTensorInfo& tensor);

// The type of every tensor (indexed like `tensors`), visiting them in
// quantization_order (some rules count attn_v / ffn_down tensors as they go).
// Row lengths that are not a multiple of the chosen type's block fall back as llama.cpp
// does (Q4_K -> Q5_0, Q6_K -> Q8_0, IQ4_XS -> IQ4_NL, ..., then F16); `n_fallback`
// (optional) counts them.
std::vector<GgmlType> choose_tensor_types(const QuantMix& mix, const MixModelInfo& model,
                                          const std::vector<GgufTensorInfo>& tensors,
                                          const MixOptions& options, int* n_fallback = nullptr);

// A type name runnel reads ("q8_0", "Q6_K", "f16", ...), case-insensitive.
std::optional<GgmlType> parse_ggml_type(std::string_view name);

}  // namespace runnel
