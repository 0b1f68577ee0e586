#include "guards/guard_tree.h"

#include <algorithm>

#include "jit/support/hash.h"

namespace shapejit::guards {

namespace {

uint64_t hash_key(const int64_t* values, size_t n) {
  uint64_t h = 0x84222325cbf29ce4ULL;
  for (size_t i = 0; i < n; ++i) h = hash_combine(h, static_cast<uint64_t>(values[i]));
  return h;
}

bool contains(const std::vector<Guard>& set, const Guard& g) {
  return std::any_of(set.begin(), set.end(), [&](const Guard& o) { return o.same_predicate(g); });
}

}  // namespace

void GuardTree::add(int id, GuardSet guards) {
  entries_.push_back({id, std::move(guards)});
  rebuild();
}

void GuardTree::clear() {
  entries_.clear();
  rebuild();
}

void GuardTree::rebuild() {
  common_.clear();
  groups_.clear();
  num_inputs_ = -1;
  if (entries_.empty()) return;
  num_inputs_ = entries_[0].guards.num_inputs();
  for (const Entry& e : entries_) {
    if (e.guards.num_inputs() != num_inputs_) num_inputs_ = -1;
  }
  // Common guards: in every entry. Kept in the first entry's order, which
  // puts dtype and rank before the dim guards that rely on them.
  if (num_inputs_ >= 0) {
    for (const Guard& g : entries_[0].guards.guards()) {
      bool everywhere = std::all_of(entries_.begin() + 1, entries_.end(),
                                    [&](const Entry& e) { return contains(e.guards.guards(), g); });
      if (everywhere) common_.push_back(g);
    }
  }
  for (const Entry& e : entries_) {
    std::vector<Guard> residual;
    std::vector<std::pair<std::pair<int, int>, int64_t>> statics;
    for (const Guard& g : e.guards.guards()) {
      if (contains(common_, g)) continue;
      if (g.kind == Kind::kDimEq) statics.push_back({{g.input, g.dim}, g.a});
      else residual.push_back(g);
    }
    std::sort(statics.begin(), statics.end());
    std::vector<std::pair<int, int>> dims;
    Candidate c{e.id, {}, {}};
    for (const auto& [pos, value] : statics) {
      dims.push_back(pos);
      c.key.push_back(value);
    }
    // An entry whose dtype or rank guards are not common keeps them in its
    // residual; those must run before its key dims are read, so the key is
    // read only after a bounds check in lookup().
    c.residual = GuardSet(e.guards.num_inputs(), std::move(residual));
    auto it = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) { return g.dims == dims; });
    if (it == groups_.end()) {
      groups_.push_back({dims, {}, {}});
      it = groups_.end() - 1;
    }
    it->index[hash_key(c.key.data(), c.key.size())].push_back(static_cast<int>(it->candidates.size()));
    it->candidates.push_back(std::move(c));
  }
  std::stable_sort(groups_.begin(), groups_.end(), [](const Group& a, const Group& b) { return a.dims.size() > b.dims.size(); });
}

int GuardTree::lookup(Args args) const {
  if (entries_.empty()) return kMiss;
  if (num_inputs_ >= 0) {
    if (static_cast<int>(args.size()) != num_inputs_) return kMiss;
    for (const Guard& g : common_) {
      if (!check_guard(g, args)) return kMiss;
    }
  }
  constexpr size_t kInlineKey = 16;
  int64_t key[kInlineKey];
  for (const Group& group : groups_) {
    const size_t n = group.dims.size();
    if (n > kInlineKey) {  // rare: check candidates one by one
      for (const Candidate& c : group.candidates) {
        if (!c.residual.check(args)) continue;
        bool match = true;
        for (size_t i = 0; i < n && match; ++i) match = args[group.dims[i].first]->shape[group.dims[i].second] == c.key[i];
        if (match) return c.id;
      }
      continue;
    }
    bool readable = true;
    for (size_t i = 0; i < n && readable; ++i) {
      const auto [input, dim] = group.dims[i];
      readable = input < static_cast<int>(args.size()) && dim < args[input]->ndim;
      if (readable) key[i] = args[input]->shape[dim];
    }
    if (!readable) continue;
    auto it = group.index.find(hash_key(key, n));
    if (it == group.index.end()) continue;
    for (int k : it->second) {
      const Candidate& c = group.candidates[k];
      if (!std::equal(c.key.begin(), c.key.end(), key)) continue;
      if (c.residual.check(args)) return c.id;
    }
  }
  return kMiss;
}

}  // namespace shapejit::guards
