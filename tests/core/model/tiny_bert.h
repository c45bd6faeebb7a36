// A tiny synthetic encoder-only embedding model (bert or nomic-bert) for tests: random
// weights and biases written with GgufWriter, the tiny SPM vocabulary of tiny_model.h
// (the tokenizer does not matter to the forward pass), and an independent float
// reference (layer by layer over the whole input, double accumulators) of the pooled
// embedding. Header-only, like tiny_model.h.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "tests/core/model/tiny_model.h"

namespace runnel::test {

struct TinyBertSpec {
  // "bert": learned positions, token types, separate q/k/v, every bias, GELU ffn;
  // "nomic-bert": neox rope, fused attn_qkv, SwiGLU ffn, no biases.
  std::string arch = "bert";
  int n_layer = 2;
  int n_embd = 64;
  int n_head = 4;
  int n_ff = 96;
  int n_vocab = 40;
  int n_ctx_train = 32;
  float norm_eps = 1e-12f;
  float rope_base = 1000.0f;
  int pooling_type = 1;  // {arch}.pooling_type; -1: the key is not written
  int causal = 0;        // {arch}.attention.causal: 0 false, 1 true, -1 not written (llama.cpp: causal)
  bool token_types = true;
  bool token_type_count = true;  // tokenizer.ggml.token_type_count = 2 written
  bool layer_norm_eps = true;    // attention.layer_norm_epsilon written
  uint32_t seed = 1;
  std::string omit_tensor;     // malformed variants, as in TinySpec
  std::string reshape_tensor;
  std::vector<int64_t> reshape_dims;
};

namespace detail {

inline bool is_bert(const TinyBertSpec& s) { return s.arch == "bert"; }

}  // namespace detail

inline TinyModel build_tiny_bert(const TinyBertSpec& s) {
  using namespace detail;
  TinyModel m;
  // The fields Builder reads from a TinySpec: seed, the malformed variants, matrix type.
  m.spec.seed = s.seed;
  m.spec.omit_tensor = s.omit_tensor;
  m.spec.reshape_tensor = s.reshape_tensor;
  m.spec.reshape_dims = s.reshape_dims;
  GgufWriter w;
  const std::string a = s.arch;
  w.set_string("general.architecture", a);
  w.set_u32(a + ".context_length", s.n_ctx_train);
  w.set_u32(a + ".embedding_length", s.n_embd);
  w.set_u32(a + ".block_count", s.n_layer);
  w.set_u32(a + ".feed_forward_length", s.n_ff);
  w.set_u32(a + ".attention.head_count", s.n_head);
  if (s.layer_norm_eps) w.set_f32(a + ".attention.layer_norm_epsilon", s.norm_eps);
  if (s.causal >= 0) w.set_bool(a + ".attention.causal", s.causal == 1);
  if (s.pooling_type >= 0) w.set_u32(a + ".pooling_type", static_cast<uint32_t>(s.pooling_type));
  if (!is_bert(s)) w.set_f32(a + ".rope.freq_base", s.rope_base);
  set_tokenizer(w, s.n_vocab);
  if (s.token_type_count) w.set_u32("tokenizer.ggml.token_type_count", 2);

  const int e = s.n_embd;
  Builder b(m.spec, m, w);
  b.add("token_embd.weight", {e, s.n_vocab}, -1.0f, 1.0f);
  if (s.token_types) b.add("token_types.weight", {e, 2}, -0.5f, 0.5f);
  if (is_bert(s)) b.add("position_embd.weight", {e, s.n_ctx_train}, -0.5f, 0.5f, GgmlType::F16);
  b.add("token_embd_norm.weight", {e}, 0.8f, 1.2f);
  b.add("token_embd_norm.bias", {e}, -0.2f, 0.2f);
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    if (is_bert(s)) {
      for (const char* t : {"attn_q", "attn_k", "attn_v"}) {
        b.matrix(p + t + ".weight", e, e);
        b.add(p + t + ".bias", {e}, -0.5f, 0.5f);
      }
    } else {
      b.matrix(p + "attn_qkv.weight", e, 3 * e);  // [q; k; v] rows
    }
    b.matrix(p + "attn_output.weight", e, e);
    if (is_bert(s)) b.add(p + "attn_output.bias", {e}, -0.5f, 0.5f);
    b.add(p + "attn_output_norm.weight", {e}, 0.8f, 1.2f);
    b.add(p + "attn_output_norm.bias", {e}, -0.2f, 0.2f);
    if (!is_bert(s)) b.matrix(p + "ffn_gate.weight", e, s.n_ff);
    b.matrix(p + "ffn_up.weight", e, s.n_ff);
    if (is_bert(s)) b.add(p + "ffn_up.bias", {s.n_ff}, -0.5f, 0.5f);
    b.matrix(p + "ffn_down.weight", s.n_ff, e);
    if (is_bert(s)) b.add(p + "ffn_down.bias", {e}, -0.5f, 0.5f);
    b.add(p + "layer_output_norm.weight", {e}, 0.8f, 1.2f);
    b.add(p + "layer_output_norm.bias", {e}, -0.2f, 0.2f);
  }
  m.bytes = w.bytes();
  return m;
}

