// GgufFile::parse: the validating GGUF v2/v3 reader.
//
// File layout (all little endian, v2 and v3 identical apart from v3 allowing
// big-endian files, which we refuse):
//   "GGUF" u32 version, u64 n_tensors, u64 n_kv
//   n_kv x { string key, u32 value_type, value }
//   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset }
//   zero padding to `alignment` (general.alignment, default 32) = data section start
//   tensor data, each tensor at data_start + offset
// string = u64 length + bytes; array = u32 elem_type, u64 count, count values.
//
// Every number read from the file is checked before it sizes an allocation or an
// index: lengths and counts against the bytes that remain, shapes against int64
// overflow, ranges against the file size. Reads go byte by byte (no casted pointers
// into the buffer), so any input is safe under ASan/UBSan.
#include "core/gguf/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

namespace runnel {
namespace {

constexpr uint64_t kDefaultAlignment = 32;
constexpr size_t kMaxTensorName = 63;  // ggml keeps names in char[GGML_MAX_NAME = 64]
constexpr uint32_t kMaxDims = 4;
constexpr uint32_t kMaxValueType = static_cast<uint32_t>(GgufType::F64);
// Smallest possible encodings, to bound counts by the bytes that remain.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;                  // key "x", u8 value
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;  // name "x", 1 dim

std::string hex(uint64_t v) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[v & 15]);
    v >>= 4;
  } while (v != 0);
  return "0x" + s;
}

uint64_t add_saturated(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

// Size in bytes of one array element / scalar value of a fixed-size type; 0 for
// STRING and ARRAY.
uint64_t fixed_size(GgufType t) {
  switch (t) {
    case GgufType::U8:
    case GgufType::I8:
    case GgufType::BOOL:
      return 1;
    case GgufType::U16:
    case GgufType::I16:
      return 2;
    case GgufType::U32:
    case GgufType::I32:
    case GgufType::F32:
      return 4;
    case GgufType::U64:
    case GgufType::I64:
    case GgufType::F64:
      return 8;
    case GgufType::STRING:
    case GgufType::ARRAY:
      return 0;
  }
  return 0;
}

// A cursor over the given bytes that turns every short read into a GgufError.
class Reader {
 public:
  Reader(std::span<const uint8_t> bytes, uint64_t file_size, const std::string& name)
      : bytes_(bytes), file_size_(file_size), name_(name) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  [[noreturn]] void fail(const std::string& message) const {
    throw GgufError(name_ + ": " + message);
  }

  // Where the readable bytes stop, for truncation messages.
  std::string end_text() const {
    if (bytes_.size() < file_size_) {
      return "only the first " + hex(bytes_.size()) + " of " + hex(file_size_) + " bytes were read";
    }
    return "the file ends at " + hex(bytes_.size());
  }

  void need(uint64_t n, std::string_view what) const {
    if (n > remaining()) {
      fail("truncated header: " + std::string(what) + " at offset " + hex(pos_) + " needs " +
           std::to_string(n) + " bytes, but " + end_text());
    }
  }

  // `count` items of at least `min_bytes` each must fit in what remains.
  void claim(uint64_t count, uint64_t min_bytes, std::string_view what) const {
    if (count > remaining() / min_bytes) {
      fail("truncated header: " + std::string(what) + " at offset " + hex(pos_) + " claims " +
           std::to_string(count) + (min_bytes == 1 ? " bytes" : " items") + ", but " + end_text());
    }
  }

  uint64_t uint(int n_bytes, std::string_view what) {
    need(static_cast<uint64_t>(n_bytes), what);
    uint64_t v = 0;
    for (int i = 0; i < n_bytes; ++i) {
      v |= static_cast<uint64_t>(bytes_[pos_ + static_cast<uint64_t>(i)]) << (8 * i);
    }
    pos_ += static_cast<uint64_t>(n_bytes);
    return v;
  }
  uint8_t u8(std::string_view what) { return static_cast<uint8_t>(uint(1, what)); }
  uint32_t u32(std::string_view what) { return static_cast<uint32_t>(uint(4, what)); }
  uint64_t u64(std::string_view what) { return uint(8, what); }

  std::string string(const std::string& what) {
    const uint64_t n = u64(what + " length");
    claim(n, 1, what);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(n));
    pos_ += n;
    return s;
  }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t file_size_;
  const std::string& name_;
  uint64_t pos_ = 0;
};

