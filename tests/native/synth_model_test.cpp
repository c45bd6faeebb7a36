// runnel synth-model's shapes: each family's tensors and metadata keys under
// llama.cpp's names, random parity weights, reproducible --seed, and the benchmark
// shapes' layouts (checked from the plan and the header, without writing gigabytes).
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "core/gguf/gguf.h"
#include "core/model/config.h"
#include "kernels/kernels.h"
#include "native/cli/synth_shapes.h"
#include "native/mmap_store.h"
#include "tests/native/scratch_dir.h"

namespace runnel {
namespace {

using test::read_all;
using test::ScratchDir;

const std::string kVocabDir = std::string(RUNNEL_TEST_DATA) + "/tokenizer/";

// Writes `shape` with the test vocabulary `vocab` (and any extra flags); returns the path.
std::string synth(const ScratchDir& dir, const std::string& shape, const std::string& vocab,
                  const std::string& extra = "", const std::string& name = "") {
  std::string file = name.empty() ? shape : name;
  file += ".gguf";
  const std::string out = dir.file(file);
  std::string cmd = "'";
  cmd += RUNNEL_BINARY;
  cmd += "' synth-model --shape " + shape;
  cmd += " --tokenizer-from '" + kVocabDir;
  cmd += "ggml-vocab-" + vocab;
  cmd += ".gguf' -o '" + out;
  cmd += "' " + extra;
  cmd += " 2>/dev/null";
  const int raw = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(raw));
  REQUIRE(WEXITSTATUS(raw) == 0);
  return out;
}

// The tensor's values as floats (any type the kernels decode).
std::vector<float> values(MmapStore& store, const std::string& name) {
  const GgufTensorInfo* t = store.model().find_tensor(name);
  REQUIRE(t != nullptr);
  std::vector<float> out(static_cast<size_t>(t->n_elements()));
  ref_kernels().of(t->type).dequantize_row(store.tensor_bytes(*t).data(), out.data(),
                                           t->n_elements());
  return out;
}

struct Moments {
  double mean, sd, min, max;
};
Moments moments(const std::vector<float>& v) {
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double sq = 0, lo = v[0], hi = v[0];
  for (const float x : v) {
    sq += (x - mean) * (x - mean);
    lo = std::min<double>(lo, x);
    hi = std::max<double>(hi, x);
  }
  return {mean, std::sqrt(sq / static_cast<double>(v.size())), lo, hi};
}

void check_tensor(const GgufModel& m, const std::string& name, GgmlType type,
                  std::vector<int64_t> dims) {
  INFO(name);
  const GgufTensorInfo* t = m.find_tensor(name);
  REQUIRE(t != nullptr);
  CHECK(t->type == type);
  CHECK(t->dims == dims);
}

}  // namespace

