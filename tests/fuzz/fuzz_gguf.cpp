// The GGUF reader on untrusted bytes: one file, or a split set (parts joined by
// kSplitSeparator in one input), then the metadata accessors and the tokenizer built
// from whatever metadata parsed. Expected failures are GgufError (and the tokenizer's
// GgufError); anything else escaping, a sanitizer report, a timeout or an OOM is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/gguf/gguf.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_util.h"

namespace runnel {
namespace {

// Between the parts of a split set in one input (the seed corpus has a 2-part set).
constexpr std::string_view kSplitSeparator = "\n==runnel-gguf-split==\n";
constexpr size_t kMaxParts = 4;

// Every typed accessor on every key: each either answers or throws GgufError.
void read_metadata(const GgufMetadata& md) {
  for (const auto& [key, value] : md.entries()) {
    (void)value.array_size();
    try { (void)md.find_string(key); } catch (const GgufError&) {}
    try { (void)md.find_u64(key); } catch (const GgufError&) {}
    try { (void)md.find_i64(key); } catch (const GgufError&) {}
    try { (void)md.find_f64(key); } catch (const GgufError&) {}
    try { (void)md.find_bool(key); } catch (const GgufError&) {}
    try { (void)md.find_string_array(key); } catch (const GgufError&) {}
    try { (void)md.find_f64_array(key); } catch (const GgufError&) {}
    try { (void)md.find_i64_array(key); } catch (const GgufError&) {}
  }
}

void read_tensors(const std::vector<GgufTensorInfo>& tensors) {
  for (const GgufTensorInfo& t : tensors) {
    (void)t.n_elements();
    (void)t.n_rows();
  }
}

}  // namespace
}  // namespace runnel

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace runnel;
  const std::vector<std::string_view> parts = fuzz::split_input(fuzz::as_text(data, size), kSplitSeparator);
  if (parts.size() > kMaxParts) return -1;  // not worth keeping in the corpus
  std::vector<GgufFile> files;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(parts[i].data()), parts[i].size());
    const std::string name = "fuzz-0000" + std::to_string(i + 1) + "-of-0000" + std::to_string(parts.size()) + ".gguf";
    try {
      // A prefix of the file with the whole size, as loaders read headers: the same
      // checks, or "only the first N bytes were read".
      (void)GgufFile::parse(bytes.first(bytes.size() / 2), bytes.size(), name);
    } catch (const GgufError&) {
    }
    try {
      files.push_back(GgufFile::parse(bytes, name));
    } catch (const GgufError&) {
      return 0;
    }
    read_metadata(files.back().metadata());
    read_tensors(files.back().tensors());
    (void)files.back().find_tensor("token_embd.weight");
  }
  try {
    const GgufModel model = GgufModel::join(std::move(files));
    read_tensors(model.tensors);
    (void)model.find_tensor("output.weight");
    const std::unique_ptr<Tokenizer> tok = Tokenizer::from_metadata(model.metadata);
    (void)tok->encode("Hello world <s>", true, true);
  } catch (const GgufError&) {
  }
  return 0;
}