void check_magic(Reader& r, std::span<const uint8_t> bytes) {
  static const uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
  const size_t n = std::min<size_t>(bytes.size(), 4);
  if (n > 0 && std::memcmp(bytes.data(), kMagic, n) != 0) {
    std::string hex_bytes = "0x";
    std::string chars;
    for (size_t i = 0; i < n; ++i) {
      static const char kDigits[] = "0123456789abcdef";
      hex_bytes += kDigits[bytes[i] >> 4];
      hex_bytes += kDigits[bytes[i] & 15];
      chars += (bytes[i] >= 0x20 && bytes[i] < 0x7f) ? static_cast<char>(bytes[i]) : '?';
    }
    r.fail("not a GGUF file (magic " + hex_bytes + " \"" + chars + "\", expected \"GGUF\")");
  }
  r.need(4, "the magic");
  r.u32("the magic");
}

void check_version(Reader& r, uint32_t version) {
  if (version == 2 || version == 3) return;
  if (version == 1) {
    r.fail("GGUF version 1 is no longer supported (expected 2 or 3; re-convert the model)");
  }
  if ((version & 0xffffu) == 0) {
    r.fail("unsupported GGUF version " + std::to_string(version) +
           " (a big-endian file? expected 2 or 3)");
  }
  r.fail("unsupported GGUF version " + std::to_string(version) + " (expected 2 or 3)");
}

GgufType read_value_type(Reader& r, const std::string& key, std::string_view what) {
  const uint32_t id = r.u32("key '" + key + "' " + std::string(what));
  if (id > kMaxValueType) {
    r.fail("key '" + key + "': unknown metadata value type " + std::to_string(id) +
           " (expected 0.." + std::to_string(kMaxValueType) + ")");
  }
  return static_cast<GgufType>(id);
}

// One scalar value of a fixed-size or string type, in its variant class.
// `what` names the value in truncation messages.
template <typename Out>
void read_scalar(Reader& r, GgufType type, const std::string& key, const std::string& what,
                 Out&& out) {
  switch (type) {
    case GgufType::U8:
      out(static_cast<uint64_t>(r.u8(what)));
      return;
    case GgufType::U16:
      out(r.uint(2, what));
      return;
    case GgufType::U32:
      out(static_cast<uint64_t>(r.u32(what)));
      return;
    case GgufType::U64:
      out(r.u64(what));
      return;
    case GgufType::I8:
      out(static_cast<int64_t>(static_cast<int8_t>(r.u8(what))));
      return;
    case GgufType::I16:
      out(static_cast<int64_t>(static_cast<int16_t>(r.uint(2, what))));
      return;
    case GgufType::I32:
      out(static_cast<int64_t>(static_cast<int32_t>(r.u32(what))));
      return;
    case GgufType::I64:
      out(static_cast<int64_t>(r.u64(what)));
      return;
    case GgufType::F32: {
      const uint32_t bits = r.u32(what);
      float f;
      std::memcpy(&f, &bits, sizeof f);
      out(static_cast<double>(f));
      return;
    }
    case GgufType::F64: {
      const uint64_t bits = r.u64(what);
      double d;
      std::memcpy(&d, &bits, sizeof d);
      out(d);
      return;
    }
    case GgufType::BOOL: {
      const uint8_t b = r.u8(what);
      if (b > 1) {
        r.fail("key '" + key + "': bool value " + std::to_string(b) + " is not 0 or 1");
      }
      out(b == 1);
      return;
    }
    case GgufType::STRING:
      out(r.string(what));
      return;
    case GgufType::ARRAY:
      break;
  }
  r.fail("key '" + key + "': nested array");  // unreachable: callers handle ARRAY
}

template <typename T>
std::vector<T> read_array_of(Reader& r, GgufType elem, const std::string& key, uint64_t n) {
  const std::string what = "key '" + key + "' array element";
  std::vector<T> values;
  values.reserve(static_cast<size_t>(n));  // n was checked against the remaining bytes
  for (uint64_t i = 0; i < n; ++i) {
    read_scalar(r, elem, key, what, [&](auto v) {
      if constexpr (std::is_convertible_v<decltype(v), T>) values.push_back(T(std::move(v)));
    });
  }
  return values;
}

