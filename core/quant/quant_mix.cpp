// The per-tensor type rules of llama.cpp's quantization mixes (see quant_mix.h and the
// table in core/quant/README.md). Only the mixes runnel can write are here: the IQ1/IQ2/
// IQ3 targets, and Q2_K_S (which needs an importance matrix), are not.
#include "core/quant/quant_mix.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>

namespace runnel {
namespace {

using T = GgmlType;

// llama.cpp's LLAMA_FTYPE values (include/llama.h); never renumber.
enum FileType : uint32_t {
  kAllF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 7, kQ5_0 = 8, kQ5_1 = 9,
  kQ2_K = 10, kQ3_K_S = 11, kQ3_K_M = 12, kQ3_K_L = 13, kQ4_K_S = 14, kQ4_K_M = 15,
  kQ5_K_S = 16, kQ5_K_M = 17, kQ6_K = 18, kIQ4_NL = 25, kIQ4_XS = 30, kBF16 = 32,
  kMXFP4_MOE = 38,
};

constexpr std::array<QuantMix, 22> kMixes{{
    {"F32", kAllF32, T::F32},      {"F16", kF16, T::F16},         {"BF16", kBF16, T::BF16},
    {"Q4_0", kQ4_0, T::Q4_0},      {"Q4_1", kQ4_1, T::Q4_1},      {"Q5_0", kQ5_0, T::Q5_0},
    {"Q5_1", kQ5_1, T::Q5_1},      {"Q8_0", kQ8_0, T::Q8_0},      {"Q2_K", kQ2_K, T::Q2_K},
    {"Q3_K_S", kQ3_K_S, T::Q3_K},  {"Q3_K_M", kQ3_K_M, T::Q3_K},  {"Q3_K_L", kQ3_K_L, T::Q3_K},
    {"Q4_K_S", kQ4_K_S, T::Q4_K},  {"Q4_K_M", kQ4_K_M, T::Q4_K},  {"Q5_K_S", kQ5_K_S, T::Q5_K},
    {"Q5_K_M", kQ5_K_M, T::Q5_K},  {"Q6_K", kQ6_K, T::Q6_K},      {"IQ4_NL", kIQ4_NL, T::IQ4_NL},
    {"IQ4_XS", kIQ4_XS, T::IQ4_XS}, {"MXFP4_MOE", kMXFP4_MOE, T::MXFP4},
    // llama-quantize's aliases
    {"Q4_K", kQ4_K_M, T::Q4_K},    {"Q5_K", kQ5_K_M, T::Q5_K},
}};
// Q3_K -> Q3_K_M and MXFP4 -> MXFP4_MOE, looked up by name below.
constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kExtraAliases{{
    {"Q3_K", "Q3_K_M"}, {"MXFP4", "MXFP4_MOE"}}};

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool is_quantized(GgmlType t) { return t != T::F32 && t != T::F16 && t != T::BF16; }

enum class Category { Output, TokenEmbd, AttnV, AttnK, AttnQ, AttnOutput, FfnUp, FfnGate, FfnDown, Other };

Category category_of(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (name == "output.weight") return Category::Output;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::TokenEmbd;
  // attn_qkv and attn_kv_b count as attn_v (llama.cpp's category_is_attn_v); their own
  // later branch in llama.cpp is never reached, so they are plain attn_v here.
  if (has("attn_qkv.weight") || has("attn_kv_b.weight") || has("attn_v.weight")) return Category::AttnV;
  if (has("attn_k.weight")) return Category::AttnK;
  if (has("attn_q.weight")) return Category::AttnQ;
  if (has("attn_output.weight")) return Category::AttnOutput;
  if (has("ffn_up")) return Category::FfnUp;
  if (has("ffn_gate")) return Category::FfnGate;
  if (has("ffn_down")) return Category::FfnDown;
  return Category::Other;
}

int n_dims(const GgufTensorInfo& t) {
  int n = 1;
  for (size_t d = 1; d < t.dims.size(); ++d)
    if (t.dims[d] > 1) n = static_cast<int>(d) + 1;
  return n;
}

int layer_of(const std::string& name) {
  int layer = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) return -1;
  return layer;
}

// Layers that get more bits in the _M mixes: the first and last eighth, and every third
// layer in between.
bool use_more_bits(int i_layer, int n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

struct MixState {
  const QuantMix& mix;
  const MixModelInfo& model;
  const MixOptions& options;
  int n_attn_v = 0;
  int i_attn_v = 0;
  int i_ffn_down = 0;
};

// The layer of an ffn_down tensor: its count so far, or (MoE models, whose expert
// tensors need not come in layer order) the number in its name.
int ffn_layer(const MixState& s, const std::string& name) {
  if (s.model.n_expert > 1) {
    const int layer = layer_of(name);
    if (layer < 0 || layer >= s.model.n_layer)
      throw GgufError("tensor " + name + ": expected a layer in [0, " + std::to_string(s.model.n_layer) + ")");
    return layer;
  }
  return s.i_ffn_down;
}

GgmlType output_rule(const MixState& s, const GgufTensorInfo& t, GgmlType type) {
  if (s.options.output_type) return *s.options.output_type;
  if (s.mix.file_type == kMXFP4_MOE) return T::Q8_0;
  if (s.model.arch == "falcon" || t.dims[0] % traits(type).block_size != 0) return T::Q8_0;
  return type != T::Q8_0 ? T::Q6_K : type;
}

GgmlType attn_v_rule(MixState& s, GgmlType type) {
  const uint32_t ft = s.mix.file_type;
  const int gqa = s.model.n_gqa();
  if (ft == kQ2_K) type = gqa >= 4 ? T::Q4_K : T::Q3_K;
  else if (ft == kQ3_K_M) type = s.i_attn_v < 2 ? T::Q5_K : T::Q4_K;
  else if (ft == kQ3_K_L) type = T::Q5_K;
  else if ((ft == kIQ4_NL || ft == kIQ4_XS) && gqa >= 4) type = T::Q5_K;
  else if ((ft == kQ4_K_M || ft == kQ5_K_M) && use_more_bits(s.i_attn_v, s.n_attn_v)) type = T::Q6_K;
  else if (ft == kQ4_K_S && s.i_attn_v < 4) type = T::Q5_K;
  if (s.model.is_70b() && (type == T::Q3_K || type == T::Q4_K)) type = T::Q5_K;
  if (s.model.n_expert == 8) type = T::Q8_0;
  ++s.i_attn_v;
  return type;
}

GgmlType ffn_down_rule(MixState& s, const std::string& name, GgmlType type) {
  const uint32_t ft = s.mix.file_type;
  const int i = ffn_layer(s, name);
  const int n = s.model.n_layer;
  const bool falcon = s.model.arch == "falcon";
  if (ft == kQ2_K) type = T::Q3_K;
  else if (ft == kQ3_K_M)
    type = i < n / 16 ? T::Q5_K : (!falcon || use_more_bits(i, n)) ? T::Q4_K : T::Q3_K;
  else if (ft == kQ3_K_L) type = falcon ? T::Q4_K : T::Q5_K;
  else if (ft == kQ4_K_M) {
    if (falcon) type = i < n / 16 ? T::Q6_K : use_more_bits(i, n) ? T::Q5_K : T::Q4_K;
    else if (use_more_bits(i, n)) type = T::Q6_K;
  } else if (i < n / 8 && (ft == kIQ4_NL || ft == kIQ4_XS) && !s.options.has_imatrix) type = T::Q5_K;
  else if (ft == kQ5_K_M && use_more_bits(i, n)) type = T::Q6_K;
  else if (ft == kQ4_K_S && !falcon && i < n / 8) type = T::Q5_K;
  else if ((ft == kQ4_0 || ft == kQ5_0) && s.options.has_imatrix && i < n / 8)
    type = ft == kQ4_0 ? T::Q4_1 : T::Q5_1;
  ++s.i_ffn_down;
  return type;
}

GgmlType attn_output_rule(const MixState& s, GgmlType type) {
  const uint32_t ft = s.mix.file_type;
  if (s.model.arch == "falcon") return ft == kQ3_K_L ? T::Q4_K : type;
  if (s.model.n_expert == 8) {
    switch (ft) {
      case kQ2_K: case kQ3_K_S: case kQ3_K_M: case kIQ4_NL: case kQ4_K_S: case kQ4_K_M: case kIQ4_XS:
        return T::Q5_K;
      default:
        return type;
    }
  }
  if (ft == kQ2_K) return T::Q3_K;
  if (ft == kQ3_K_M) return T::Q4_K;
  if (ft == kQ3_K_L) return T::Q5_K;
  return type;
}

// llama_tensor_get_type_impl for the supported mixes.
GgmlType mix_rule(MixState& s, const GgufTensorInfo& t, Category cat, GgmlType type) {
  if (cat == Category::Output) return output_rule(s, t, type);
  if (s.mix.file_type == kMXFP4_MOE) return t.dims.size() > 2 && t.dims[2] > 1 ? T::MXFP4 : T::Q8_0;
  switch (cat) {
    case Category::TokenEmbd:
      return s.options.token_embd_type ? *s.options.token_embd_type : type;
    case Category::AttnV:
      return attn_v_rule(s, type);
    case Category::AttnK:
      return s.model.n_expert == 8 ? T::Q8_0 : type;
    case Category::FfnDown:
      return ffn_down_rule(s, t.name, type);
    case Category::AttnOutput:
      return attn_output_rule(s, type);
    default:
      return type;
  }
}

// A row length that is not a multiple of the type's block: the nearest type with
// 32-element blocks, or F16 when even that does not fit.
GgmlType fallback(const GgufTensorInfo& t, GgmlType type, int* n_fallback) {
  const int64_t n_cols = t.dims[0];
  if (n_cols % traits(type).block_size == 0) return type;
  if (n_fallback) ++*n_fallback;
  GgmlType alt = type;
  switch (type) {
    case T::IQ4_XS: alt = T::IQ4_NL; break;
    case T::Q2_K: case T::Q3_K: alt = T::Q4_0; break;
    case T::Q4_K: alt = T::Q5_0; break;
    case T::Q5_K: alt = T::Q5_1; break;
    case T::Q6_K: alt = T::Q8_0; break;
    default: break;
  }
  return n_cols % traits(alt).block_size == 0 ? alt : T::F16;
}

}  // namespace

const QuantMix* find_quant_mix(std::string_view name) {
  std::string key = upper(name);
  for (const auto& [alias, target] : kExtraAliases)
    if (key == alias) key = target;
  for (const QuantMix& m : kMixes)
    if (m.name == key) return &m;
  return nullptr;
}

std::string quant_mix_names() {
  std::string out;
  for (const QuantMix& m : kMixes) {
    if (!out.empty()) out += ", ";
    out += m.name;
  }
  for (const auto& [alias, target] : kExtraAliases) out += ", " + std::string(alias);
  return out;
}

MixModelInfo mix_model_info(const GgufMetadata& md) {
  MixModelInfo info;
  info.arch = md.get_string("general.architecture");
  const std::string a = info.arch + ".";
  info.n_layer = static_cast<int>(md.get_u64(a + "block_count"));
  // Head counts may be per-layer arrays; llama.cpp's n_gqa() reads layer 0.
  auto first = [&](const std::string& key) -> int {
    const GgufValue* v = md.find(key);
    if (!v) return 0;
    if (v->type != GgufType::ARRAY) return static_cast<int>(md.get_u64(key));
    const std::vector<int64_t> a = *md.find_i64_array(key);
    return a.empty() ? 0 : static_cast<int>(a[0]);
  };
  info.n_head = first(a + "attention.head_count");
  info.n_head_kv = md.has(a + "attention.head_count_kv") ? first(a + "attention.head_count_kv") : info.n_head;
  info.n_expert = static_cast<int>(md.find_u64(a + "expert_count").value_or(0));
  return info;
}

std::vector<size_t> quantization_order(const std::vector<GgufTensorInfo>& tensors) {
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<int> layer(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) layer[i] = layer_of(tensors[i].name);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (layer[a] != layer[b]) return layer[a] < layer[b];
    return tensors[a].name < tensors[b].name;
  });
  return order;
}

