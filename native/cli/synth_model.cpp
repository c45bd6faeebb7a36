// runnel synth-model: writes a synthetic GGUF of one of the shapes in synth_shapes.h.
// Benchmark shapes (the real sizes of Llama-3.2-1B, Llama-3.1-8B, Gemma-3-1B, Qwen3-4B)
// take rows from a small random pool per tensor, quantized with runnel's reference
// quantizers (an 8B file takes seconds), with norms 1.0; output rows of control and
// byte tokens are zero, so greedy decoding emits ordinary text tokens. Tiny parity
// shapes are random everywhere (--seed makes them reproducible). The tokenizer is a
// real one copied from another GGUF's tokenizer.* metadata, padded with control tokens
// to the shape's vocabulary size. The data is streamed to the file: an 8B Q8_0 (8.5 GB)
// never sits in memory.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "core/gguf/gguf_writer.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/utf8.h"
#include "kernels/kernels.h"
#include "native/cli/args.h"
#include "native/cli/commands.h"
#include "native/cli/synth_shapes.h"
#include "native/mmap_store.h"

namespace runnel::cli {
namespace {

// Reproducible values: splitmix64 words and Box-Muller normals (what the standard
// library's distributions return differs between implementations).
class SynthRng {
 public:
  explicit SynthRng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  float normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - uniform(), u2 = uniform();  // u1 in (0, 1]
    const double r = std::sqrt(-2.0 * std::log(u1)), t = 2.0 * std::numbers::pi * u2;
    spare_ = static_cast<float>(r * std::sin(t));
    has_spare_ = true;
    return static_cast<float>(r * std::cos(t));
  }