GgufValue read_value(Reader& r, const std::string& key) {
  GgufValue value;
  value.type = read_value_type(r, key, "value type");
  if (value.type != GgufType::ARRAY) {
    read_scalar(r, value.type, key, "key '" + key + "' value",
                [&](auto v) { value.value = std::move(v); });
    return value;
  }
  value.elem_type = read_value_type(r, key, "array element type");
  if (value.elem_type == GgufType::ARRAY) {
    r.fail("key '" + key + "': arrays of arrays are not supported");
  }
  const uint64_t n = r.u64("key '" + key + "' array length");
  const uint64_t min_bytes = value.elem_type == GgufType::STRING ? 8 : fixed_size(value.elem_type);
  r.claim(n, min_bytes,
          "key '" + key + "' array of " + std::string(gguf_type_name(value.elem_type)));
  switch (value.elem_type) {
    case GgufType::U8:
    case GgufType::U16:
    case GgufType::U32:
    case GgufType::U64:
      value.value = read_array_of<uint64_t>(r, value.elem_type, key, n);
      break;
    case GgufType::I8:
    case GgufType::I16:
    case GgufType::I32:
    case GgufType::I64:
      value.value = read_array_of<int64_t>(r, value.elem_type, key, n);
      break;
    case GgufType::F32:
    case GgufType::F64:
      value.value = read_array_of<double>(r, value.elem_type, key, n);
      break;
    case GgufType::BOOL:
      value.value = read_array_of<bool>(r, value.elem_type, key, n);
      break;
    case GgufType::STRING:
      value.value = read_array_of<std::string>(r, value.elem_type, key, n);
      break;
    case GgufType::ARRAY:
      break;
  }
  return value;
}

GgufMetadata read_metadata(Reader& r, uint64_t n_kv) {
  GgufMetadata md;
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.string("metadata key " + std::to_string(i));
    if (key.empty()) r.fail("metadata key " + std::to_string(i) + " is empty");
    if (md.has(key)) r.fail("duplicate metadata key '" + key + "'");
    GgufValue value = read_value(r, key);
    md.set(std::move(key), std::move(value));
  }
  return md;
}

uint64_t read_alignment(Reader& r, const GgufMetadata& md) {
  const GgufValue* v = md.find("general.alignment");
  if (!v) return kDefaultAlignment;
  if (v->type != GgufType::U32) {
    r.fail("general.alignment has type " + std::string(gguf_type_name(v->type)) + ", expected u32");
  }
  const uint64_t a = std::get<uint64_t>(v->value);
  if (a == 0 || (a & (a - 1)) != 0) {
    r.fail("general.alignment " + std::to_string(a) + " is not a power of two");
  }
  return a;
}

// A count read from the header must fit in what follows before anything is sized by it.
void check_count(Reader& r, uint64_t count, uint64_t min_bytes, std::string_view what,
                 std::string_view item) {
  if (count > r.remaining() / min_bytes) {
    const std::string total = count > std::numeric_limits<uint64_t>::max() / min_bytes
                                  ? std::string("over 2^64")
                                  : "at least " + std::to_string(count * min_bytes);
    r.fail("truncated header: " + std::string(what) + " " + std::to_string(count) + " needs " +
           total + " bytes (" + std::to_string(min_bytes) + " per " + std::string(item) +
           ") after offset " + hex(r.pos()) + ", but " + r.end_text());
  }
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

GgufTensorInfo read_tensor_info(Reader& r, uint64_t index, uint64_t alignment) {
  GgufTensorInfo t;
  t.name = r.string("tensor " + std::to_string(index) + " name");
  if (t.name.empty()) r.fail("tensor " + std::to_string(index) + " has an empty name");
  if (t.name.size() > kMaxTensorName) {
    r.fail("tensor " + std::to_string(index) + " name '" + t.name.substr(0, 80) + "' is " +
           std::to_string(t.name.size()) + " bytes, longer than " + std::to_string(kMaxTensorName));
  }
  if (t.name.find('\0') != std::string::npos) {
    r.fail("tensor " + std::to_string(index) + " name contains a NUL byte");
  }
  const std::string prefix = "tensor " + t.name + ": ";

  const uint32_t n_dims = r.u32("tensor " + t.name + " n_dims");
  if (n_dims < 1 || n_dims > kMaxDims) {
    r.fail(prefix + "n_dims " + std::to_string(n_dims) + ", expected 1.." +
           std::to_string(kMaxDims));
  }
  int64_t n_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    const int64_t ne = static_cast<int64_t>(r.u64("tensor " + t.name + " dims"));
    // An empty tensor is never a real weight; refusing it keeps n_rows() >= 1.
    if (ne < 1) {
      r.fail(prefix + "dimension " + std::to_string(d) + " is " + std::to_string(ne) +
             ", expected >= 1");
    }
    t.dims.push_back(ne);
    if (n_elements > std::numeric_limits<int64_t>::max() / ne) {
      r.fail(prefix + "shape " + shape_text(t.dims) + "... has more than 2^63-1 elements");
    }
    n_elements *= ne;
  }

  const uint32_t type_id = r.u32("tensor " + t.name + " type");
  const std::optional<TypeTraits> traits = type_traits(type_id);
  if (!traits) r.fail(prefix + "unknown ggml type id " + std::to_string(type_id));
  t.type = static_cast<GgmlType>(type_id);
  if (t.dims[0] % traits->block_size != 0) {
    r.fail(prefix + "row length " + std::to_string(t.dims[0]) + " is not a multiple of the " +
           std::string(traits->name) + " block size " + std::to_string(traits->block_size));
  }
  const uint64_t n_blocks = static_cast<uint64_t>(n_elements / traits->block_size);
  if (n_blocks > std::numeric_limits<uint64_t>::max() / traits->type_size) {
    r.fail(prefix + "shape " + shape_text(t.dims) + " of " + std::string(traits->name) +
           " overflows a 64-bit byte size");
  }
  t.n_bytes = n_blocks * traits->type_size;

  t.offset = r.u64("tensor " + t.name + " offset");
  if (t.offset % alignment != 0) {
    r.fail(prefix + "offset " + hex(t.offset) + " is not a multiple of the alignment " +
           std::to_string(alignment));
  }
  return t;
}