TEST_CASE("synth-model: tiny-bert and tiny-nomic-bert carry the embedding families' keys and tensors",
          "[cli][synth]") {
  ScratchDir dir;
  const auto bert = MmapStore::open(synth(dir, "tiny-bert", "bert-bge"));
  const GgufModel& m = bert->model();
  const GgufMetadata& md = m.metadata;
  CHECK(md.find_string("general.architecture") == "bert");
  CHECK(md.find_u64("bert.pooling_type") == 2u);  // cls, like BGE
  CHECK(md.find_f64("bert.attention.layer_norm_epsilon").value() == Approx(1e-12));
  CHECK(md.find_u64("tokenizer.ggml.token_type_count") == 2u);
  CHECK(md.find_string("tokenizer.ggml.model") == "bert");
  check_tensor(m, "token_embd.weight", GgmlType::Q8_0, {256, 30522});
  check_tensor(m, "token_types.weight", GgmlType::F32, {256, 2});
  check_tensor(m, "position_embd.weight", GgmlType::F16, {256, 512});
  check_tensor(m, "token_embd_norm.bias", GgmlType::F32, {256});
  check_tensor(m, "blk.2.attn_k.bias", GgmlType::F32, {256});
  check_tensor(m, "blk.2.ffn_up.bias", GgmlType::F32, {512});
  check_tensor(m, "blk.0.layer_output_norm.weight", GgmlType::F32, {256});
  CHECK(m.find_tensor("output_norm.weight") == nullptr);
  CHECK(m.find_tensor("blk.0.ffn_gate.weight") == nullptr);
  // biases and LayerNorm biases are random around 0, LayerNorm weights around 1
  const Moments b = moments(values(*bert, "blk.1.attn_output.bias"));
  CHECK(std::fabs(b.mean) < 0.15);
  CHECK(b.sd > 0.3);
  CHECK(moments(values(*bert, "blk.1.attn_output_norm.weight")).mean == Approx(1.0).margin(0.05));
  const ModelConfig c = ModelConfig::from_model(m);
  CHECK(c.embedding_only);
  CHECK_FALSE(c.causal_attn);
  CHECK(c.pooling == Pooling::Cls);

  const auto nomic = MmapStore::open(synth(dir, "tiny-nomic-bert", "bert-bge", "--pooling last"));
  const GgufModel& n = nomic->model();
  CHECK(n.metadata.find_u64("nomic-bert.pooling_type") == 3u);
  CHECK(n.metadata.find_f64("nomic-bert.rope.freq_base").value() == Approx(1000.0));
  check_tensor(n, "blk.1.attn_qkv.weight", GgmlType::F16, {256, 3 * 256});
  check_tensor(n, "blk.1.ffn_gate.weight", GgmlType::F16, {256, 512});
  CHECK(n.find_tensor("position_embd.weight") == nullptr);
  CHECK(n.find_tensor("blk.0.attn_qkv.bias") == nullptr);
  CHECK(ModelConfig::from_model(n).pooling == Pooling::Last);
}

TEST_CASE("synth-model: tiny-phi3 has fused qkv / gate-up and random LongRoPE factors",
          "[cli][synth]") {
  ScratchDir dir;
  const auto store = MmapStore::open(synth(dir, "tiny-phi3", "phi-3"));
  const GgufModel& m = store->model();
  const GgufMetadata& md = m.metadata;
  CHECK(md.find_string("general.architecture") == "phi3");
  CHECK(md.find_u64("phi3.context_length") == 1024u);
  CHECK(md.find_u64("phi3.rope.scaling.original_context_length") == 256u);
  CHECK(md.find_u64("phi3.rope.dimension_count") == 64u);
  CHECK(md.find_u64("phi3.attention.head_count_kv") == 2u);
  // LongRoPE: sqrt(1 + ln(1024 / 256) / ln(256)), as llama.cpp's converter writes it.
  CHECK(md.find_f64("phi3.rope.scaling.attn_factor").value() ==
        Approx(std::sqrt(1.25)).epsilon(1e-6));
  check_tensor(m, "blk.0.attn_qkv.weight", GgmlType::F16, {256, 256 + 2 * 128});
  check_tensor(m, "blk.2.ffn_up.weight", GgmlType::F16, {256, 2 * 512});
  check_tensor(m, "blk.2.ffn_down.weight", GgmlType::F32, {512, 256});
  check_tensor(m, "blk.1.attn_output.weight", GgmlType::F32, {256, 256});
  check_tensor(m, "output.weight", GgmlType::Q8_0, {256, 32064});
  CHECK(m.find_tensor("blk.0.attn_q.weight") == nullptr);
  CHECK(m.find_tensor("blk.0.ffn_gate.weight") == nullptr);
  check_tensor(m, "rope_factors_long.weight", GgmlType::F32, {32});
  check_tensor(m, "rope_factors_short.weight", GgmlType::F32, {32});
  const Moments lng = moments(values(*store, "rope_factors_long.weight"));
  const Moments sht = moments(values(*store, "rope_factors_short.weight"));
  CHECK(lng.min >= 1.0);
  CHECK(lng.max <= 8.0);
  CHECK(lng.sd > 0.5);
  CHECK(sht.min >= 1.0);
  CHECK(sht.max <= 1.5);
  CHECK(sht.sd > 0.05);
}

