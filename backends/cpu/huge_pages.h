// Memory on 2 MiB pages, for what kernels read from DRAM on every call:
// HugePageHeap for memory the backend allocates, HugePageBacking for the
// caller's.
//
// A frozen model's packed weights (a MiniLM-size encoder's are 42 MB, past
// a 32 MB L3) are read from memory once a call, panel after panel. On 4 KiB
// pages that read walks the page tables once every 4 KiB, and the hardware
// prefetchers stop at each page's end; on 2 MiB pages, with the prefetches
// the tiles make, the products run at nearly their speed from cache.
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

#include <dlpack/dlpack.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_set>
#include <utility>
#include <vector>

namespace shapejit::backends::cpu {

// `bytes` of fresh anonymous memory (reserved as it is touched) whose start
// is 2 MiB-aligned, so that each whole extent in it can lie on a huge page;
// null when none could be mapped. Give it back with ::munmap(p, bytes).
char* map_huge_aligned(size_t bytes);

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

// HugePageBacking: huge pages under memory that kernels read on every call
// but did not allocate, a model's weights passed as inputs (unfrozen).
//
// NumPy puts an array under 4 MB on small pages, and a decode step reads
// every weight once a call, at the speed its pages allow
// (cpu_kernels_bench's BM_RowProductsOnHugePages).
//
// Linux 6.1's MADV_COLLAPSE moves the small pages of a 2 MiB-aligned
// extent onto a huge page where they are: the same addresses and bytes, as
// khugepaged does in the background, whatever the transparent huge page
// mode but "never". A kernel asks for it for the inputs its products read
// as B once they come back to an address they had before (RecurringInputs
// below), so that weights read on every call are on huge pages from their
// second call on.
//
// Each extent is asked for once, and only where the ranges of one request
// cover at least half of it: its whole 2 MiB become resident, so an array
// alone in a mostly untouched extent is left as it is. A collapse copies
// its extent, so a call asks for at most kExtentsPerCall and leaves the
// rest to the calls after it (work()): a model's 1 GB of small weights is
// spread over its next 32 calls, not paid on one. After kMaxFailuresInARow failures (no huge
// page to be had, or a kernel without MADV_COLLAPSE) it stops asking.
// SHAPEJIT_HUGE_PAGES=0 turns it off.
class HugePageBacking {
 public:
  static constexpr int kMaxFailuresInARow = 16;
  static constexpr size_t kExtentsPerCall = 16;

  // The process's, on unless SHAPEJIT_HUGE_PAGES is 0.
  static HugePageBacking& process();
  explicit HugePageBacking(bool enabled) : enabled_(enabled) {}
  HugePageBacking(const HugePageBacking&) = delete;
  HugePageBacking& operator=(const HugePageBacking&) = delete;

  struct Range {
    const void* data = nullptr;
    size_t bytes = 0;
  };
  // Huge pages under the extents these ranges cover for at least half
  // (overlapping ranges count once), those not asked for before: up to
  // kExtentsPerCall of them (with those still waiting) now, the rest by
  // work().
  void request(std::span<const Range> ranges);
  // Asks for up to kExtentsPerCall of the extents still waiting; a relaxed
  // load when none is.
  void work() {
    if (waiting_.load(std::memory_order_relaxed)) ask_some();
  }

  struct Stats {
    size_t asked = 0;      // extents
    size_t collapsed = 0;  // of them, now on a huge page
    size_t waiting = 0;    // extents to ask for on later calls
    bool asking = true;    // false when off, or after the failures
  };
  Stats stats() const;

 private:
  void ask_some();
  void ask_some_locked();  // under mu_

  mutable std::mutex mu_;
  bool enabled_;
  int failures_in_a_row_ = 0;
  std::unordered_set<uintptr_t> named_;  // extents' numbers (address / 2 MiB) asked for or waiting
  std::deque<uintptr_t> queue_;          // waiting
  std::atomic<bool> waiting_{false};     // !queue_.empty()
  Stats stats_;
};

// A kernel's inputs that recur: an input at an address that one of the
// kernel's inputs had on an earlier call (a weight; a layer's weights in
// turn, for a kernel called once per layer) is named once per address, for
// HugePageBacking. A call whose inputs are where they were named costs a
// load and a compare per input.
class RecurringInputs {
 public:
  // The inputs watched: args[i] for each i of `inputs`.
  explicit RecurringInputs(std::vector<int> inputs)
      : inputs_(std::move(inputs)), named_at_(std::make_unique<std::atomic<const void*>[]>(inputs_.size())) {}
  // The ranges of this call's watched inputs (`args`, in host memory) that
  // recur and were not named before.
  std::vector<HugePageBacking::Range> observe(std::span<const DLTensor* const> args);
  bool empty() const { return inputs_.empty(); }

 private:
  const std::vector<int> inputs_;
  // seen_ and named_ are emptied past this many addresses (an address
  // named again is an extent asked for before: nothing is asked twice).
  static constexpr size_t kMaxAddresses = 4096;
  std::unique_ptr<std::atomic<const void*>[]> named_at_;  // per input, the address last named
  std::mutex mu_;
  std::unordered_set<const void*> seen_, named_;
};

}  // namespace shapejit::backends::cpu