std::string range_text(uint64_t data_offset, const GgufTensorInfo& t) {
  const uint64_t start = add_saturated(data_offset, t.offset);
  return hex(start) + ".." + hex(add_saturated(start, t.n_bytes));
}

// Each tensor's bytes lie inside the file and no two tensors share a byte.
void check_data_ranges(Reader& r, const std::vector<GgufTensorInfo>& tensors, uint64_t data_offset,
                       uint64_t file_size) {
  const uint64_t data_bytes = file_size > data_offset ? file_size - data_offset : 0;
  for (const GgufTensorInfo& t : tensors) {
    if (t.offset > data_bytes || t.n_bytes > data_bytes - t.offset) {
      r.fail("tensor " + t.name + ": data range " + range_text(data_offset, t) +
             " exceeds file size " + hex(file_size));
    }
  }
  std::vector<const GgufTensorInfo*> by_offset;
  for (const GgufTensorInfo& t : tensors) by_offset.push_back(&t);
  // Stable, so that equal offsets report the later tensor of the file.
  std::stable_sort(
      by_offset.begin(), by_offset.end(),
      [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const GgufTensorInfo& prev = *by_offset[i - 1];
    const GgufTensorInfo& cur = *by_offset[i];
    if (prev.offset + prev.n_bytes > cur.offset) {
      r.fail("tensor " + cur.name + ": data range " + range_text(data_offset, cur) +
             " overlaps tensor " + prev.name + " (" + range_text(data_offset, prev) + ")");
    }
  }
}

}  // namespace

int64_t GgufTensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t GgufTensorInfo::n_rows() const {
  int64_t n = 1;
  for (size_t i = 1; i < dims.size(); ++i) n *= dims[i];
  return n;
}

GgufFile GgufFile::parse(std::span<const uint8_t> bytes, uint64_t file_size, std::string name) {
  if (bytes.size() > file_size) {
    throw GgufError(name + ": " + std::to_string(bytes.size()) + " bytes given for a file of " +
                    std::to_string(file_size) + " bytes");
  }
  GgufFile f;
  f.name_ = std::move(name);
  f.file_size_ = file_size;
  Reader r(bytes, file_size, f.name_);

  check_magic(r, bytes);
  f.version_ = r.u32("the version");
  check_version(r, f.version_);
  const uint64_t n_tensors = r.u64("the tensor count");
  const uint64_t n_kv = r.u64("the metadata count");
  check_count(r, n_tensors, kMinTensorInfoBytes, "tensor count", "tensor info");
  check_count(r, n_kv, kMinKvBytes, "metadata count", "key-value pair");

  f.metadata_ = read_metadata(r, n_kv);
  f.alignment_ = read_alignment(r, f.metadata_);

  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t = read_tensor_info(r, i, f.alignment_);
    if (f.tensor_index_.count(t.name)) r.fail("duplicate tensor name '" + t.name + "'");
    f.tensor_index_.emplace(t.name, f.tensors_.size());
    f.tensors_.push_back(std::move(t));
  }

  // Padding after the tensor infos may lie beyond a header-only prefix; that is fine.
  // Like ggml, a file without tensors has no data section to align (vocab-only files
  // often end right after the header).
  const uint64_t header_end = r.pos();
  f.data_offset_ =
      n_tensors == 0 ? header_end : (header_end + f.alignment_ - 1) / f.alignment_ * f.alignment_;
  check_data_ranges(r, f.tensors_, f.data_offset_, file_size);
  return f;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace runnel
