// The streaming quantization driver (quantize_model.h). Per tensor:
//   input rows [slab of n_per_row elements, input type] -> dequantize one row at a time
//   into a per-task float row -> quantize into the slab's output [rows, output type]
//   -> append to the file. Tasks take whole rows (static split, so the bytes never depend
//   on thread timing), and every row is quantized on its own as ggml does.
#include "core/quant/quantize_model.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/gguf/gguf_writer.h"
#include "kernels/kernels.h"

namespace runnel {
namespace {

bool is_float_type(GgmlType t) { return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16; }

std::string type_name(GgmlType t) { return std::string(traits(t).name); }

uint64_t tensor_bytes(GgmlType type, const std::vector<int64_t>& dims) {
  uint64_t rows = 1;
  for (size_t d = 1; d < dims.size(); ++d) rows *= static_cast<uint64_t>(dims[d]);
  return row_bytes(type, dims[0]) * rows;
}

uint64_t padded(uint64_t n, uint64_t alignment) { return (n + alignment - 1) / alignment * alignment; }

// "dir/model.gguf" -> "dir/model-00002-of-00003.gguf" (gguf-split's names, 1-based).
std::string split_path(const std::string& out_path, size_t index, size_t count) {
  std::string stem = out_path;
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".gguf") == 0) stem.resize(stem.size() - 5);
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, "-%05zu-of-%05zu.gguf", index + 1, count);
  return stem + suffix;
}

std::vector<std::vector<size_t>> split_parts(const GgufModel& in, const std::vector<size_t>& order,
                                             const std::vector<GgmlType>& types,
                                             const QuantizeOptions& opt) {
  std::vector<std::vector<size_t>> parts(1);
  uint64_t part_bytes = 0;
  for (const size_t i : order) {
    const uint64_t n = tensor_bytes(types[i], in.tensors[i].dims);
    std::vector<size_t>& cur = parts.back();
    const bool full_count = opt.split_max_tensors > 0 && static_cast<int>(cur.size()) >= opt.split_max_tensors;
    const bool full_size = opt.split_max_bytes > 0 && !cur.empty() && part_bytes + n > opt.split_max_bytes;
    if (full_count || full_size) {
      parts.emplace_back();
      part_bytes = 0;
    }
    parts.back().push_back(i);
    part_bytes += n;
  }
  return parts;
}

void check_tensor(const GgufTensorInfo& t, GgmlType to, const QuantizeOptions& opt) {
  if (t.type == to) return;  // copied as it is
  const TypeKernels& from_k = ref_kernels().of(t.type);
  const TypeKernels& to_k = ref_kernels().of(to);
  if (!from_k.supported || !from_k.dequantize_row)
    throw QuantizeError("tensor " + t.name + ": cannot read type " + type_name(t.type));
  if (!to_k.supported || !to_k.quantize_row || to == GgmlType::Q8_1 || to == GgmlType::Q8_K)
    throw QuantizeError("tensor " + t.name + ": cannot write type " + type_name(to));
  if (!is_float_type(t.type) && !opt.allow_requantize)
    throw QuantizeError("tensor " + t.name + " is already quantized (" + type_name(t.type) + " -> " +
                        type_name(to) + "): requantizing loses quality; pass --allow-requantize to do it anyway");
  const int64_t block = traits(to).block_size;
  if (t.dims[0] % block != 0)
    throw QuantizeError("tensor " + t.name + ": row length " + std::to_string(t.dims[0]) +
                        " is not a multiple of " + std::to_string(block) + " (" + type_name(to) +
                        "'s block size)");
  if (opt.imatrix) {
    const auto it = opt.imatrix->find(t.name);
    if (it != opt.imatrix->end()) {
      const int64_t n_mat = t.dims.size() > 2 ? t.dims[2] : 1;
      if (static_cast<int64_t>(it->second.size()) != t.dims[0] * n_mat && t.name != "token_embd.weight")
        throw QuantizeError("tensor " + t.name + ": the importance matrix has " +
                            std::to_string(it->second.size()) + " values, expected " +
                            std::to_string(t.dims[0] * n_mat));
    }
  }
}

// The importance of tensor t (nullptr when none or its size does not match).
const float* importance_of(const GgufTensorInfo& t, const QuantizeOptions& opt) {
  if (!opt.imatrix) return nullptr;
  const auto it = opt.imatrix->find(t.name);
  if (it == opt.imatrix->end()) return nullptr;
  const int64_t n_mat = t.dims.size() > 2 ? t.dims[2] : 1;
  return static_cast<int64_t>(it->second.size()) == t.dims[0] * n_mat ? it->second.data() : nullptr;
}

