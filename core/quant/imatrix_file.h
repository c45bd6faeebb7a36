// Importance-matrix files in llama-imatrix's GGUF format, so that a file from either tool
// serves the other: general.type = "imatrix", imatrix.datasets (string array),
// imatrix.chunk_count and imatrix.chunk_size (u32), and per weight NAME two F32 tensors,
// NAME.in_sum2 [ne0, n_mat] (sums of squared activations per input column, per expert)
// and NAME.counts [1, n_mat] (activation rows summed), tensors sorted by name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/quant/quantize_model.h"

namespace runnel {

struct ImatrixEntry {
  std::vector<float> sums;      // [n_mat][ne0]
  std::vector<int64_t> counts;  // [n_mat]
};

struct ImatrixData {
  std::map<std::string, ImatrixEntry, std::less<>> entries;
  std::vector<std::string> datasets;
  uint32_t chunk_count = 0;
  uint32_t chunk_size = 0;
};

// Parses an imatrix GGUF (throws GgufError / QuantizeError naming the file and problem:
// not an imatrix, a sum without its counts, sizes that do not divide, non-finite values).
ImatrixData parse_imatrix(const std::vector<uint8_t>& bytes, const std::string& name);
std::vector<uint8_t> imatrix_bytes(const ImatrixData& data);

// The per-column weights quantization uses: sums / counts per matrix (1 where a matrix
// saw no rows), as llama-quantize computes them.
ImportanceMatrix importance_from(const ImatrixData& data);

// Reads and parses `path` (QuantizeError naming it when it cannot be read).
ImatrixData read_imatrix_file(const std::string& path);

}  // namespace runnel
