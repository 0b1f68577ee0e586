#include "backends/cpu/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "core/ir/tensor.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1; older headers lack the name
#endif

namespace shapejit::backends::cpu {

namespace {

size_t round_up(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

}  // namespace

char* map_huge_aligned(size_t bytes) {
  // Mapped with a huge page to spare, then trimmed to a 2 MiB boundary.
  constexpr size_t kExtent = HugePageHeap::kHugePage;
  if (bytes == 0 || bytes > (size_t{1} << 62)) return nullptr;
  const size_t span = bytes + kExtent;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  char* const start = static_cast<char*>(raw);
  char* const base = reinterpret_cast<char*>(round_up(reinterpret_cast<uintptr_t>(start), kExtent));
  if (base > start) ::munmap(start, static_cast<size_t>(base - start));
  if (char* const end = base + bytes; end < start + span) ::munmap(end, static_cast<size_t>(start + span - end));
  return base;
}

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
  char* const base = map_huge_aligned(bytes);
  if (!base) return nullptr;
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

HugePageBacking& HugePageBacking::process() {
  static HugePageBacking backing([] {
    const char* v = std::getenv("SHAPEJIT_HUGE_PAGES");
    return !(v && std::strcmp(v, "0") == 0);
  }());
  return backing;
}

void HugePageBacking::request(std::span<const Range> ranges) {
  constexpr uintptr_t kExtent = HugePageHeap::kHugePage;
  // The ranges merged, so that views of one array count its bytes once.
  std::vector<std::pair<uintptr_t, uintptr_t>> spans;
  for (const Range& r : ranges) {
    const auto begin = reinterpret_cast<uintptr_t>(r.data);
    if (r.bytes > 0 && begin + r.bytes > begin) spans.emplace_back(begin, begin + r.bytes);
  }
  std::sort(spans.begin(), spans.end());
  std::map<uintptr_t, size_t> covered;  // extent -> bytes of it in the ranges
  uintptr_t done = 0;  // the merged ranges reach up to here
  for (auto [begin, end] : spans) {
    begin = std::max(begin, done);
    if (begin >= end) continue;
    done = end;
    for (uintptr_t e = begin / kExtent; e <= (end - 1) / kExtent; ++e) {
      covered[e] += std::min(end, (e + 1) * kExtent) - std::max(begin, e * kExtent);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!enabled_) return;
  for (const auto& [extent, bytes] : covered) {
    if (bytes >= kExtent / 2 && named_.insert(extent).second) queue_.push_back(extent);
  }
  ask_some_locked();
}

void HugePageBacking::ask_some() {
  std::lock_guard<std::mutex> lock(mu_);
  ask_some_locked();
}

void HugePageBacking::ask_some_locked() {
  constexpr uintptr_t kExtent = HugePageHeap::kHugePage;
  for (size_t n = 0; n < kExtentsPerCall && !queue_.empty() && failures_in_a_row_ < kMaxFailuresInARow; ++n) {
    const uintptr_t extent = queue_.front();
    queue_.pop_front();
    ++stats_.asked;
    if (::madvise(reinterpret_cast<void*>(extent * kExtent), kExtent, MADV_COLLAPSE) == 0) {
      ++stats_.collapsed;
      failures_in_a_row_ = 0;
    } else {
      ++failures_in_a_row_;
    }
  }
  if (failures_in_a_row_ >= kMaxFailuresInARow) queue_.clear();
  waiting_.store(!queue_.empty(), std::memory_order_relaxed);
}

HugePageBacking::Stats HugePageBacking::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.waiting = queue_.size();
  s.asking = enabled_ && failures_in_a_row_ < kMaxFailuresInARow;
  return s;
}

std::vector<HugePageBacking::Range> RecurringInputs::observe(std::span<const DLTensor* const> args) {
  std::vector<HugePageBacking::Range> due;
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const DLTensor& t = *args[static_cast<size_t>(inputs_[i])];
    const void* at = static_cast<const char*>(t.data) + t.byte_offset;
    if (named_at_[i].load(std::memory_order_relaxed) == at) continue;
    if (!lock.owns_lock()) lock.lock();
    if (!named_.contains(at)) {
      if (seen_.insert(at).second) continue;  // its first call
      if (named_.size() >= kMaxAddresses) named_.clear();
      named_.insert(at);
      const ir::ByteSpan span = ir::byte_span(t);
      due.push_back({reinterpret_cast<const void*>(span.begin), span.end - span.begin});
    }
    named_at_[i].store(at, std::memory_order_relaxed);
  }
  if (seen_.size() >= kMaxAddresses) seen_.clear();
  return due;
}

}  // namespace shapejit::backends::cpu
