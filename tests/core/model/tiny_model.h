// A tiny synthetic llama-family model for tests: random weights written with
// GgufWriter, a minimal SPM vocabulary, and an independent float reference forward
// pass (straightforward loops, double accumulators) to compare the engine against.
// Header-only: both unit_tests and native_tests (the CLI test writes it to a file) use it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/gguf/gguf_writer.h"
#include "core/host/weight_store.h"
#include "kernels/fp16.h"
#include "kernels/kernels.h"
#include "kernels/types.h"

namespace runnel::test {

struct TinySpec {
  // "qwen2" adds q/k/v biases and neox rope; "qwen3" q/k norms and neox rope; "gemma",
  // "gemma2", "gemma3" the gemma family (scaled embeddings, GELU, tied output; 2/3:
  // post norms and sliding windows; 2: soft-caps; 3: q/k norms, local rope base); "phi3"
  // fused attn_qkv (q, k, v rows) and ffn_up (gate rows, then up rows), neox rope, its
  // sliding_window ignored (as llama.cpp does).
  std::string arch = "llama";
  int n_layer = 2;
  int n_embd = 64;
  int n_head = 4;
  int n_head_kv = 2;
  int n_ff = 96;
  int n_vocab = 40;
  int n_ctx_train = 64;
  int n_rot = 0;  // 0: the head size
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  bool tied = true;                      // no output.weight
  bool rope_freqs = false;               // llama3-style per-pair divisors
  int n_swa = 0;                         // attention.sliding_window (0: not written)
  int swa_period = 0;                    // attention.sliding_window_pattern (0: not written)
  float attn_softcap = 0.0f;             // gemma2: attn_logit_softcapping (0: not written)
  float final_softcap = 0.0f;            // gemma2/3: final_logit_softcapping (0: not written)
  std::string rope_scaling;              // rope.scaling.type ("": not written), e.g. "yarn"
  float rope_factor = 0.0f;              // rope.scaling.factor (0: not written)
  int n_ctx_orig = 0;                    // rope.scaling.original_context_length (0: not written)
  float rope_attn_factor = 0.0f;         // rope.scaling.attn_factor (0: not written)
  float yarn_beta_fast = 0.0f;           // rope.scaling.yarn_beta_fast (0: not written; 32)
  float yarn_beta_slow = 0.0f;           // rope.scaling.yarn_beta_slow (0: not written; 1)
  bool longrope = false;                 // phi3: rope_factors_long / rope_factors_short.weight
  bool fused_qkv = true;                 // phi3: attn_qkv.weight (false: attn_q, attn_k, attn_v)
  // Mixture of experts: "qwen2moe" (q/k/v biases, a shared expert), "qwen3moe" (q/k
  // norms per head, renormalized weights), "olmoe" (q/k norms over whole rows), or
  // "llama" with n_expert > 0 (Mixtral: renormalized weights).
  int n_expert = 0;
  int n_expert_used = 0;
  int n_ff_exp = 0;    // expert_feed_forward_length (qwen*moe; 0: n_ff, not written)
  int n_ff_shexp = 0;  // qwen2moe: expert_shared_feed_forward_length
  GgmlType matrix_type = GgmlType::F32;  // type of the 2-d weights (not token_embd)
  GgmlType embd_type = GgmlType::F32;
  uint32_t seed = 1;
  // For malformed variants: a tensor to leave out, and one to write with other dims.
  std::string omit_tensor;
  std::string reshape_tensor;
  std::vector<int64_t> reshape_dims;
};

struct TinyModel {
  TinySpec spec;
  std::vector<uint8_t> bytes;  // the GGUF file
  // Float values of every tensor as the model holds them (after quantization), each
  // matrix row-major [n_out][n_in] like GGUF rows.
  std::map<std::string, std::vector<float>> weights;

  // A SpanStore over `bytes` (which must outlive it).
  std::unique_ptr<WeightStore> store() const {
    std::vector<GgufFile> files;
    files.push_back(GgufFile::parse(bytes, "tiny.gguf"));
    return std::make_unique<SpanStore>(GgufModel::join(std::move(files)),
                                       std::vector<std::span<const uint8_t>>{bytes});
  }
};

namespace detail {

// xorshift32: the same values on every platform.
class Random {
 public:
  explicit Random(uint32_t seed) : state_(seed * 2654435761u + 1) {}
  float uniform(float lo, float hi) {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 17;
    state_ ^= state_ << 5;
    return lo + (hi - lo) * static_cast<float>(state_ >> 8) / 16777216.0f;
  }