 private:
  uint64_t state_;
  float spare_ = 0.0f;
  bool has_spare_ = false;
};

// A tensor's own stream: the seed and its name (FNV-1a), so adding a tensor to a
// shape does not change the others.
uint64_t tensor_seed(uint64_t seed, const std::string& name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (const char c : name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
  return h ^ (seed * 0x9E3779B97F4A7C15ull);
}

// Rows of a tensor: every dim after the first (an expert stack is n_expert matrices).
int64_t n_rows(const TensorPlan& t) {
  int64_t rows = 1;
  for (size_t d = 1; d < t.dims.size(); ++d) rows *= t.dims[d];
  return rows;
}

uint64_t tensor_bytes(const TensorPlan& t) {
  return row_bytes(t.type, t.dims[0]) * static_cast<uint64_t>(n_rows(t));
}

void write_floats(std::ofstream& out, const std::vector<float>& v) {
  out.write(reinterpret_cast<const char*>(v.data()),
            static_cast<std::streamsize>(v.size() * sizeof(float)));
}

// Parity shapes: every value drawn from the tensor's own stream.
void write_random_tensor(std::ofstream& out, const TensorPlan& t, uint64_t seed) {
  SynthRng rng(tensor_seed(seed, t.name));
  const int64_t n_in = t.dims[0];
  std::vector<float> row(static_cast<size_t>(n_in));
  switch (t.fill) {
    case Fill::Norm:  // stored as applied: Gemma's converter has already added its 1
      for (float& x : row) x = t.center * (1.0f + 0.1f * rng.normal());
      return write_floats(out, row);
    case Fill::RopeShort:  // divisors of each rotary frequency
      for (float& x : row) x = 1.0f + 0.5f * static_cast<float>(rng.uniform());
      return write_floats(out, row);
    case Fill::RopeLong:
      for (float& x : row) x = 1.0f + 7.0f * static_cast<float>(rng.uniform());
      return write_floats(out, row);
    case Fill::Bias:  // one row, or one per expert
      for (int64_t r = 0; r < n_rows(t); ++r) {
        for (float& x : row) x = t.std * rng.normal();
        write_floats(out, row);
      }
      return;
    case Fill::Matrix:
      break;
  }
  const TypeKernels& k = ref_kernels().of(t.type);
  std::vector<uint8_t> packed(row_bytes(t.type, n_in));
  for (int64_t r = 0; r < n_rows(t); ++r) {
    for (float& x : row) x = t.std * rng.normal();
    k.quantize_row(row.data(), packed.data(), n_in);
    out.write(reinterpret_cast<const char*>(packed.data()),
              static_cast<std::streamsize>(packed.size()));
  }
}

// Benchmark shapes: rows of `t` from a pool of quantized random rows; norms 1.0.
void write_pooled_tensor(std::ofstream& out, const TensorPlan& t,
                         const std::vector<bool>& zero_rows, uint32_t seed) {
  const int64_t n_in = t.dims[0];
  const int64_t n_out = n_rows(t);
  if (t.fill != Fill::Matrix)
    return write_floats(out, std::vector<float>(static_cast<size_t>(n_in * n_out), 1.0f));
  const TypeKernels& k = ref_kernels().of(t.type);
  const size_t rb = row_bytes(t.type, n_in);
  constexpr int kPool = 16;
  std::vector<uint8_t> pool(rb * kPool), zero(rb);
  std::mt19937 rng(seed);
  // Uniform in +-0.035: a standard deviation of ~0.02, like trained weights.
  std::uniform_real_distribution<float> dist(-0.035f, 0.035f);
  std::vector<float> row(static_cast<size_t>(n_in));
  for (int p = 0; p < kPool; ++p) {
    for (float& x : row) x = dist(rng);
    k.quantize_row(row.data(), pool.data() + p * rb, n_in);
  }
  std::fill(row.begin(), row.end(), 0.0f);
  k.quantize_row(row.data(), zero.data(), n_in);
  for (int64_t r = 0; r < n_out; ++r) {
    const bool is_zero = t.is_output && static_cast<size_t>(r) < zero_rows.size() && zero_rows[r];
    const uint8_t* src =
        is_zero ? zero.data() : pool.data() + static_cast<size_t>((r * 7 + seed) % kPool) * rb;
    out.write(reinterpret_cast<const char*>(src), static_cast<std::streamsize>(rb));
  }
}

// Copies every tokenizer.* key of `md` into `w`, the token list padded with control
// tokens to n_vocab. Returns, per token, whether a benchmark shape zeroes its output row.
std::vector<bool> copy_tokenizer(const GgufMetadata& md, int n_vocab, GgufWriter& w) {
  const std::vector<std::string>& tokens = *md.find_string_array("tokenizer.ggml.tokens");
  const int n_real = static_cast<int>(tokens.size());
  std::optional<std::vector<int64_t>> types = md.find_i64_array("tokenizer.ggml.token_type");
  for (const auto& [key, value] : md.entries()) {
    if (key.rfind("tokenizer.", 0) == 0 && key != "tokenizer.ggml.tokens" &&
        key != "tokenizer.ggml.token_type" && key != "tokenizer.ggml.scores") {
      w.set(key, value);
    }
  }
  std::vector<std::string> padded = tokens;
  for (int i = n_real; i < n_vocab; ++i)
    padded.push_back("<|synthetic_reserved_" + std::to_string(i) + "|>");
  std::vector<bool> zero_rows(static_cast<size_t>(n_vocab), false);
  GgufValue type_value{GgufType::ARRAY, GgufType::I32, std::vector<int64_t>()};
  auto& type_ids = std::get<std::vector<int64_t>>(type_value.value);
  // Normal tokens whose text is not whole UTF-8 (byte-level BPE pieces of a multi-byte
  // character) are zeroed too: a noise model chains them into invalid text, which
  // some peers (wllama) fail on.
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_metadata(md);
  for (int i = 0; i < n_vocab; ++i) {
    const int64_t t = i < n_real ? (types ? (*types)[i] : 1) : 3;  // 3: control
    type_ids.push_back(t);
    bool whole_text = true;
    if (t == 1) {
      const std::string piece = tok->token_to_piece(i, false);
      whole_text = utf8_complete_prefix(piece) == piece.size() && utf8_sanitize(piece) == piece;
    }
    zero_rows[i] = t != 1 || !whole_text;  // only normal, whole-text tokens may win greedy decoding
  }
  w.set_string_array("tokenizer.ggml.tokens", padded);
  w.set("tokenizer.ggml.token_type", type_value);
  if (const GgufValue* scores = md.find("tokenizer.ggml.scores")) {
    GgufValue s = *scores;
    auto& v = std::get<std::vector<double>>(s.value);
    v.resize(static_cast<size_t>(n_vocab), 0.0);
    w.set("tokenizer.ggml.scores", s);
  }
  return zero_rows;
}

}  // namespace

int synth_model_command(const std::vector<std::string>& args) {
  std::string shape_name, type_name, tokenizer_from, out_path, pooling;
  uint64_t seed = 1;
  ArgParser p(
      "runnel synth-model --shape NAME [--type TYPE] --tokenizer-from FILE -o OUT",
      "Writes a synthetic GGUF with random weights quantized by runnel's reference quantizers.\n"
      "Benchmark shapes (speed and memory only): llama-1b (Llama-3.2-1B), llama-8b\n"
      "(Llama-3.1-8B), gemma3-1b (Gemma-3-1B, sliding window), qwen3-4b (Qwen3-4B, q/k norms);\n"
      "with experts: qwen3-30b-a3b (Qwen3-30B-A3B), gpt-oss-20b (MXFP4 experts), moe-small.\n"
      "Parity shapes, every weight, norm and rope factor random (logits against llama.cpp):\n"
      "tiny-llama, tiny-llama-swa, tiny-qwen3, tiny-gemma, tiny-gemma2, tiny-gemma3, tiny-phi3;\n"
      "with experts: tiny-mixtral, tiny-qwen2moe, tiny-qwen3moe, tiny-olmoe, tiny-gpt-oss;\n"
      "embedding models (embeddings against llama.cpp): tiny-bert, tiny-nomic-bert (give them\n"
      "a WordPiece vocabulary, e.g. tests/data/tokenizer/ggml-vocab-bert-bge.gguf).\n"
      "tiny: a small llama for tests.");
  p.string_option("--shape", &shape_name, "NAME",
                  "llama-1b, llama-8b, gemma3-1b, qwen3-4b, qwen3-30b-a3b, gpt-oss-20b,\n"
                  "moe-small, tiny, tiny-llama, tiny-llama-swa, tiny-qwen3, tiny-gemma,\n"
                  "tiny-gemma2, tiny-gemma3, tiny-phi3, tiny-mixtral, tiny-qwen2moe,\n"
                  "tiny-qwen3moe, tiny-olmoe, tiny-gpt-oss, tiny-bert or tiny-nomic-bert");
  p.string_option("--type", &type_name, "TYPE",
                  "q8_0, q4_0, q4_k_m (llama.cpp's mix), f32, f16, or mix (F32, F16 and Q8_0\n"
                  "matrices; the default of the tiny-* parity shapes)");
  p.string_option("--tokenizer-from", &tokenizer_from, "FILE",
                  "a real GGUF whose tokenizer.* metadata is copied");
  p.string_option("-o, --output", &out_path, "OUT", "the GGUF to write");
  p.string_option("--pooling", &pooling, "MODE",
                  "embedding shapes: {arch}.pooling_type mean, cls or last (default: cls for\n"
                  "tiny-bert, mean for tiny-nomic-bert)");
  p.u64_option("--seed", &seed,
               "seed of the random weights (default 1): the same seed writes the same file");
  if (p.parse_or_print_help(args)) return 0;
  const SynthShape* shape = find_synth_shape(shape_name);
  if (!shape)
    throw UsageError("--shape: expected one of " + synth_shape_names() + ", got '" + shape_name +
                     "'");
  if (type_name.empty()) type_name = default_synth_type(*shape);
  if (type_name.empty()) throw UsageError("--type: required for --shape " + shape_name);
  const SynthMix mix = synth_mix(type_name);
  if (tokenizer_from.empty())
    throw UsageError("--tokenizer-from: a GGUF with a tokenizer is required");
  if (out_path.empty()) throw UsageError("-o: an output path is required");
  if (!pooling.empty() && !is_embedding_shape(*shape))
    throw UsageError("--pooling: only for the embedding shapes tiny-bert and tiny-nomic-bert");
  const int pooling_type = pooling.empty() ? -1 : parse_pooling_type(pooling);

  const std::unique_ptr<MmapStore> source = MmapStore::open(tokenizer_from);
  const GgufMetadata& md = source->model().metadata;
  const std::vector<std::string>* tokens = md.find_string_array("tokenizer.ggml.tokens");
  if (!tokens)
    throw UsageError("--tokenizer-from: " + tokenizer_from + " has no tokenizer.ggml.tokens");
  const int n_real = static_cast<int>(tokens->size());
  const int n_vocab = shape->n_vocab > 0 ? std::max(shape->n_vocab, n_real) : n_real;
  GgufWriter w;
  const std::vector<bool> zero_rows = copy_tokenizer(md, n_vocab, w);
  add_arch_metadata(w, *shape, n_vocab, pooling_type);
  w.set_string("general.name", std::string("synthetic ") + shape->name + " " + type_name);
  w.set_u32("general.file_type", mix.file_type);
  w.set_u32("general.quantization_version", 2);

  const std::vector<TensorPlan> plan = tensor_plan(*shape, mix, n_vocab);
  for (const TensorPlan& t : plan) w.add_tensor_info(t.name, t.type, t.dims);

  const std::string tmp = out_path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + tmp);
  const std::vector<uint8_t> header = w.header_bytes();
  out.write(reinterpret_cast<const char*>(header.data()),
            static_cast<std::streamsize>(header.size()));
  uint64_t written = header.size();
  for (size_t i = 0; i < plan.size(); ++i) {
    const TensorPlan& t = plan[i];
    if (shape->parity || !t.pooled) {
      write_random_tensor(out, t, seed);
    } else {
      // Seeds 1, 2, ... by default: the files earlier versions wrote.
      write_pooled_tensor(out, t, zero_rows,
                          static_cast<uint32_t>(seed) + static_cast<uint32_t>(i));
    }
    written += tensor_bytes(t);
    const uint64_t pad = (w.alignment() - written % w.alignment()) % w.alignment();
    const std::vector<char> zeros(pad, 0);
    out.write(zeros.data(), static_cast<std::streamsize>(pad));
    written += pad;
  }
  out.close();
  if (!out) throw std::runtime_error("writing " + tmp + " failed (disk full?)");
  if (std::rename(tmp.c_str(), out_path.c_str()) != 0)
    throw std::runtime_error("cannot rename " + tmp);
  std::fprintf(stderr, "synth-model: wrote %s (%s %s, %d layers, vocab %d, %.2f MiB)\n",
               out_path.c_str(), shape->name, type_name.c_str(), shape->n_layer, n_vocab,
               static_cast<double>(written) / (1 << 20));
  return 0;
}

}  // namespace runnel::cli
