// BlockPool: a caching allocator for kernels' buffers.
//
// A kernel called again and again (a decode step: the same kernel, a cache
// one position longer each call) would otherwise allocate its temporaries
// and outputs fresh every call: large blocks come from mmap, and every page
// is faulted in and zeroed by the kernel again. The pool keeps freed blocks,
// by size class (four per doubling, so a buffer that grows a little reuses
// its old block), up to a bound on the bytes it retains, and hands them out
// again. Blocks are shared_ptrs that return themselves to the pool; they may
// outlive their kernel and the backend (the pool lives while a block does).
// The memory is not zeroed: kernels write every element they read.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace shapejit::backends::pool {

class BlockPool : public std::enable_shared_from_this<BlockPool> {
 public:
  using AllocFn = void* (*)(size_t bytes);  // nullptr on failure
  using FreeFn = void (*)(void* p);

  static std::shared_ptr<BlockPool> create(size_t max_retained_bytes, AllocFn alloc, FreeFn free);
  // Host memory, 64-byte aligned; under SHAPEJIT_GUARD_PAGES, each block
  // its own guarded mapping (core/support/guarded_memory.h).
  static std::shared_ptr<BlockPool> host(size_t max_retained_bytes);
  ~BlockPool();

  // At least `bytes` (a whole size class); throws std::bad_alloc.
  std::shared_ptr<void> take(size_t bytes);

  struct Stats {
    size_t hits = 0, misses = 0, retained_bytes = 0;
  };
  Stats stats() const;

  // The class a request of `bytes` is served from.
  static size_t size_class(size_t bytes);

 private:
  BlockPool(size_t max_retained, AllocFn alloc, FreeFn free) : max_retained_(max_retained), alloc_(alloc), free_(free) {}
  void give(void* p, size_t bytes);

  const size_t max_retained_;
  const AllocFn alloc_;
  const FreeFn free_;
  bool guarded_ = false;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> blocks_;  // free, by class
  Stats stats_;
};

}  // namespace shapejit::backends::pool
