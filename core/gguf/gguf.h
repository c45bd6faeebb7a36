// GGUF v2/v3 reader: a validating parser over the bytes of one file.
// Everything read from the file is checked (lengths, counts, types, ranges,
// alignment, overlaps) before use; a problem throws GgufError naming it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kernels/types.h"

namespace runnel {

class GgufError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Metadata value types, with the on-disk ids.
enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
std::string_view gguf_type_name(GgufType t);

// One metadata value. Integers keep their sign class, floats widen to double.
// Arrays hold their element type and the values of that class.
struct GgufValue {
  GgufType type = GgufType::U8;
  GgufType elem_type = GgufType::U8;  // for ARRAY
  std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<uint64_t>,
               std::vector<int64_t>, std::vector<double>, std::vector<bool>,
               std::vector<std::string>>
      value;

  size_t array_size() const;  // 0 for non-arrays
};

class GgufMetadata {
 public:
  bool has(std::string_view key) const;
  const GgufValue* find(std::string_view key) const;

  // Typed access. find_* returns nullopt when absent and throws GgufError when the
  // key exists with an incompatible type; get_* also throws when absent.
  // Any integer type converts to u64/i64 when the value fits.
  std::optional<std::string> find_string(std::string_view key) const;
  std::optional<uint64_t> find_u64(std::string_view key) const;
  std::optional<int64_t> find_i64(std::string_view key) const;
  std::optional<double> find_f64(std::string_view key) const;  // any number
  std::optional<bool> find_bool(std::string_view key) const;
  std::string get_string(std::string_view key) const;
  uint64_t get_u64(std::string_view key) const;
  int64_t get_i64(std::string_view key) const;
  double get_f64(std::string_view key) const;
  bool get_bool(std::string_view key) const;

  // Arrays (nullptr / empty optional when absent; throws on wrong element type).
  const std::vector<std::string>* find_string_array(std::string_view key) const;
  std::optional<std::vector<double>> find_f64_array(std::string_view key) const;
  std::optional<std::vector<int64_t>> find_i64_array(std::string_view key) const;

  // Insertion order is file order.
  const std::vector<std::pair<std::string, GgufValue>>& entries() const { return entries_; }
  void set(std::string key, GgufValue value);  // replaces an existing key

 private:
  std::vector<std::pair<std::string, GgufValue>> entries_;
  std::map<std::string, size_t, std::less<>> index_;
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> dims;  // ne[0] first (ne[0] is the contiguous row length)
  uint64_t offset = 0;        // relative to the data section of its file
  uint64_t n_bytes = 0;
  uint32_t file_index = 0;    // which split file holds it (0 for single files)

  int64_t n_elements() const;
  int64_t n_rows() const;  // product of dims[1..]
};

class GgufFile {
 public:
  // Parses `bytes`, the first bytes.size() bytes of a file of `file_size` bytes
  // (bytes may be a prefix holding at least the header; tensor data ranges are
  // checked against file_size). `name` appears in error messages.
  static GgufFile parse(std::span<const uint8_t> bytes, uint64_t file_size,
                        std::string name);
  static GgufFile parse(std::span<const uint8_t> bytes, std::string name) {
    return parse(bytes, bytes.size(), std::move(name));
  }

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute start of tensor data
  uint64_t file_size() const { return file_size_; }
  const std::string& name() const { return name_; }
  const GgufMetadata& metadata() const { return metadata_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

 private:
  std::string name_;
  uint32_t version_ = 3;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  uint64_t file_size_ = 0;
  GgufMetadata metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

// A model made of one or more GGUF files (split.* keys, name-0000K-of-0000N.gguf).
// Metadata comes from the first file; tensors from all, tagged with file_index.
struct GgufModel {
  std::vector<GgufFile> files;
  GgufMetadata metadata;                // of files[0]
  std::vector<GgufTensorInfo> tensors;  // all files, file order
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Joins parsed split files (in order); checks split.count / split.no / duplicates.
  static GgufModel join(std::vector<GgufFile> files);

 private:
  std::map<std::string, size_t, std::less<>> index_;
};

// For "dir/name-00001-of-00003.gguf" returns the paths of all three parts;
// for any other path returns just that path.
std::vector<std::string> split_paths(const std::string& first_path);

}  // namespace runnel