 private:
  uint32_t state_;
};

inline std::vector<std::string> tiny_vocab(int n_vocab) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  const std::string space = "\xE2\x96\x81";  // U+2581, SPM's space
  for (int i = 3; i < n_vocab; ++i) {
    const int j = i - 3;
    if (j < 26) {
      std::string t = space;
      t.push_back(static_cast<char>('a' + j));
      tokens.push_back(t);
    } else if (j < 52) {
      tokens.push_back(std::string(1, static_cast<char>('a' + j - 26)));
    } else {
      tokens.push_back(std::to_string(j) + "t");
    }
  }
  return tokens;
}

inline void set_tokenizer(GgufWriter& w, int n_vocab) {
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tiny_vocab(n_vocab));
  std::vector<double> scores;
  std::vector<int64_t> types;
  for (int i = 0; i < n_vocab; ++i) {
    scores.push_back(-static_cast<double>(i));
    types.push_back(i == 0 ? 2 : i < 3 ? 3 : 1);  // unknown, control, normal
  }
  w.set("tokenizer.ggml.scores", GgufValue{GgufType::ARRAY, GgufType::F32, scores});
  w.set("tokenizer.ggml.token_type", GgufValue{GgufType::ARRAY, GgufType::I32, types});
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
}

class Builder {
 public:
  Builder(const TinySpec& spec, TinyModel& model, GgufWriter& w)
      : spec_(spec), model_(model), w_(w), rng_(spec.seed) {}

  // A tensor of uniform values in [lo, hi), stored as `type`; the model keeps the
  // values the file really holds (quantized and decoded again).
  void add(const std::string& name, std::vector<int64_t> dims, float lo, float hi,
           GgmlType type = GgmlType::F32) {
    if (name == spec_.omit_tensor) return;
    if (name == spec_.reshape_tensor) dims = spec_.reshape_dims;
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> values(n);
    for (float& v : values) v = rng_.uniform(lo, hi);
    const TypeKernels& k = kernels().of(type);
    const int64_t rows = n / dims[0];
    const size_t rb = row_bytes(type, dims[0]);
    std::vector<uint8_t> data(rb * rows);
    for (int64_t r = 0; r < rows; ++r) {
      k.quantize_row(&values[r * dims[0]], &data[r * rb], dims[0]);
      k.dequantize_row(&data[r * rb], &values[r * dims[0]], dims[0]);
    }
    w_.add_tensor(name, type, dims, data);
    model_.weights[name] = std::move(values);
  }

  void matrix(const std::string& name, int n_in, int n_out) {
    const float a = 1.0f / std::sqrt(static_cast<float>(n_in));
    add(name, {n_in, n_out}, -a, a, spec_.matrix_type);
  }

 private:
  const TinySpec& spec_;
  TinyModel& model_;
  GgufWriter& w_;
  Random rng_;
};

inline int head_dim(const TinySpec& s) {
  return s.n_embd / s.n_head;
}
inline int n_rot(const TinySpec& s) {
  return s.n_rot > 0 ? s.n_rot : head_dim(s);
}
inline bool is_gemma(const TinySpec& s) {
  return s.arch == "gemma" || s.arch == "gemma2" || s.arch == "gemma3";
}
inline bool has_qk_norm(const TinySpec& s) {
  return s.arch == "qwen3" || s.arch == "gemma3" || s.arch == "qwen3moe";
}
inline bool has_qkv_bias(const TinySpec& s) {
  return s.arch == "qwen2" || s.arch == "qwen2moe" || s.arch == "gpt-oss";
}
inline bool gpt_oss(const TinySpec& s) {
  return s.arch == "gpt-oss";
}
inline int expert_ff(const TinySpec& s) {
  return s.n_ff_exp > 0 ? s.n_ff_exp : s.n_ff;
}
inline bool has_post_norms(const TinySpec& s) {
  return s.arch == "gemma2" || s.arch == "gemma3";
}
inline bool fused_qkv(const TinySpec& s) {
  return s.arch == "phi3" && s.fused_qkv;
}
// Whether layer l slides (GGUF sliding_window_pattern: the last layer of each period
// is global), and the window; written independently of the engine's config.cpp.
inline bool layer_slides(const TinySpec& s, int l) {
  if (s.arch == "gemma2" || s.arch == "gemma3") {
    const int period = s.swa_period > 0 ? s.swa_period : (s.arch == "gemma2" ? 2 : 6);
    const int window = s.n_swa > 0 ? s.n_swa : (s.arch == "gemma2" ? 4096 : 0);
    return window > 0 && l % period != period - 1;
  }
  if (s.arch == "llama" && s.n_swa > 0) return s.swa_period == 0 || l % s.swa_period != s.swa_period - 1;
  if (gpt_oss(s)) return l % 2 == 0;  // even layers slide
  return false;
}
inline int window(const TinySpec& s) {
  return s.n_swa > 0 ? s.n_swa : (s.arch == "gemma2" ? 4096 : 0);
}

}  // namespace detail

