#include "backends/pool/block_pool.h"

#include <bit>
#include <cstdlib>
#include <new>

#include "core/support/guarded_memory.h"

namespace shapejit::backends::pool {

std::shared_ptr<BlockPool> BlockPool::create(size_t max_retained_bytes, AllocFn alloc, FreeFn free) {
  return std::shared_ptr<BlockPool>(new BlockPool(max_retained_bytes, alloc, free));
}

std::shared_ptr<BlockPool> BlockPool::host(size_t max_retained_bytes) {
  std::shared_ptr<BlockPool> pool = create(
      max_retained_bytes, [](size_t bytes) { return std::aligned_alloc(64, bytes); }, [](void* p) { std::free(p); });
  pool->guarded_ = support::guard_pages();
  return pool;
}

BlockPool::~BlockPool() {
  for (auto& [bytes, p] : blocks_) free_(p);
}

size_t BlockPool::size_class(size_t bytes) {
  if (bytes <= 4096) return bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  // Four classes per power of two: at most 25% over the request.
  const size_t step = std::bit_floor(bytes) / 4;
  return (bytes + step - 1) / step * step;
}

std::shared_ptr<void> BlockPool::take(size_t bytes) {
  if (guarded_) {  // the exact size, its own mapping, never reused
    void* p = support::guarded_alloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
    return std::shared_ptr<void>(p, [bytes](void* q) { support::guarded_free(q, bytes); });
  }
  const size_t cls = size_class(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(cls);
    if (it != blocks_.end()) {
      p = it->second;
      blocks_.erase(it);
      stats_.retained_bytes -= cls;
      ++stats_.hits;
    } else {
      ++stats_.misses;
    }
  }
  if (p == nullptr) {
    p = alloc_(cls);
    if (p == nullptr) throw std::bad_alloc();
  }
  return std::shared_ptr<void>(p, [self = shared_from_this(), cls](void* q) { self->give(q, cls); });
}

void BlockPool::give(void* p, size_t bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  if (bytes > max_retained_) {
    lock.unlock();
    free_(p);
    return;
  }
  // Over the bound: the largest retained blocks go first.
  while (stats_.retained_bytes + bytes > max_retained_ && !blocks_.empty()) {
    auto last = std::prev(blocks_.end());
    free_(last->second);
    stats_.retained_bytes -= last->first;
    blocks_.erase(last);
  }
  blocks_.emplace(bytes, p);
  stats_.retained_bytes += bytes;
}

BlockPool::Stats BlockPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace shapejit::backends::pool
