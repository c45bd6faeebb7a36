// GGUF v3 writer: metadata + tensors into one byte buffer, aligned as llama.cpp does.
// Used by tests (hand-built and malformed files) and by `runnel quantize`.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/gguf/gguf.h"

namespace runnel {

class GgufWriter {
 public:
  explicit GgufWriter(uint64_t alignment = 32) : alignment_(alignment) {}

  void set(std::string key, GgufValue value);
  void set_string(std::string key, std::string v);
  void set_u32(std::string key, uint32_t v);
  void set_i32(std::string key, int32_t v);
  void set_f32(std::string key, float v);
  void set_bool(std::string key, bool v);
  void set_string_array(std::string key, std::vector<std::string> v);

  // `data` must hold exactly row_bytes(type, dims[0]) * rows bytes.
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> dims,
                  std::span<const uint8_t> data);

  // A tensor whose data the caller writes itself after header_bytes() (files too big
  // to hold in memory): row_bytes(type, dims[0]) * rows bytes, then padding to the
  // alignment, in the order tensors were added.
  void add_tensor_info(std::string name, GgmlType type, std::vector<int64_t> dims);

  std::vector<uint8_t> bytes(uint32_t version = 3) const;
  // Everything before the first tensor's data (padded), for add_tensor_info users.
  std::vector<uint8_t> header_bytes(uint32_t version = 3) const;
  uint64_t alignment() const { return alignment_; }
  void write_file(const std::string& path) const;  // throws GgufError on I/O failure

 private:
  struct Pending {
    std::string name;
    GgmlType type;
    std::vector<int64_t> dims;
    std::vector<uint8_t> data;
    uint64_t n_bytes = 0;  // == data.size(), or the size of data written by the caller
  };
  uint64_t checked_size(const std::string& name, GgmlType type, const std::vector<int64_t>& dims) const;

  uint64_t alignment_;
  GgufMetadata metadata_;
  std::vector<Pending> tensors_;
};

}  // namespace runnel
