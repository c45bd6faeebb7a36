// The malformed-GGUF corpus: one valid small file written by GgufWriter, and a list
// of damaged copies, each with a substring its GgufError message must contain.
// Header-only (inline) so that both unit_tests and native_tests (the CLI test, which
// does not link the unit test sources) can use it.
//
// Base file layout (offsets computed, not assumed, by locating the string records):
//   header 24 bytes | 8 key-value pairs | 3 tensor infos | pad to 32 | 3 tensors
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/gguf/gguf.h"
#include "core/gguf/gguf_writer.h"

namespace runnel {

struct MalformedCase {
  std::string name;
  std::vector<uint8_t> bytes;
  std::string expected_error_substring;
};

namespace malformed_detail {

inline std::vector<uint8_t> pattern_bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

// Offset of the u64 length prefix of the GGUF string record holding `s`.
inline size_t find_record(const std::vector<uint8_t>& b, std::string_view s) {
  std::vector<uint8_t> needle(8 + s.size());
  for (int i = 0; i < 8; ++i) needle[i] = static_cast<uint8_t>(uint64_t{s.size()} >> (8 * i));
  for (size_t i = 0; i < s.size(); ++i) needle[8 + i] = static_cast<uint8_t>(s[i]);
  for (size_t at = 0; at + needle.size() <= b.size(); ++at) {
    bool match = true;
    for (size_t i = 0; i < needle.size() && match; ++i) match = b[at + i] == needle[i];
    if (match) return at;
  }
  throw std::logic_error("malformed corpus: record '" + std::string(s) + "' not found");
}

inline void put(std::vector<uint8_t>& b, size_t at, uint64_t v, int n_bytes) {
  for (int i = 0; i < n_bytes; ++i) b.at(at + i) = static_cast<uint8_t>(v >> (8 * i));
}

inline std::string hex(uint64_t v) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[v & 15]);
    v >>= 4;
  } while (v != 0);
  return "0x" + s;
}

// Where the fields of a key-value pair / tensor info start in the base file.
struct KeyAt {
  size_t record;  // u64 key length
  size_t type;    // u32 value type
  size_t value;   // first byte of the value
};
inline KeyAt key_at(const std::vector<uint8_t>& b, std::string_view key) {
  const size_t r = find_record(b, key);
  return {r, r + 8 + key.size(), r + 12 + key.size()};
}

struct TensorAt {
  size_t record;  // u64 name length
  size_t n_dims;  // u32
  size_t dims;    // u64 x n_dims
  size_t type;    // u32
  size_t offset;  // u64
};
inline TensorAt tensor_at(const std::vector<uint8_t>& b, std::string_view name, int n_dims) {
  const size_t r = find_record(b, name);
  const size_t nd = r + 8 + name.size();
  const size_t type = nd + 4 + 8 * static_cast<size_t>(n_dims);
  return {r, nd, nd + 4, type, type + 4};
}

}  // namespace malformed_detail

// The valid file every case starts from: metadata of most kinds (string, u32, f32,
// bool, string array, i32 array) and three tensors of three types.
inline std::vector<uint8_t> malformed_base_file() {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("general.alignment", 32);
  w.set_string("general.name", "runnel malformed-corpus base");
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "hello", "world", "runnel"});
  w.set("tokenizer.ggml.token_type",
        GgufValue{GgufType::ARRAY, GgufType::I32, std::vector<int64_t>{2, 3, 3, 1, 1, 1}});
  w.set_u32("llama.block_count", 1);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.add_tensor("output_norm.weight", GgmlType::F32, {8}, malformed_detail::pattern_bytes(32, 1));
  w.add_tensor("blk.0.attn_q.weight", GgmlType::Q8_0, {64, 2},
               malformed_detail::pattern_bytes(2 * 2 * 34, 2));
  w.add_tensor("blk.0.attn_k.weight", GgmlType::F16, {32, 3},
               malformed_detail::pattern_bytes(32 * 3 * 2, 3));
  return w.bytes();
}

