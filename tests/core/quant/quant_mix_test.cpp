// The per-tensor types of every mix, against tables recorded from llama-quantize
// (llama.cpp de3ff81, `llama-quantize --dry-run`) on the same shapes: Llama-3.2-1B's
// (16 layers, rows of 2048 and 8192, grouped-query attention 32/8, tied embeddings) and
// SmolLM2-135M's (30 layers, rows of 576: not whole k-quant super-blocks, so the
// fallbacks show; 9/3 heads), plus a 4-expert MoE stack for MXFP4_MOE.
#include <catch2/catch.hpp>
#include <map>
#include <sstream>

#include "core/quant/quant_mix.h"

namespace runnel {
namespace {

struct Shape {
  int n_layer, n_embd, n_ff, n_head, n_head_kv, n_expert;
  bool tied;
};

GgufTensorInfo tensor(const std::string& name, GgmlType type, std::vector<int64_t> dims) {
  GgufTensorInfo t;
  t.name = name;
  t.type = type;
  t.dims = std::move(dims);
  return t;
}

// A llama-family model's tensors in GGUF order (as the converter writes them: not the
// order the rules visit them in).
std::vector<GgufTensorInfo> llama_tensors(const Shape& s) {
  const int64_t e = s.n_embd, kv = s.n_embd / s.n_head * s.n_head_kv, ff = s.n_ff, v = 1000;
  std::vector<GgufTensorInfo> ts{tensor("token_embd.weight", GgmlType::F16, {e, v})};
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    ts.push_back(tensor(b + "attn_norm.weight", GgmlType::F32, {e}));
    ts.push_back(tensor(b + "attn_q.weight", GgmlType::F16, {e, e}));
    ts.push_back(tensor(b + "attn_k.weight", GgmlType::F16, {e, kv}));
    ts.push_back(tensor(b + "attn_v.weight", GgmlType::F16, {e, kv}));
    ts.push_back(tensor(b + "attn_output.weight", GgmlType::F16, {e, e}));
    ts.push_back(tensor(b + "ffn_norm.weight", GgmlType::F32, {e}));
    if (s.n_expert > 0) {
      ts.push_back(tensor(b + "ffn_gate_inp.weight", GgmlType::F32, {e, s.n_expert}));
      ts.push_back(tensor(b + "ffn_gate_exps.weight", GgmlType::F16, {e, ff, s.n_expert}));
      ts.push_back(tensor(b + "ffn_up_exps.weight", GgmlType::F16, {e, ff, s.n_expert}));
      ts.push_back(tensor(b + "ffn_down_exps.weight", GgmlType::F16, {ff, e, s.n_expert}));
    } else {
      ts.push_back(tensor(b + "ffn_gate.weight", GgmlType::F16, {e, ff}));
      ts.push_back(tensor(b + "ffn_up.weight", GgmlType::F16, {e, ff}));
      ts.push_back(tensor(b + "ffn_down.weight", GgmlType::F16, {ff, e}));
    }
  }
  ts.push_back(tensor("output_norm.weight", GgmlType::F32, {e}));
  if (!s.tied) ts.push_back(tensor("output.weight", GgmlType::F16, {e, v}));
  return ts;
}

MixModelInfo info_of(const Shape& s) {
  MixModelInfo m;
  m.arch = "llama";
  m.n_layer = s.n_layer;
  m.n_head = s.n_head;
  m.n_head_kv = s.n_head_kv;
  m.n_expert = s.n_expert;
  return m;
}

// Expected types: per tensor role, one type for every layer or one per layer.
struct Expected {
  std::string token_embd, attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down;
};

std::string layer_type(const std::string& spec, int layer) {
  std::istringstream in(spec);
  std::vector<std::string> types;
  for (std::string t; in >> t;) types.push_back(t);
  return types.size() == 1 ? types[0] : types.at(static_cast<size_t>(layer));
}

void check_mix(const Shape& shape, const std::string& mix_name, const Expected& want) {
  INFO("mix " << mix_name);
  const QuantMix* mix = find_quant_mix(mix_name);
  REQUIRE(mix != nullptr);
  const std::vector<GgufTensorInfo> ts = llama_tensors(shape);
  const std::vector<GgmlType> got = choose_tensor_types(*mix, info_of(shape), ts, MixOptions{});
  const std::map<std::string, const std::string*> role{
      {"attn_q", &want.attn_q},     {"attn_k", &want.attn_k},   {"attn_v", &want.attn_v},
      {"attn_output", &want.attn_output}, {"ffn_gate", &want.ffn_gate}, {"ffn_up", &want.ffn_up},
      {"ffn_down", &want.ffn_down}};
  for (size_t i = 0; i < ts.size(); ++i) {
    const std::string& name = ts[i].name;
    INFO("tensor " << name);
    std::string expected = "F32";
    if (name == "token_embd.weight") {
      expected = want.token_embd;
    } else if (name.rfind("blk.", 0) == 0 && name.find("norm") == std::string::npos) {
      const int layer = std::stoi(name.substr(4));
      const std::string r = name.substr(name.find('.', 4) + 1, name.rfind(".weight") - name.find('.', 4) - 1);
      expected = layer_type(*role.at(r), layer);
    }
    CHECK(std::string(traits(got[i]).name) == expected);
  }
}

const Shape kLlama1b{16, 2048, 8192, 32, 8, 0, true};
const Shape kSmolLm2{30, 576, 1536, 9, 3, 0, true};

}  // namespace

