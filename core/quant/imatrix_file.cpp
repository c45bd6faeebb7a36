// Reading and writing llama-imatrix's GGUF format (imatrix_file.h).
#include "core/quant/imatrix_file.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/gguf/gguf_writer.h"

namespace runnel {
namespace {

constexpr const char* kSumSuffix = ".in_sum2";
constexpr const char* kCountSuffix = ".counts";

bool strip_suffix(std::string& s, const std::string& suffix) {
  if (s.size() <= suffix.size() || s.compare(s.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  s.resize(s.size() - suffix.size());
  return true;
}

std::vector<float> f32_values(const GgufFile& f, std::span<const uint8_t> bytes, const GgufTensorInfo& t) {
  if (t.type != GgmlType::F32)
    throw QuantizeError(f.name() + ": tensor " + t.name + " is " + std::string(traits(t.type).name) +
                        ", expected F32");
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  std::memcpy(v.data(), bytes.data() + f.data_offset() + t.offset, v.size() * sizeof(float));
  for (const float x : v)
    if (!std::isfinite(x)) throw QuantizeError(f.name() + ": tensor " + t.name + " holds a non-finite value");
  return v;
}

}  // namespace

ImatrixData parse_imatrix(const std::vector<uint8_t>& bytes, const std::string& name) {
  const GgufFile f = GgufFile::parse(bytes, name);
  const std::optional<std::string> type = f.metadata().find_string("general.type");
  if (type != "imatrix")
    throw QuantizeError(name + ": not an importance matrix (general.type is '" + type.value_or("") +
                        "', expected 'imatrix')");
  ImatrixData data;
  if (const auto* ds = f.metadata().find_string_array("imatrix.datasets")) data.datasets = *ds;
  data.chunk_count = static_cast<uint32_t>(f.metadata().find_u64("imatrix.chunk_count").value_or(0));
  data.chunk_size = static_cast<uint32_t>(f.metadata().find_u64("imatrix.chunk_size").value_or(0));
  std::map<std::string, std::pair<const GgufTensorInfo*, const GgufTensorInfo*>> pairs;
  for (const GgufTensorInfo& t : f.tensors()) {
    std::string base = t.name;
    if (strip_suffix(base, kSumSuffix)) pairs[base].first = &t;
    else if (strip_suffix(base, kCountSuffix)) pairs[base].second = &t;
  }
  for (const auto& [weight, pair] : pairs) {
    if (!pair.first || !pair.second)
      throw QuantizeError(name + ": " + weight + " has " + (pair.first ? "sums but no counts" : "counts but no sums"));
    ImatrixEntry e;
    e.sums = f32_values(f, bytes, *pair.first);
    for (const float c : f32_values(f, bytes, *pair.second)) e.counts.push_back(std::lround(c));
    if (e.counts.empty() || e.sums.size() % e.counts.size() != 0)
      throw QuantizeError(name + ": " + weight + ": " + std::to_string(e.sums.size()) + " sums do not divide into " +
                          std::to_string(e.counts.size()) + " matrices");
    data.entries.emplace(weight, std::move(e));
  }
  return data;
}

std::vector<uint8_t> imatrix_bytes(const ImatrixData& data) {
  GgufWriter w;
  w.set_string("general.type", "imatrix");
  w.set_string_array("imatrix.datasets", data.datasets);
  w.set_u32("imatrix.chunk_count", data.chunk_count);
  w.set_u32("imatrix.chunk_size", data.chunk_size);
  for (const auto& [weight, e] : data.entries) {  // a std::map: sorted by name, as llama-imatrix writes
    const int64_t n_mat = static_cast<int64_t>(e.counts.size());
    if (n_mat == 0 || e.sums.empty()) continue;
    const int64_t ne0 = static_cast<int64_t>(e.sums.size()) / n_mat;
    std::vector<float> counts(e.counts.begin(), e.counts.end());
    w.add_tensor(weight + kSumSuffix, GgmlType::F32, {ne0, n_mat},
                 {reinterpret_cast<const uint8_t*>(e.sums.data()), e.sums.size() * sizeof(float)});
    w.add_tensor(weight + kCountSuffix, GgmlType::F32, {1, n_mat},
                 {reinterpret_cast<const uint8_t*>(counts.data()), counts.size() * sizeof(float)});
  }
  return w.bytes();
}

ImportanceMatrix importance_from(const ImatrixData& data) {
  ImportanceMatrix out;
  for (const auto& [weight, e] : data.entries) {
    const size_t n_mat = e.counts.size();
    const size_t ne0 = e.sums.size() / n_mat;
    std::vector<float> v(e.sums.size());
    for (size_t m = 0; m < n_mat; ++m) {
      const float count = static_cast<float>(e.counts[m]);
      for (size_t i = 0; i < ne0; ++i) v[m * ne0 + i] = count > 0.0f ? e.sums[m * ne0 + i] / count : 1.0f;
    }
    out.emplace(weight, std::move(v));
  }
  return out;
}

ImatrixData read_imatrix_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw QuantizeError("--imatrix: cannot open " + path);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_imatrix(bytes, path);
}

}  // namespace runnel
