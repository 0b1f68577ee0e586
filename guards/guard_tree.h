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
// `lookup` reads metadata only and allocates nothing. Adding an entry
// rebuilds the index (a miss path event).
#pragma once

#include <unordered_map>
#include <vector>

#include "guards/guard_set.h"

namespace shapejit::guards {

class GuardTree {
 public:
  static constexpr int kMiss = -1;

  // Adds an entry's guards under the caller's id.
  void add(int id, GuardSet guards);
  // Removes every entry.
  void clear();
  // The id of a matching entry, or kMiss.
  int lookup(Args args) const;
  size_t size() const { return entries_.size(); }
  size_t num_groups() const { return groups_.size(); }

 private:
  struct Entry {
    int id;
    GuardSet guards;
  };
  struct Candidate {
    int id;
    std::vector<int64_t> key;  // the group's dims' values
    GuardSet residual;
  };
  struct Group {
    std::vector<std::pair<int, int>> dims;  // (input, dim) positions, sorted
    std::vector<Candidate> candidates;
    std::unordered_map<uint64_t, std::vector<int>> index;  // key hash -> candidates
  };

  void rebuild();

  std::vector<Entry> entries_;
  int num_inputs_ = -1;  // -1 when entries disagree (then checked per candidate)
  std::vector<Guard> common_;
  std::vector<Group> groups_;
};

}  // namespace shapejit::guards
