#include "backends/pool/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>

namespace shapejit::backends::pool {

namespace {

size_t round_up(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

}  // namespace

struct HugePageHeap::Chunk {
  char* base = nullptr;
  size_t bytes = 0;
  size_t used = 0;  // blocks are cut from here on
  size_t live = 0;  // blocks not yet given back
};

const std::shared_ptr<HugePageHeap>& HugePageHeap::process() {
  static const std::shared_ptr<HugePageHeap> heap = create();
  return heap;
}

std::shared_ptr<HugePageHeap> HugePageHeap::create(size_t chunk_bytes) {
  return std::shared_ptr<HugePageHeap>(new HugePageHeap(chunk_bytes));
}

HugePageHeap::HugePageHeap(size_t chunk_bytes) : chunk_bytes_(round_up(std::max<size_t>(chunk_bytes, 1), kHugePage)) {}

// Every block holds the heap, so only the current chunk, empty, is left.
HugePageHeap::~HugePageHeap() {
  if (current_) unmap(current_);
}

HugePageHeap::Chunk* HugePageHeap::map(size_t bytes) {
  // Mapped with a huge page to spare, then trimmed to a 2 MiB boundary.
  const size_t span = bytes + kHugePage;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  char* const start = static_cast<char*>(raw);
  char* const base = reinterpret_cast<char*>(round_up(reinterpret_cast<uintptr_t>(start), kHugePage));
  if (base > start) ::munmap(start, static_cast<size_t>(base - start));
  if (char* const end = base + bytes; end < start + span) ::munmap(end, static_cast<size_t>(start + span - end));
  // Without transparent huge pages (EINVAL), the chunk is ordinary memory.
  (void)::madvise(base, bytes, MADV_HUGEPAGE);
  ++stats_.chunks;
  stats_.mapped_bytes += bytes;
  return new Chunk{base, bytes};
}

void HugePageHeap::unmap(Chunk* c) {
  ::munmap(c->base, c->bytes);
  --stats_.chunks;
  stats_.mapped_bytes -= c->bytes;
  delete c;
}

std::shared_ptr<void> HugePageHeap::allocate(size_t bytes) {
  if (bytes > (size_t{1} << 62)) return nullptr;  // no such mapping; and the roundings below stay exact
  bytes = round_up(std::max<size_t>(bytes, 1), 64);
  std::lock_guard<std::mutex> lock(mu_);
  Chunk* c = current_;
  if (bytes > chunk_bytes_ / 2) {
    // A block of its own chunk: the current one keeps its free space.
    c = map(round_up(bytes, kHugePage));
  } else if (!c || c->bytes - c->used < bytes) {
    c = map(chunk_bytes_);
    if (c) {
      if (current_ && current_->live == 0) unmap(current_);
      current_ = c;
    }
  }
  if (!c) return nullptr;
  char* const p = c->base + c->used;
  c->used += bytes;
  ++c->live;
  ++stats_.blocks;
  stats_.block_bytes += bytes;
  return std::shared_ptr<void>(p, [self = shared_from_this(), c, bytes](void*) { self->give(c, bytes); });
}

void HugePageHeap::give(Chunk* c, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  --stats_.blocks;
  stats_.block_bytes -= bytes;
  if (--c->live != 0) return;
  if (c == current_) {
    c->used = 0;  // its pages stay mapped for the next blocks
  } else {
    unmap(c);
  }
}

HugePageHeap::Stats HugePageHeap::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace shapejit::backends::pool
