// GuardTree: the dispatch index over one call site's entries.
//
// Guards common to every entry (dtype, rank, device, and usually most dims)
// are checked once. The rest are split by the positions of the entries'
// static dims (`dim == c` guards): entries pinning the same positions form a
// group, indexed by a hash of those dims' values, so a lookup reads the
// positions, hashes them and probes one table per group; only the matching
// candidates' residual guards are checked. The cost grows with the number of
// groups (distinct static-dim patterns, a handful), not with the number of
// entries. Groups with more static dims are probed first: the most
// specialized entry that matches wins.
//
// `lookup` reads metadata only and allocates nothing. Adding an entry that
// keeps the common guards places it in its group (the group's table is
// re-indexed); one that removes a common guard rebuilds the whole index,
// which happens at most once per guard of the first entry. A site with
// thousands of entries (a compile per shape) adds each in time linear in
// its group's size, not in all entries' guards.
#pragma once

#include <vector>

#include "guards/guard_set.h"

namespace shapejit::guards {

class GuardTree {
 public:
  static constexpr int kMiss = -1;

  // Adds an entry's guards under the caller's id.
  void add(int id, GuardSet guards);
  static constexpr int kMaxFlat = 64;

  // The id of a matching entry, or kMiss. When `dims` (kMaxFlat values) is
  // given and the tree is flat, a hit leaves every input dim there, at
  // flat_offsets()[input] + dim, for the caller to reuse.
  int lookup(Args args, int64_t* dims = nullptr) const;
  // Per input, where its dims start in the flat array; null when the
  // entries' ranks differ (then no dims are handed out).
  const std::vector<int32_t>* flat_offsets() const { return flat_ ? &offsets_ : nullptr; }
  size_t size() const { return entries_.size(); }
  size_t num_groups() const { return groups_.size(); }

 private:
  // A guard list compiled for the hit path: each input's dtype, rank and
  // device in one compare, then `dim == c` triples, then the other guards
  // in their order.
  class Compiled {
   public:
    Compiled() = default;
    // `offsets`, when given, places each input's dims in one flat array
    // (the inputs' ranks are then fixed by these guards' own metadata).
    explicit Compiled(const std::vector<Guard>& guards, const std::vector<int32_t>* offsets = nullptr);
    bool check(Args args) const { return empty_ || (check_meta(args) && check_dims(args) && check_tail(args)); }
    bool check_meta(Args args) const;
    bool check_dims(Args args) const;
    bool check_dims_flat(const int64_t* dims) const;  // needs offsets
    bool check_tail(Args args) const;
    // The inputs whose dtype, rank and device are all checked here.
    std::vector<std::pair<int32_t, int32_t>> fixed_ranks() const;

   private:
    struct Meta {
      int32_t input;
      uint32_t dtype;
      int32_t ndim;
      uint64_t device;  // DLDevice's 8 bytes
    };
    struct DimEq {
      int32_t input, dim, flat;
      int64_t value;
    };
    struct DimRange {
      int32_t input, dim, flat;
      int64_t lo, hi;
    };
    struct DimsEq {
      int32_t input, dim, input2, dim2, flat, flat2;
    };
    std::vector<Meta> meta_;
    std::vector<Guard> before_;  // dtype/rank/device guards that did not form a Meta
    std::vector<DimEq> eqs_;
    std::vector<DimRange> ranges_;
    std::vector<DimsEq> pairs_;
    std::vector<int32_t> dense_;  // inputs that must be contiguous
    std::vector<Guard> rest_;     // expressions
    bool empty_ = true;
  };
  struct Entry {
    int id;
    GuardSet guards;
  };
  struct Candidate {
    int id;
    int num_inputs;
    std::vector<int64_t> key;  // the group's dims' values
    Compiled residual;
    int next = -1;  // the next candidate in the same hash slot
  };
  struct Group {
    std::vector<std::pair<int, int>> dims;  // (input, dim) positions, sorted
    std::vector<int32_t> flat;              // the same positions in the flat dims array
    std::vector<Candidate> candidates;
    // Open addressing over key hashes: slot -> first candidate, -1 empty.
    std::vector<uint64_t> slot_hash;
    std::vector<int32_t> slot_first;
    uint64_t mask = 0;
    void index();
    int first(uint64_t h) const;
  };

  void rebuild();
  // The entry's candidate, placed in the group of its static dims; returns
  // that group.
  Group& place(const Entry& e);
  void order_groups();
  int lookup_flat(Args args, int64_t* dims) const;
  int scan(const Group& group, Args args) const;

  std::vector<Entry> entries_;
  int num_inputs_ = -1;  // -1 when entries disagree (then checked per candidate)
  // When the common guards fix every input's rank, lookups copy all dims
  // into one array and compare by flat index.
  bool flat_ = false;
  std::vector<int32_t> offsets_;  // per input, into the flat array
  int32_t num_flat_ = 0;
  std::vector<Guard> common_guards_;  // in every entry, in the first entry's order
  Compiled common_;
  std::vector<Group> groups_;
};

}  // namespace shapejit::guards
