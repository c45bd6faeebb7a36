#include "core/host/weight_store.h"

#include <limits>

namespace runnel {

int layer_of_tensor(std::string_view name) {
  constexpr std::string_view kPrefix = "blk.";
  if (name.substr(0, kPrefix.size()) != kPrefix) return -1;
  int layer = 0;
  size_t i = kPrefix.size();
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) {
    if (layer > (std::numeric_limits<int>::max() - 9) / 10) return -1;
    layer = layer * 10 + (name[i] - '0');
  }
  if (i == kPrefix.size() || i >= name.size() || name[i] != '.') return -1;
  return layer;
}

bool is_expert_stack(const GgufTensorInfo& t) {
  constexpr std::string_view kSuffix = "_exps.weight";
  const std::string_view name = t.name;
  return t.dims.size() == 3 && t.dims[2] > 0 && name.size() > kSuffix.size() &&
         name.substr(name.size() - kSuffix.size()) == kSuffix;
}

}  // namespace runnel
