// The snapshot a call site's hit path reads, and how a new one is published.
//
// A Snapshot (a GuardTree over the site's entries) is immutable once
// published. The hit path reads the current one through one atomic pointer,
// without a lock (SnapshotCell::Reader); a miss, under the site's mutex,
// builds the next one (Snapshot::with, Snapshot::replacing) and publishes
// it. The replaced snapshot is retired, and freed at a later publish that
// finds no reader inside dispatch: a reader raises a count before it reads
// the pointer, so a concurrent reader never sees freed memory, and a site
// with thousands of entries (a compile per shape) holds one snapshot, not
// one per entry it ever had. Entries are owned by the site, not by
// snapshots: a retired snapshot's entries live on.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "guards/guard_tree.h"

namespace shapejit::runtime {

struct Entry;

struct Snapshot {
  uint64_t version = 0;  // one more per publish: a miss sees whether entries came since its lookup
  guards::GuardTree tree;
  std::vector<const Entry*> entries;  // by GuardTree id
  // Per entry, each symbol's place in the tree's flat dims (-1: unbacked);
  // empty when the tree is not flat.
  std::vector<std::vector<int32_t>> flat_symbols;

  // The next version: this one (or none) with `e` added.
  static std::unique_ptr<Snapshot> with(const Snapshot* base, const Entry& e);
  // The next version with `from` replaced by `to`, which has its guards.
  std::unique_ptr<Snapshot> replacing(const Entry* from, const Entry* to) const;
};

// Where a site's current snapshot lives. live() and publish() run under the
// site's mutex; Reader runs anywhere, at any time.
class SnapshotCell {
 public:
  // Reads the current snapshot (null before the first publish) and keeps
  // it alive until leave() or the end of its scope.
  class Reader {
   public:
    explicit Reader(SnapshotCell& cell) : readers_(&cell.readers_) {
      cell.readers_.fetch_add(1, std::memory_order_seq_cst);
      snapshot_ = cell.current_.load(std::memory_order_seq_cst);
    }
    ~Reader() { leave(); }
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;

    const Snapshot* get() const { return snapshot_; }
    void leave() {
      if (readers_) readers_->fetch_sub(1, std::memory_order_release);
      readers_ = nullptr;
    }

   private:
    std::atomic<uint32_t>* readers_;
    const Snapshot* snapshot_;
  };

  // The snapshot published last; under the site's mutex it cannot be retired.
  const Snapshot* live() const { return live_.get(); }
  // Makes `next` current, retires the one it replaces, and frees what is
  // retired when no reader is inside.
  void publish(std::unique_ptr<Snapshot> next);

 private:
  std::atomic<const Snapshot*> current_{nullptr};
  std::atomic<uint32_t> readers_{0};  // threads between reading current_ and leaving dispatch
  std::unique_ptr<Snapshot> live_;                 // what current_ points to
  std::vector<std::unique_ptr<Snapshot>> retired_;  // replaced, maybe still read
};

}  // namespace shapejit::runtime
