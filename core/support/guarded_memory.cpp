#include "core/support/guarded_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace shapejit::support {

namespace {

constexpr unsigned char kPattern = 0xA5;

size_t page_size() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// The mapping a block of `bytes` lies in: whole pages of data, then the guard.
struct Layout {
  char* map;
  size_t data_pages_bytes;
};

Layout layout_of(void* p, size_t bytes) {
  const size_t page = page_size();
  const size_t span = round_up(bytes == 0 ? 1 : bytes, 64);
  char* end = static_cast<char*>(p) + span;  // the guard page's start
  const size_t data = round_up(span, page);
  return {end - data, data};
}

[[noreturn]] void corrupted(const void* p, size_t bytes, ptrdiff_t at) {
  std::fprintf(stderr, "shapejit: SHAPEJIT_GUARD_PAGES: a write at offset %td of a %zu-byte block at %p, outside it\n", at,
               bytes, p);
  std::abort();
}

}  // namespace

bool guard_pages() {
  static const bool on = [] {
    const char* v = std::getenv("SHAPEJIT_GUARD_PAGES");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return on;
}

void* guarded_alloc(size_t bytes) {
  const size_t page = page_size();
  const size_t span = round_up(bytes == 0 ? 1 : bytes, 64);
  const size_t data = round_up(span, page);
  void* m = mmap(nullptr, data + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  char* map = static_cast<char*>(m);
  if (mprotect(map + data, page, PROT_NONE) != 0) {
    munmap(m, data + page);
    return nullptr;
  }
  char* p = map + data - span;
  std::memset(map, kPattern, static_cast<size_t>(p - map));
  std::memset(p + bytes, kPattern, span - bytes);
  return p;
}

void guarded_free(void* p, size_t bytes) {
  if (p == nullptr) return;
  const Layout l = layout_of(p, bytes);
  char* block = static_cast<char*>(p);
  for (char* c = l.map; c < block; ++c) {
    if (static_cast<unsigned char>(*c) != kPattern) corrupted(p, bytes, c - block);
  }
  const char* end = l.map + l.data_pages_bytes;
  for (const char* c = block + bytes; c < end; ++c) {
    if (static_cast<unsigned char>(*c) != kPattern) corrupted(p, bytes, c - block);
  }
  munmap(l.map, l.data_pages_bytes + page_size());
}

}  // namespace shapejit::support