TEST_CASE("quant mixes: Llama-3.2-1B shape, as llama-quantize chooses", "[quant]") {
  const std::string q4k_more = "Q6_K Q6_K Q4_K Q4_K Q6_K Q4_K Q4_K Q6_K Q4_K Q4_K Q6_K Q4_K Q4_K Q6_K Q6_K Q6_K";
  const std::string q5k_more = "Q6_K Q6_K Q5_K Q5_K Q6_K Q5_K Q5_K Q6_K Q5_K Q5_K Q6_K Q5_K Q5_K Q6_K Q6_K Q6_K";
  const std::string first2 = " Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K";
  const std::string iq4 = " IQ4_NL IQ4_NL IQ4_NL IQ4_NL IQ4_NL IQ4_NL IQ4_NL IQ4_NL IQ4_NL IQ4_NL IQ4_NL IQ4_NL IQ4_NL IQ4_NL";
  const std::string ixs = " IQ4_XS IQ4_XS IQ4_XS IQ4_XS IQ4_XS IQ4_XS IQ4_XS IQ4_XS IQ4_XS IQ4_XS IQ4_XS IQ4_XS IQ4_XS IQ4_XS";
  check_mix(kLlama1b, "Q2_K", {"Q6_K", "Q2_K", "Q2_K", "Q4_K", "Q3_K", "Q2_K", "Q2_K", "Q3_K"});
  check_mix(kLlama1b, "Q3_K_S", {"Q6_K", "Q3_K", "Q3_K", "Q3_K", "Q3_K", "Q3_K", "Q3_K", "Q3_K"});
  check_mix(kLlama1b, "Q3_K_M", {"Q6_K", "Q3_K", "Q3_K", "Q5_K Q5_K" + first2, "Q4_K", "Q3_K", "Q3_K",
                                 "Q5_K Q4_K" + first2});
  check_mix(kLlama1b, "Q3_K_L", {"Q6_K", "Q3_K", "Q3_K", "Q5_K", "Q5_K", "Q3_K", "Q3_K", "Q5_K"});
  check_mix(kLlama1b, "Q4_K_S", {"Q6_K", "Q4_K", "Q4_K", "Q5_K Q5_K Q5_K Q5_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K",
                                 "Q4_K", "Q4_K", "Q4_K", "Q5_K Q5_K" + first2});
  check_mix(kLlama1b, "Q4_K_M", {"Q6_K", "Q4_K", "Q4_K", q4k_more, "Q4_K", "Q4_K", "Q4_K", q4k_more});
  check_mix(kLlama1b, "Q4_K", {"Q6_K", "Q4_K", "Q4_K", q4k_more, "Q4_K", "Q4_K", "Q4_K", q4k_more});
  check_mix(kLlama1b, "Q5_K_S", {"Q6_K", "Q5_K", "Q5_K", "Q5_K", "Q5_K", "Q5_K", "Q5_K", "Q5_K"});
  check_mix(kLlama1b, "Q5_K_M", {"Q6_K", "Q5_K", "Q5_K", q5k_more, "Q5_K", "Q5_K", "Q5_K", q5k_more});
  check_mix(kLlama1b, "Q6_K", {"Q6_K", "Q6_K", "Q6_K", "Q6_K", "Q6_K", "Q6_K", "Q6_K", "Q6_K"});
  check_mix(kLlama1b, "IQ4_NL", {"Q6_K", "IQ4_NL", "IQ4_NL", "Q5_K", "IQ4_NL", "IQ4_NL", "IQ4_NL", "Q5_K Q5_K" + iq4});
  check_mix(kLlama1b, "IQ4_XS", {"Q6_K", "IQ4_XS", "IQ4_XS", "Q5_K", "IQ4_XS", "IQ4_XS", "IQ4_XS", "Q5_K Q5_K" + ixs});
  check_mix(kLlama1b, "Q4_0", {"Q6_K", "Q4_0", "Q4_0", "Q4_0", "Q4_0", "Q4_0", "Q4_0", "Q4_0"});
  check_mix(kLlama1b, "Q8_0", {"Q8_0", "Q8_0", "Q8_0", "Q8_0", "Q8_0", "Q8_0", "Q8_0", "Q8_0"});
  check_mix(kLlama1b, "F16", {"F16", "F16", "F16", "F16", "F16", "F16", "F16", "F16"});
  check_mix(kLlama1b, "bf16", {"BF16", "BF16", "BF16", "BF16", "BF16", "BF16", "BF16", "BF16"});
}

