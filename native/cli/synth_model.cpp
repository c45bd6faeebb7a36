// runnel synth-model: writes a synthetic GGUF at the real shapes of Llama-3.2-1B or
// Llama-3.1-8B, for speed and memory benchmarks (speed does not depend on weight
// values). Weights are random rows quantized with runnel's own reference quantizers
// (a small pool per tensor, repeated, so an 8B file takes seconds), norms are 1.0,
// and the tokenizer is a real one copied from another GGUF's tokenizer.* metadata,
// padded with control tokens to the real vocabulary size (128256). Output rows of
// control and byte tokens are zero, so greedy decoding emits ordinary text tokens.
// The data is streamed to the file: an 8B Q8_0 (8.5 GB) never sits in memory.
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/gguf/gguf_writer.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/utf8.h"
#include "kernels/kernels.h"
#include "native/cli/args.h"
#include "native/cli/commands.h"
#include "native/mmap_store.h"

namespace runnel::cli {
namespace {

struct Shape {
  const char* name;
  int n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab;  // n_vocab 0: the tokenizer's own
  bool tied;                                             // no output.weight (Llama 3.2 1B)
};

constexpr Shape kShapes[] = {
    {"llama-1b", 2048, 16, 32, 8, 8192, 128256, true},
    {"llama-8b", 4096, 32, 32, 8, 14336, 128256, false},
    {"tiny", 256, 2, 4, 2, 512, 0, false},  // tests
};

// llama.cpp's Q4_K_M gives attn_v and ffn_down more bits in the first and last
// eighth of the layers and every third layer between.
bool more_bits(int layer, int n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

struct Mix {
  GgmlType matrix, embd, output;
  GgmlType attn_v_ffn_down_more;  // for more_bits layers
  uint32_t file_type;             // general.file_type (llama.cpp's ftype ids)
};

Mix mix_for(const std::string& type) {
  if (type == "q8_0") return {GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q8_0, 7};
  if (type == "q4_0") return {GgmlType::Q4_0, GgmlType::Q4_0, GgmlType::Q6_K, GgmlType::Q4_0, 2};
  if (type == "q4_k_m") return {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q6_K, 15};
  throw UsageError("--type: expected q8_0, q4_0 or q4_k_m, got '" + type + "'");
}

struct TensorPlan {
  std::string name;
  GgmlType type;
  std::vector<int64_t> dims;  // [n_in, n_out] or [n]
  bool is_norm = false;
  bool is_output = false;  // rows of non-normal tokens are zero
};

// Writes rows of `t` from a pool of quantized random rows.
void write_tensor(std::ofstream& out, const TensorPlan& t, const std::vector<bool>& zero_rows, uint32_t seed) {
  const int64_t n_in = t.dims[0];
  const int64_t n_out = t.dims.size() > 1 ? t.dims[1] : 1;
  if (t.is_norm) {
    const std::vector<float> ones(static_cast<size_t>(n_in), 1.0f);
    out.write(reinterpret_cast<const char*>(ones.data()), static_cast<std::streamsize>(ones.size() * 4));
    return;
  }
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
    const uint8_t* src = is_zero ? zero.data() : pool.data() + static_cast<size_t>((r * 7 + seed) % kPool) * rb;
    out.write(reinterpret_cast<const char*>(src), static_cast<std::streamsize>(rb));
  }
}

}  // namespace

int synth_model_command(const std::vector<std::string>& args) {
  std::string shape_name, type_name, tokenizer_from, out_path;
  ArgParser p("runnel synth-model --shape NAME --type TYPE --tokenizer-from FILE -o OUT",
              "Writes a synthetic GGUF at the shape of Llama-3.2-1B (llama-1b) or Llama-3.1-8B (llama-8b)\n"
              "with random weights quantized by runnel's reference quantizers (benchmarks only).");
  p.string_option("--shape", &shape_name, "NAME", "llama-1b, llama-8b, or tiny (tests)");
  p.string_option("--type", &type_name, "TYPE", "q8_0, q4_0 or q4_k_m (llama.cpp's mix)");
  p.string_option("--tokenizer-from", &tokenizer_from, "FILE", "a real GGUF whose tokenizer.* metadata is copied");
  p.string_option("-o, --output", &out_path, "OUT", "the GGUF to write");
  p.parse(args);
  if (p.help_requested()) {
    std::fputs(p.help_text().c_str(), stdout);
    return 0;
  }
  const Shape* shape = nullptr;
  for (const Shape& s : kShapes) {
    if (shape_name == s.name) shape = &s;
  }
  if (!shape) throw UsageError("--shape: expected llama-1b, llama-8b or tiny, got '" + shape_name + "'");
  const Mix mix = mix_for(type_name);
  if (tokenizer_from.empty()) throw UsageError("--tokenizer-from: a GGUF with a tokenizer is required");
  if (out_path.empty()) throw UsageError("-o: an output path is required");

  // The tokenizer: every tokenizer.* key, the token list padded with control tokens.
  const std::unique_ptr<MmapStore> source = MmapStore::open(tokenizer_from);
  const GgufMetadata& md = source->model().metadata;
  const std::vector<std::string>* tokens = md.find_string_array("tokenizer.ggml.tokens");
  if (!tokens) throw UsageError("--tokenizer-from: " + tokenizer_from + " has no tokenizer.ggml.tokens");
  const int n_real = static_cast<int>(tokens->size());
  const int n_vocab = shape->n_vocab > 0 ? std::max(shape->n_vocab, n_real) : n_real;
  std::optional<std::vector<int64_t>> types = md.find_i64_array("tokenizer.ggml.token_type");
  GgufWriter w;
  for (const auto& [key, value] : md.entries()) {
    if (key.rfind("tokenizer.", 0) == 0 && key != "tokenizer.ggml.tokens" && key != "tokenizer.ggml.token_type" &&
        key != "tokenizer.ggml.scores") {
      w.set(key, value);
    }
  }
  std::vector<std::string> padded = *tokens;
  for (int i = n_real; i < n_vocab; ++i) padded.push_back("<|synthetic_reserved_" + std::to_string(i) + "|>");
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

  const int head_dim = shape->n_embd / shape->n_head;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", std::string("synthetic ") + shape->name + " " + type_name);
  w.set_u32("general.file_type", mix.file_type);
  w.set_u32("llama.context_length", 131072);
  w.set_u32("llama.embedding_length", static_cast<uint32_t>(shape->n_embd));
  w.set_u32("llama.block_count", static_cast<uint32_t>(shape->n_layer));
  w.set_u32("llama.feed_forward_length", static_cast<uint32_t>(shape->n_ff));
  w.set_u32("llama.attention.head_count", static_cast<uint32_t>(shape->n_head));
  w.set_u32("llama.attention.head_count_kv", static_cast<uint32_t>(shape->n_head_kv));
  w.set_u32("llama.rope.dimension_count", static_cast<uint32_t>(head_dim));
  w.set_f32("llama.rope.freq_base", 500000.0f);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32("llama.vocab_size", static_cast<uint32_t>(n_vocab));

  // Tensors in llama.cpp's order.
  const int64_t e = shape->n_embd, kv = static_cast<int64_t>(shape->n_head_kv) * head_dim, ff = shape->n_ff;
  std::vector<TensorPlan> plan;
  const GgmlType embd_type = shape->tied ? mix.output : mix.embd;
  plan.push_back({"token_embd.weight", embd_type, {e, n_vocab}, false, shape->tied});
  for (int l = 0; l < shape->n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const GgmlType vd = more_bits(l, shape->n_layer) ? mix.attn_v_ffn_down_more : mix.matrix;
    plan.push_back({b + "attn_norm.weight", GgmlType::F32, {e}, true});
    plan.push_back({b + "attn_q.weight", mix.matrix, {e, e}});
    plan.push_back({b + "attn_k.weight", mix.matrix, {e, kv}});
    plan.push_back({b + "attn_v.weight", vd, {e, kv}});
    plan.push_back({b + "attn_output.weight", mix.matrix, {e, e}});
    plan.push_back({b + "ffn_norm.weight", GgmlType::F32, {e}, true});
    plan.push_back({b + "ffn_gate.weight", mix.matrix, {e, ff}});
    plan.push_back({b + "ffn_up.weight", mix.matrix, {e, ff}});
    plan.push_back({b + "ffn_down.weight", vd, {ff, e}});
  }
  plan.push_back({"output_norm.weight", GgmlType::F32, {e}, true});
  if (!shape->tied) plan.push_back({"output.weight", mix.output, {e, n_vocab}, false, true});
  for (const TensorPlan& t : plan) w.add_tensor_info(t.name, t.type, t.dims);

  const std::string tmp = out_path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + tmp);
  const std::vector<uint8_t> header = w.header_bytes();
  out.write(reinterpret_cast<const char*>(header.data()), static_cast<std::streamsize>(header.size()));
  uint64_t written = header.size();
  uint32_t seed = 1;
  for (const TensorPlan& t : plan) {
    write_tensor(out, t, zero_rows, seed++);
    uint64_t n = row_bytes(t.type, t.dims[0]) * static_cast<uint64_t>(t.dims.size() > 1 ? t.dims[1] : 1);
    written += n;
    const uint64_t pad = (w.alignment() - written % w.alignment()) % w.alignment();
    const std::vector<char> zeros(pad, 0);
    out.write(zeros.data(), static_cast<std::streamsize>(pad));
    written += pad;
  }
  out.close();
  if (!out) throw std::runtime_error("writing " + tmp + " failed (disk full?)");
  if (std::rename(tmp.c_str(), out_path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp);
  std::fprintf(stderr, "synth-model: wrote %s (%s %s, %d layers, vocab %d, %.2f GiB)\n", out_path.c_str(),
               shape->name, type_name.c_str(), shape->n_layer, n_vocab, static_cast<double>(written) / (1 << 30));
  return 0;
}

}  // namespace runnel::cli