TEST_CASE("synth-model: tiny gemma family shapes have their norms, windows and soft-caps",
          "[cli][synth]") {
  ScratchDir dir;
  {
    const auto store = MmapStore::open(synth(dir, "tiny-gemma3", "llama-spm"));
    const GgufModel& m = store->model();
    CHECK(m.metadata.find_u64("gemma3.block_count") == 7u);
    CHECK(m.metadata.find_u64("gemma3.attention.sliding_window") == 16u);
    CHECK(m.metadata.find_u64("gemma3.attention.key_length") == 128u);
    CHECK(m.metadata.find_u64("gemma3.attention.head_count_kv") == 1u);
    CHECK(m.metadata.find_f64("gemma3.rope.freq_base") == 1e6);
    CHECK_FALSE(m.metadata.has("gemma3.final_logit_softcapping"));
    check_tensor(m, "blk.6.attn_q.weight", GgmlType::F16, {256, 4 * 128});
    check_tensor(m, "blk.6.attn_k.weight", GgmlType::F16, {256, 128});
    check_tensor(m, "blk.6.attn_output.weight", GgmlType::F32, {512, 256});
    check_tensor(m, "blk.3.attn_q_norm.weight", GgmlType::F32, {128});
    check_tensor(m, "blk.3.attn_k_norm.weight", GgmlType::F32, {128});
    check_tensor(m, "blk.5.post_attention_norm.weight", GgmlType::F32, {256});
    check_tensor(m, "blk.5.post_ffw_norm.weight", GgmlType::F32, {256});
    check_tensor(m, "token_embd.weight", GgmlType::Q8_0, {256, 32000});
    CHECK(m.find_tensor("output.weight") == nullptr);  // tied
    // Norms are random around their center (stored as applied: the +1 is in them).
    const Moments q_norm = moments(values(*store, "blk.3.attn_q_norm.weight"));
    CHECK(q_norm.mean == Approx(1.0).margin(0.05));
    CHECK(q_norm.sd == Approx(0.1).margin(0.04));
    CHECK(moments(values(*store, "blk.5.post_ffw_norm.weight")).mean == Approx(3.0).margin(0.1));
    const Moments embd = moments(values(*store, "token_embd.weight"));
    CHECK(embd.sd == Approx(2.0 / 16).epsilon(0.05));
  }
  {
    const auto store = MmapStore::open(synth(dir, "tiny-gemma2", "llama-spm"));
    const GgufModel& m = store->model();
    CHECK(m.metadata.find_f64("gemma2.attn_logit_softcapping") == 10.0);
    CHECK(m.metadata.find_f64("gemma2.final_logit_softcapping") == 8.0);
    CHECK(m.metadata.find_u64("gemma2.attention.sliding_window") == 12u);
    check_tensor(m, "blk.3.post_attention_norm.weight", GgmlType::F32, {256});
    CHECK(m.find_tensor("blk.0.attn_q_norm.weight") == nullptr);
    CHECK(m.find_tensor("output.weight") == nullptr);
  }
  {
    const auto store = MmapStore::open(synth(dir, "tiny-gemma", "llama-spm"));
    const GgufModel& m = store->model();
    CHECK(m.metadata.find_u64("gemma.attention.head_count_kv") == 1u);
    CHECK(m.metadata.find_u64("gemma.attention.key_length") == 64u);
    CHECK_FALSE(m.metadata.has("gemma.rope.freq_base"));  // llama.cpp's default, 10000
    CHECK_FALSE(m.metadata.has("gemma.attention.sliding_window"));
    check_tensor(m, "blk.0.attn_q.weight", GgmlType::F16, {256, 8 * 64});
    CHECK(m.find_tensor("blk.0.post_attention_norm.weight") == nullptr);
  }
}

TEST_CASE("synth-model: tiny-qwen3 and tiny-llama-swa", "[cli][synth]") {
  ScratchDir dir;
  {
    const auto store = MmapStore::open(synth(dir, "tiny-qwen3", "gpt-2"));
    const GgufModel& m = store->model();
    CHECK(m.metadata.find_u64("qwen3.attention.key_length") == 64u);
    CHECK(m.metadata.find_f64("qwen3.rope.freq_base") == 1e6);
    check_tensor(m, "blk.2.attn_q.weight", GgmlType::F16, {256, 512});
    check_tensor(m, "blk.2.attn_k_norm.weight", GgmlType::F32, {64});
    check_tensor(m, "token_embd.weight", GgmlType::Q8_0, {256, 50257});
    CHECK(m.find_tensor("output.weight") == nullptr);
  }
  {
    const auto store = MmapStore::open(synth(dir, "tiny-llama-swa", "llama-spm"));
    const GgufModel& m = store->model();
    CHECK(m.metadata.find_u64("llama.attention.sliding_window") == 16u);
    CHECK(m.metadata.find_u64("llama.rope.dimension_count") == 64u);
    check_tensor(m, "output.weight", GgmlType::Q8_0, {256, 32000});
    CHECK(moments(values(*store, "output.weight")).sd == Approx(2.0 / 16).epsilon(0.05));
    CHECK(moments(values(*store, "blk.1.ffn_norm.weight")).sd > 0.05);
  }
}