GgufWriter part_header(const GgufModel& in, const QuantizeOptions& opt, const QuantizePlan& plan, size_t p) {
  const uint64_t alignment = in.files.front().alignment();
  GgufWriter w(alignment);
  const bool split = plan.parts.size() > 1;
  if (p == 0) {
    for (const auto& [key, value] : in.metadata.entries()) {
      if (key.rfind("split.", 0) == 0) continue;  // the input's own split keys
      // Set last below, as llama-quantize does (its files then match ours byte for byte).
      if (key == "general.quantization_version" || key == "general.file_type") continue;
      w.set(key, value);
    }
    w.set_u32("general.quantization_version", 2);
    w.set_u32("general.file_type", opt.mix->file_type);
    for (const auto& [key, value] : opt.extra_metadata) w.set(key, value);
  }
  if (split) {
    w.set("split.no", GgufValue{GgufType::U16, GgufType::U8, uint64_t{p}});
    w.set("split.count", GgufValue{GgufType::U16, GgufType::U8, uint64_t{plan.parts.size()}});
    w.set("split.tensors.count", GgufValue{GgufType::I32, GgufType::U8, int64_t(in.tensors.size())});
  }
  for (const size_t i : plan.parts[p]) {
    const GgufTensorInfo& t = in.tensors[i];
    w.add_tensor_info(t.name, plan.types[i], t.dims);
  }
  return w;
}

void write_or_throw(std::ofstream& out, const void* data, uint64_t n, const std::string& path) {
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  if (!out) throw QuantizeError("writing " + path + " failed (disk full?)");
}

// Converts rows [row0, row0 + n_rows) of t into `to`, spread over par's threads.
void convert_slab(const GgufTensorInfo& t, GgmlType to, const uint8_t* src, uint8_t* dst, int64_t row0,
                  int64_t n_rows, const float* importance, Parallel& par) {
  const int64_t n = t.dims[0];
  const int64_t rows_per_matrix = t.dims.size() > 1 ? t.dims[1] : 1;
  const size_t src_row = row_bytes(t.type, n);
  const size_t dst_row = row_bytes(to, n);
  const TypeKernels& from = ref_kernels().of(t.type);
  const int n_tasks = n_tasks_for(par, n_rows);
  par.run(n_tasks, [&](int task) {
    const int64_t r0 = split_begin(n_rows, task, n_tasks);
    const int64_t r1 = split_begin(n_rows, task + 1, n_tasks);
    std::vector<float> row(t.type == GgmlType::F32 ? 0 : static_cast<size_t>(n));  // [n]
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* in_row = src + static_cast<size_t>(r) * src_row;
      const float* x = reinterpret_cast<const float*>(in_row);
      if (t.type != GgmlType::F32) {
        from.dequantize_row(in_row, row.data(), n);
        x = row.data();
      }
      const float* imp = importance ? importance + ((row0 + r) / rows_per_matrix) * n : nullptr;
      quantize_rows(to, x, dst + static_cast<size_t>(r) * dst_row, 1, n, imp);
    }
  });
}

}  // namespace

QuantizeRowWeightedFn weighted_quantizer(GgmlType type) {
  // Q8_0, floats, MXFP4: none (llama-quantize ignores the weights too)
  return kernels().of(type).quantize_row_weighted;
}

void quantize_rows(GgmlType type, const float* src, void* dst, int64_t n_rows, int64_t n_per_row,
                   const float* importance) {
  const size_t dst_row = row_bytes(type, n_per_row);
  // The chosen kernel set's quantizers: every set writes ref's bytes, the SIMD ones faster.
  const QuantizeRowFn plain = kernels().of(type).quantize_row;
  const QuantizeRowWeightedFn weighted = importance ? weighted_quantizer(type) : nullptr;
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* x = src + r * n_per_row;
    void* y = static_cast<uint8_t*>(dst) + static_cast<size_t>(r) * dst_row;
    if (weighted) {
      weighted(x, y, n_per_row, importance);
    } else {
      plain(x, y, n_per_row);
    }
  }
}

