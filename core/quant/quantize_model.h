// Quantizes a GGUF model into one file or a split set, streaming: the output header
// (tensor table with every size and offset) is computed up front and written first,
// then each tensor's data is produced and written a slab of rows at a time, the rows of
// a slab spread over the Parallel's threads. Memory: one slab of input rows (a view
// into the caller's mapping, released through TensorSource::done) and one of output.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/gguf/gguf.h"
#include "core/host/parallel.h"
#include "core/quant/quant_mix.h"
#include "kernels/kernels.h"

namespace runnel {

class QuantizeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Per tensor name, the importance of each input column: ne0 values per matrix (ne0 *
// n_expert for a 3-D expert stack), as `llama-imatrix` / `runnel imatrix` collect them.
using ImportanceMatrix = std::map<std::string, std::vector<float>, std::less<>>;

struct QuantizeOptions {
  const QuantMix* mix = nullptr;
  MixOptions mix_options;
  bool allow_requantize = false;
  uint64_t split_max_bytes = 0;  // 0: no limit on a part's tensor data
  int split_max_tensors = 0;     // 0: no limit on a part's tensor count
  const ImportanceMatrix* imatrix = nullptr;
  // Keys written after general.file_type in the first file (llama-quantize's
  // quantize.imatrix.* record of the importance matrix used).
  std::vector<std::pair<std::string, GgufValue>> extra_metadata;
  uint64_t slab_bytes = uint64_t{32} << 20;  // input bytes per slab (at least one row)
};

// Where the input tensors' bytes come from: a view of the whole tensor (pages may be
// read lazily, as from a mapping), and an optional hint that bytes [begin, end) of it
// are no longer needed (the caller may drop them from memory).
struct TensorSource {
  std::function<std::span<const uint8_t>(const GgufTensorInfo&)> bytes;
  std::function<void(const GgufTensorInfo&, uint64_t begin, uint64_t end)> done;
};

struct QuantizePlan {
  std::vector<GgmlType> types;             // per input tensor (model.tensors order)
  std::vector<std::vector<size_t>> parts;  // input tensor indices per output file, in write order
  std::vector<std::string> paths;          // one per part
  int n_fallback = 0;                      // tensors whose row length forced another type
};

// Checks everything that can be checked before writing (types runnel can quantize to and
// from, requantization without allow_requantize, row lengths, imatrix sizes) and lays out
// the output files: OUT.gguf, or OUT-00001-of-0000N.gguf ... with a split option.
// Throws QuantizeError naming the tensor, the value and what was expected.
QuantizePlan plan_quantization(const GgufModel& in, const QuantizeOptions& options,
                               const std::string& out_path);

struct QuantizeStats {
  uint64_t bytes_in = 0;   // tensor data read
  uint64_t bytes_out = 0;  // tensor data written
  int n_converted = 0;     // tensors whose type changed
};

// One line per tensor as it is written ("[  3/272] blk.0.attn_k.weight ...").
using QuantizeProgress = std::function<void(const std::string& line)>;

// Runs the plan. Each file is written under a temporary name (path + ".tmp") and renamed
// when complete, so a failure never leaves a truncated model behind.
QuantizeStats quantize_model(const GgufModel& in, const TensorSource& source,
                             const QuantizeOptions& options, const QuantizePlan& plan,
                             Parallel& par, const QuantizeProgress& progress = {});

// The quantizer `type` uses with importance weights (one row: src[n], importance[n]), from
// the chosen kernel set, or nullptr for the types whose quantization ignores them (Q8_0,
// floats, MXFP4), as in llama-quantize.
QuantizeRowWeightedFn weighted_quantizer(GgmlType type);

// Quantizes n_rows rows of n_per_row floats into `type` (row after row); importance
// (n_per_row values, or nullptr) steers the searches of the types that take it.
void quantize_rows(GgmlType type, const float* src, void* dst, int64_t n_rows, int64_t n_per_row,
                   const float* importance);

}  // namespace runnel