TEST_CASE("synth-model: the tiny mixture-of-experts shapes carry experts, routers and their keys",
          "[cli][synth]") {
  ScratchDir dir;
  {
    const auto store = MmapStore::open(synth(dir, "tiny-qwen2moe", "gpt-2"));
    const GgufModel& m = store->model();
    CHECK(m.metadata.find_u64("qwen2moe.expert_count") == 8u);
    CHECK(m.metadata.find_u64("qwen2moe.expert_used_count") == 2u);
    CHECK(m.metadata.find_u64("qwen2moe.expert_feed_forward_length") == 128u);
    CHECK(m.metadata.find_u64("qwen2moe.expert_shared_feed_forward_length") == 256u);
    check_tensor(m, "blk.1.ffn_gate_inp.weight", GgmlType::F32, {256, 8});
    check_tensor(m, "blk.1.ffn_up_exps.weight", GgmlType::F16, {256, 128, 8});
    check_tensor(m, "blk.1.ffn_down_exps.weight", GgmlType::F32, {128, 256, 8});
    check_tensor(m, "blk.1.ffn_gate_inp_shexp.weight", GgmlType::F32, {256});
    check_tensor(m, "blk.1.ffn_down_shexp.weight", GgmlType::F32, {256, 256});
    check_tensor(m, "blk.0.attn_v.bias", GgmlType::F32, {128});
    CHECK(m.find_tensor("blk.0.ffn_up.weight") == nullptr);
    // The router spreads its logits (gain 4): picks are far from ties.
    CHECK(moments(values(*store, "blk.0.ffn_gate_inp.weight")).sd == Approx(4.0 / 16).epsilon(0.05));
    const ModelConfig c = ModelConfig::from_model(m);
    CHECK(c.has_shared_expert);
    CHECK(c.has_qkv_bias);
  }
  {
    const auto store = MmapStore::open(synth(dir, "tiny-olmoe", "llama-spm"));
    const GgufModel& m = store->model();
    CHECK(m.metadata.find_u64("olmoe.expert_count") == 8u);
    CHECK_FALSE(m.metadata.find_u64("olmoe.expert_feed_forward_length").has_value());
    check_tensor(m, "blk.0.attn_q_norm.weight", GgmlType::F32, {256});
    check_tensor(m, "blk.0.ffn_gate_exps.weight", GgmlType::F16, {256, 128, 8});
  }
  // The Qwen3-30B-A3B benchmark shape, from its plan: 128 experts of 768 rows a layer.
  const cli::SynthShape* big = cli::find_synth_shape("qwen3-30b-a3b");
  REQUIRE(big != nullptr);
  uint64_t n_params = 0;
  for (const cli::TensorPlan& t : cli::tensor_plan(*big, cli::synth_mix("q4_k_m"), 151936)) {
    uint64_t n = 1;
    for (const int64_t d : t.dims) n *= static_cast<uint64_t>(d);
    n_params += n;
    if (t.name == "blk.47.ffn_down_exps.weight") CHECK(t.dims == std::vector<int64_t>{768, 2048, 128});
    if (t.name == "blk.0.ffn_gate_inp.weight") CHECK_FALSE(t.pooled);
  }
  CHECK(n_params / 1e9 == Approx(30.5).epsilon(0.02));  // Qwen3-30B-A3B's 30.5B parameters
}

