// runnel quantize IN.gguf OUT.gguf TYPE: llama-quantize's job (core/quant does the work).
// The input is mapped (MmapStore); each slab of rows is dropped from this process's
// memory once converted (MADV_DONTNEED) and the next one read ahead (MADV_WILLNEED), so
// an input of any size quantizes in the memory of a slab or two plus the output slab.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/quant/imatrix_file.h"
#include "core/quant/quantize_model.h"
#include "native/cli/args.h"
#include "native/cli/commands.h"
#include "native/cli/model_loader.h"
#include "native/mmap_store.h"
#include "native/thread_pool.h"

namespace runnel::cli {
namespace {

// "2G", "500M", "64K" (decimal units, as gguf-split reads them) or plain bytes.
uint64_t parse_split_size(const std::string& text) {
  if (text.empty()) throw UsageError("--split-max-size: expected a size such as 2G or 500M, got ''");
  uint64_t unit = 1;
  std::string digits = text;
  switch (text.back()) {
    case 'K': case 'k': unit = 1000; break;
    case 'M': case 'm': unit = 1000 * 1000; break;
    case 'G': case 'g': unit = 1000 * 1000 * 1000; break;
    default: break;
  }
  if (unit != 1) digits.pop_back();
  const uint64_t n = parse_u64("--split-max-size", digits);
  if (n == 0) throw UsageError("--split-max-size: expected a size above 0, got '" + text + "'");
  return n * unit;
}

GgmlType parse_type_option(const char* flag, const std::string& text) {
  const std::optional<GgmlType> t = parse_ggml_type(text);
  if (!t || *t == GgmlType::Q8_1 || *t == GgmlType::Q8_K)
    throw UsageError(std::string(flag) + ": expected a tensor type such as Q8_0, Q6_K or F16, got '" + text + "'");
  return *t;
}

// Drops [begin, end) of a tensor from the process (whole pages inside it only) and asks
// the kernel to read the same number of bytes after it.
void release_and_read_ahead(MmapStore& store, const GgufTensorInfo& t, uint64_t begin, uint64_t end) {
  const std::span<const uint8_t> map = store.mapped_bytes(t.file_index);
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t base = store.model().files[t.file_index].data_offset() + t.offset;
  uint8_t* addr = const_cast<uint8_t*>(map.data());
  const uint64_t lo = (base + begin + page - 1) / page * page;
  const uint64_t hi = (base + end) / page * page;
  if (hi > lo) (void)::madvise(addr + lo, hi - lo, MADV_DONTNEED);
  const uint64_t next_end = std::min<uint64_t>(base + t.n_bytes, base + end + (end - begin));
  const uint64_t ahead = (base + end) / page * page;
  if (next_end > ahead) (void)::madvise(addr + ahead, next_end - ahead, MADV_WILLNEED);
}

// Tensors quantized to a type that takes importance weights but without an entry in the
// imatrix (typically token_embd.weight, and output.weight unless collected with
// --process-output) are quantized unweighted, as llama-quantize does: name them once.
void note_tensors_without_importance(const GgufModel& model, const QuantizePlan& plan,
                                     const ImportanceMatrix& imatrix) {
  std::string names;
  int n = 0;
  for (size_t i = 0; i < plan.types.size(); ++i) {
    const GgufTensorInfo& t = model.tensors[i];
    if (plan.types[i] == t.type || !weighted_quantizer(plan.types[i]) || imatrix.count(t.name) > 0) continue;
    if (++n <= 4) names += (names.empty() ? "" : ", ") + t.name;
  }
  if (n > 0)
    std::fprintf(stderr, "quantize: %d tensor%s not in the imatrix, quantized without it: %s%s\n", n,
                 n == 1 ? "" : "s", names.c_str(), n > 4 ? ", ..." : "");
}

// --dry-run: one line per tensor in write order, then the totals, on stdout.
void print_plan(const GgufModel& model, const QuantizePlan& plan) {
  uint64_t in_bytes = 0, out_bytes = 0;
  for (size_t p = 0; p < plan.parts.size(); ++p) {
    for (const size_t i : plan.parts[p]) {
      const GgufTensorInfo& t = model.tensors[i];
      const uint64_t n = row_bytes(plan.types[i], t.dims[0]) * static_cast<uint64_t>(t.n_rows());
      std::printf("%s %s -> %s %.3f MiB%s\n", t.name.c_str(), std::string(traits(t.type).name).c_str(),
                  std::string(traits(plan.types[i]).name).c_str(), static_cast<double>(n) / (1 << 20),
                  plan.parts.size() > 1 ? (" (" + plan.paths[p] + ")").c_str() : "");
      in_bytes += t.n_bytes;
      out_bytes += n;
    }
  }
  std::printf("total: %.2f MiB -> %.2f MiB in %zu file%s\n", static_cast<double>(in_bytes) / (1 << 20),
              static_cast<double>(out_bytes) / (1 << 20), plan.paths.size(), plan.paths.size() == 1 ? "" : "s");
}

}  // namespace

int quantize_command(const std::vector<std::string>& args) {
  std::string in_path, out_path, type_text, imatrix_path, split_size, output_type, embd_type;
  bool allow_requantize = false, pure = false, dry_run = false;
  int n_threads = 0, split_tensors = 0;
  ArgParser p("runnel quantize IN.gguf OUT.gguf TYPE [options]",
              "Quantizes a GGUF model as llama-quantize does: the same per-tensor types for each\n"
              "mix, streamed (a slab of rows in memory at a time) and on all threads.");
  p.positional("IN.gguf", &in_path, "the model to read (F32, F16, BF16; quantized with --allow-requantize)");
  p.positional("OUT.gguf", &out_path, "the file to write (with a split option: OUT-00001-of-0000N.gguf ...)");
  p.positional("TYPE", &type_text, "one of " + quant_mix_names());
  p.flag("--allow-requantize", &allow_requantize, "accept quantized input (dequantized, then quantized)");
  p.string_option("--imatrix", &imatrix_path, "FILE",
                  "importance matrix (runnel imatrix's or llama-imatrix's GGUF) weighting the quantizers' searches");
  p.int_option("-t, --threads", &n_threads, "threads (default: all logical CPUs)");
  p.string_option("--split-max-size", &split_size, "SIZE", "split the output into files of at most SIZE of tensor data (e.g. 2G, 500M)");
  p.int_option("--split-max-tensors", &split_tensors, "split the output into files of at most N tensors");
  p.string_option("--output-tensor-type", &output_type, "T", "type of output.weight (tied: token_embd.weight)");
  p.string_option("--token-embedding-type", &embd_type, "T", "type of token_embd.weight");
  p.flag("--pure", &pure, "the mix's base type for every matrix (no per-tensor rules)");
  p.flag("--dry-run", &dry_run, "print each tensor's type and size, write nothing");
  if (p.parse_or_print_help(args)) return 0;
  if (in_path.empty() || out_path.empty() || type_text.empty())
    throw UsageError("expected IN.gguf OUT.gguf TYPE (runnel quantize --help)");

  QuantizeOptions opt;
  opt.mix = find_quant_mix(type_text);
  if (!opt.mix) throw UsageError("TYPE: expected one of " + quant_mix_names() + ", got '" + type_text + "'");
  opt.allow_requantize = allow_requantize;
  opt.mix_options.pure = pure;
  if (!output_type.empty()) opt.mix_options.output_type = parse_type_option("--output-tensor-type", output_type);
  if (!embd_type.empty()) opt.mix_options.token_embd_type = parse_type_option("--token-embedding-type", embd_type);
  if (!split_size.empty() && split_tensors != 0)
    throw UsageError("--split-max-size and --split-max-tensors: give at most one of them");
  if (!split_size.empty()) opt.split_max_bytes = parse_split_size(split_size);
  if (p.seen("--split-max-tensors") && split_tensors < 1)
    throw UsageError("--split-max-tensors: expected a count >= 1, got " + std::to_string(split_tensors));
  opt.split_max_tensors = split_tensors;
  if (n_threads < 0) throw UsageError("-t: expected a thread count >= 1, got " + std::to_string(n_threads));

  const std::unique_ptr<MmapStore> store = MmapStore::open(in_path);
  std::error_code ec;
  if (std::filesystem::exists(out_path) && std::filesystem::equivalent(in_path, out_path, ec))
    throw UsageError("OUT.gguf: " + out_path + " is the input file; choose another output path");
  ImportanceMatrix imatrix;
  if (!imatrix_path.empty()) {
    const ImatrixData data = read_imatrix_file(imatrix_path);
    imatrix = importance_from(data);
    opt.imatrix = &imatrix;
    opt.mix_options.has_imatrix = true;
    // What llama-quantize records of it (strings cut to 127 bytes, as it does).
    auto str = [](const std::string& v) { return GgufValue{GgufType::STRING, GgufType::U8, v.substr(0, 127)}; };
    auto u32 = [](uint64_t v) { return GgufValue{GgufType::U32, GgufType::U8, v}; };
    opt.extra_metadata.emplace_back("quantize.imatrix.file", str(imatrix_path));
    if (!data.datasets.empty()) opt.extra_metadata.emplace_back("quantize.imatrix.dataset", str(data.datasets[0]));
    opt.extra_metadata.emplace_back("quantize.imatrix.entries_count", u32(data.entries.size()));
    if (data.chunk_count > 0) opt.extra_metadata.emplace_back("quantize.imatrix.chunks_count", u32(data.chunk_count));
  }
  const GgufModel& model = store->model();
  const QuantizePlan plan = plan_quantization(model, opt, out_path);

  if (opt.imatrix) note_tensors_without_importance(model, plan, imatrix);
  if (dry_run) {
    print_plan(model, plan);
    return 0;
  }
  const int threads = n_threads > 0 ? resolve_thread_count(n_threads)
                                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  select_kernels_from_env();  // the quantizers of every kernel set write the same bytes
  ThreadPool pool(threads);
  TensorSource source;
  source.bytes = [&](const GgufTensorInfo& t) { return store->tensor_bytes(t); };
  source.done = [&](const GgufTensorInfo& t, uint64_t begin, uint64_t end) {
    release_and_read_ahead(*store, t, begin, end);
  };
  std::fprintf(stderr, "quantize: %s -> %s as %s (file type %u), %d thread%s%s\n", in_path.c_str(),
               plan.paths.front().c_str(), std::string(opt.mix->name).c_str(), opt.mix->file_type, threads,
               threads == 1 ? "" : "s", imatrix_path.empty() ? "" : (", imatrix " + imatrix_path).c_str());
  const auto t0 = std::chrono::steady_clock::now();
  const QuantizeStats stats = quantize_model(model, source, opt, plan, pool, [](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (plan.n_fallback > 0)
    std::fprintf(stderr, "quantize: %d tensor%s fell back to another type (row length not a multiple of the block)\n",
                 plan.n_fallback, plan.n_fallback == 1 ? "" : "s");
  for (const std::string& path : plan.paths) std::printf("%s\n", path.c_str());
  std::fprintf(stderr, "quantize: %.2f MiB -> %.2f MiB, %d tensors converted, %zu file%s, %.2f s\n",
               static_cast<double>(stats.bytes_in) / (1 << 20), static_cast<double>(stats.bytes_out) / (1 << 20),
               stats.n_converted, plan.paths.size(), plan.paths.size() == 1 ? "" : "s", seconds);
  return 0;
}

}  // namespace runnel::cli