// The GGUF bytes of a tiny model for `s`, and the float values of its tensors.
inline TinyModel build_tiny_model(const TinySpec& s) {
  using namespace detail;
  TinyModel m;
  m.spec = s;
  GgufWriter w;
  const std::string a = s.arch;
  w.set_string("general.architecture", a);
  w.set_string("general.name", "tiny test model");
  w.set_u32(a + ".context_length", s.n_ctx_train);
  w.set_u32(a + ".embedding_length", s.n_embd);
  w.set_u32(a + ".block_count", s.n_layer);
  w.set_u32(a + ".feed_forward_length", s.n_ff);
  w.set_u32(a + ".attention.head_count", s.n_head);
  w.set_u32(a + ".attention.head_count_kv", s.n_head_kv);
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", s.rms_eps);
  w.set_f32(a + ".rope.freq_base", s.rope_base);
  w.set_u32(a + ".rope.dimension_count", n_rot(s));
  if (s.n_swa > 0) w.set_u32(a + ".attention.sliding_window", s.n_swa);
  if (s.swa_period > 0) w.set_u32(a + ".attention.sliding_window_pattern", s.swa_period);
  if (s.attn_softcap != 0) w.set_f32(a + ".attn_logit_softcapping", s.attn_softcap);
  if (s.final_softcap > 0) w.set_f32(a + ".final_logit_softcapping", s.final_softcap);
  if (!s.rope_scaling.empty()) w.set_string(a + ".rope.scaling.type", s.rope_scaling);
  if (s.rope_factor > 0) w.set_f32(a + ".rope.scaling.factor", s.rope_factor);
  if (s.n_ctx_orig > 0) w.set_u32(a + ".rope.scaling.original_context_length", s.n_ctx_orig);
  if (s.rope_attn_factor != 0) w.set_f32(a + ".rope.scaling.attn_factor", s.rope_attn_factor);
  if (s.yarn_beta_fast != 0) w.set_f32(a + ".rope.scaling.yarn_beta_fast", s.yarn_beta_fast);
  if (s.yarn_beta_slow != 0) w.set_f32(a + ".rope.scaling.yarn_beta_slow", s.yarn_beta_slow);
  if (s.n_expert > 0) {
    w.set_u32(a + ".expert_count", s.n_expert);
    w.set_u32(a + ".expert_used_count", s.n_expert_used);
    if (s.n_ff_exp > 0) w.set_u32(a + ".expert_feed_forward_length", s.n_ff_exp);
    if (s.n_ff_shexp > 0) w.set_u32(a + ".expert_shared_feed_forward_length", s.n_ff_shexp);
  }
  set_tokenizer(w, s.n_vocab);

  const int hd = head_dim(s);
  const int q_dim = s.n_head * hd;
  const int kv_dim = s.n_head_kv * hd;
  Builder b(s, m, w);
  b.add("token_embd.weight", {s.n_embd, s.n_vocab}, -1.0f, 1.0f, s.embd_type);
  if (s.rope_freqs) b.add("rope_freqs.weight", {n_rot(s) / 2}, 1.0f, 4.0f);
  if (s.longrope) {
    // Phi-3.5's long factors grow from ~1 to ~40 over the pairs, its short ones stay near 1.
    b.add("rope_factors_long.weight", {n_rot(s) / 2}, 1.0f, 8.0f);
    b.add("rope_factors_short.weight", {n_rot(s) / 2}, 1.0f, 1.5f);
  }
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    b.add(p + "attn_norm.weight", {s.n_embd}, 0.8f, 1.2f);
    if (fused_qkv(s)) {
      b.matrix(p + "attn_qkv.weight", s.n_embd, q_dim + 2 * kv_dim);  // [q; k; v] rows
    } else {
      b.matrix(p + "attn_q.weight", s.n_embd, q_dim);
      b.matrix(p + "attn_k.weight", s.n_embd, kv_dim);
      b.matrix(p + "attn_v.weight", s.n_embd, kv_dim);
    }
    if (has_qkv_bias(s)) {
      b.add(p + "attn_q.bias", {q_dim}, -0.5f, 0.5f);
      b.add(p + "attn_k.bias", {kv_dim}, -0.5f, 0.5f);
      b.add(p + "attn_v.bias", {kv_dim}, -0.5f, 0.5f);
    }
    if (has_qk_norm(s)) {
      b.add(p + "attn_q_norm.weight", {hd}, 0.6f, 1.4f);
      b.add(p + "attn_k_norm.weight", {hd}, 0.6f, 1.4f);
    }
    if (s.arch == "olmoe") {
      b.add(p + "attn_q_norm.weight", {q_dim}, 0.6f, 1.4f);
      b.add(p + "attn_k_norm.weight", {kv_dim}, 0.6f, 1.4f);
    }
    b.matrix(p + "attn_output.weight", q_dim, s.n_embd);
    if (gpt_oss(s)) {
      b.add(p + "attn_output.bias", {s.n_embd}, -0.5f, 0.5f);
      b.add(p + "attn_sinks.weight", {s.n_head}, -1.0f, 2.0f);
    }
    if (has_post_norms(s)) b.add(p + "post_attention_norm.weight", {s.n_embd}, 0.5f, 1.5f);
    // gpt-oss's feed-forward pre-norm is named post_attention_norm
    b.add(p + (gpt_oss(s) ? "post_attention_norm.weight" : "ffn_norm.weight"), {s.n_embd}, 0.8f, 1.2f);
    if (s.n_expert > 0) {
      // A wide router: picks far from ties, so rounding cannot flip them.
      const float r = 6.0f / std::sqrt(static_cast<float>(s.n_embd));
      b.add(p + "ffn_gate_inp.weight", {s.n_embd, s.n_expert}, -r, r);
      const int ff = expert_ff(s);
      const float ai = 1.0f / std::sqrt(static_cast<float>(s.n_embd)), af = 1.0f / std::sqrt(static_cast<float>(ff));
      b.add(p + "ffn_gate_exps.weight", {s.n_embd, ff, s.n_expert}, -ai, ai, s.matrix_type);
      b.add(p + "ffn_up_exps.weight", {s.n_embd, ff, s.n_expert}, -ai, ai, s.matrix_type);
      b.add(p + "ffn_down_exps.weight", {ff, s.n_embd, s.n_expert}, -af, af, s.matrix_type);
      if (gpt_oss(s)) {
        b.add(p + "ffn_gate_inp.bias", {s.n_expert}, -0.5f, 0.5f);
        b.add(p + "ffn_gate_exps.bias", {ff, s.n_expert}, -0.5f, 0.5f);
        b.add(p + "ffn_up_exps.bias", {ff, s.n_expert}, -0.5f, 0.5f);
        b.add(p + "ffn_down_exps.bias", {s.n_embd, s.n_expert}, -0.5f, 0.5f);
      }
      if (s.n_ff_shexp > 0) {
        b.add(p + "ffn_gate_inp_shexp.weight", {s.n_embd}, -ai, ai);
        b.matrix(p + "ffn_gate_shexp.weight", s.n_embd, s.n_ff_shexp);
        b.matrix(p + "ffn_up_shexp.weight", s.n_embd, s.n_ff_shexp);
        b.matrix(p + "ffn_down_shexp.weight", s.n_ff_shexp, s.n_embd);
      }
      continue;
    }
    if (s.arch == "phi3") {
      b.matrix(p + "ffn_up.weight", s.n_embd, 2 * s.n_ff);  // [gate; up] rows
    } else {
      b.matrix(p + "ffn_gate.weight", s.n_embd, s.n_ff);
      b.matrix(p + "ffn_up.weight", s.n_embd, s.n_ff);
    }
    b.matrix(p + "ffn_down.weight", s.n_ff, s.n_embd);
    if (has_post_norms(s)) b.add(p + "post_ffw_norm.weight", {s.n_embd}, 0.5f, 1.5f);
  }
  b.add("output_norm.weight", {s.n_embd}, 0.8f, 1.2f);
  if (!s.tied) b.matrix("output.weight", s.n_embd, s.n_vocab);
  m.bytes = w.bytes();
  return m;
}

