#include "kernels/types.h"

#include <array>
#include <cassert>

namespace runnel {
namespace {

struct Entry {
  bool known = false;
  TypeTraits traits{};
};

constexpr std::array<Entry, kGgmlTypeIdLimit> make_table() {
  std::array<Entry, kGgmlTypeIdLimit> t{};
  auto set = [&t](GgmlType type, std::string_view name, int64_t block, size_t size) {
    t[static_cast<uint32_t>(type)] = Entry{true, TypeTraits{name, block, size}};
  };
  // Block sizes in bytes follow the ggml block structs (d = f16 scale, m = f16 min).
  set(GgmlType::F32, "F32", 1, 4);
  set(GgmlType::F16, "F16", 1, 2);
  set(GgmlType::BF16, "BF16", 1, 2);
  set(GgmlType::Q4_0, "Q4_0", kQK, 2 + kQK / 2);
  set(GgmlType::Q4_1, "Q4_1", kQK, 2 + 2 + kQK / 2);
  set(GgmlType::Q5_0, "Q5_0", kQK, 2 + 4 + kQK / 2);
  set(GgmlType::Q5_1, "Q5_1", kQK, 2 + 2 + 4 + kQK / 2);
  set(GgmlType::Q8_0, "Q8_0", kQK, 2 + kQK);
  set(GgmlType::Q8_1, "Q8_1", kQK, 2 + 2 + kQK);
  set(GgmlType::Q2_K, "Q2_K", kQK_K, kQK_K / 16 + kQK_K / 4 + 2 + 2);
  set(GgmlType::Q3_K, "Q3_K", kQK_K, kQK_K / 8 + kQK_K / 4 + 12 + 2);
  set(GgmlType::Q4_K, "Q4_K", kQK_K, 2 + 2 + 12 + kQK_K / 2);
  set(GgmlType::Q5_K, "Q5_K", kQK_K, 2 + 2 + 12 + kQK_K / 8 + kQK_K / 2);
  set(GgmlType::Q6_K, "Q6_K", kQK_K, kQK_K / 2 + kQK_K / 4 + kQK_K / 16 + 2);
  set(GgmlType::Q8_K, "Q8_K", kQK_K, 4 + kQK_K + kQK_K / 16 * 2);
  // 4-bit codes into a 16-value table: e = E8M0 exponent byte; IQ4_XS adds 6-bit
  // sub-block scales (2 bytes of high bits, 4 of low nibbles).
  set(GgmlType::IQ4_NL, "IQ4_NL", kQK, 2 + kQK / 2);
  set(GgmlType::IQ4_XS, "IQ4_XS", kQK_K, 2 + 2 + kQK_K / 64 + kQK_K / 2);
  set(GgmlType::MXFP4, "MXFP4", kQK, 1 + kQK / 2);
  return t;
}

constexpr auto kTable = make_table();

}  // namespace

std::optional<TypeTraits> type_traits(uint32_t type_id) {
  if (type_id >= kGgmlTypeIdLimit || !kTable[type_id].known) return std::nullopt;
  return kTable[type_id].traits;
}

TypeTraits traits(GgmlType type) {
  auto t = type_traits(static_cast<uint32_t>(type));
  assert(t.has_value());
  return *t;
}

size_t row_bytes(GgmlType type, int64_t n) {
  TypeTraits t = traits(type);
  return static_cast<size_t>(n / t.block_size) * t.type_size;
}

}  // namespace runnel