inline std::vector<MalformedCase> malformed_gguf_corpus() {
  using namespace malformed_detail;
  const std::vector<uint8_t> base = malformed_base_file();
  const GgufFile parsed = GgufFile::parse(base, "base.gguf");
  const uint64_t data = parsed.data_offset();
  const GgufTensorInfo& norm = *parsed.find_tensor("output_norm.weight");
  const GgufTensorInfo& q = *parsed.find_tensor("blk.0.attn_q.weight");
  const GgufTensorInfo& k = *parsed.find_tensor("blk.0.attn_k.weight");
  const TensorAt q_at = tensor_at(base, q.name, 2);
  const TensorAt k_at = tensor_at(base, k.name, 2);
  const KeyAt align_at = key_at(base, "general.alignment");
  const KeyAt tokens_at = key_at(base, "tokenizer.ggml.tokens");
  const KeyAt name_at = key_at(base, "general.name");
  const KeyAt count_at = key_at(base, "llama.block_count");
  const KeyAt eps_at = key_at(base, "llama.attention.layer_norm_rms_epsilon");
  const KeyAt bos_at = key_at(base, "tokenizer.ggml.add_bos_token");

  std::vector<MalformedCase> cases;
  auto truncated = [&](std::string name, size_t size, std::string expected) {
    cases.push_back({std::move(name), std::vector<uint8_t>(base.begin(), base.begin() + size),
                     std::move(expected)});
  };
  auto patched = [&](std::string name, size_t at, uint64_t v, int n_bytes, std::string expected) {
    std::vector<uint8_t> b = base;
    put(b, at, v, n_bytes);
    cases.push_back({std::move(name), std::move(b), std::move(expected)});
  };
  auto range = [&](const GgufTensorInfo& t) {
    return hex(data + t.offset) + ".." + hex(data + t.offset + t.n_bytes);
  };

  // Truncation inside every section.
  truncated("truncated in magic", 2, "truncated header: the magic");
  truncated("truncated in version", 6, "truncated header: the version");
  truncated("truncated in tensor count", 13, "truncated header: the tensor count");
  truncated("truncated in metadata count", 20, "truncated header: the metadata count");
  truncated("truncated after the counts", 60, "truncated header: tensor count 3 needs at least");
  truncated("truncated in a key length", count_at.record + 4,
            "truncated header: metadata key 5 length");
  truncated("truncated in a key", count_at.record + 13,
            "truncated header: metadata key 5 at offset " + hex(count_at.record + 8) +
                " claims 17 bytes");
  truncated("truncated in a value", eps_at.value + 2,
            "truncated header: key 'llama.attention.layer_norm_rms_epsilon' value");
  truncated("truncated in a string array", find_record(base, "world") + 10,
            "truncated header: key 'tokenizer.ggml.tokens' array element");
  truncated("truncated in a tensor info", q_at.dims + 4,
            "truncated header: tensor blk.0.attn_q.weight dims");
  truncated("truncated in the padding", data - 4,
            "tensor output_norm.weight: data range " + range(norm) + " exceeds file size " +
                hex(data - 4));
  truncated("truncated in the data", data + q.offset + 40,
            "tensor blk.0.attn_q.weight: data range " + range(q) + " exceeds file size " +
                hex(data + q.offset + 40));
  truncated("last byte missing", base.size() - 1,
            "tensor blk.0.attn_k.weight: data range " + range(k) + " exceeds file size " +
                hex(base.size() - 1));

  // Header fields.
  patched("bad magic", 0, 0x4c4d4747, 4, "not a GGUF file (magic 0x47474d4c \"GGML\"");
  patched("version 1", 4, 1, 4, "GGUF version 1 is no longer supported");
  patched("version 99", 4, 99, 4, "unsupported GGUF version 99");
  patched("big-endian version", 4, 0x03000000, 4, "big-endian");
  patched("huge tensor count", 8, uint64_t{1} << 40, 8,
          "truncated header: tensor count 1099511627776 needs at least 36283883716608 bytes");
  patched("huge metadata count", 16, ~uint64_t{0}, 8,
          "truncated header: metadata count 18446744073709551615 needs over 2^64 bytes");

  // Metadata.
  patched("huge key length", 24, ~uint64_t{0}, 8,
          "metadata key 0 at offset 0x20 claims 18446744073709551615 bytes");
  patched("empty key", 24, 0, 8, "metadata key 0 is empty");
  patched("huge string length", name_at.value, uint64_t{1} << 40, 8,
          "key 'general.name' value at offset " + hex(name_at.value + 8) +
              " claims 1099511627776 bytes");
  patched("huge array length", tokens_at.value + 4, uint64_t{1} << 62, 8,
          "key 'tokenizer.ggml.tokens' array of string at offset " + hex(tokens_at.value + 12) +
              " claims 4611686018427387904 items");
  patched("unknown metadata value type", count_at.type, 13, 4,
          "key 'llama.block_count': unknown metadata value type 13");
  patched("unknown array element type", tokens_at.value, 0x7fffffff, 4,
          "key 'tokenizer.ggml.tokens': unknown metadata value type 2147483647");
  patched("array of arrays", tokens_at.value, 9, 4,
          "key 'tokenizer.ggml.tokens': arrays of arrays are not supported");
  patched("bool out of range", bos_at.value, 2, 1,
          "key 'tokenizer.ggml.add_bos_token': bool value 2 is not 0 or 1");
  {
    std::vector<uint8_t> b = base;  // llama.block_count -> general.alignment (same length)
    const std::string dup = "general.alignment";
    std::copy(dup.begin(), dup.end(), b.begin() + static_cast<long>(count_at.record + 8));
    cases.push_back({"duplicate key", std::move(b), "duplicate metadata key 'general.alignment'"});
  }
  patched("alignment not a power of two", align_at.value, 3, 4,
          "general.alignment 3 is not a power of two");
  patched("alignment zero", align_at.value, 0, 4, "general.alignment 0 is not a power of two");
  patched("alignment of type i32", align_at.type, 5, 4,
          "general.alignment has type i32, expected u32");
  patched("alignment 64 misaligns offsets", align_at.value, 64, 4,
          "tensor blk.0.attn_q.weight: offset " + hex(q.offset) +
              " is not a multiple of the alignment 64");

  // Tensor infos.
  patched("empty tensor name", q_at.record, 0, 8, "tensor 1 has an empty name");
  patched("n_dims 0", q_at.n_dims, 0, 4, "tensor blk.0.attn_q.weight: n_dims 0, expected 1..4");
  patched("n_dims 5", q_at.n_dims, 5, 4, "tensor blk.0.attn_q.weight: n_dims 5, expected 1..4");
  patched("dimension 0", q_at.dims + 8, 0, 8,
          "tensor blk.0.attn_q.weight: dimension 1 is 0, expected >= 1");
  patched("negative dimension", q_at.dims + 8, ~uint64_t{0}, 8,
          "tensor blk.0.attn_q.weight: dimension 1 is -1, expected >= 1");
  patched("dims product overflows int64", q_at.dims + 8, uint64_t{1} << 62, 8,
          "tensor blk.0.attn_q.weight: shape [64, 4611686018427387904]... has more than "
          "2^63-1 elements");
  patched("unknown tensor type", q_at.type, 99, 4,
          "tensor blk.0.attn_q.weight: unknown ggml type id 99");
  patched("tensor type runnel does not know (IQ2_XXS)", q_at.type, 16, 4,
          "tensor blk.0.attn_q.weight: unknown ggml type id 16");
  patched("row not a multiple of the block size", q_at.dims, 48, 8,
          "tensor blk.0.attn_q.weight: row length 48 is not a multiple of the Q8_0 block size 32");
  {
    std::vector<uint8_t> b = base;  // blk.0.attn_k.weight -> blk.0.attn_q.weight
    b[k_at.record + 8 + 11] = 'q';
    cases.push_back(
        {"duplicate tensor name", std::move(b), "duplicate tensor name 'blk.0.attn_q.weight'"});
  }
  patched("misaligned tensor offset", q_at.offset, q.offset + 1, 8,
          "tensor blk.0.attn_q.weight: offset " + hex(q.offset + 1) +
              " is not a multiple of the alignment 32");
  patched("offset past end of file", k_at.offset, 0x100000, 8,
          "tensor blk.0.attn_k.weight: data range " + hex(data + 0x100000) + ".." +
              hex(data + 0x100000 + k.n_bytes) + " exceeds file size " + hex(base.size()));
  patched("offset near 2^64", k_at.offset, ~uint64_t{0} - 31, 8,
          "tensor blk.0.attn_k.weight: data range 0xffffffffffffffff..0xffffffffffffffff exceeds "
          "file size " +
              hex(base.size()));
  patched("overlapping tensors", k_at.offset, q.offset + 32, 8,
          "tensor blk.0.attn_k.weight: data range " + hex(data + q.offset + 32) + ".." +
              hex(data + q.offset + 32 + k.n_bytes) + " overlaps tensor blk.0.attn_q.weight (" +
              range(q) + ")");
  return cases;
}

}  // namespace runnel
