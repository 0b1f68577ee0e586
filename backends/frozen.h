// FrozenMemory: host memory the caller declares will not change until it
// thaws it (a model's weights, read by every call).
//
// Weights are graph inputs, never constants (DESIGN.md: new weights do not
// recompile), so a kernel cannot know that the B of `x @ w` is the same
// bytes as on the last call, and the LLVM backend packs every weight into
// its GEMM's panels on every call (a tenth of a small encoder's time on
// one thread). Frozen memory lets a backend keep what it derives from
// such bytes (the packed panels) across calls and kernels; thawing the
// memory drops it. Nothing about the graph, its guards or its cache key
// changes, and a caller that never freezes sees no difference.
//
// Writing to frozen memory is the caller's error: calls may go on reading
// what was derived from the old bytes. Memory must be thawed before it is
// freed (the Python front end holds its arrays while they are frozen).
//
//   FrozenMemory& frozen = FrozenMemory::process();
//   SJ_TRY(frozen.freeze(w.data(), w.bytes()));
//   ... calls that read w ...
//   SJ_TRY(frozen.thaw(w.data(), w.bytes()));
#pragma once

#include <dlpack/dlpack.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>

#include "core/support/status.h"

namespace shapejit::backends {

class FrozenMemory {
 public:
  // The process's registry: what the front ends freeze and the backends read.
  static FrozenMemory& process();

  // Declares [data, data + bytes) frozen. Freezing the same range again
  // counts: it stays frozen until thawed as many times. InvalidArgument for
  // an empty range, or one that overlaps a frozen range without being it.
  Status freeze(const void* data, size_t bytes);
  // Undoes one freeze of [data, data + bytes); the last one drops what was
  // derived from it. InvalidArgument when that range is not frozen.
  Status thaw(const void* data, size_t bytes);
  // The same for the bytes from each host tensor's first element to its
  // last (by its strides, which may be negative or zero), all or none: on
  // an error nothing changes, and the message names the tensor by
  // `names[i]` ("tensor i" without names). InvalidArgument also for a
  // tensor with no elements, or one not in host memory.
  Status freeze(std::span<const DLTensor* const> tensors, std::span<const std::string> names = {});
  Status thaw(std::span<const DLTensor* const> tensors, std::span<const std::string> names = {});
  // Whether [data, data + bytes) lies within one frozen range.
  bool frozen(const void* data, size_t bytes) const;
  // Whether any memory is frozen (no lock: a call that freezes nothing pays
  // no more than this).
  bool any() const { return ranges_now_.load(std::memory_order_relaxed) != 0; }

  // Something derived from frozen bytes, and its size.
  struct Derived {
    std::shared_ptr<const void> data;
    size_t bytes = 0;
  };
  // What `make` derives from [data, data + bytes), kept under `tag` (what
  // is derived and how: a layout and its parameters) until the frozen range
  // holding those bytes is thawed: made on the first call, shared after.
  // Null data when the bytes are not within one frozen range; the caller
  // then derives a copy of its own. `make` runs without the registry's
  // lock held (two threads may both make the first copy; one is kept).
  Derived derived(const void* data, size_t bytes, const std::string& tag, const std::function<Derived()>& make);

  struct Stats {
    size_t ranges = 0, frozen_bytes = 0;    // frozen now
    size_t derived = 0, derived_bytes = 0;  // kept now
    size_t made = 0;                        // derived copies made, in all
  };
  Stats stats() const;

 private:
  using Kept = std::map<std::pair<uintptr_t, std::string>, Derived>;  // by (first byte, tag)
  struct Range {
    uintptr_t end = 0;
    int64_t count = 0;  // freezes not yet thawed
    uint64_t id = 0;    // which freeze: a range thawed and frozen again is another
    Kept derived;
  };
  // Under mu_: freeze [begin, end), or undo one freeze of it, whose
  // derived copies move to `dropped` (freed after the lock).
  Status freeze_locked(uintptr_t begin, uintptr_t end);
  Status thaw_locked(uintptr_t begin, uintptr_t end, Kept& dropped);

  mutable std::mutex mu_;
  std::map<uintptr_t, Range> ranges_;  // by first byte; never overlapping
  std::atomic<size_t> ranges_now_{0};  // ranges_.size()
  uint64_t ranges_made_ = 0;
  size_t made_ = 0;
};

}  // namespace shapejit::backends
