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

bool is_meta(Kind k) { return k == Kind::kDType || k == Kind::kRank || k == Kind::kDevice; }

}  // namespace

GuardTree::Compiled::Compiled(const std::vector<Guard>& guards) {
  // Inputs with all three metadata guards become one Meta compare.
  std::vector<int> seen;
  for (const Guard& g : guards) {
    if (is_meta(g.kind) && std::find(seen.begin(), seen.end(), g.input) == seen.end()) seen.push_back(g.input);
  }
  for (int input : seen) {
    const Guard *dt = nullptr, *rank = nullptr, *dev = nullptr;
    for (const Guard& g : guards) {
      if (g.input != input) continue;
      if (g.kind == Kind::kDType) dt = &g;
      if (g.kind == Kind::kRank) rank = &g;
      if (g.kind == Kind::kDevice) dev = &g;
    }
    if (dt && rank && dev) {
      meta_.push_back({input, static_cast<uint32_t>(dt->a), static_cast<int32_t>(rank->a), static_cast<int32_t>(dev->a),
                       static_cast<int32_t>(dev->b)});
    } else {
      for (const Guard* g : {dt, rank, dev}) {
        if (g) before_.push_back(*g);
      }
    }
  }
  for (const Guard& g : guards) {
    switch (g.kind) {
      case Kind::kDType:
      case Kind::kRank:
      case Kind::kDevice: break;
      case Kind::kDimEq: eqs_.push_back({g.input, g.dim, g.a}); break;
      case Kind::kDimRange: ranges_.push_back({g.input, g.dim, g.a, g.b}); break;
      case Kind::kDimsEq: pairs_.push_back({g.input, g.dim, g.input2, g.dim2}); break;
      case Kind::kContiguous: dense_.push_back(g.input); break;
      case Kind::kExpr: rest_.push_back(g); break;
    }
  }
}

bool GuardTree::Compiled::check(Args args) const {
  for (const Meta& m : meta_) {
    const DLTensor* t = args[m.input];
    if ((ir::dl_word(t->dtype) != m.dtype) | (t->ndim != m.ndim) | (t->device.device_type != m.device_type) |
        (t->device.device_id != m.device_id)) {
      return false;
    }
  }
  for (const Guard& g : before_) {
    if (!check_guard(g, args)) return false;
  }
  for (const DimEq& e : eqs_) {
    if (args[e.input]->shape[e.dim] != e.value) return false;
  }
  for (const DimRange& r : ranges_) {
    const int64_t v = args[r.input]->shape[r.dim];
    if (v < r.lo || v > r.hi) return false;
  }
  for (const DimsEq& p : pairs_) {
    if (args[p.input]->shape[p.dim] != args[p.input2]->shape[p.dim2]) return false;
  }
  for (int32_t input : dense_) {
    const DLTensor* t = args[input];
    if (t->strides == nullptr) continue;
    int64_t expect = 1;
    for (int i = t->ndim; i-- > 0;) {
      if (t->shape[i] != 1 && t->strides[i] != expect) return false;
      expect *= t->shape[i];
    }
  }
  for (const Guard& g : rest_) {
    if (!check_guard(g, args)) return false;
  }
  return true;
}

void GuardTree::Group::index() {
  size_t cap = 4;
  while (cap < candidates.size() * 2) cap *= 2;
  mask = cap - 1;
  slot_hash.assign(cap, 0);
  slot_first.assign(cap, -1);
  for (int k = static_cast<int>(candidates.size()) - 1; k >= 0; --k) {  // chains keep insertion order
    const uint64_t h = hash_key(candidates[k].key.data(), candidates[k].key.size());
    size_t s = h & mask;
    while (slot_first[s] >= 0 && slot_hash[s] != h) s = (s + 1) & mask;
    candidates[k].next = slot_first[s];
    slot_hash[s] = h;
    slot_first[s] = k;
  }
}

int GuardTree::Group::first(uint64_t h) const {
  for (size_t s = h & mask;; s = (s + 1) & mask) {
    if (slot_first[s] < 0) return -1;
    if (slot_hash[s] == h) return slot_first[s];
  }
}

