// Kept in its own file so the compiler never sees a replaced delete inlined next to
// the library's new (g++ 12 then warns -Wmismatched-new-delete).
#include "tests/core/sampling/alloc_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

namespace {
void* counted_malloc(std::size_t n_bytes) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n_bytes == 0 ? 1 : n_bytes);
}
}  // namespace

// Every non-aligned form is replaced, so that no pointer from a library-provided new
// (a sanitizer's, say) reaches these deletes. The aligned forms stay as provided:
// they pair only with each other.
void* operator new(std::size_t n_bytes) {
  if (void* p = counted_malloc(n_bytes)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n_bytes) {
  if (void* p = counted_malloc(n_bytes)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n_bytes, const std::nothrow_t&) noexcept {
  return counted_malloc(n_bytes);
}
void* operator new[](std::size_t n_bytes, const std::nothrow_t&) noexcept {
  return counted_malloc(n_bytes);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}

namespace runnel::testing {

long allocation_count() {
  return g_allocations.load(std::memory_order_relaxed);
}

}  // namespace runnel::testing
