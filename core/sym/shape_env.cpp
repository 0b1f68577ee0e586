#include "core/sym/shape_env.h"
#include "core/support/faults.h"

#include <algorithm>
#include <utility>

namespace shapejit::sym {

const char* origin_name(Origin o) {
  switch (o) {
    case Origin::kGraph: return "graph";
    case Origin::kDeclared: return "declared equal";
    case Origin::kZeroOne: return "0/1 specialization";
    case Origin::kBroadcast: return "broadcast";
    case Origin::kShapeCheck: return "shape check";
    case Origin::kObservedInt: return "interpreter needs int";
    case Origin::kObservedBool: return "interpreter branch";
    case Origin::kPolicy: return "policy static";
    case Origin::kBucket: return "policy bucket";
    case Origin::kStructural: return "dtype/rank/device";
    case Origin::kLayout: return "layout";
  }
  return "?";
}

namespace {

using I128 = __int128;

// Bounds are exact int64 values (every symbol is an int64, so kInf is
// INT64_MAX itself); arithmetic runs in 128 bits and clamps back.
int64_t clamp128(I128 v) {
  if (v >= static_cast<I128>(Range::kInf)) return Range::kInf;
  if (v <= static_cast<I128>(Range::kNegInf)) return Range::kNegInf;
  return static_cast<int64_t>(v);
}

Range add(Range a, Range b) { return {clamp128(I128(a.lo) + b.lo), clamp128(I128(a.hi) + b.hi)}; }

Range mul(Range a, Range b) {
  I128 c[4] = {I128(a.lo) * b.lo, I128(a.lo) * b.hi, I128(a.hi) * b.lo, I128(a.hi) * b.hi};
  return {clamp128(*std::min_element(c, c + 4)), clamp128(*std::max_element(c, c + 4))};
}

Range scale(Range a, int64_t c) { return mul(a, Range{c, c}); }

// How many min or max operands sign_bound substitutes, one in another:
// for every min and max that resolve simplifies, and for the proofs that
// proves_nonneg is asked for (few, and worth more).
constexpr int kBoundDepth = 2;
constexpr int kProofDepth = 4;

// The range of a*y + b*(y // c) for y in `y`, c > 0: with q = y // c,
// y = c*q + t for t in [0, c), so the sum is (a*c + b)*q + a*t.
Range floor_pair(Range y, int64_t a, int64_t b, int64_t c) {
  const Range q{y.lo == Range::kNegInf ? Range::kNegInf : floordiv_i64(y.lo, c), y.hi == Range::kInf ? Range::kInf : floordiv_i64(y.hi, c)};
  const I128 slope = I128(a) * c + b;
  if (slope > INT64_MAX || slope < INT64_MIN) return {};
  const Range t = scale(Range{0, c - 1}, a);
  return add(scale(q, static_cast<int64_t>(slope)), t);
}

// Canonical sign for == and != facts: e == 0 and -e == 0 are one fact. The
// form that reads naturally wins: a non-sum, or a sum led by a positive term.
Expr canonical_sign(Expr e) {
  const std::optional<Expr> negated = difference(Expr(0), e);
  if (!negated) return e;
  Expr n = *negated;
  if (e.kind() != Kind::kAdd) return e;
  if (n.kind() != Kind::kAdd) return n;
  return e.coeff(0) > 0 ? e : n;
}

}  // namespace

ShapeEnv ShapeEnv::from_specialization(const Specialization& spec) {
  ShapeEnv env(false);
  env.symbols_ = spec.symbols;
  for (size_t i = 0; i < env.symbols_.size(); ++i) {
    env.symbols_[i].hint.reset();
    if (!env.symbols_[i].unbacked) env.by_name_[env.symbols_[i].name] = static_cast<int>(i);
  }
  env.facts_ = spec.facts;
  env.layouts_ = spec.layouts;
  return env;
}

Specialization ShapeEnv::specialization() const {
  Specialization spec;
  spec.symbols = symbols_;
  for (Symbol& s : spec.symbols) {
    s.hint.reset();
    if (s.binding) s.binding = resolve(*s.binding);
  }
  spec.facts = facts_;
  spec.layouts = layouts_;
  return spec;
}

Hash128 Specialization::hash() const {
  Hasher h;
  h.add(symbols.size());
  for (const Symbol& s : symbols) {
    h.add_i64(s.range.lo).add_i64(s.range.hi).add(s.unbacked).add(s.binding.has_value());
    if (s.binding) h.add(s.binding->hash());
    if (s.unbacked) h.add(s.bound.hash());
  }
  h.add(facts.size());
  for (const Fact& f : facts) h.add(f.expr.hash()).add(static_cast<uint64_t>(f.rel));
  h.add(layouts.size());
  for (const Layout& l : layouts) h.add(l.word());
  return h.finish();
}

Expected<Expr> ShapeEnv::input_dim(const std::string& name, int input, int dim, std::optional<int64_t> hint) {
  auto it = by_name_.find(name);
  if (it != by_name_.end()) {
    Symbol& s = symbols_[it->second];
    if (hint && s.hint && *hint != *s.hint) {
      return invalid("input " + std::to_string(input) + " dim " + std::to_string(dim) + " is " +
                     std::to_string(*hint) + " but the graph declares it equal to '" + name + "', which is " +
                     std::to_string(*s.hint) + " (input " + std::to_string(s.input) + " dim " +
                     std::to_string(s.dim) + ")");
    }
    return resolve(Expr::symbol(it->second));
  }
  int id = static_cast<int>(symbols_.size());
  Symbol s;
  s.name = name;
  s.input = input;
  s.dim = dim;
  s.hint = hint;
  if (zero_one_) {
    // Sizes 0 and 1 are their own; a larger one of a tensor that holds
    // anything is at most kMaxDim. One past it (beside a 0 dim, the tensor
    // empty) keeps the range open: its guard would refuse the call again.
    s.range = {2, hint && *hint > Range::kMaxDim ? Range::kInf : Range::kMaxDim};
    s.range_origin = Origin::kZeroOne;
    if (hint && (*hint == 0 || *hint == 1)) {
      s.range = {*hint, *hint};
      s.binding = Expr(*hint);
      s.binding_origin = Origin::kZeroOne;
    }
  }
  symbols_.push_back(std::move(s));
  by_name_[name] = id;
  return resolve(Expr::symbol(id));
}

Expr ShapeEnv::new_unbacked(Expr bound) {
  // Re-inference under a specialization meets the same data-dependent ops
  // in the same order: they get the specialization's symbols back.
  for (; next_unbacked_ < symbols_.size(); ++next_unbacked_) {
    if (symbols_[next_unbacked_].unbacked) return Expr::symbol(static_cast<int>(next_unbacked_++));
  }
  Symbol s;
  s.name = "u" + std::to_string(symbols_.size());
  s.unbacked = true;
  s.bound = resolve(bound);
  s.range = {0, range(s.bound).hi};
  symbols_.push_back(std::move(s));
  next_unbacked_ = symbols_.size();
  return Expr::symbol(static_cast<int>(symbols_.size()) - 1);
}

namespace {

template <typename F>
Expr substitute_bindings(const std::vector<Symbol>& symbols, Expr e, F resolve) {
  bool any_bound = false;
  for (int id : symbols_of(e)) any_bound |= symbols[id].binding.has_value();
  if (!any_bound) return e;
  return substitute(e, [&](int id) -> std::optional<Expr> {
    const auto& b = symbols[id].binding;
    if (!b) return std::nullopt;
    return resolve(*b);
  });
}

}  // namespace

Expr ShapeEnv::resolve(Expr e) const {
  return simplify(substitute_bindings(symbols_, e, [this](Expr b) { return resolve(b); }), nullptr);
}

Expr ShapeEnv::resolve(Expr e) {
  if (auto it = memo_.resolved.find(e.node()); it != memo_.resolved.end()) return it->second;
  const Expr r = simplify(substitute_bindings(symbols_, e, [this](Expr b) { return resolve(b); }), &memo_.simplified);
  memo_.resolved.emplace(e.node(), r);
  return r;
}

Expr ShapeEnv::simplify(Expr e, Memo* memo) const {
  if (e.kind() == Kind::kConst || e.kind() == Kind::kSymbol) return e;
  if (!memo) return simplify_node(e, nullptr);
  if (auto it = memo->find(e.node()); it != memo->end()) return it->second;
  const Expr r = simplify_node(e, memo);
  memo->emplace(e.node(), r);
  return r;
}

Expr ShapeEnv::simplify_node(Expr e, Memo* memo) const {
  switch (e.kind()) {
    case Kind::kConst:
    case Kind::kSymbol: return e;
    case Kind::kAdd: {
      Expr acc(e.add_constant());
      for (size_t i = 0; i < e.num_args(); ++i) acc = acc + Expr(e.coeff(i)) * simplify(e.arg(i), memo);
      return acc;
    }
    case Kind::kMul: {
      Expr acc(1);
      for (size_t i = 0; i < e.num_args(); ++i) acc = acc * simplify(e.arg(i), memo);
      return acc;
    }
    case Kind::kFloorDiv:
    case Kind::kMod: {
      Expr a = simplify(e.arg(0), memo), b = simplify(e.arg(1), memo);
      if (auto c = b.as_const(); c && *c > 0) {
        Range r = range(a);
        bool within = r.lo >= 0 && r.hi < *c;
        if (within) return e.kind() == Kind::kFloorDiv ? Expr(0) : a;
      }
      return e.kind() == Kind::kFloorDiv ? floordiv(a, b) : mod(a, b);
    }
    case Kind::kMin:
    case Kind::kMax: {
      Expr a = simplify(e.arg(0), memo), b = simplify(e.arg(1), memo);
      bool is_min = e.kind() == Kind::kMin;
      const std::optional<Expr> diff = difference(a, b);
      if (!diff) return is_min ? min(a, b) : max(a, b);
      if (sign_bound(*diff, kBoundDepth) >= 0) return is_min ? b : a;
      if (sign_bound(-*diff, kBoundDepth) >= 0) return is_min ? a : b;
      return is_min ? min(a, b) : max(a, b);
    }
  }
  return e;
}

// A lower bound of `e` (an upper one of -e by negating): its range's, or
// better, through the mins and maxes in it, so that what an operand shares
// with the rest of the sum cancels:
//   - a min subtracted or a max added is at least what it is with one of
//     its operands in its place: y - min(k, y % 12) is at least
//     y - y % 12, which is 12*(y // 12);
//   - a min added or a max subtracted splits the sum in two, the smaller of
//     which it is: min(n, s + 1) - min(s, n), a slice's length after
//     Python's bounds clamp both ends, is min(n - min(s, n), s + 1 - min(s, n)),
//     and each of those is at least 0 by the first rule.
// Up to kTries substitutions a level, `depth` levels deep.
int64_t ShapeEnv::sign_bound(Expr e, int depth, std::unordered_map<const Node*, Range>* ranges) const {
  int64_t best = (ranges ? range_of(e, *ranges) : range(e)).lo;
  if (depth <= 0 || e.kind() != Kind::kAdd || best >= 0) return best;
  constexpr int kTries = 6;
  int tries = 0;
  for (size_t i = 0; i < e.num_args() && tries < kTries; ++i) {
    const Expr t = e.arg(i);
    const int64_t c = e.coeff(i);
    if (t.kind() != Kind::kMin && t.kind() != Kind::kMax) continue;
    const bool lowers = (t.kind() == Kind::kMin) == (c < 0);
    if (!lowers && tries + 2 > kTries) break;  // a split needs both halves
    int64_t split = Range::kInf;  // the smaller of the two halves' bounds
    for (size_t k = 0; k < 2 && tries < kTries; ++k, ++tries) {
      const std::optional<Expr> replaced = probe([&] { return e - Expr(c) * (t - t.arg(k)); });
      const int64_t bound = replaced ? sign_bound(*replaced, depth - 1, ranges) : Range::kNegInf;
      if (lowers) best = std::max(best, bound);
      else split = std::min(split, bound);
      if (best >= 0) return best;
    }
    if (!lowers) best = std::max(best, split);
    if (best >= 0) return best;
  }
  return best;
}

Range ShapeEnv::range(Expr e) const {
  // Memoized per node: an expression is a DAG (hash-consed), and slices of
  // slices nest mins and maxes that share their operands; walked as a tree
  // it costs twice as much per level (a fluid solver's graph: minutes).
  std::unordered_map<const Node*, Range> memo;
  return range_of(e, memo);
}

Range ShapeEnv::range_of(Expr e, std::unordered_map<const Node*, Range>& memo) const {
  if (e.kind() != Kind::kConst && e.kind() != Kind::kSymbol) {
    if (auto it = memo.find(e.node()); it != memo.end()) return it->second;
  }
  const Range r = range_uncached(e, memo);
  if (e.kind() != Kind::kConst && e.kind() != Kind::kSymbol) memo.emplace(e.node(), r);
  return r;
}

Range ShapeEnv::range_uncached(Expr e, std::unordered_map<const Node*, Range>& memo) const {
  switch (e.kind()) {
    case Kind::kConst: return {e.const_value(), e.const_value()};
    case Kind::kSymbol: {
      const Symbol& s = symbols_[e.symbol_id()];
      if (s.binding) return range_of(resolve(*s.binding), memo);
      return s.range;
    }
    case Kind::kAdd: {
      // a*y + b*(y // c) together, where the sum has both: their ranges
      // apart lose that the quotient follows y (s - s // 3 is never
      // negative for s >= 0, while [0, inf) - [0, inf) is anything).
      Range r{e.add_constant(), e.add_constant()};
      std::vector<bool> done(e.num_args(), false);
      // y may itself be a quotient: x // 3 and x // 36 are y and y // 12.
      auto quotient = [](Expr t) -> std::pair<Expr, int64_t> {
        if (t.kind() == Kind::kFloorDiv && t.arg(1).is_const() && t.arg(1).const_value() > 0) return {t.arg(0), t.arg(1).const_value()};
        return {t, 1};
      };
      for (size_t i = 0; i < e.num_args(); ++i) {
        const auto [x, c] = quotient(e.arg(i));
        if (c == 1 || done[i]) continue;
        for (size_t j = 0; j < e.num_args(); ++j) {
          if (j == i || done[j]) continue;
          const auto [xj, cj] = quotient(e.arg(j));
          if (!(xj == x) || cj >= c || c % cj != 0) continue;
          r = add(r, floor_pair(range_of(e.arg(j), memo), e.coeff(j), e.coeff(i), c / cj));
          done[i] = done[j] = true;
          break;
        }
      }
      for (size_t i = 0; i < e.num_args(); ++i) {
        if (!done[i]) r = add(r, scale(range_of(e.arg(i), memo), e.coeff(i)));
      }
      return r;
    }
    case Kind::kMul: {
      Range r{1, 1};
      for (size_t i = 0; i < e.num_args(); ++i) r = mul(r, range_of(e.arg(i), memo));
      return r;
    }
    case Kind::kFloorDiv: {
      Range a = range_of(e.arg(0), memo);
      auto c = e.arg(1).as_const();
      if (!c || *c <= 0) return {};
      return {floordiv_i64(a.lo, *c), floordiv_i64(a.hi, *c)};
    }
    case Kind::kMod: {
      Range a = range_of(e.arg(0), memo);
      auto c = e.arg(1).as_const();
      if (!c || *c <= 0) return {};
      if (a.lo >= 0 && a.hi < *c) return a;
      return {0, *c - 1};
    }
    case Kind::kMin: {
      Range a = range_of(e.arg(0), memo), b = range_of(e.arg(1), memo);
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    }
    case Kind::kMax: {
      Range a = range_of(e.arg(0), memo), b = range_of(e.arg(1), memo);
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
  }
  return {};
}

std::optional<int64_t> ShapeEnv::hint(Expr e) const {
  std::vector<int> ids = symbols_of(e);
  std::vector<int64_t> values(ids.empty() ? 0 : ids.back() + 1, 0);
  for (int id : ids) {
    const Symbol& s = symbols_[id];
    if (s.binding) {
      auto v = hint(*s.binding);
      if (!v) return std::nullopt;
      values[id] = *v;
    } else if (s.hint) {
      values[id] = *s.hint;
    } else {
      return std::nullopt;
    }
  }
  return evaluate(e, values);
}

bool ShapeEnv::has_unbacked(Expr e) const {
  for (int id : symbols_of(resolve(e))) {
    if (symbols_[id].unbacked) return true;
  }
  return false;
}

std::optional<bool> ShapeEnv::known(Expr e, Rel rel) const {
  Range r = range(e);
  switch (rel) {
    case Rel::kEq:
      if (r.lo == 0 && r.hi == 0) return true;
      if (!r.contains(0)) return false;
      break;
    case Rel::kNe:
      if (auto k = known(e, Rel::kEq)) return !*k;
      return std::nullopt;
    case Rel::kGe:
      if (r.lo >= 0) return true;
      if (r.hi < 0) return false;
      break;
  }
  Expr eq_key = canonical_sign(e);
  // not (e >= 0)  <=>  -e - 1 >= 0 (when -e - 1 does not overflow)
  const Expr negated_ge = difference(Expr(-1), e).value_or(e);
  for (const Fact& f : facts_) {
    if (rel == Rel::kEq && f.expr == eq_key) {
      if (f.rel == Rel::kEq) return true;
      if (f.rel == Rel::kNe) return false;
    }
    if (rel == Rel::kGe) {
      if (f.rel == Rel::kGe && f.expr == e) return true;
      if (f.rel == Rel::kGe && f.expr == negated_ge) return false;
      if (f.rel == Rel::kEq && f.expr == eq_key) return true;
    }
  }
  return std::nullopt;
}

void ShapeEnv::record(Expr e, Rel rel, bool outcome, Origin origin, const std::string& label) {
  Fact f{e, rel, origin, label};
  if (rel == Rel::kGe) {
    if (!outcome) f.expr = -e - Expr(1);
  } else {
    f.expr = canonical_sign(e);
    bool is_eq = (rel == Rel::kEq) == outcome;
    f.rel = is_eq ? Rel::kEq : Rel::kNe;
  }
  facts_.push_back(std::move(f));
  memo_.nonneg.clear();  // a fact proves what the ranges could not
}

bool ShapeEnv::proves_nonneg(Expr e) const {
  e = resolve(e);
  return sign_bound(e, kProofDepth) >= 0 || known(e, Rel::kGe).value_or(false);
}

bool ShapeEnv::proves_nonneg(Expr e) {
  if (e.is_const()) return e.const_value() >= 0;
  if (auto it = memo_.nonneg.find(e.node()); it != memo_.nonneg.end()) return it->second;
  const Expr r = resolve(e);
  const bool proven = sign_bound(r, kProofDepth, &memo_.ranges) >= 0 || known(r, Rel::kGe).value_or(false);
  memo_.nonneg.emplace(e.node(), proven);
  return proven;
}

Expected<bool> ShapeEnv::decide(Expr e, Rel rel, Origin origin, const std::string& label) {
  e = resolve(e);
  if (auto k = known(e, rel)) return *k;
  if (has_unbacked(e)) return graph_break("the decision " + str(e) + " depends on data (a data-dependent size)");
  if (support::fault(support::Fault::kSymbolic)) return Status(Code::kInternal, "cannot decide " + str(e) + " (fault injected)");
  if (auto v = hint(e)) {
    bool outcome = rel == Rel::kEq ? *v == 0 : rel == Rel::kNe ? *v != 0 : *v >= 0;
    record(e, rel, outcome, origin, label);
    return outcome;
  }
  return Status(Code::kInternal, "cannot decide " + str(e) + " without hints or a recorded fact");
}

Expected<bool> ShapeEnv::unify(Expr a, Expr b, Origin origin, const std::string& label) {
  a = resolve(a);
  b = resolve(b);
  if (a == b) return true;
  Expr d = a - b;
  if (auto k = known(d, Rel::kEq)) return *k;
  if (has_unbacked(d)) return graph_break("the equality " + str(a) + " == " + str(b) + " depends on data");
  if (support::fault(support::Fault::kSymbolic)) return Status(Code::kInternal, "cannot decide " + str(a) + " == " + str(b) + " (fault injected)");
  auto ha = hint(a), hb = hint(b);
  if (ha && hb && *ha != *hb) {
    // Recorded like any decision: a specialization (no hints) must answer it
    // the same way, and the entry's guards must hold it.
    record(d, Rel::kEq, false, origin, label);
    return false;
  }
  if (!(ha && hb)) {
    return Status(Code::kInternal, "cannot decide " + str(a) + " == " + str(b) + " without hints");
  }
  // Pin a symbol when one side is one (and the other does not hold it:
  // s == min(s, t) is a fact about t); keep the older symbol as the
  // representative.
  const auto free_in = [](const Expr& s, const Expr& e) {
    for (int id : symbols_of(e)) {
      if (id == s.symbol_id()) return false;
    }
    return true;
  };
  if (a.is_symbol() && b.is_symbol()) {
    if (a.symbol_id() < b.symbol_id()) std::swap(a, b);
    SJ_TRY(bind(a.symbol_id(), b, origin, label));
  } else if (b.is_symbol() && free_in(b, a)) {
    SJ_TRY(bind(b.symbol_id(), a, origin, label));
  } else if (a.is_symbol() && free_in(a, b)) {
    SJ_TRY(bind(a.symbol_id(), b, origin, label));
  } else {
    record(d, Rel::kEq, true, origin, label);
  }
  return true;
}

Status ShapeEnv::bind(int symbol, Expr value, Origin origin, const std::string& label) {
  Symbol& s = symbols_[symbol];
  SJ_CHECK(!s.binding, "binding a bound symbol");
  value = resolve(value);
  if (value == Expr::symbol(symbol)) return Status::ok();
  for (int id : symbols_of(value)) SJ_CHECK(id != symbol, "binding a symbol to an expression of itself");
  if (auto c = value.as_const(); c && !s.range.contains(*c)) {
    return invalid("size " + s.name + " cannot be " + std::to_string(*c) + ": its range is [" +
                   std::to_string(s.range.lo) + ", " +
                   (s.range.hi == Range::kInf ? std::string("inf") : std::to_string(s.range.hi)) + "]");
  }
  if (value.is_symbol()) {
    Symbol& t = symbols_[value.symbol_id()];
    t.range = {std::max(t.range.lo, s.range.lo), std::min(t.range.hi, s.range.hi)};
  }
  s.binding = value;
  s.binding_origin = origin;
  memo_.clear();
  s.binding_label = label;
  return Status::ok();
}

void ShapeEnv::set_range(int symbol, Range r, Origin origin) {
  symbols_[symbol].range = r;
  symbols_[symbol].range_origin = origin;
  memo_.clear();
}

std::vector<std::string> ShapeEnv::symbol_names() const {
  std::vector<std::string> names;
  for (const Symbol& s : symbols_) names.push_back(s.name);
  return names;
}

std::string ShapeEnv::str(Expr e) const {
  auto names = symbol_names();
  return e.str(&names);
}

}  // namespace shapejit::sym