void GuardTree::add(int id, GuardSet guards) {
  entries_.push_back({id, std::move(guards)});
  rebuild();
}

void GuardTree::clear() {
  entries_.clear();
  rebuild();
}

void GuardTree::rebuild() {
  common_ = Compiled();
  groups_.clear();
  num_inputs_ = -1;
  if (entries_.empty()) return;
  num_inputs_ = entries_[0].guards.num_inputs();
  for (const Entry& e : entries_) {
    if (e.guards.num_inputs() != num_inputs_) num_inputs_ = -1;
  }
  // Common guards: in every entry. Kept in the first entry's order, which
  // puts dtype and rank before the dim guards that rely on them.
  std::vector<Guard> common;
  if (num_inputs_ >= 0) {
    for (const Guard& g : entries_[0].guards.guards()) {
      bool everywhere = std::all_of(entries_.begin() + 1, entries_.end(),
                                    [&](const Entry& e) { return contains(e.guards.guards(), g); });
      if (everywhere) common.push_back(g);
    }
  }
  common_ = Compiled(common);
  for (const Entry& e : entries_) {
    std::vector<Guard> residual;
    std::vector<std::pair<std::pair<int, int>, int64_t>> statics;
    for (const Guard& g : e.guards.guards()) {
      if (contains(common, g)) continue;
      if (g.kind == Kind::kDimEq) statics.push_back({{g.input, g.dim}, g.a});
      else residual.push_back(g);
    }
    std::sort(statics.begin(), statics.end());
    std::vector<std::pair<int, int>> dims;
    Candidate c{e.id, e.guards.num_inputs(), {}, Compiled(residual)};
    for (const auto& [pos, value] : statics) {
      dims.push_back(pos);
      c.key.push_back(value);
    }
    auto it = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) { return g.dims == dims; });
    if (it == groups_.end()) {
      groups_.push_back({dims, {}, {}, {}, 0});
      it = groups_.end() - 1;
    }
    it->candidates.push_back(std::move(c));
  }
  for (Group& g : groups_) g.index();
  // The most specialized entries first.
  std::stable_sort(groups_.begin(), groups_.end(), [](const Group& a, const Group& b) { return a.dims.size() > b.dims.size(); });
}

int GuardTree::lookup(Args args) const {
  if (groups_.empty()) return kMiss;
  if (num_inputs_ >= 0) {
    if (static_cast<int>(args.size()) != num_inputs_) return kMiss;
    if (!common_.check(args)) return kMiss;
  }
  constexpr size_t kMaxKey = 16;
  int64_t key[kMaxKey];
  for (const Group& group : groups_) {
    const size_t n = group.dims.size();
    int k;
    if (n <= kMaxKey) {
      // An entry whose dtype or rank guards are not common reads its key
      // dims only after this bounds check; its residual then checks the rest.
      bool readable = true;
      for (size_t i = 0; i < n; ++i) {
        const auto [input, dim] = group.dims[i];
        if (input >= static_cast<int>(args.size()) || dim >= args[input]->ndim) {
          readable = false;
          break;
        }
        key[i] = args[input]->shape[dim];
      }
      if (!readable) continue;
      k = group.first(hash_key(key, n));
    } else {
      k = group.candidates.empty() ? -1 : 0;  // rare: scan
    }
    for (; k >= 0; k = n <= kMaxKey ? group.candidates[k].next : (k + 1 < static_cast<int>(group.candidates.size()) ? k + 1 : -1)) {
      const Candidate& c = group.candidates[k];
      if (static_cast<int>(args.size()) != c.num_inputs) continue;
      bool match = true;
      for (size_t i = 0; i < n && match; ++i) {
        const auto [input, dim] = group.dims[i];
        match = n <= kMaxKey ? c.key[i] == key[i]
                             : (input < static_cast<int>(args.size()) && dim < args[input]->ndim && args[input]->shape[dim] == c.key[i]);
      }
      if (match && c.residual.check(args)) return c.id;
    }
  }
  return kMiss;
}

}  // namespace shapejit::guards