// ---------------------------------------------------------------- reference

namespace detail {

using Vec = std::vector<double>;

inline const std::vector<float>& weight(const TinyModel& m, const std::string& name) {
  return m.weights.at(name);
}

inline Vec rms_norm(const Vec& x, const std::vector<float>& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double scale = 1.0 / std::sqrt(ss / x.size() + eps);
  Vec out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * scale * w[i];
  return out;
}

// W [n_out][n_in] times x [n_in].
inline Vec matvec(const std::vector<float>& w, const Vec& x) {
  const size_t n_in = x.size();
  Vec out(w.size() / n_in);
  for (size_t r = 0; r < out.size(); ++r) {
    double sum = 0;
    for (size_t i = 0; i < n_in; ++i) sum += w[r * n_in + i] * x[i];
    out[r] = sum;
  }
  return out;
}

// Rows [first, first + n) of a row-major matrix of n_in columns (a fused tensor's part).
inline std::vector<float> rows(const std::vector<float>& w, int first, int n, int n_in) {
  return std::vector<float>(w.begin() + static_cast<size_t>(first) * n_in,
                            w.begin() + static_cast<size_t>(first + n) * n_in);
}

// How a position turns each pair: the base, per-pair divisors, linear or YaRN scaling
// and the cos/sin magnitude.
struct RefRope {
  double base = 10000.0;
  const std::vector<float>* factors = nullptr;
  double freq_scale = 1.0;   // 1 / rope.scaling.factor
  double magnitude = 1.0;    // rope.scaling.attn_factor (times YaRN's 1 + 0.1 ln(factor))
  bool yarn = false;
  double n_ctx_orig = 0;     // YaRN: pairs turning > beta_fast times over it keep their
  double beta_fast = 32;     // angle, < beta_slow times are scaled, a linear ramp over
  double beta_slow = 1;      // the pairs between
};

// The angle of pair i of `rot` at `pos`. YaRN as llama.cpp discretizes it: the ramp's
// ends are the pair indices (floored / ceiled) where the pair turns beta_fast and
// beta_slow times over the original context.
inline double rope_angle(const RefRope& r, int rot, int pos, int i) {
  double wavelength = 2 * M_PI * std::pow(r.base, 2.0 * i / rot);  // positions per turn
  if (r.factors) wavelength *= (*r.factors)[i];
  const double extrapolated = pos * 2 * M_PI / wavelength;
  if (!r.yarn) return extrapolated * r.freq_scale;
  const auto pair_turning = [&](double turns) {  // solves n_ctx_orig / wavelength_d = turns
    return rot / 2.0 * std::log(r.n_ctx_orig / (2 * M_PI * turns)) / std::log(r.base);
  };
  const double lo = std::max(0.0, std::floor(pair_turning(r.beta_fast)));
  const double hi = std::min(rot - 1.0, std::ceil(pair_turning(r.beta_slow)));
  const double keep = 1.0 - std::clamp((i - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
  return extrapolated * r.freq_scale * (1 - keep) + extrapolated * keep;
}

inline void rope(Vec& x, int n_heads, int hd, int rot, int pos, bool neox, const RefRope& r) {
  for (int h = 0; h < n_heads; ++h) {
    double* v = &x[static_cast<size_t>(h) * hd];
    for (int i = 0; i < rot / 2; ++i) {
      const double theta = rope_angle(r, rot, pos, i);
      const int a = neox ? i : 2 * i;
      const int b = neox ? i + rot / 2 : 2 * i + 1;
      const double x0 = v[a], x1 = v[b];
      v[a] = r.magnitude * (x0 * std::cos(theta) - x1 * std::sin(theta));
      v[b] = r.magnitude * (x0 * std::sin(theta) + x1 * std::cos(theta));
    }
  }
}

inline double f16_round(double v) {
  return fp16_to_fp32(fp32_to_fp16(static_cast<float>(v)));
}

// W_down (silu(W_gate x) * W_up x) for row-major matrices of n_out rows.
inline Vec swiglu_ffn(const std::vector<float>& gate, const std::vector<float>& up, const std::vector<float>& down,
                      const Vec& x) {
  Vec g = matvec(gate, x);
  const Vec u = matvec(up, x);
  for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  return matvec(down, g);
}

// A mixture-of-experts feed-forward for one token: softmax over the router's logits,
// the n_expert_used most probable experts (renormalized: Mixtral, qwen3moe), their
// SwiGLU outputs weighted and summed, plus qwen2moe's sigmoid-gated shared expert.
// gpt-oss's expert activation: min(g, 7) * sigmoid(1.702 min(g, 7)) * (clamp(u, -7, 7) + 1).
inline double swiglu_oai(double g, double u) {
  const double x = std::min(g, 7.0);
  return x / (1.0 + std::exp(-1.702 * x)) * (std::clamp(u, -7.0, 7.0) + 1.0);
}

// softmax over v, in place
inline void softmax(Vec& v) {
  const double top = *std::max_element(v.begin(), v.end());
  double total = 0;
  for (double& e : v) total += (e = std::exp(e - top));
  for (double& e : v) e /= total;
}

inline Vec moe_ffn(const TinyModel& m, const std::string& p, const Vec& x) {
  const TinySpec& s = m.spec;
  Vec logits = matvec(weight(m, p + "ffn_gate_inp.weight"), x);
  if (gpt_oss(s)) {
    for (int e = 0; e < s.n_expert; ++e) logits[e] += weight(m, p + "ffn_gate_inp.bias")[e];
  }
  Vec probs = logits;
  if (!gpt_oss(s)) softmax(probs);  // gpt-oss ranks the logits themselves
  std::vector<int> order(s.n_expert);
  for (int e = 0; e < s.n_expert; ++e) order[e] = e;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return probs[a] > probs[b]; });
  const bool renormalize = s.arch == "llama" || s.arch == "qwen3moe";
  double picked = 0;
  for (int j = 0; j < s.n_expert_used; ++j) picked += probs[order[j]];
  if (gpt_oss(s)) {  // the softmax of the picked logits
    Vec top(s.n_expert_used);
    for (int j = 0; j < s.n_expert_used; ++j) top[j] = logits[order[j]];
    softmax(top);
    for (int j = 0; j < s.n_expert_used; ++j) probs[order[j]] = top[j];
  }
  const int ff = expert_ff(s);
  const size_t in_size = static_cast<size_t>(s.n_embd) * ff;  // elements of one expert's matrix
  const auto expert = [&](const char* name, int e) {
    const std::vector<float>& stack = weight(m, p + name);
    return std::vector<float>(stack.begin() + e * in_size, stack.begin() + (e + 1) * in_size);
  };
  // row e of a bias stack [n, n_expert]
  const auto bias = [&](const char* name, int e, size_t i, size_t n) {
    return static_cast<double>(weight(m, p + name)[static_cast<size_t>(e) * n + i]);
  };
  Vec out(x.size(), 0.0);
  for (int j = 0; j < s.n_expert_used; ++j) {
    const int e = order[j];
    const double w = renormalize ? probs[e] / picked : probs[e];
    Vec y;
    if (gpt_oss(s)) {
      Vec g = matvec(expert("ffn_gate_exps.weight", e), x);
      const Vec u = matvec(expert("ffn_up_exps.weight", e), x);
      for (size_t i = 0; i < g.size(); ++i) {
        g[i] = swiglu_oai(g[i] + bias("ffn_gate_exps.bias", e, i, ff), u[i] + bias("ffn_up_exps.bias", e, i, ff));
      }
      y = matvec(expert("ffn_down_exps.weight", e), g);
      for (size_t i = 0; i < y.size(); ++i) y[i] += bias("ffn_down_exps.bias", e, i, y.size());
    } else {
      y = swiglu_ffn(expert("ffn_gate_exps.weight", e), expert("ffn_up_exps.weight", e),
                     expert("ffn_down_exps.weight", e), x);
    }
    for (size_t i = 0; i < out.size(); ++i) out[i] += w * y[i];
  }
  if (s.n_ff_shexp > 0) {
    const Vec g = matvec(weight(m, p + "ffn_gate_inp_shexp.weight"), x);
    const double gate = 1.0 / (1.0 + std::exp(-g[0]));
    const Vec y = swiglu_ffn(weight(m, p + "ffn_gate_shexp.weight"), weight(m, p + "ffn_up_shexp.weight"),
                             weight(m, p + "ffn_down_shexp.weight"), x);
    for (size_t i = 0; i < out.size(); ++i) out[i] += gate * y[i];
  }
  return out;
}

}  // namespace detail

