#include "backends/cpu/arena.h"

#include <algorithm>

namespace shapejit::backends::cpu {

ArenaPlanner::ArenaPlanner(const std::vector<std::pair<int, int>>& life) {
  int steps = 0;
  for (const auto& [first, last] : life) steps = std::max(steps, last + 1);
  born_.resize(steps);
  dead_.resize(steps);
  for (int i = 0; i < static_cast<int>(life.size()); ++i) {
    if (life[i].first < 0) continue;
    born_[life[i].first].push_back(i);
    dead_[life[i].second].push_back(i);
  }
}

ArenaPlanner::Placement ArenaPlanner::place(const std::vector<size_t>& bytes) const {
  struct Range {
    size_t at, size;
  };
  Placement out;
  out.at.assign(bytes.size(), 0);
  std::vector<Range> free;  // by offset, no two adjacent
  auto rounded = [&](int i) { return (bytes[i] + 63) / 64 * 64; };
  for (size_t s = 0; s < born_.size(); ++s) {
    // Placed before the step's dead are freed: what a step reads and what
    // it writes never share bytes.
    for (int i : born_[s]) {
      const size_t want = rounded(i);
      if (want == 0) continue;
      auto best = free.end();
      for (auto it = free.begin(); it != free.end(); ++it) {
        if (it->size >= want && (best == free.end() || it->size < best->size)) best = it;
      }
      if (best != free.end()) {
        out.at[i] = best->at;
        best->at += want;
        best->size -= want;
        if (best->size == 0) free.erase(best);
        continue;
      }
      // None fits: the arena grows, from a freed range at its end if any.
      size_t from = out.bytes;
      if (!free.empty() && free.back().at + free.back().size == out.bytes) {
        from = free.back().at;
        free.pop_back();
      }
      out.at[i] = from;
      out.bytes = from + want;
    }
    for (int i : dead_[s]) {
      Range r{out.at[i], rounded(i)};
      if (r.size == 0) continue;
      auto next = std::lower_bound(free.begin(), free.end(), r.at, [](const Range& f, size_t at) { return f.at < at; });
      if (next != free.end() && r.at + r.size == next->at) {
        r.size += next->size;
        next = free.erase(next);
      }
      if (next != free.begin() && std::prev(next)->at + std::prev(next)->size == r.at) {
        std::prev(next)->size += r.size;
        continue;
      }
      free.insert(next, r);
    }
  }
  return out;
}

}  // namespace shapejit::backends::cpu
