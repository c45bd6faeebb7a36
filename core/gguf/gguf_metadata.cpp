// GgufValue / GgufMetadata: typed access to GGUF key-value metadata.
// Integer conversions are checked (a value that does not fit is an error, never a
// silent wrap) because model hyper-parameters come from here.
#include <limits>
#include <string>

#include "core/gguf/gguf.h"

namespace runnel {
namespace {

bool is_unsigned(GgufType t) {
  return t == GgufType::U8 || t == GgufType::U16 || t == GgufType::U32 || t == GgufType::U64;
}
bool is_signed(GgufType t) {
  return t == GgufType::I8 || t == GgufType::I16 || t == GgufType::I32 || t == GgufType::I64;
}
bool is_float(GgufType t) {
  return t == GgufType::F32 || t == GgufType::F64;
}

// "i32" or "array of string", for messages.
std::string describe(const GgufValue& v) {
  if (v.type != GgufType::ARRAY) return std::string(gguf_type_name(v.type));
  return "array of " + std::string(gguf_type_name(v.elem_type));
}

[[noreturn]] void wrong_type(std::string_view key, const GgufValue& v, std::string_view want) {
  throw GgufError("metadata key '" + std::string(key) + "' has type " + describe(v) +
                  ", expected " + std::string(want));
}

[[noreturn]] void out_of_range(std::string_view key, const std::string& value,
                               std::string_view want) {
  throw GgufError("metadata key '" + std::string(key) + "' value " + value + " does not fit " +
                  std::string(want));
}

// The value of an integer scalar as u64 / i64, checking the range.
uint64_t integer_as_u64(std::string_view key, const GgufValue& v) {
  if (is_unsigned(v.type)) return std::get<uint64_t>(v.value);
  if (!is_signed(v.type)) wrong_type(key, v, "an integer");
  const int64_t i = std::get<int64_t>(v.value);
  if (i < 0) out_of_range(key, std::to_string(i), "u64");
  return static_cast<uint64_t>(i);
}

int64_t integer_as_i64(std::string_view key, const GgufValue& v) {
  if (is_signed(v.type)) return std::get<int64_t>(v.value);
  if (!is_unsigned(v.type)) wrong_type(key, v, "an integer");
  const uint64_t u = std::get<uint64_t>(v.value);
  if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    out_of_range(key, std::to_string(u), "i64");
  }
  return static_cast<int64_t>(u);
}

[[noreturn]] void missing(std::string_view key) {
  throw GgufError("metadata key '" + std::string(key) + "' is missing");
}

template <typename T>
T require(std::string_view key, std::optional<T> v) {
  if (!v) missing(key);
  return std::move(*v);
}

}  // namespace

std::string_view gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::U8:
      return "u8";
    case GgufType::I8:
      return "i8";
    case GgufType::U16:
      return "u16";
    case GgufType::I16:
      return "i16";
    case GgufType::U32:
      return "u32";
    case GgufType::I32:
      return "i32";
    case GgufType::F32:
      return "f32";
    case GgufType::BOOL:
      return "bool";
    case GgufType::STRING:
      return "string";
    case GgufType::ARRAY:
      return "array";
    case GgufType::U64:
      return "u64";
    case GgufType::I64:
      return "i64";
    case GgufType::F64:
      return "f64";
  }
  return "unknown";
}

size_t GgufValue::array_size() const {
  if (type != GgufType::ARRAY) return 0;
  return std::visit(
      [](const auto& x) -> size_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<uint64_t>> ||
                      std::is_same_v<T, std::vector<int64_t>> ||
                      std::is_same_v<T, std::vector<double>> ||
                      std::is_same_v<T, std::vector<bool>> ||
                      std::is_same_v<T, std::vector<std::string>>) {
          return x.size();
        } else {
          return 0;
        }
      },
      value);
}

bool GgufMetadata::has(std::string_view key) const {
  return index_.find(key) != index_.end();
}

const GgufValue* GgufMetadata::find(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

void GgufMetadata::set(std::string key, GgufValue value) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    entries_[it->second].second = std::move(value);
    return;
  }
  index_.emplace(key, entries_.size());
  entries_.emplace_back(std::move(key), std::move(value));
}

std::optional<std::string> GgufMetadata::find_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::STRING) wrong_type(key, *v, "string");
  return std::get<std::string>(v->value);
}

std::optional<uint64_t> GgufMetadata::find_u64(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  return integer_as_u64(key, *v);
}

std::optional<int64_t> GgufMetadata::find_i64(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  return integer_as_i64(key, *v);
}

std::optional<double> GgufMetadata::find_f64(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (is_float(v->type)) return std::get<double>(v->value);
  if (is_unsigned(v->type)) return static_cast<double>(std::get<uint64_t>(v->value));
  if (is_signed(v->type)) return static_cast<double>(std::get<int64_t>(v->value));
  wrong_type(key, *v, "a number");
}

std::optional<bool> GgufMetadata::find_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::BOOL) wrong_type(key, *v, "bool");
  return std::get<bool>(v->value);
}

std::string GgufMetadata::get_string(std::string_view key) const {
  return require(key, find_string(key));
}
uint64_t GgufMetadata::get_u64(std::string_view key) const {
  return require(key, find_u64(key));
}
int64_t GgufMetadata::get_i64(std::string_view key) const {
  return require(key, find_i64(key));
}
double GgufMetadata::get_f64(std::string_view key) const {
  return require(key, find_f64(key));
}
bool GgufMetadata::get_bool(std::string_view key) const {
  return require(key, find_bool(key));
}

const std::vector<std::string>* GgufMetadata::find_string_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return nullptr;
  if (v->type != GgufType::ARRAY || v->elem_type != GgufType::STRING) {
    wrong_type(key, *v, "array of string");
  }
  return &std::get<std::vector<std::string>>(v->value);
}

std::optional<std::vector<double>> GgufMetadata::find_f64_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::ARRAY) wrong_type(key, *v, "array of numbers");
  std::vector<double> out;
  if (is_float(v->elem_type)) return std::get<std::vector<double>>(v->value);
  if (is_unsigned(v->elem_type)) {
    for (uint64_t x : std::get<std::vector<uint64_t>>(v->value)) {
      out.push_back(static_cast<double>(x));
    }
    return out;
  }
  if (is_signed(v->elem_type)) {
    for (int64_t x : std::get<std::vector<int64_t>>(v->value)) {
      out.push_back(static_cast<double>(x));
    }
    return out;
  }
  wrong_type(key, *v, "array of numbers");
}

std::optional<std::vector<int64_t>> GgufMetadata::find_i64_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::ARRAY) wrong_type(key, *v, "array of integers");
  if (is_signed(v->elem_type)) return std::get<std::vector<int64_t>>(v->value);
  if (!is_unsigned(v->elem_type)) wrong_type(key, *v, "array of integers");
  const auto& in = std::get<std::vector<uint64_t>>(v->value);
  std::vector<int64_t> out;
  out.reserve(in.size());
  for (uint64_t x : in) {
    if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      out_of_range(key, std::to_string(x), "i64");
    }
    out.push_back(static_cast<int64_t>(x));
  }
  return out;
}

}  // namespace runnel
