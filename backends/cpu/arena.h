// Where a kernel's temporaries lie in the one block (the arena) a call
// takes from the pool.
//
// Steps run one after another, so a temporary whose last step has run
// leaves its bytes to those first written later: the arena is about the
// most that is live at once, not the sum of every temporary, and stays
// small enough for the pool to keep it between calls (a new block is
// faulted in afresh). Sizes arrive per call (the shape functions
// on its symbols), so the placement is made per call: a pass over the steps,
// placing each temporary at its first step in the best-fitting freed
// range (else at the arena's end) and freeing it after its last, in
// microseconds for a few hundred temporaries.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace shapejit::backends::cpu {

class ArenaPlanner {
 public:
  // `life[i]`: buffer i's first and last step, {-1, -1} for one that is
  // not a temporary (loops::buffer_lifetimes, inputs and outputs cleared).
  explicit ArenaPlanner(const std::vector<std::pair<int, int>>& life);

  struct Placement {
    std::vector<size_t> at;  // per buffer: its offset, 64-byte aligned
    size_t bytes = 0;        // the arena
  };
  // Offsets for temporaries of `bytes[i]` bytes (per buffer; ignored for
  // non-temporaries).
  Placement place(const std::vector<size_t>& bytes) const;

 private:
  std::vector<std::vector<int>> born_, dead_;  // per step: temporaries first and last used there
};

}  // namespace shapejit::backends::cpu
