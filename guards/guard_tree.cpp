#include "guards/guard_tree.h"

#include <algorithm>

#include "core/ir/tensor.h"
#include "core/support/hash.h"

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

uint64_t device_word(const DLDevice& d) {
  static_assert(sizeof(DLDevice) == 8);
  uint64_t w;
  std::memcpy(&w, &d, 8);
  return w;
}

}  // namespace

GuardTree::Compiled::Compiled(const std::vector<Guard>& guards, const std::vector<int32_t>* offsets) {
  auto flat = [&](int input, int dim) { return offsets ? (*offsets)[input] + dim : -1; };
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
      DLDevice d{static_cast<DLDeviceType>(dev->a), static_cast<int32_t>(dev->b)};
      meta_.push_back({input, static_cast<uint32_t>(dt->a), static_cast<int32_t>(rank->a), device_word(d)});
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
      case Kind::kDimEq: eqs_.push_back({g.input, g.dim, flat(g.input, g.dim), g.a}); break;
      case Kind::kDimRange: ranges_.push_back({g.input, g.dim, flat(g.input, g.dim), g.a, g.b}); break;
      case Kind::kDimsEq: pairs_.push_back({g.input, g.dim, g.input2, g.dim2, flat(g.input, g.dim), flat(g.input2, g.dim2)}); break;
      case Kind::kContiguous: dense_.push_back(g.input); break;
      case Kind::kPermuted:  // a transposed weight: rare, and checked as any guard
      case Kind::kExpr: rest_.push_back(g); break;
    }
  }
  empty_ = guards.empty();
}

bool GuardTree::Compiled::check_meta(Args args) const {
  bool ok = true;
  for (const Meta& m : meta_) {
    const DLTensor* t = args[m.input];
    ok &= (ir::dl_word(t->dtype) == m.dtype) & (t->ndim == m.ndim) & (device_word(t->device) == m.device);
  }
  if (!ok) return false;
  for (const Guard& g : before_) {
    if (!check_guard(g, args)) return false;
  }
  return true;
}

bool GuardTree::Compiled::check_dims(Args args) const {
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
  return true;
}

bool GuardTree::Compiled::check_dims_flat(const int64_t* dims) const {
  bool ok = true;  // branch-free within each list: these are short and hot
  for (const DimEq& e : eqs_) ok &= dims[e.flat] == e.value;
  for (const DimRange& r : ranges_) ok &= (dims[r.flat] >= r.lo) & (dims[r.flat] <= r.hi);
  for (const DimsEq& p : pairs_) ok &= dims[p.flat] == dims[p.flat2];
  return ok;
}

namespace {

// ir::is_dense, straight-line for ranks up to 4, whose products do not form
// a loop-carried chain. Unsigned: beside a 0 the other dims may be as large
// as int64 allows (such a tensor is dense: it addresses nothing).
bool dense(const DLTensor* t) {
  const auto* st = reinterpret_cast<const uint64_t*>(t->strides);
  if (st == nullptr) return true;
  const auto* sh = reinterpret_cast<const uint64_t*>(t->shape);
  switch (t->ndim) {
    case 0: return true;
    case 1: return (st[0] == 1) | (sh[0] <= 1);
    case 2: return (((st[1] == 1) | (sh[1] == 1)) & ((st[0] == sh[1]) | (sh[0] == 1))) | (sh[0] == 0) | (sh[1] == 0);
    case 3: {
      const uint64_t p2 = sh[2], p1 = sh[1] * sh[2];
      return (((st[2] == 1) | (sh[2] == 1)) & ((st[1] == p2) | (sh[1] == 1)) & ((st[0] == p1) | (sh[0] == 1))) | (sh[0] == 0) |
             (sh[1] == 0) | (sh[2] == 0);
    }
    case 4: {
      const uint64_t p3 = sh[3], p2 = sh[2] * sh[3], p1 = p2 * sh[1];
      return (((st[3] == 1) | (sh[3] == 1)) & ((st[2] == p3) | (sh[2] == 1)) & ((st[1] == p2) | (sh[1] == 1)) &
              ((st[0] == p1) | (sh[0] == 1))) |
             (sh[0] == 0) | (sh[1] == 0) | (sh[2] == 0) | (sh[3] == 0);
    }
    default: return ir::is_dense(t->ndim, t->shape, t->strides);
  }
}

}  // namespace

bool GuardTree::Compiled::check_tail(Args args) const {
  bool ok = true;
  for (int32_t input : dense_) ok &= dense(args[input]);
  if (!ok) return false;
  for (const Guard& g : rest_) {
    if (!check_guard(g, args)) return false;
  }
  return true;
}

std::vector<std::pair<int32_t, int32_t>> GuardTree::Compiled::fixed_ranks() const {
  std::vector<std::pair<int32_t, int32_t>> out;
  for (const Meta& m : meta_) out.emplace_back(m.input, m.ndim);
  return out;
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
  const Entry& e = entries_.back();
  if (entries_.size() == 1 || e.guards.num_inputs() != num_inputs_) return rebuild();
  // The common guards only shrink: those the new entry lacks leave.
  std::vector<Guard> kept;
  for (const Guard& g : common_guards_) {
    if (contains(e.guards.guards(), g)) kept.push_back(g);
  }
  if (kept.size() != common_guards_.size()) return rebuild();
  const size_t groups = groups_.size();
  place(e).index();
  if (groups_.size() != groups) order_groups();
}