namespace detail {

inline Vec layer_norm(const Vec& x, const std::vector<float>& w, const std::vector<float>& b, double eps) {
  double mean = 0;
  for (double v : x) mean += v;
  mean /= x.size();
  double var = 0;
  for (double v : x) var += (v - mean) * (v - mean);
  var /= x.size();
  Vec out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = (x[i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
  return out;
}

inline void add_bias(Vec& x, const TinyModel& m, const std::string& name) {
  const std::vector<float>& b = weight(m, name);
  for (size_t i = 0; i < x.size(); ++i) x[i] += b[i];
}

}  // namespace detail

// The pooled embedding [n_embd] of tokens at positions 0, 1, ... before any
// normalization. As in the engine (and llama.cpp), k and v are rounded to f16, and so
// are the queries and probabilities that meet them; every token attends to every
// token unless causal.
inline std::vector<float> reference_embedding(const TinyModel& m, const TinyBertSpec& s,
                                              const std::vector<int32_t>& tokens) {
  using namespace detail;
  const int n = static_cast<int>(tokens.size());
  const int e = s.n_embd, hd = s.n_embd / s.n_head;
  const bool bert = is_bert(s);
  const bool causal = s.causal != 0;
  std::vector<Vec> x(n);
  for (int i = 0; i < n; ++i) {
    const std::vector<float>& embd = weight(m, "token_embd.weight");
    x[i] = Vec(embd.begin() + static_cast<size_t>(tokens[i]) * e, embd.begin() + static_cast<size_t>(tokens[i] + 1) * e);
    for (int d = 0; d < e; ++d) {
      if (s.token_types) x[i][d] += weight(m, "token_types.weight")[d];  // type 0's row
      if (bert) x[i][d] += weight(m, "position_embd.weight")[static_cast<size_t>(i) * e + d];
    }
    x[i] = layer_norm(x[i], weight(m, "token_embd_norm.weight"), weight(m, "token_embd_norm.bias"), s.norm_eps);
  }
  RefRope rope_of;
  rope_of.base = s.rope_base;
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    std::vector<Vec> q(n), k(n), v(n);
    for (int i = 0; i < n; ++i) {
      const auto part = [&](int first, const char* separate) {
        return bert ? weight(m, p + separate + ".weight") : rows(weight(m, p + "attn_qkv.weight"), first, e, e);
      };
      q[i] = matvec(part(0, "attn_q"), x[i]);
      k[i] = matvec(part(e, "attn_k"), x[i]);
      v[i] = matvec(part(2 * e, "attn_v"), x[i]);
      if (bert) {
        add_bias(q[i], m, p + "attn_q.bias");
        add_bias(k[i], m, p + "attn_k.bias");
        add_bias(v[i], m, p + "attn_v.bias");
      } else {
        rope(q[i], s.n_head, hd, hd, i, true, rope_of);
        rope(k[i], s.n_head, hd, hd, i, true, rope_of);
      }
      for (double& t : k[i]) t = f16_round(t);
      for (double& t : v[i]) t = f16_round(t);
    }
    for (int i = 0; i < n; ++i) {
      const int n_keys = causal ? i + 1 : n;
      Vec attn(e, 0.0);
      for (int h = 0; h < s.n_head; ++h) {
        Vec scores(n_keys);
        double max_score = -1e300;
        for (int t = 0; t < n_keys; ++t) {
          double dot = 0;
          for (int d = 0; d < hd; ++d) dot += f16_round(q[i][h * hd + d]) * k[t][h * hd + d];
          scores[t] = dot / std::sqrt(static_cast<double>(hd));
          max_score = std::max(max_score, scores[t]);
        }
        double sum = 0;
        for (double& sc : scores) sum += (sc = std::exp(sc - max_score));
        for (int t = 0; t < n_keys; ++t) {
          for (int d = 0; d < hd; ++d) attn[h * hd + d] += f16_round(scores[t] / sum) * v[t][h * hd + d];
        }
      }
      Vec o = matvec(weight(m, p + "attn_output.weight"), attn);
      if (bert) add_bias(o, m, p + "attn_output.bias");
      for (int d = 0; d < e; ++d) o[d] += x[i][d];
      q[i] = layer_norm(o, weight(m, p + "attn_output_norm.weight"), weight(m, p + "attn_output_norm.bias"), s.norm_eps);
    }
    for (int i = 0; i < n; ++i) {  // q[i] holds the attention block's output now
      const Vec& h = q[i];
      Vec up = matvec(weight(m, p + "ffn_up.weight"), h);
      if (bert) {
        add_bias(up, m, p + "ffn_up.bias");
        for (double& u : up) u = 0.5 * u * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (u + 0.044715 * u * u * u)));
      } else {
        const Vec g = matvec(weight(m, p + "ffn_gate.weight"), h);
        for (size_t j = 0; j < up.size(); ++j) up[j] *= g[j] / (1.0 + std::exp(-g[j]));
      }
      Vec d = matvec(weight(m, p + "ffn_down.weight"), up);
      if (bert) add_bias(d, m, p + "ffn_down.bias");
      for (int j = 0; j < e; ++j) d[j] += h[j];
      x[i] = layer_norm(d, weight(m, p + "layer_output_norm.weight"), weight(m, p + "layer_output_norm.bias"), s.norm_eps);
    }
  }
  std::vector<float> out(e, 0.0f);
  for (int d = 0; d < e; ++d) {
    double sum = 0;
    if (s.pooling_type == 2) sum = x[0][d];
    else if (s.pooling_type == 3) sum = x[n - 1][d];
    else {
      for (int i = 0; i < n; ++i) sum += x[i][d];
      sum /= n;
    }
    out[d] = static_cast<float>(sum);
  }
  return out;
}

}  // namespace runnel::test