// Logits [tokens.size(), n_vocab] of every position for tokens at positions 0, 1, ...
// K and V are rounded to f16 as the engine's cache stores them, and so are the query
// and the probabilities that meet them in f16 dot products (as in llama.cpp). n_ctx: the
// session's context, which picks phi3's long LongRoPE factors when above n_ctx_orig.
inline std::vector<float> reference_logits(const TinyModel& m, const std::vector<int32_t>& tokens,
                                           int n_ctx = 0) {
  using namespace detail;
  const TinySpec& s = m.spec;
  const int hd = head_dim(s);
  const int rot = n_rot(s);
  const bool qkv_bias = has_qkv_bias(s);
  const bool neox = s.arch != "llama";
  const bool tied = s.tied || s.arch == "gemma" || s.arch == "gemma2";
  // gemma2 files without the keys get Gemma 2's caps, 50 and 30
  const double attn_cap = s.attn_softcap != 0 ? s.attn_softcap : (s.arch == "gemma2" ? 50.0 : 0.0);
  const double final_cap = s.final_softcap != 0 ? s.final_softcap : (s.arch == "gemma2" ? 30.0 : 0.0);
  const int group = s.n_head / s.n_head_kv;
  const std::vector<float>* factors = s.rope_freqs ? &weight(m, "rope_freqs.weight") : nullptr;
  const int n_ctx_orig = s.n_ctx_orig > 0 ? s.n_ctx_orig : s.n_ctx_train;
  if (s.longrope) {
    factors = &weight(m, n_ctx > n_ctx_orig ? "rope_factors_long.weight" : "rope_factors_short.weight");
  }
  RefRope rope_of;  // the base is per layer
  rope_of.factors = factors;
  rope_of.magnitude = s.rope_attn_factor > 0 ? s.rope_attn_factor : 1.0;
  if (s.rope_factor > 0 && !s.rope_scaling.empty()) rope_of.freq_scale = 1.0 / s.rope_factor;
  if (s.rope_scaling == "yarn") {
    rope_of.yarn = true;
    rope_of.n_ctx_orig = n_ctx_orig;
    if (s.yarn_beta_fast > 0) rope_of.beta_fast = s.yarn_beta_fast;
    if (s.yarn_beta_slow > 0) rope_of.beta_slow = s.yarn_beta_slow;
    rope_of.magnitude *= 1.0 + 0.1 * std::log(s.rope_factor);
  }
  // cache[layer][pos]: the f16-rounded k and v of every position so far
  std::vector<std::vector<Vec>> k_cache(s.n_layer), v_cache(s.n_layer);
  std::vector<float> logits;

  for (size_t pos = 0; pos < tokens.size(); ++pos) {
    const std::vector<float>& embd = weight(m, "token_embd.weight");
    Vec x(embd.begin() + static_cast<size_t>(tokens[pos]) * s.n_embd,
          embd.begin() + static_cast<size_t>(tokens[pos] + 1) * s.n_embd);
    if (is_gemma(s)) {
      for (double& e : x) e *= std::sqrt(static_cast<float>(s.n_embd));
    }
    for (int l = 0; l < s.n_layer; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      const Vec xb = rms_norm(x, weight(m, p + "attn_norm.weight"), s.rms_eps);
      const int q_rows = s.n_head * hd, kv_rows = s.n_head_kv * hd;
      const std::vector<float>* qkv = fused_qkv(s) ? &weight(m, p + "attn_qkv.weight") : nullptr;
      const auto part = [&](int first, int n, const char* separate) {
        return qkv ? rows(*qkv, first, n, s.n_embd) : weight(m, p + separate);
      };
      Vec q = matvec(part(0, q_rows, "attn_q.weight"), xb);
      Vec k = matvec(part(q_rows, kv_rows, "attn_k.weight"), xb);
      Vec v = matvec(part(q_rows + kv_rows, kv_rows, "attn_v.weight"), xb);
      if (qkv_bias) {
        for (size_t i = 0; i < q.size(); ++i) q[i] += weight(m, p + "attn_q.bias")[i];
        for (size_t i = 0; i < k.size(); ++i) k[i] += weight(m, p + "attn_k.bias")[i];
        for (size_t i = 0; i < v.size(); ++i) v[i] += weight(m, p + "attn_v.bias")[i];
      }
      if (has_qk_norm(s)) {
        for (int h = 0; h < s.n_head + s.n_head_kv; ++h) {
          Vec& t = h < s.n_head ? q : k;
          const int at = (h < s.n_head ? h : h - s.n_head) * hd;
          const Vec head(t.begin() + at, t.begin() + at + hd);
          const Vec normed = rms_norm(head, weight(m, p + (h < s.n_head ? "attn_q_norm.weight" : "attn_k_norm.weight")), s.rms_eps);
          std::copy(normed.begin(), normed.end(), t.begin() + at);
        }
      }
      if (s.arch == "olmoe") {
        q = rms_norm(q, weight(m, p + "attn_q_norm.weight"), s.rms_eps);
        k = rms_norm(k, weight(m, p + "attn_k_norm.weight"), s.rms_eps);
      }
      const bool slides = layer_slides(s, l);
      rope_of.base = slides && s.arch == "gemma3" ? 10000.0 : s.rope_base;
      rope(q, s.n_head, hd, rot, static_cast<int>(pos), neox, rope_of);
      rope(k, s.n_head_kv, hd, rot, static_cast<int>(pos), neox, rope_of);
      for (double& e : k) e = f16_round(e);
      for (double& e : v) e = f16_round(e);
      k_cache[l].push_back(k);
      v_cache[l].push_back(v);

      Vec attn(static_cast<size_t>(s.n_head) * hd, 0.0);
      for (int h = 0; h < s.n_head; ++h) {
        const int kvh = h / group;
        // keys [first, pos]: all before, or the window of a sliding layer
        const size_t first = slides && pos + 1 > static_cast<size_t>(window(s)) ? pos + 1 - window(s) : 0;
        Vec scores(pos + 1, 0.0);
        double max_score = -1e300;
        for (size_t t = first; t <= pos; ++t) {
          double dot = 0;
          for (int d = 0; d < hd; ++d) {
            dot += f16_round(q[h * hd + d]) * k_cache[l][t][kvh * hd + d];
          }
          scores[t] = dot / std::sqrt(static_cast<double>(hd));
          if (attn_cap > 0) scores[t] = attn_cap * std::tanh(scores[t] / attn_cap);
          max_score = std::max(max_score, scores[t]);
        }
        // gpt-oss: the head's sink joins the max and the sum
        const double sink = gpt_oss(s) ? weight(m, p + "attn_sinks.weight")[h] : -1e300;
        max_score = std::max(max_score, sink);
        double sum = gpt_oss(s) ? std::exp(sink - max_score) : 0.0;
        for (size_t t = first; t <= pos; ++t) sum += (scores[t] = std::exp(scores[t] - max_score));
        for (size_t t = first; t <= pos; ++t) {
          for (int d = 0; d < hd; ++d) {
            attn[h * hd + d] += f16_round(scores[t] / sum) * v_cache[l][t][kvh * hd + d];
          }
        }
      }
      Vec o = matvec(weight(m, p + "attn_output.weight"), attn);
      if (gpt_oss(s)) {
        for (size_t i = 0; i < o.size(); ++i) o[i] += weight(m, p + "attn_output.bias")[i];
      }
      if (has_post_norms(s)) o = rms_norm(o, weight(m, p + "post_attention_norm.weight"), s.rms_eps);
      for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];

      const Vec xf = rms_norm(x, weight(m, p + (gpt_oss(s) ? "post_attention_norm.weight" : "ffn_norm.weight")), s.rms_eps);
      if (s.n_expert > 0) {
        const Vec d = moe_ffn(m, p, xf);
        for (size_t i = 0; i < x.size(); ++i) x[i] += d[i];
        continue;
      }
      const bool phi3 = s.arch == "phi3";  // ffn_up holds the gate rows, then the up rows
      const std::vector<float>& w_up = weight(m, p + "ffn_up.weight");
      Vec g = matvec(phi3 ? rows(w_up, 0, s.n_ff, s.n_embd) : weight(m, p + "ffn_gate.weight"), xf);
      const Vec u = matvec(phi3 ? rows(w_up, s.n_ff, s.n_ff, s.n_embd) : w_up, xf);
      for (size_t i = 0; i < g.size(); ++i) {
        const double a = is_gemma(s) ? 0.5 * g[i] * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g[i] + 0.044715 * g[i] * g[i] * g[i])))
                                     : g[i] / (1.0 + std::exp(-g[i]));
        g[i] = a * u[i];
      }
      Vec d = matvec(weight(m, p + "ffn_down.weight"), g);
      if (has_post_norms(s)) d = rms_norm(d, weight(m, p + "post_ffw_norm.weight"), s.rms_eps);
      for (size_t i = 0; i < x.size(); ++i) x[i] += d[i];
    }
    const Vec xn = rms_norm(x, weight(m, "output_norm.weight"), s.rms_eps);
    Vec out = matvec(weight(m, tied ? "token_embd.weight" : "output.weight"), xn);
    if (final_cap > 0) {
      for (double& e : out) e = final_cap * std::tanh(e / final_cap);
    }
    logits.insert(logits.end(), out.begin(), out.end());
  }
  return logits;
}

// max |a - b| / max |b|: the error relative to the reference's scale.
inline double max_relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || b.empty()) return INFINITY;
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(b[i])));
  }
  return max_ref > 0 ? max_diff / max_ref : max_diff;
}

}  // namespace runnel::test