void GuardTree::rebuild() {
  common_ = Compiled();
  common_guards_.clear();
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
      if (everywhere) common_guards_.push_back(g);
    }
  }
  common_ = Compiled(common_guards_);
  flat_ = false;
  if (num_inputs_ >= 0) {
    std::vector<int32_t> rank(num_inputs_, -1);
    for (auto [input, r] : common_.fixed_ranks()) rank[input] = r;
    offsets_.assign(num_inputs_, 0);
    int32_t total = 0;
    bool all = true;
    for (int i = 0; i < num_inputs_; ++i) {
      all &= rank[i] >= 0;
      offsets_[i] = total;
      total += std::max(rank[i], 0);
    }
    if (all && total <= kMaxFlat) {
      flat_ = true;
      num_flat_ = total;
      common_ = Compiled(common_guards_, &offsets_);
    }
  }
  for (const Entry& e : entries_) place(e);
  for (Group& g : groups_) g.index();
  order_groups();
}

GuardTree::Group& GuardTree::place(const Entry& e) {
  std::vector<Guard> residual;
  std::vector<std::pair<std::pair<int, int>, int64_t>> statics;
  for (const Guard& g : e.guards.guards()) {
    if (contains(common_guards_, g)) continue;
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
    std::vector<int32_t> flat;
    if (flat_) {
      for (auto [input, dim] : dims) flat.push_back(offsets_[input] + dim);
    }
    groups_.push_back({dims, flat, {}, {}, {}, 0});
    it = groups_.end() - 1;
  }
  it->candidates.push_back(std::move(c));
  return *it;
}

// The most specialized entries first.
void GuardTree::order_groups() {
  std::stable_sort(groups_.begin(), groups_.end(), [](const Group& a, const Group& b) { return a.dims.size() > b.dims.size(); });
}

int GuardTree::lookup(Args args, int64_t* dims) const {
  if (groups_.empty()) return kMiss;
  if (flat_) {
    int64_t local[kMaxFlat];
    return lookup_flat(args, dims ? dims : local);
  }
  if (num_inputs_ >= 0) {
    if (static_cast<int>(args.size()) != num_inputs_) return kMiss;
    if (!common_.check(args)) return kMiss;
  }
  int64_t key[kMaxFlat];
  for (const Group& group : groups_) {
    const size_t n = group.dims.size();
    if (n > kMaxFlat) {  // pathological: more static dims than the key holds
      if (int id = scan(group, args); id != kMiss) return id;
      continue;
    }
    // An entry whose dtype or rank guards are not common reads its key dims
    // only after this bounds check; its residual then checks the rest.
    bool readable = true;
    for (size_t i = 0; i < n && readable; ++i) {
      const auto [input, dim] = group.dims[i];
      readable = input < static_cast<int>(args.size()) && dim < args[input]->ndim;
      if (readable) key[i] = args[input]->shape[dim];
    }
    if (!readable) continue;
    for (int k = group.first(hash_key(key, n)); k >= 0; k = group.candidates[k].next) {
      const Candidate& c = group.candidates[k];
      if (static_cast<int>(args.size()) == c.num_inputs && std::equal(c.key.begin(), c.key.end(), key) &&
          c.residual.check(args)) {
        return c.id;
      }
    }
  }
  return kMiss;
}

int GuardTree::scan(const Group& group, Args args) const {
  for (const Candidate& c : group.candidates) {
    if (static_cast<int>(args.size()) != c.num_inputs) continue;
    bool match = true;
    for (size_t i = 0; i < group.dims.size() && match; ++i) {
      const auto [input, dim] = group.dims[i];
      match = dim < args[input]->ndim && args[input]->shape[dim] == c.key[i];
    }
    if (match && c.residual.check(args)) return c.id;
  }
  return kMiss;
}

// The dims gather copies 1-4 values per input: keep GCC from turning it
// into a memmove call per input.
__attribute__((optimize("no-tree-loop-distribute-patterns"))) int GuardTree::lookup_flat(Args args, int64_t* dims) const {
  if (static_cast<int>(args.size()) != num_inputs_ || !common_.check_meta(args)) return kMiss;
  // Every input's rank is now known: gather all dims once.
  for (int i = 0; i < num_inputs_; ++i) {
    const DLTensor* t = args[i];
    for (int d = 0; d < t->ndim; ++d) dims[offsets_[i] + d] = t->shape[d];
  }
  if (!common_.check_dims_flat(dims) || !common_.check_tail(args)) return kMiss;
  int64_t key[kMaxFlat];
  for (const Group& group : groups_) {
    const size_t n = group.flat.size();
    for (size_t i = 0; i < n; ++i) key[i] = dims[group.flat[i]];
    for (int k = group.first(hash_key(key, n)); k >= 0; k = group.candidates[k].next) {
      const Candidate& c = group.candidates[k];
      if (std::equal(c.key.begin(), c.key.end(), key) && c.residual.check(args)) return c.id;
    }
  }
  return kMiss;
}

}  // namespace shapejit::guards
