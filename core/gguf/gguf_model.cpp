// GgufModel: one model from one GGUF file or from split parts.
//
// llama.cpp's gguf-split writes parts named "<prefix>-%05d-of-%05d.gguf" (1-based)
// and puts split.no (u16, 0-based), split.count (u16) and split.tensors.count (i32,
// tensors of the whole model) in every part; metadata other than split.* lives in
// the first part.
#include <cstdio>
#include <string>

#include "core/gguf/gguf.h"

namespace runnel {
namespace {

constexpr char kSplitNo[] = "split.no";
constexpr char kSplitCount[] = "split.count";
constexpr char kSplitTensorsCount[] = "split.tensors.count";

// split.* value of one part, as u64, with the file name in errors.
std::optional<uint64_t> split_key(const GgufFile& f, const char* key) {
  try {
    return f.metadata().find_u64(key);
  } catch (const GgufError& e) {
    throw GgufError(f.name() + ": " + e.what());
  }
}

void check_split_part(const GgufFile& f, size_t index, size_t n_files) {
  const std::optional<uint64_t> no = split_key(f, kSplitNo);
  const std::optional<uint64_t> count = split_key(f, kSplitCount);
  if (!count) {
    throw GgufError(f.name() + ": part " + std::to_string(index + 1) + " of a " +
                    std::to_string(n_files) + "-file model has no " + kSplitCount);
  }
  if (*count != n_files) {
    throw GgufError(f.name() + ": " + kSplitCount + " is " + std::to_string(*count) + " but " +
                    std::to_string(n_files) + " files were given");
  }
  if (!no || *no != index) {
    throw GgufError(f.name() + ": " + kSplitNo + " is " +
                    (no ? std::to_string(*no) : std::string("missing")) + ", expected " +
                    std::to_string(index) + " (file " + std::to_string(index + 1) + " of " +
                    std::to_string(n_files) + ")");
  }
}

// Parses "-NNNNN-of-MMMMM.gguf" at the end of `path`; false when it is not there.
bool parse_split_suffix(const std::string& path, size_t& stem_len, int& no, int& count) {
  constexpr std::string_view kTail = ".gguf";
  constexpr size_t kSuffixLen = 1 + 5 + 4 + 5 + 5;  // "-00001-of-00003.gguf"
  if (path.size() < kSuffixLen) return false;
  const std::string_view s = std::string_view(path).substr(path.size() - kSuffixLen);
  if (s[0] != '-' || s.substr(6, 4) != "-of-" || s.substr(15) != kTail) return false;
  auto number = [](std::string_view digits, int& out) {
    out = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      out = out * 10 + (c - '0');
    }
    return true;
  };
  if (!number(s.substr(1, 5), no) || !number(s.substr(10, 5), count)) return false;
  stem_len = path.size() - kSuffixLen;
  return true;
}

}  // namespace

const GgufTensorInfo* GgufModel::find_tensor(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors[it->second];
}

GgufModel GgufModel::join(std::vector<GgufFile> files) {
  if (files.empty()) throw GgufError("a model needs at least one GGUF file");
  const size_t n_files = files.size();
  if (n_files == 1) {
    const std::optional<uint64_t> count = split_key(files[0], kSplitCount);
    if (count && *count > 1) {
      char first[48];
      std::snprintf(first, sizeof first, "-00001-of-%05llu.gguf",
                    static_cast<unsigned long long>(*count));
      throw GgufError(files[0].name() + ": " + kSplitCount + " is " + std::to_string(*count) +
                      " but only this file was given (open the first part, named like ..." + first +
                      ", to load all parts)");
    }
  } else {
    for (size_t i = 0; i < n_files; ++i) check_split_part(files[i], i, n_files);
  }

  GgufModel model;
  for (size_t i = 0; i < n_files; ++i) {
    for (const GgufTensorInfo& t : files[i].tensors()) {
      auto it = model.index_.find(t.name);
      if (it != model.index_.end()) {
        const GgufTensorInfo& first = model.tensors[it->second];
        throw GgufError(files[i].name() + ": tensor " + t.name + " is also in " +
                        files[first.file_index].name());
      }
      model.index_.emplace(t.name, model.tensors.size());
      model.tensors.push_back(t);
      model.tensors.back().file_index = static_cast<uint32_t>(i);
    }
  }

  if (n_files > 1) {
    const std::optional<uint64_t> expected = split_key(files[0], kSplitTensorsCount);
    if (!expected) throw GgufError(files[0].name() + ": no " + kSplitTensorsCount);
    if (*expected != model.tensors.size()) {
      throw GgufError(files[0].name() + ": " + kSplitTensorsCount + " is " +
                      std::to_string(*expected) + " but the " + std::to_string(n_files) +
                      " files hold " + std::to_string(model.tensors.size()) + " tensors");
    }
  }
  model.metadata = files[0].metadata();
  model.files = std::move(files);
  return model;
}

std::vector<std::string> split_paths(const std::string& first_path) {
  size_t stem_len = 0;
  int no = 0;
  int count = 0;
  if (!parse_split_suffix(first_path, stem_len, no, count) || no != 1 || count < 1) {
    return {first_path};
  }
  std::vector<std::string> paths;
  const std::string stem = first_path.substr(0, stem_len);
  for (int i = 1; i <= count; ++i) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "-%05d-of-%05d.gguf", i, count);
    paths.push_back(stem + suffix);
  }
  return paths;
}

}  // namespace runnel
