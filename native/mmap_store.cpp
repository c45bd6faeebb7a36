#include "native/mmap_store.h"

#include <algorithm>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace runnel {
namespace {

// Transparent huge pages are 2 MiB on x86-64 and on aarch64 with 4 KiB base pages.
constexpr size_t kHugePage = size_t{2} << 20;
// Address space an arena reserves (committed only as copies are written): a few arenas
// even for an 8B model, so at most a few partly used huge pages.
constexpr size_t kArenaBytes = size_t{1} << 30;
// Where a copy starts in its arena: a page boundary, as when each copy was a mapping.
constexpr size_t kCopyAlign = 4096;

constexpr size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

// Closes the descriptor on every path out of map_file.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { ::close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

[[noreturn]] void os_error(const std::string& what, const std::string& path, int err) {
  throw GgufError(what + " " + path + ": " + std::strerror(err));
}

}  // namespace

std::unique_ptr<MmapStore> MmapStore::open(const std::string& path) {
  // Built before any mapping so that the destructor unmaps on every error path.
  std::unique_ptr<MmapStore> store(new MmapStore());
  std::vector<GgufFile> files;
  for (const std::string& part : split_paths(path)) {
    store->map_file(part);
    files.push_back(GgufFile::parse(store->mapped_bytes(store->maps_.size() - 1), part));
  }
  store->model_ = GgufModel::join(std::move(files));
  store->index_layers();
  return store;
}

void MmapStore::map_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) os_error("cannot open", path, errno);
  FdCloser closer(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) os_error("cannot stat", path, errno);
  if (S_ISDIR(st.st_mode)) throw GgufError(path + ": is a directory, not a GGUF file");
  if (!S_ISREG(st.st_mode)) throw GgufError(path + ": not a regular file");
  if (st.st_size == 0) throw GgufError(path + ": empty file (0 bytes), not a GGUF file");
  const size_t n_bytes = static_cast<size_t>(st.st_size);
  void* addr = ::mmap(nullptr, n_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) os_error("cannot mmap", path, errno);
  const int kept_fd = ::dup(fd);  // for posix_fadvise; -1 only disables page-cache drops
  maps_.push_back(Mapping{addr, n_bytes, kept_fd, path});
}

MmapStore::~MmapStore() {
  experts_.reset();  // its I/O threads read through direct_fds_
  for (const int fd : direct_fds_) {
    if (fd >= 0) ::close(fd);
  }
  for (const Arena& a : arenas_) ::munmap(a.base, a.size);
  for (const Mapping& m : maps_) {
    ::munmap(m.addr, m.n_bytes);
    if (m.fd >= 0) ::close(m.fd);
  }
}

std::span<const uint8_t> MmapStore::mapped_bytes(size_t file_index) const {
  const Mapping& m = maps_.at(file_index);
  return {static_cast<const uint8_t*>(m.addr), m.n_bytes};
}

std::span<const uint8_t> MmapStore::tensor_bytes(const GgufTensorInfo& tensor) {
  // The parser checked [data_offset + offset, + n_bytes) against this file's size.
  const GgufFile& file = model_.files.at(tensor.file_index);
  return mapped_bytes(tensor.file_index)
      .subspan(file.data_offset() + tensor.offset, tensor.n_bytes);
}

void MmapStore::index_layers() {
  for (const GgufTensorInfo& t : model_.tensors) {
    const uint64_t start = model_.files[t.file_index].data_offset() + t.offset;
    layer_ranges_[layer_of_tensor(t.name)].push_back(Range{t.file_index, start, t.n_bytes});
  }
}