TEST_CASE("quant mixes: rows of 576 fall back as llama-quantize's do (SmolLM2-135M shape)", "[quant]") {
  // 576 is not a multiple of 256: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K -> Q4_0,
  // IQ4_XS -> IQ4_NL; ffn_down's rows (1536) are whole super-blocks and keep the k-quant.
  std::string q4m_v, q4m_down, q5m_v, q5m_down;
  const std::string more = "111001001001001001001001001111";  // use_more_bits over 30 layers
  for (const char c : more) {
    q4m_v += c == '1' ? "Q8_0 " : "Q5_0 ";
    q4m_down += c == '1' ? "Q6_K " : "Q4_K ";
    q5m_v += c == '1' ? "Q8_0 " : "Q5_1 ";
    q5m_down += c == '1' ? "Q6_K " : "Q5_K ";
  }
  std::string iq4_down = "Q5_K Q5_K Q5_K", q4s_down = "Q5_K Q5_K Q5_K", q4s_v = "Q5_1 Q5_1 Q5_1 Q5_1";
  for (int l = 3; l < 30; ++l) iq4_down += " IQ4_XS", q4s_down += " Q4_K";
  for (int l = 4; l < 30; ++l) q4s_v += " Q5_0";
  check_mix(kSmolLm2, "Q4_K_M", {"Q8_0", "Q5_0", "Q5_0", q4m_v, "Q5_0", "Q5_0", "Q5_0", q4m_down});
  check_mix(kSmolLm2, "Q5_K_M", {"Q8_0", "Q5_1", "Q5_1", q5m_v, "Q5_1", "Q5_1", "Q5_1", q5m_down});
  check_mix(kSmolLm2, "Q4_K_S", {"Q8_0", "Q5_0", "Q5_0", q4s_v, "Q5_0", "Q5_0", "Q5_0", q4s_down});
  check_mix(kSmolLm2, "IQ4_XS", {"Q8_0", "IQ4_NL", "IQ4_NL", "IQ4_NL", "IQ4_NL", "IQ4_NL", "IQ4_NL", iq4_down});
  check_mix(kSmolLm2, "Q2_K", {"Q8_0", "Q4_0", "Q4_0", "Q4_0", "Q4_0", "Q4_0", "Q4_0", "Q3_K"});
  check_mix(kSmolLm2, "Q3_K_L", {"Q8_0", "Q4_0", "Q4_0", "Q5_1", "Q5_1", "Q4_0", "Q4_0", "Q5_K"});
  check_mix(kSmolLm2, "Q6_K", {"Q8_0", "Q8_0", "Q8_0", "Q8_0", "Q8_0", "Q8_0", "Q8_0", "Q6_K"});
}

