// The model shapes `runnel synth-model` writes: what each architecture's GGUF holds
// (metadata keys and tensors, with llama.cpp's names) and how its weights are filled.
// Two kinds of shape:
// - benchmark shapes at the real sizes of Llama-3.2-1B, Llama-3.1-8B, Gemma-3-1B and
//   Qwen3-4B (speed and memory do not depend on weight values: rows come from a small
//   random pool, norms are 1.0);
// - tiny parity shapes, one per architecture family runnel runs, for comparing logits
//   with llama.cpp (tests/parity/arch.test.mjs): every row, norm, q/k-norm and rope
//   factor random, so that any mistake in a forward pass moves the logits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/gguf/gguf_writer.h"
#include "kernels/types.h"

namespace runnel::cli {

enum class SynthArch { Llama, Qwen3, Gemma, Gemma2, Gemma3, Phi3, Bert, NomicBert, Qwen2Moe, Qwen3Moe, Olmoe, GptOss };

struct SynthShape {
  const char* name;
  SynthArch arch;
  int n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
  int n_vocab;  // 0: the tokenizer's own; else the tokenizer padded to this size
  bool tied;    // no output.weight: the token embeddings are the output matrix
  bool parity;  // every value random (tiny parity shapes); else pooled rows, norms 1.0
  int n_ctx_train;
  int sliding_window;  // {arch}.attention.sliding_window; 0: the key is not written
  // Mixture of experts (0: dense): experts, experts per token, an expert's width (the
  // qwen families' expert_feed_forward_length; Mixtral's and olmoe's are n_ff), and
  // qwen2moe's shared expert width.
  int n_expert = 0, n_expert_used = 0, n_ff_exp = 0, n_ff_shexp = 0;
};

// What fills a tensor's values.
enum class Fill {
  Matrix,     // N(0, std) per element (bench shapes: uniform, ~0.02)
  Norm,       // parity: center * (1 + N(0, 0.1)); bench: 1.0
  RopeShort,  // phi3 LongRoPE factors for contexts up to the original length
  RopeLong,   // ... and beyond it
  Bias,       // parity: N(0, std) (biases, LayerNorm biases); bench: 1.0
};

struct TensorPlan {
  std::string name;
  GgmlType type;
  std::vector<int64_t> dims;  // [n_in, n_out], [n_in, n_out, n_expert] or [n]
  Fill fill = Fill::Matrix;
  float std = 0.0f;        // Fill::Matrix in parity shapes
  float center = 1.0f;     // Fill::Norm in parity shapes: center * (1 + N(0, 0.1))
  bool is_output = false;  // bench shapes: rows of control and byte tokens are zero
  // Bench shapes: rows from a small pool of random rows. Not the router's: pooled rows
  // would tie every token's picks to the same experts.
  bool pooled = true;
};

// Weight types of a file: one per matrix role. K-quant roles fall back to llama.cpp's
// replacement types for rows that are not a multiple of 256 (tensor_plan does that).
struct SynthMix {
  GgmlType attn_qkv, attn_v, attn_out, ffn_gate_up, ffn_down, embd, output;
  GgmlType attn_v_ffn_down_more;  // for llama.cpp's "more bits" layers (Q4_K_M)
  uint32_t file_type;             // general.file_type (llama.cpp's ftype ids)
};

const SynthShape* find_synth_shape(const std::string& name);
// "llama-1b, llama-8b, ..." for help and error messages.
std::string synth_shape_names();
// `type`: q8_0, q4_0, q4_k_m, f32, f16, or mix (F32, F16 and Q8_0 matrices side by
// side: the parity shapes' default). Throws UsageError for anything else.
SynthMix synth_mix(const std::string& type);
// The default --type of a shape: "mix" for parity shapes, none (required) otherwise.
const char* default_synth_type(const SynthShape& shape);

// Embedding shapes (bert, nomic-bert): whether `shape` is one, its default
// {arch}.pooling_type (bert: 2 cls, like BGE; nomic-bert: 1 mean, like nomic-embed-text),
// and "mean" / "cls" / "last" as that key's value (UsageError otherwise).
bool is_embedding_shape(const SynthShape& shape);
int default_pooling_type(const SynthShape& shape);
int parse_pooling_type(const std::string& name);

// The architecture's metadata keys ({arch}.*, general.architecture), for n_vocab tokens;
// pooling_type: an embedding shape's {arch}.pooling_type (-1: its default).
void add_arch_metadata(GgufWriter& w, const SynthShape& shape, int n_vocab, int pooling_type = -1);
// Every tensor of the file in llama.cpp's names, in a stable order.
std::vector<TensorPlan> tensor_plan(const SynthShape& shape, const SynthMix& mix, int n_vocab);

}  // namespace runnel::cli