void MmapStore::prefetch(int layer) {
  // Resident layers stay in memory: asking again each token only makes the kernel walk
  // the page cache over the whole layer (a tenth of a 1B model's decode time).
  if (!layer_streamed(layer)) return;
  auto it = layer_ranges_.find(layer);
  if (it == layer_ranges_.end()) return;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  for (const Range& r : it->second) {
    // madvise wants a page-aligned start; widen the range down to the page.
    const uint64_t begin = r.start / page * page;
    auto* base = static_cast<uint8_t*>(maps_[r.file_index].addr);
    // A hint only: failure changes nothing about correctness.
    (void)::madvise(base + begin, r.start + r.n_bytes - begin, MADV_WILLNEED);
  }
}

int MmapStore::set_streaming(uint64_t layer_budget_bytes) {
  int n_layers = 0;
  for (const auto& [layer, ranges] : layer_ranges_) n_layers = std::max(n_layers, layer + 1);
  streamed_.assign(static_cast<size_t>(n_layers), false);
  std::vector<uint64_t> layer_bytes(static_cast<size_t>(n_layers), 0);
  uint64_t all = 0, max_layer = 0;
  for (int l = 0; l < n_layers; ++l) {
    for (const Range& r : layer_ranges_[l]) layer_bytes[l] += r.n_bytes;
    all += layer_bytes[l];
    max_layer = std::max(max_layer, layer_bytes[l]);
  }
  if (all <= layer_budget_bytes) {
    streamed_.clear();
    return 0;
  }
  const uint64_t in_transit = 2 * max_layer;
  uint64_t used = 0;
  int n_streamed = 0;
  for (int l = 0; l < n_layers; ++l) {
    const uint64_t bytes = layer_bytes[l];
    if (n_streamed == 0 && used + bytes + in_transit <= layer_budget_bytes) {
      used += bytes;  // resident for good
    } else {
      streamed_[l] = true;
      ++n_streamed;
    }
  }
  if (n_streamed == 0) streamed_.clear();
  return n_streamed;
}

bool MmapStore::layer_streamed(int layer) const {
  return layer >= 0 && static_cast<size_t>(layer) < streamed_.size() && streamed_[layer];
}

void MmapStore::acquire(int layer) {
  if (layer_streamed(layer)) prefetch(layer);
}

void MmapStore::release(int layer) {
  if (!layer_streamed(layer)) return;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  for (const Range& r : layer_ranges_[layer]) {
    // Whole pages inside the range only: a page shared with a neighbour stays.
    const uint64_t begin = (r.start + page - 1) / page * page;
    const uint64_t end = (r.start + r.n_bytes) / page * page;
    if (end <= begin) continue;
    const Mapping& m = maps_[r.file_index];
    (void)::madvise(static_cast<uint8_t*>(m.addr) + begin, end - begin, MADV_DONTNEED);
    if (m.fd >= 0) (void)::posix_fadvise(m.fd, static_cast<off_t>(begin), static_cast<off_t>(end - begin),
                                         POSIX_FADV_DONTNEED);
  }
}

int MmapStore::set_expert_streaming(uint64_t cache_bytes, int min_slots) {
  std::vector<ExpertCache::File> files;
  for (const Mapping& m : maps_) {
    const int direct = ::open(m.path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);  // -1: buffered reads
    direct_fds_.push_back(direct);
    files.push_back(ExpertCache::File{m.path, m.fd, direct});
  }
  ExpertSlots::Layout layout = ExpertSlots::layout_of(model_);
  for (size_t i = 0; i < model_.tensors.size(); ++i) {
    const int stack = layout.stack_of_tensor[i];
    if (stack >= 0) expert_stack_[&model_.tensors[i]] = static_cast<size_t>(stack);
  }
  experts_ = std::make_unique<ExpertCache>(std::move(files), std::move(layout.stacks), layout.n_layers,
                                           layout.n_experts, cache_bytes, min_slots);
  return experts_->n_slots();
}

bool MmapStore::tensor_streamed(const GgufTensorInfo& tensor) const {
  return layer_streamed(layer_of_tensor(tensor.name)) || (experts_ && expert_stack_.count(&tensor) > 0);
}