TEST_CASE("synth-model --seed: the same seed writes the same bytes, another seed others",
          "[cli][synth]") {
  ScratchDir dir;
  const std::string a = read_all(synth(dir, "tiny-gemma", "llama-spm", "", "a"));
  const std::string b = read_all(synth(dir, "tiny-gemma", "llama-spm", "--seed 1", "b"));
  const std::string c = read_all(synth(dir, "tiny-gemma", "llama-spm", "--seed 2", "c"));
  CHECK(a == b);  // 1 is the default
  REQUIRE(a.size() == c.size());
  CHECK(a != c);
  // --type f32 makes every matrix F32.
  const auto f32 = MmapStore::open(synth(dir, "tiny-gemma", "llama-spm", "--type f32", "f32"));
  CHECK(f32->model().find_tensor("token_embd.weight")->type == GgmlType::F32);
  CHECK(f32->model().find_tensor("blk.1.ffn_gate.weight")->type == GgmlType::F32);
}

TEST_CASE("synth-model: the gemma3-1b and qwen3-4b benchmark shapes", "[synth]") {
  using cli::SynthShape;
  const auto header = [](const SynthShape& s, const std::string& type, int n_vocab) {
    GgufWriter w;
    cli::add_arch_metadata(w, s, n_vocab);
    uint64_t n_bytes = 0;
    for (const cli::TensorPlan& t : cli::tensor_plan(s, cli::synth_mix(type), n_vocab)) {
      w.add_tensor_info(t.name, t.type, t.dims);
      n_bytes +=
          (row_bytes(t.type, t.dims[0]) * (t.dims.size() > 1 ? t.dims[1] : 1) + 31) / 32 * 32;
    }
    const std::vector<uint8_t> bytes = w.header_bytes();
    return GgufFile::parse(bytes, bytes.size() + n_bytes, s.name);
  };
  const SynthShape* gemma = cli::find_synth_shape("gemma3-1b");
  REQUIRE(gemma != nullptr);
  const GgufFile g = header(*gemma, "q4_k_m", 262144);
  CHECK(g.metadata().find_u64("gemma3.block_count") == 26u);
  CHECK(g.metadata().find_u64("gemma3.embedding_length") == 1152u);
  CHECK(g.metadata().find_u64("gemma3.attention.sliding_window") == 512u);
  CHECK(g.metadata().find_u64("gemma3.attention.key_length") == 256u);
  CHECK(g.tensors().size() == 1 + 26 * 13 + 1);
  // 1152 columns are not whole k-quant super-blocks: llama.cpp's Q5_0 / Q8_0 stand-ins,
  // as in the real Gemma 3 270M Q4_K_M.
  CHECK(g.find_tensor("token_embd.weight")->type == GgmlType::Q8_0);
  CHECK(g.find_tensor("blk.3.attn_q.weight")->type == GgmlType::Q5_0);
  CHECK(g.find_tensor("blk.3.attn_q.weight")->dims == std::vector<int64_t>{1152, 1024});
  CHECK(g.find_tensor("blk.0.attn_v.weight")->type == GgmlType::Q8_0);
  CHECK(g.find_tensor("blk.3.attn_output.weight")->type == GgmlType::Q4_K);
  CHECK(g.find_tensor("blk.0.ffn_down.weight")->type == GgmlType::Q6_K);
  CHECK(g.find_tensor("blk.3.attn_k_norm.weight")->dims == std::vector<int64_t>{256});
  CHECK(g.find_tensor("output.weight") == nullptr);

  const SynthShape* qwen = cli::find_synth_shape("qwen3-4b");
  REQUIRE(qwen != nullptr);
  const GgufFile q = header(*qwen, "q8_0", 151936);
  CHECK(q.metadata().find_string("general.architecture") == "qwen3");
  CHECK(q.metadata().find_u64("qwen3.block_count") == 36u);
  CHECK(q.metadata().find_u64("qwen3.attention.head_count") == 32u);
  CHECK(q.metadata().find_u64("qwen3.attention.head_count_kv") == 8u);
  CHECK(q.find_tensor("blk.35.attn_q.weight")->dims == std::vector<int64_t>{2560, 4096});
  CHECK(q.find_tensor("blk.35.attn_q_norm.weight")->dims == std::vector<int64_t>{128});
  CHECK(q.find_tensor("blk.35.ffn_down.weight")->dims == std::vector<int64_t>{9728, 2560});
  CHECK(q.find_tensor("token_embd.weight")->dims == std::vector<int64_t>{2560, 151936});
  CHECK(q.find_tensor("output.weight") == nullptr);
}

}  // namespace runnel
