// HugePageHeap: memory on 2 MiB pages, for what kernels read from DRAM on
// every call.
//
// A frozen model's packed weights (a MiniLM-size encoder's are 42 MB, past
// a 32 MB L3) are read from memory once a call, panel after panel. On 4 KiB
// pages that read walks the page tables once every 4 KiB, and the hardware
// prefetchers stop at each page's end: one thread's products of 16 rows over
// those weights took 3.9-4.2 ms against 3.0 with the weights in cache. On
// 2 MiB pages they take 3.1, with the prefetches the tiles make.
//
// Linux gives anonymous memory huge pages where it is told to (transparent
// huge pages in "madvise" mode, Debian's default) and where a 2 MiB aligned
// extent lies whole inside the mapping. So the heap maps chunks aligned to
// 2 MiB, marks them, and hands out blocks from them one after another:
// weights of 590 KB share huge pages instead of each sitting on small ones.
// A chunk is unmapped when its last block is freed (the chunk taking new
// blocks is reused from its start instead); its space is not reused before
// then, which suits what it holds: derived copies that live as long as a
// freeze. Only touched memory is backed, so a chunk costs the pages its
// blocks cover. Where the kernel has no huge pages, the blocks are ordinary
// memory.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>

namespace shapejit::backends::pool {

class HugePageHeap : public std::enable_shared_from_this<HugePageHeap> {
 public:
  static constexpr size_t kHugePage = size_t{2} << 20;

  // The process's heap (kept while any block of it lives).
  static const std::shared_ptr<HugePageHeap>& process();
  // Blocks come from chunks of `chunk_bytes` (rounded up to whole huge
  // pages), or of their own size rounded up for a block over half that.
  static std::shared_ptr<HugePageHeap> create(size_t chunk_bytes = size_t{32} << 20);
  ~HugePageHeap();
  HugePageHeap(const HugePageHeap&) = delete;
  HugePageHeap& operator=(const HugePageHeap&) = delete;

  // `bytes` (at least one), 64-byte aligned, given back when the last copy
  // of the pointer goes; null when no memory could be mapped.
  std::shared_ptr<void> allocate(size_t bytes);

  struct Stats {
    size_t chunks = 0;        // mapped now
    size_t mapped_bytes = 0;  // their address space
    size_t blocks = 0;        // live now
    size_t block_bytes = 0;   // their bytes, as rounded to 64
  };
  Stats stats() const;

 private:
  struct Chunk;
  explicit HugePageHeap(size_t chunk_bytes);
  Chunk* map(size_t bytes);  // under mu_
  void unmap(Chunk* c);      // under mu_
  void give(Chunk* c, size_t bytes);

  const size_t chunk_bytes_;
  mutable std::mutex mu_;
  Chunk* current_ = nullptr;  // where blocks are cut now
  Stats stats_;
};

}  // namespace shapejit::backends::pool
