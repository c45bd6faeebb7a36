// GgufWriter: lays a file out the way llama.cpp's gguf writers do:
//   header, key-value pairs in insertion order, tensor infos in insertion order,
//   zero padding to the alignment, then each tensor's data followed by zero
//   padding to the alignment (so every offset, and the file size, is aligned).
// Tensor dims are written as given (like gguf-py, which keeps trailing 1s).
#include "core/gguf/gguf_writer.h"

#include <cstring>
#include <fstream>
#include <limits>

namespace runnel {
namespace {

constexpr uint64_t kDefaultAlignment = 32;
constexpr size_t kMaxTensorName = 63;

class ByteSink {
 public:
  explicit ByteSink(std::vector<uint8_t>& out) : out_(out) {}
  void uint(uint64_t v, int n_bytes) {
    for (int i = 0; i < n_bytes; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u32(uint32_t v) { uint(v, 4); }
  void u64(uint64_t v) { uint(v, 8); }
  void string(const std::string& s) {
    u64(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void pad(uint64_t alignment) {
    while (out_.size() % alignment != 0) out_.push_back(0);
  }

 private:
  std::vector<uint8_t>& out_;
};

[[noreturn]] void bad_value(const std::string& key, const std::string& why) {
  throw GgufError("GgufWriter: key '" + key + "': " + why);
}

// Checks that the variant holds the class `type` needs, and returns it.
template <typename T>
const T& held(const std::string& key, const GgufValue& v, GgufType type) {
  const T* p = std::get_if<T>(&v.value);
  if (!p) bad_value(key, "value does not hold a " + std::string(gguf_type_name(type)));
  return *p;
}

void write_unsigned(ByteSink& out, const std::string& key, GgufType type, uint64_t v) {
  const int n = type == GgufType::U8    ? 1
                : type == GgufType::U16 ? 2
                : type == GgufType::U32 ? 4
                                        : 8;
  if (n < 8 && v >> (8 * n) != 0) {
    bad_value(key, std::to_string(v) + " does not fit " + std::string(gguf_type_name(type)));
  }
  out.uint(v, n);
}

void write_signed(ByteSink& out, const std::string& key, GgufType type, int64_t v) {
  const int n = type == GgufType::I8    ? 1
                : type == GgufType::I16 ? 2
                : type == GgufType::I32 ? 4
                                        : 8;
  if (n < 8) {
    const int64_t lo = -(int64_t{1} << (8 * n - 1));
    const int64_t hi = (int64_t{1} << (8 * n - 1)) - 1;
    if (v < lo || v > hi) {
      bad_value(key, std::to_string(v) + " does not fit " + std::string(gguf_type_name(type)));
    }
  }
  out.uint(static_cast<uint64_t>(v), n);
}

void write_float(ByteSink& out, GgufType type, double v) {
  if (type == GgufType::F32) {
    const float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    out.u32(bits);
  } else {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    out.u64(bits);
  }
}

// One element of class T of a scalar or array value.
template <typename T>
void write_element(ByteSink& out, const std::string& key, GgufType type, const T& v) {
  if constexpr (std::is_same_v<T, uint64_t>) {
    write_unsigned(out, key, type, v);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    write_signed(out, key, type, v);
  } else if constexpr (std::is_same_v<T, double>) {
    write_float(out, type, v);
  } else if constexpr (std::is_same_v<T, bool>) {
    out.uint(v ? 1 : 0, 1);
  } else {
    out.string(v);
  }
}

// The variant class a scalar of `type` lives in, as a callable dispatch.
template <typename Fn>
void with_class(const std::string& key, GgufType type, Fn&& fn) {
  switch (type) {
    case GgufType::U8:
    case GgufType::U16:
    case GgufType::U32:
    case GgufType::U64:
      fn(uint64_t{});
      return;
    case GgufType::I8:
    case GgufType::I16:
    case GgufType::I32:
    case GgufType::I64:
      fn(int64_t{});
      return;
    case GgufType::F32:
    case GgufType::F64:
      fn(double{});
      return;
    case GgufType::BOOL:
      fn(bool{});
      return;
    case GgufType::STRING:
      fn(std::string{});
      return;
    case GgufType::ARRAY:
      break;
  }
  bad_value(key, "type " + std::to_string(static_cast<uint32_t>(type)) + " is not a scalar type");
}

void write_kv(ByteSink& out, const std::string& key, const GgufValue& v) {
  out.string(key);
  out.u32(static_cast<uint32_t>(v.type));
  if (v.type != GgufType::ARRAY) {
    with_class(key, v.type, [&](auto tag) {
      using T = decltype(tag);
      write_element(out, key, v.type, held<T>(key, v, v.type));
    });
    return;
  }
  out.u32(static_cast<uint32_t>(v.elem_type));
  with_class(key, v.elem_type, [&](auto tag) {
    using T = decltype(tag);
    const auto& values = held<std::vector<T>>(key, v, GgufType::ARRAY);
    out.u64(values.size());
    for (const auto& x : values) write_element<T>(out, key, v.elem_type, x);
  });
}

uint64_t padded(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

}  // namespace

void GgufWriter::set(std::string key, GgufValue value) {
  if (key.empty()) throw GgufError("GgufWriter: empty metadata key");
  metadata_.set(std::move(key), std::move(value));
}

void GgufWriter::set_string(std::string key, std::string v) {
  set(std::move(key), GgufValue{GgufType::STRING, GgufType::U8, std::move(v)});
}
void GgufWriter::set_u32(std::string key, uint32_t v) {
  set(std::move(key), GgufValue{GgufType::U32, GgufType::U8, uint64_t{v}});
}
void GgufWriter::set_i32(std::string key, int32_t v) {
  set(std::move(key), GgufValue{GgufType::I32, GgufType::U8, int64_t{v}});
}
void GgufWriter::set_f32(std::string key, float v) {
  set(std::move(key), GgufValue{GgufType::F32, GgufType::U8, double{v}});
}
void GgufWriter::set_bool(std::string key, bool v) {
  set(std::move(key), GgufValue{GgufType::BOOL, GgufType::U8, v});
}
void GgufWriter::set_string_array(std::string key, std::vector<std::string> v) {
  set(std::move(key), GgufValue{GgufType::ARRAY, GgufType::STRING, std::move(v)});
}

uint64_t GgufWriter::checked_size(const std::string& name, GgmlType type, const std::vector<int64_t>& dims) const {
  auto fail = [&](const std::string& why) {
    throw GgufError("GgufWriter: tensor '" + name + "': " + why);
  };
  if (name.empty() || name.size() > kMaxTensorName) {
    fail("name must be 1.." + std::to_string(kMaxTensorName) + " bytes");
  }
  for (const Pending& t : tensors_) {
    if (t.name == name) fail("added twice");
  }
  const std::optional<TypeTraits> tt = type_traits(static_cast<uint32_t>(type));
  if (!tt) fail("unknown type id " + std::to_string(static_cast<uint32_t>(type)));
  if (dims.empty() || dims.size() > 4) fail("needs 1..4 dims, got " + std::to_string(dims.size()));
  uint64_t rows = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 1) fail("dimension " + std::to_string(i) + " is " + std::to_string(dims[i]));
    if (i > 0) rows *= static_cast<uint64_t>(dims[i]);
  }
  if (dims[0] % tt->block_size != 0) {
    fail("row length " + std::to_string(dims[0]) + " is not a multiple of the block size " +
         std::to_string(tt->block_size));
  }
  return row_bytes(type, dims[0]) * rows;
}

void GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<int64_t> dims,
                            std::span<const uint8_t> data) {
  const uint64_t n_bytes = checked_size(name, type, dims);
  if (data.size() != n_bytes) {
    throw GgufError("GgufWriter: tensor '" + name + "': data has " + std::to_string(data.size()) +
                    " bytes, expected " + std::to_string(n_bytes));
  }
  tensors_.push_back(Pending{std::move(name), type, std::move(dims),
                             std::vector<uint8_t>(data.begin(), data.end()), n_bytes});
}

void GgufWriter::add_tensor_info(std::string name, GgmlType type, std::vector<int64_t> dims) {
  const uint64_t n_bytes = checked_size(name, type, dims);
  tensors_.push_back(Pending{std::move(name), type, std::move(dims), {}, n_bytes});
}

std::vector<uint8_t> GgufWriter::bytes(uint32_t version) const {
  for (const Pending& t : tensors_) {
    if (t.data.size() != t.n_bytes) {
      throw GgufError("GgufWriter: tensor " + t.name + " was added without data; use header_bytes()");
    }
  }
  std::vector<uint8_t> out = header_bytes(version);
  ByteSink sink(out);
  for (const Pending& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    sink.pad(alignment_);
  }
  return out;
}

std::vector<uint8_t> GgufWriter::header_bytes(uint32_t version) const {
  if (version != 2 && version != 3) {
    throw GgufError("GgufWriter: can write GGUF version 2 or 3, not " + std::to_string(version));
  }
  if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0 ||
      alignment_ > std::numeric_limits<uint32_t>::max()) {
    throw GgufError("GgufWriter: alignment " + std::to_string(alignment_) +
                    " is not a power of two that fits u32");
  }
  // The reader learns a non-default alignment only from general.alignment.
  GgufMetadata md = metadata_;
  if (const GgufValue* a = md.find("general.alignment")) {
    const uint64_t* v = std::get_if<uint64_t>(&a->value);
    if (a->type != GgufType::U32 || !v || *v != alignment_) {
      throw GgufError(
          "GgufWriter: general.alignment must be a u32 equal to the writer's "
          "alignment " +
          std::to_string(alignment_));
    }
  } else if (alignment_ != kDefaultAlignment) {
    md.set("general.alignment", GgufValue{GgufType::U32, GgufType::U8, alignment_});
  }

  std::vector<uint8_t> out;
  ByteSink sink(out);
  sink.uint('G' | 'G' << 8 | 'U' << 16 | 'F' << 24, 4);
  sink.u32(version);
  sink.u64(tensors_.size());
  sink.u64(md.entries().size());
  for (const auto& [key, value] : md.entries()) write_kv(sink, key, value);

  uint64_t offset = 0;
  for (const Pending& t : tensors_) {
    sink.string(t.name);
    sink.u32(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) sink.u64(static_cast<uint64_t>(d));
    sink.u32(static_cast<uint32_t>(t.type));
    sink.u64(offset);
    offset += padded(t.n_bytes, alignment_);
  }
  sink.pad(alignment_);
  return out;
}

void GgufWriter::write_file(const std::string& path) const {
  const std::vector<uint8_t> data = bytes();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw GgufError("cannot open " + path + " for writing");
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  f.close();
  if (!f) throw GgufError("cannot write " + path + " (" + std::to_string(data.size()) + " bytes)");
}

}  // namespace runnel