QuantizePlan plan_quantization(const GgufModel& in, const QuantizeOptions& opt, const std::string& out_path) {
  if (!opt.mix) throw QuantizeError("no target type given");
  if (opt.split_max_tensors < 0)
    throw QuantizeError("--split-max-tensors: expected a count >= 1, got " + std::to_string(opt.split_max_tensors));
  QuantizePlan plan;
  const MixModelInfo info = mix_model_info(in.metadata);
  plan.types = choose_tensor_types(*opt.mix, info, in.tensors, opt.mix_options, &plan.n_fallback);
  for (size_t i = 0; i < in.tensors.size(); ++i) check_tensor(in.tensors[i], plan.types[i], opt);
  plan.parts = split_parts(in, quantization_order(in.tensors), plan.types, opt);
  if (plan.parts.size() > 99999)
    throw QuantizeError("the split options give " + std::to_string(plan.parts.size()) + " files, more than 99999");
  for (size_t p = 0; p < plan.parts.size(); ++p)
    plan.paths.push_back(plan.parts.size() == 1 ? out_path : split_path(out_path, p, plan.parts.size()));
  return plan;
}

QuantizeStats quantize_model(const GgufModel& in, const TensorSource& source, const QuantizeOptions& opt,
                             const QuantizePlan& plan, Parallel& par, const QuantizeProgress& progress) {
  QuantizeStats stats;
  const size_t n_total = in.tensors.size();
  size_t n_done = 0;
  std::vector<uint8_t> out_slab;
  for (size_t p = 0; p < plan.parts.size(); ++p) {
    const GgufWriter w = part_header(in, opt, plan, p);
    const std::string& path = plan.paths[p];
    const std::string tmp = path + ".tmp";
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw QuantizeError("cannot open " + tmp + " for writing");
    const std::vector<uint8_t> header = w.header_bytes();
    write_or_throw(out, header.data(), header.size(), tmp);
    for (const size_t i : plan.parts[p]) {
      const GgufTensorInfo& t = in.tensors[i];
      const GgmlType to = plan.types[i];
      const std::span<const uint8_t> bytes = source.bytes(t);
      if (bytes.size() != t.n_bytes)
        throw QuantizeError("tensor " + t.name + ": source gave " + std::to_string(bytes.size()) +
                            " bytes, expected " + std::to_string(t.n_bytes));
      const uint64_t n_out = tensor_bytes(to, t.dims);
      const int64_t n_rows = t.n_rows();
      const size_t src_row = row_bytes(t.type, t.dims[0]);
      const size_t dst_row = row_bytes(to, t.dims[0]);
      const int64_t slab_rows = std::max<int64_t>(1, static_cast<int64_t>(opt.slab_bytes / src_row));
      const float* importance = to == t.type ? nullptr : importance_of(t, opt);
      for (int64_t r = 0; r < n_rows; r += slab_rows) {
        const int64_t rows = std::min(slab_rows, n_rows - r);
        const uint8_t* src = bytes.data() + static_cast<size_t>(r) * src_row;
        if (to == t.type) {
          write_or_throw(out, src, static_cast<uint64_t>(rows) * src_row, tmp);
        } else {
          out_slab.resize(static_cast<size_t>(rows) * dst_row);
          convert_slab(t, to, src, out_slab.data(), r, rows, importance, par);
          write_or_throw(out, out_slab.data(), out_slab.size(), tmp);
        }
        if (source.done)
          source.done(t, static_cast<uint64_t>(r) * src_row, static_cast<uint64_t>(r + rows) * src_row);
      }
      const std::vector<uint8_t> zeros(padded(n_out, w.alignment()) - n_out, 0);
      write_or_throw(out, zeros.data(), zeros.size(), tmp);
      stats.bytes_in += t.n_bytes;
      stats.bytes_out += n_out;
      if (to != t.type) ++stats.n_converted;
      if (progress) {
        std::string dims;
        for (const int64_t d : t.dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
        char line[256];
        std::snprintf(line, sizeof line, "[%4zu/%4zu] %-32s [%s] %s -> %s, %.2f MiB -> %.2f MiB", ++n_done,
                      n_total, t.name.c_str(), dims.c_str(), type_name(t.type).c_str(), type_name(to).c_str(),
                      static_cast<double>(t.n_bytes) / (1 << 20), static_cast<double>(n_out) / (1 << 20));
        progress(line);
      }
    }
    out.close();
    if (!out) throw QuantizeError("writing " + tmp + " failed (disk full?)");
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw QuantizeError("cannot rename " + tmp + " to " + path);
  }
  return stats;
}

}  // namespace runnel