bool MmapStore::experts_streamed(int /*layer*/) const { return experts_ != nullptr; }

void MmapStore::fetch_experts(int layer, std::span<const int> ids) {
  if (experts_) experts_->fetch(layer, ids);
}

int MmapStore::fetch_experts_begin(int layer, std::span<int> ids) {
  return experts_ ? experts_->begin(layer, ids) : WeightStore::fetch_experts_begin(layer, ids);
}

void MmapStore::fetch_experts_wait(int /*layer*/) {
  if (experts_) experts_->wait();
}

void MmapStore::unpin_experts(int layer) {
  if (experts_) experts_->unpin(layer);
}

int MmapStore::expert_pin_capacity() const {
  return experts_ ? experts_->n_slots() : WeightStore::expert_pin_capacity();
}

std::span<const uint8_t> MmapStore::expert_bytes(const GgufTensorInfo& stack, int e) {
  if (!experts_) return WeightStore::expert_bytes(stack, e);
  return experts_->bytes(expert_stack_.at(&stack), e);
}

ExpertCacheStats MmapStore::expert_stats() const { return experts_ ? experts_->stats() : ExpertCacheStats{}; }

uint8_t* MmapStore::copy_space(const GgufTensorInfo& tensor, size_t n_bytes) {
  if (tensor_streamed(tensor)) return nullptr;
  if (n_bytes == 0) return nullptr;
  size_t at = arenas_.empty() ? 0 : round_up(arenas_.back().used, kCopyAlign);
  if (arenas_.empty() || at + n_bytes > arenas_.back().size) {
    // A new arena, its start moved up to a huge page boundary (the rest unmapped); just
    // this copy's size where the system refuses to reserve more (strict overcommit).
    size_t size = round_up(std::max(n_bytes, kArenaBytes), kHugePage);
    const auto reserve = [](size_t bytes) {
      return ::mmap(nullptr, bytes + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                    -1, 0);
    };
    void* raw = reserve(size);
    if (raw == MAP_FAILED && size > round_up(n_bytes, kHugePage)) {
      size = round_up(n_bytes, kHugePage);
      raw = reserve(size);
    }
    if (raw == MAP_FAILED) {
      throw std::runtime_error("out of memory: cannot allocate " + std::to_string(n_bytes) + " bytes for tensor '" +
                               tensor.name + "'");
    }
    auto* const start = static_cast<uint8_t*>(raw);
    uint8_t* const base = start + (round_up(reinterpret_cast<uintptr_t>(start), kHugePage) -
                                   reinterpret_cast<uintptr_t>(start));
    if (base > start) ::munmap(start, static_cast<size_t>(base - start));
    if (base + size < start + size + kHugePage) {
      ::munmap(base + size, static_cast<size_t>(start + size + kHugePage - (base + size)));
    }
    (void)::madvise(base, size, MADV_HUGEPAGE);  // fewer TLB misses; a hint only
    arenas_.push_back(Arena{base, size, 0});
    at = 0;
  }
  arenas_.back().used = at + n_bytes;
  copied_bytes_ += n_bytes;
  return arenas_.back().base + at;
}

void MmapStore::drop(const GgufTensorInfo& tensor) {
  const Mapping& m = maps_.at(tensor.file_index);
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = model_.files[tensor.file_index].data_offset() + tensor.offset;
  // Whole pages inside the tensor only: a page shared with a neighbour stays.
  const uint64_t begin = (start + page - 1) / page * page;
  const uint64_t end = (start + tensor.n_bytes) / page * page;
  if (end > begin) (void)::madvise(static_cast<uint8_t*>(m.addr) + begin, end - begin, MADV_DONTNEED);
  dropped_bytes_ += tensor.n_bytes;
  if (on_load_progress_) on_load_progress_(dropped_bytes_);
}

uint64_t MmapStore::copy_bytes() const {
  return copied_bytes_;
}

}  // namespace runnel