bool tensor_allows_quantization(const GgufTensorInfo& t) {
  if (n_dims(t) < 2) return false;
  const std::string& name = t.name;
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (name.size() < 6 || name.compare(name.size() - 6, 6, "weight") != 0) return false;
  for (const char* keep : {"_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup",
                           "laurel", "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight",
                           "attn_rel_b.weight", "time_mix_", ".position_embd", ".rel_pos", ".patch_embd"}) {
    if (has(keep)) return false;
  }
  return name != "position_embd.weight" && name != "token_types.weight";
}

std::vector<GgmlType> choose_tensor_types(const QuantMix& mix, const MixModelInfo& model,
                                          const std::vector<GgufTensorInfo>& tensors,
                                          const MixOptions& options, int* n_fallback) {
  MixState s{mix, model, options};
  bool tied_embeddings = true;
  for (const GgufTensorInfo& t : tensors) {
    const Category c = category_of(t.name);
    if (c == Category::AttnV) ++s.n_attn_v;
    if (c == Category::Output) tied_embeddings = false;
  }
  std::vector<GgmlType> types(tensors.size());
  for (const size_t i : quantization_order(tensors)) {
    const GgufTensorInfo& t = tensors[i];
    types[i] = t.type;
    if (!tensor_allows_quantization(t)) continue;
    Category c = category_of(t.name);
    if (c == Category::TokenEmbd && options.token_embd_type) {
      types[i] = *options.token_embd_type;
      continue;
    }
    if (c == Category::Output && options.output_type) {
      types[i] = *options.output_type;
      continue;
    }
    GgmlType type = mix.base;
    if (!is_quantized(type)) {
      types[i] = type;
      continue;
    }
    // A model without output.weight reads the logits from token_embd: it gets the
    // output tensor's type.
    if (tied_embeddings && c == Category::TokenEmbd) c = Category::Output;
    if (!options.pure) type = mix_rule(s, t, c, type);
    types[i] = fallback(t, type, n_fallback);
  }
  return types;
}

std::optional<GgmlType> parse_ggml_type(std::string_view name) {
  const std::string key = upper(name);
  for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
    const auto tr = type_traits(id);
    if (tr && tr->name == key && id != static_cast<uint32_t>(T::Q8_1) && id != static_cast<uint32_t>(T::Q8_K))
      return static_cast<GgmlType>(id);
  }
  return std::nullopt;
}

}  // namespace runnel