TEST_CASE("quant mixes: options, MoE stacks, untied output", "[quant]") {
  const Shape moe{4, 256, 512, 8, 2, 4, false};
  const std::vector<GgufTensorInfo> ts = llama_tensors(moe);
  auto type_of = [&](const std::vector<GgmlType>& types, const std::string& name) {
    for (size_t i = 0; i < ts.size(); ++i)
      if (ts[i].name == name) return std::string(traits(types[i]).name);
    FAIL("no tensor " << name);
    return std::string();
  };
  const std::vector<GgmlType> mx = choose_tensor_types(*find_quant_mix("mxfp4"), info_of(moe), ts, {});
  CHECK(type_of(mx, "blk.0.ffn_up_exps.weight") == "MXFP4");
  CHECK(type_of(mx, "blk.3.ffn_down_exps.weight") == "MXFP4");
  CHECK(type_of(mx, "blk.0.attn_q.weight") == "Q8_0");
  CHECK(type_of(mx, "token_embd.weight") == "Q8_0");
  CHECK(type_of(mx, "output.weight") == "Q8_0");
  CHECK(type_of(mx, "blk.0.ffn_gate_inp.weight") == "F32");  // the router stays

  const std::vector<GgmlType> q4 = choose_tensor_types(*find_quant_mix("Q4_K_M"), info_of(moe), ts, {});
  CHECK(type_of(q4, "token_embd.weight") == "Q4_K");  // untied: the embedding is only a lookup
  CHECK(type_of(q4, "output.weight") == "Q6_K");
  // use_more_bits over 4 layers: only the last (i >= 7 * 4 / 8).
  CHECK(type_of(q4, "blk.0.ffn_down_exps.weight") == "Q4_K");
  CHECK(type_of(q4, "blk.3.ffn_down_exps.weight") == "Q6_K");

  MixOptions pure;
  pure.pure = true;
  const std::vector<GgmlType> p = choose_tensor_types(*find_quant_mix("Q4_K_M"), info_of(moe), ts, pure);
  CHECK(type_of(p, "output.weight") == "Q4_K");
  CHECK(type_of(p, "blk.0.ffn_down_exps.weight") == "Q4_K");
  CHECK(type_of(p, "blk.0.attn_norm.weight") == "F32");

  MixOptions over;
  over.output_type = GgmlType::Q8_0;
  over.token_embd_type = GgmlType::F16;
  const std::vector<GgmlType> o = choose_tensor_types(*find_quant_mix("Q4_K_M"), info_of(moe), ts, over);
  CHECK(type_of(o, "output.weight") == "Q8_0");
  CHECK(type_of(o, "token_embd.weight") == "F16");
}

TEST_CASE("quant mixes: names, aliases and the write order", "[quant]") {
  CHECK(find_quant_mix("q4_k_m")->file_type == 15);
  CHECK(find_quant_mix("Q4_K")->file_type == 15);
  CHECK(find_quant_mix("Q3_K")->file_type == 12);
  CHECK(find_quant_mix("Q5_K")->file_type == 17);
  CHECK(find_quant_mix("IQ4_XS")->file_type == 30);
  CHECK(find_quant_mix("MXFP4")->file_type == 38);
  CHECK(find_quant_mix("F32")->file_type == 0);
  CHECK(find_quant_mix("BF16")->file_type == 32);
  CHECK(find_quant_mix("Q8_0")->file_type == 7);
  CHECK(find_quant_mix("Q4_K_X") == nullptr);
  CHECK(find_quant_mix("IQ2_XXS") == nullptr);
  CHECK(parse_ggml_type("q6_k") == GgmlType::Q6_K);
  CHECK(!parse_ggml_type("Q8_K").has_value());  // an activation format, never stored

  const std::vector<GgufTensorInfo> ts{tensor("blk.10.attn_q.weight", GgmlType::F16, {32, 32}),
                                       tensor("token_embd.weight", GgmlType::F16, {32, 32}),
                                       tensor("blk.2.ffn_up.weight", GgmlType::F16, {32, 32}),
                                       tensor("blk.2.attn_k.weight", GgmlType::F16, {32, 32}),
                                       tensor("output_norm.weight", GgmlType::F32, {32})};
  // Outside the layers first, by name; then by layer number (2 before 10), by name.
  CHECK(quantization_order(ts) == std::vector<size_t>{4, 1, 3, 2, 0});
}

}  // namespace runnel
