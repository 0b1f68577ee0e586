#include "core/sym/expr.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "core/support/hash.h"
#include "core/support/status.h"
#include "core/sym/node.h"

namespace shapejit::sym {

namespace {

thread_local uint64_t t_overflows = 0;

uint64_t structural_hash(const Node& n) {
  uint64_t h = hash_combine(static_cast<uint64_t>(n.kind) + 1, static_cast<uint64_t>(n.value));
  for (const Node* a : n.args) h = hash_combine(h, a->hash);
  for (int64_t c : n.coeffs) h = hash_combine(h, static_cast<uint64_t>(c));
  return h;
}

struct NodeHash {
  size_t operator()(const Node* n) const { return n->hash; }
};
struct NodeEq {
  bool operator()(const Node* a, const Node* b) const {
    return a->kind == b->kind && a->value == b->value && a->args == b->args && a->coeffs == b->coeffs;
  }
};

// The intern table. Nodes live for the process: the set of distinct shape
// expressions a service sees is small, and interning makes == a pointer test.
class Interner {
 public:
  // Room for a whole model's shapes from the start: growing one rehash at
  // a time moves every node again and again.
  Interner() { table_.reserve(size_t{1} << 17); }
  const Node* intern(Node n) {
    n.hash = structural_hash(n);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = table_.find(&n);
    if (it != table_.end()) return *it;
    const Node* owned = new Node(std::move(n));
    table_.insert(owned);
    return owned;
  }

 private:
  std::mutex mu_;
  std::unordered_set<const Node*, NodeHash, NodeEq> table_;
};

Interner& interner() {
  static Interner* in = new Interner();  // never destroyed: Exprs may outlive statics
  return *in;
}

Expr make(Kind kind, int64_t value, std::vector<const Node*> args = {}, std::vector<int64_t> coeffs = {}) {
  Node n;
  n.kind = kind;
  n.value = value;
  n.args = std::move(args);
  n.coeffs = std::move(coeffs);
  for (const Node* a : n.args) n.depth = std::max(n.depth, a->depth + 1);
  return Expr(interner().intern(std::move(n)));
}

// int64 arithmetic that wraps, counting each overflow (OverflowWatch).
int64_t wrap_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) ++t_overflows;
  return r;
}
int64_t wrap_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) ++t_overflows;
  return r;
}

int compare_nodes(const Node* a, const Node* b) {
  if (a == b) return 0;
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  if (a->value != b->value) return a->value < b->value ? -1 : 1;
  if (a->args.size() != b->args.size()) return a->args.size() < b->args.size() ? -1 : 1;
  for (size_t i = 0; i < a->args.size(); ++i) {
    int c = compare_nodes(a->args[i], b->args[i]);
    if (c != 0) return c;
  }
  for (size_t i = 0; i < a->coeffs.size(); ++i) {
    if (a->coeffs[i] != b->coeffs[i]) return a->coeffs[i] < b->coeffs[i] ? -1 : 1;
  }
  return 0;
}

bool less(const Node* a, const Node* b) { return compare_nodes(a, b) < 0; }

// A sum of products in the making: monomial -> coefficient, plus a constant.
// A monomial is the sorted list of its atom factors; the empty list is 1.
struct Poly {
  std::map<std::vector<const Node*>, int64_t, bool (*)(const std::vector<const Node*>&, const std::vector<const Node*>&)> terms{
      [](const std::vector<const Node*>& a, const std::vector<const Node*>& b) {
        if (a.size() != b.size()) return a.size() < b.size();
        for (size_t i = 0; i < a.size(); ++i) {
          int c = compare_nodes(a[i], b[i]);
          if (c != 0) return c < 0;
        }
        return false;
      }};
  int64_t constant = 0;

  void add_term(std::vector<const Node*> monomial, int64_t c) {
    if (c == 0) return;
    if (monomial.empty()) {
      constant = wrap_add(constant, c);
      return;
    }
    int64_t& slot = terms[std::move(monomial)];
    slot = wrap_add(slot, c);
  }
};

std::vector<const Node*> factors_of(const Node* m) {
  if (m->kind == Kind::kMul) return m->args;
  return {m};
}

Poly poly_of(Expr e) {
  Poly p;
  const Node* n = e.node();
  if (n->kind == Kind::kConst) {
    p.constant = n->value;
  } else if (n->kind == Kind::kAdd) {
    p.constant = n->value;
    for (size_t i = 0; i < n->args.size(); ++i) p.add_term(factors_of(n->args[i]), n->coeffs[i]);
  } else {
    p.add_term(factors_of(n), 1);
  }
  return p;
}

Expr monomial_expr(const std::vector<const Node*>& factors) {
  if (factors.size() == 1) return Expr(factors[0]);
  return make(Kind::kMul, 0, factors);
}

// x // c and x % c in one sum: b*(x % c) is b*x - b*c*(x // c) for every
// integer x (Python's rounding), so the sum keeps x // c alone, and
// c*(x // c) + x % c is x.
void fold_floor_mod(Poly& p) {
  for (int round = 0; round < 8; ++round) {
    const std::vector<const Node*>* found = nullptr;
    std::vector<const Node*> quotient;
    for (const auto& [factors, k] : p.terms) {
      if (k == 0 || factors.size() != 1 || factors[0]->kind != Kind::kMod) continue;
      const Node* m = factors[0];
      // The quotient of the same operands, canonical ((x // 3) // 12 is
      // x // 36), if the sum has it.
      const Expr q = floordiv(Expr(m->args[0]), Expr(m->args[1]));
      if (q.kind() != Kind::kFloorDiv) continue;
      std::vector<const Node*> key{q.node()};
      auto it = p.terms.find(key);
      if (it != p.terms.end() && it->second != 0) {
        found = &factors;
        quotient = std::move(key);
        break;
      }
    }
    if (!found) return;
    const Node* m = (*found)[0];
    const int64_t b = p.terms[*found], c = m->args[1]->kind == Kind::kConst ? m->args[1]->value : 0;
    if (c <= 0) return;
    p.terms.erase(*found);
    p.terms[quotient] = wrap_add(p.terms[quotient], wrap_mul(-b, c));
    const Poly x = poly_of(Expr(m->args[0]));
    for (const auto& [factors, k] : x.terms) p.add_term(factors, wrap_mul(b, k));
    p.constant = wrap_add(p.constant, wrap_mul(b, x.constant));
  }
}

Expr from_poly(const Poly& in) {
  Poly folded;
  const Poly* pp = &in;
  bool has_mod = false;
  for (const auto& [factors, k] : in.terms) has_mod |= factors.size() == 1 && factors[0]->kind == Kind::kMod;
  if (has_mod && in.terms.size() > 1) {
    folded = in;
    fold_floor_mod(folded);
    pp = &folded;
  }
  const Poly& p = *pp;
  std::vector<const Node*> monos;
  std::vector<int64_t> coeffs;
  for (const auto& [factors, c] : p.terms) {
    if (c == 0) continue;
    monos.push_back(monomial_expr(factors).node());
    coeffs.push_back(c);
  }
  if (monos.empty()) return Expr(p.constant);
  if (monos.size() == 1 && coeffs[0] == 1 && p.constant == 0) return Expr(monos[0]);
  return make(Kind::kAdd, p.constant, std::move(monos), std::move(coeffs));
}

// Splits `p` into c*Q + R where every coefficient of R is not a multiple of c
// and R's constant lies in [0, c). Requires c > 0.
void split_by(const Poly& p, int64_t c, Poly& q, Poly& r) {
  for (const auto& [factors, k] : p.terms) {
    if (k % c == 0) q.add_term(factors, k / c);
    else r.add_term(factors, k);
  }
  // The constant's remainder lies in [0, c): for a huge c that is a huge
  // constant, which could overflow where the constant itself did not
  // (floordiv(n - 1, 2^63 - 1) is not floordiv(n + 2^63 - 2, 2^63 - 1) - 1
  // at run time). So a huge c leaves the constant where it is.
  if (c > (int64_t{1} << 31)) {
    r.constant = p.constant;
    return;
  }
  q.constant = floordiv_i64(p.constant, c);
  r.constant = mod_i64(p.constant, c);
}

Expr sorted_pair(Kind kind, Expr a, Expr b) {
  if (compare(b, a) < 0) std::swap(a, b);
  return make(kind, 0, {a.node(), b.node()});
}

}  // namespace

namespace {

// The small constants and symbols every expression is made of, interned
// once: building an expression makes them all the time.
constexpr int64_t kLeastCached = -64, kMostCached = 1024;
constexpr int kCachedSymbols = 256;
const Node* small_constant(int64_t c) {
  static const std::vector<const Node*> table = [] {
    std::vector<const Node*> v;
    for (int64_t k = kLeastCached; k <= kMostCached; ++k) v.push_back(make(Kind::kConst, k).node());
    return v;
  }();
  return table[static_cast<size_t>(c - kLeastCached)];
}
const Node* low_symbol(int id) {
  static const std::vector<const Node*> table = [] {
    std::vector<const Node*> v;
    for (int k = 0; k < kCachedSymbols; ++k) v.push_back(make(Kind::kSymbol, k).node());
    return v;
  }();
  return table[static_cast<size_t>(id)];
}

}  // namespace

Expr::Expr(int64_t c) : n_(c >= kLeastCached && c <= kMostCached ? small_constant(c) : make(Kind::kConst, c).node()) {}
Expr Expr::symbol(int id) { return Expr(id >= 0 && id < kCachedSymbols ? low_symbol(id) : make(Kind::kSymbol, id).node()); }
Kind Expr::kind() const { return n_->kind; }
std::optional<int64_t> Expr::as_const() const {
  if (is_const()) return n_->value;
  return std::nullopt;
}
int64_t Expr::const_value() const {
  SJ_CHECK(is_const(), "const_value of a non-constant");
  return n_->value;
}
int Expr::symbol_id() const {
  SJ_CHECK(is_symbol(), "symbol_id of a non-symbol");
  return static_cast<int>(n_->value);
}
size_t Expr::num_args() const { return n_->args.size(); }
Expr Expr::arg(size_t i) const { return Expr(n_->args[i]); }
int64_t Expr::coeff(size_t i) const { return n_->coeffs[i]; }
int64_t Expr::add_constant() const { return n_->value; }
uint64_t Expr::hash() const { return n_->hash; }
int Expr::depth() const { return n_->depth; }

OverflowWatch::OverflowWatch() : start_(t_overflows) {}
bool OverflowWatch::overflowed() const { return t_overflows != start_; }

std::optional<Expr> difference(Expr a, Expr b) {
  const uint64_t before = t_overflows;
  Expr d = a - b;
  if (t_overflows != before) {
    t_overflows = before;
    return std::nullopt;
  }
  return d;
}

std::optional<Expr> probe(const std::function<Expr()>& build) {
  const uint64_t before = t_overflows;
  Expr e = build();
  if (t_overflows != before) {
    t_overflows = before;
    return std::nullopt;
  }
  return e;
}

std::optional<int64_t> constant_difference(Expr a, Expr b) {
  const std::optional<Expr> d = difference(a, b);
  return d ? d->as_const() : std::nullopt;
}

int compare(Expr a, Expr b) { return compare_nodes(a.node(), b.node()); }

int64_t floordiv_i64(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) {
    if (a == INT64_MIN) ++t_overflows;  // wraps to INT64_MIN
    return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
  }
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t mod_i64(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

namespace {

// What +, *, // and % gave for a pair of operands, kept per thread (no
// lock): a model's shapes repeat the same few sums and products, and each
// is otherwise rebuilt through a Poly. A result whose arithmetic overflowed
// is not kept, so that each time counts its overflow again.
enum class Op : uint8_t { kAdd, kMul, kFloorDiv, kMod };
struct OpKey {
  const Node* a;
  const Node* b;
  Op op;
  bool operator==(const OpKey& o) const { return a == o.a && b == o.b && op == o.op; }
};
struct OpKeyHash {
  size_t operator()(const OpKey& k) const { return hash_combine(hash_combine(k.a->hash, k.b->hash), static_cast<uint64_t>(k.op)); }
};
constexpr size_t kMaxRemembered = size_t{1} << 16;  // then forgotten all at once

template <typename F>
Expr remembered(Op op, Expr a, Expr b, F compute) {
  thread_local std::unordered_map<OpKey, const Node*, OpKeyHash> results = [] {
    std::unordered_map<OpKey, const Node*, OpKeyHash> m;
    m.reserve(kMaxRemembered);
    return m;
  }();
  const OpKey key{a.node(), b.node(), op};
  if (auto it = results.find(key); it != results.end()) return Expr(it->second);
  const uint64_t before = t_overflows;
  const Expr r = compute();
  if (t_overflows == before) {
    if (results.size() >= kMaxRemembered) results.clear();
    results.emplace(key, r.node());
  }
  return r;
}

}  // namespace

Expr operator+(Expr a, Expr b) {
  if (a.is_const() && b.is_const()) return Expr(wrap_add(a.const_value(), b.const_value()));
  if (b == Expr(0)) return a;
  if (a == Expr(0)) return b;
  return remembered(Op::kAdd, a, b, [&] {
    Poly p = poly_of(a);
    Poly pb = poly_of(b);
    for (const auto& [f, c] : pb.terms) p.add_term(f, c);
    p.constant = wrap_add(p.constant, pb.constant);
    return from_poly(p);
  });
}

Expr operator-(Expr a) { return Expr(int64_t{-1}) * a; }
Expr operator-(Expr a, Expr b) { return a + (-b); }

Expr operator*(Expr a, Expr b) {
  if (a.is_const() && b.is_const()) return Expr(wrap_mul(a.const_value(), b.const_value()));
  if (a == Expr(1)) return b;
  if (b == Expr(1)) return a;
  if (a == Expr(0) || b == Expr(0)) return Expr(0);
  return remembered(Op::kMul, a, b, [&] {
    Poly pa = poly_of(a), pb = poly_of(b), out;
    auto each = [](const Poly& p, auto&& fn) {
      if (p.constant != 0) fn(std::vector<const Node*>{}, p.constant);
      for (const auto& [f, c] : p.terms) fn(f, c);
    };
    each(pa, [&](const std::vector<const Node*>& fa, int64_t ca) {
      each(pb, [&](const std::vector<const Node*>& fb, int64_t cb) {
        std::vector<const Node*> f = fa;
        f.insert(f.end(), fb.begin(), fb.end());
        std::sort(f.begin(), f.end(), less);
        out.add_term(std::move(f), wrap_mul(ca, cb));
      });
    });
    return from_poly(out);
  });
}

Expr floordiv(Expr a, Expr b) {
  auto bc = b.as_const();
  if (a.is_const() && bc) return Expr(floordiv_i64(a.const_value(), *bc));
  if (bc && *bc == 1) return a;
  if (bc && *bc == -1) return -a;
  if (a == Expr(0)) return Expr(0);
  if (bc && *bc > 0) {
    int64_t c = *bc;
    // (x // c1) // c2 == x // (c1 * c2) for positive c1, c2.
    if (a.kind() == Kind::kFloorDiv && a.arg(1).is_const() && a.arg(1).const_value() > 0 &&
        a.arg(1).const_value() <= (int64_t{1} << 31) && c <= (int64_t{1} << 31)) {
      return floordiv(a.arg(0), Expr(a.arg(1).const_value() * c));
    }
    return remembered(Op::kFloorDiv, a, b, [&] {
      Poly q, r;
      split_by(poly_of(a), c, q, r);
      Expr rest = from_poly(r);
      Expr quotient = from_poly(q);
      if (rest.is_const()) return quotient + Expr(floordiv_i64(rest.const_value(), c));
      return quotient + make(Kind::kFloorDiv, 0, {rest.node(), b.node()});
    });
  }
  return make(Kind::kFloorDiv, 0, {a.node(), b.node()});
}

Expr mod(Expr a, Expr b) {
  auto bc = b.as_const();
  if (a.is_const() && bc) return Expr(mod_i64(a.const_value(), *bc));
  if (bc && (*bc == 1 || *bc == -1)) return Expr(0);
  if (a == Expr(0) || a == b) return Expr(0);
  if (bc && *bc > 0) {
    int64_t c = *bc;
    if (a.kind() == Kind::kMod && a.arg(1) == b) return a;
    return remembered(Op::kMod, a, b, [&] {
      Poly q, r;
      split_by(poly_of(a), c, q, r);
      Expr rest = from_poly(r);
      if (rest.is_const()) return Expr(mod_i64(rest.const_value(), c));
      return make(Kind::kMod, 0, {rest.node(), b.node()});
    });
  }
  // A symbol divides a sum of its multiples (s * s % s, 2 * s % s): 0, and
  // 0 too when the symbol is (x % 0 is 0). The quotient has no such rule:
  // 2 * s // s is 2, but 0 when s is.
  if (b.is_symbol() && a.kind() != Kind::kConst) {
    const Poly p = poly_of(a);
    bool divisible = p.constant == 0 && !p.terms.empty();
    for (const auto& [factors, k] : p.terms) {
      divisible = divisible && std::any_of(factors.begin(), factors.end(), [&](const Node* f) { return compare_nodes(f, b.node()) == 0; });
    }
    if (divisible) return Expr(0);
  }
  return make(Kind::kMod, 0, {a.node(), b.node()});
}

Expr min(Expr a, Expr b) {
  if (a == b) return a;
  if (a.is_const() && b.is_const()) return a.const_value() <= b.const_value() ? a : b;
  if (auto d = constant_difference(a, b)) return *d <= 0 ? a : b;
  return sorted_pair(Kind::kMin, a, b);
}

Expr max(Expr a, Expr b) {
  if (a == b) return a;
  if (a.is_const() && b.is_const()) return a.const_value() >= b.const_value() ? a : b;
  if (auto d = constant_difference(a, b)) return *d >= 0 ? a : b;
  return sorted_pair(Kind::kMax, a, b);
}

int64_t apply_node(const Node* n, const int64_t* args) {
  switch (n->kind) {
    case Kind::kConst: return n->value;
    case Kind::kSymbol: return 0;  // loaded by the caller
    case Kind::kAdd: {
      int64_t acc = n->value;
      for (size_t i = 0; i < n->args.size(); ++i) acc = wrap_add(acc, wrap_mul(n->coeffs[i], args[i]));
      return acc;
    }
    case Kind::kMul: {
      int64_t acc = 1;
      for (size_t i = 0; i < n->args.size(); ++i) acc = wrap_mul(acc, args[i]);
      return acc;
    }
    case Kind::kFloorDiv: return floordiv_i64(args[0], args[1]);
    case Kind::kMod: return mod_i64(args[0], args[1]);
    case Kind::kMin: return std::min(args[0], args[1]);
    case Kind::kMax: return std::max(args[0], args[1]);
  }
  return 0;
}

int64_t evaluate(Expr e, std::span<const int64_t> values) {
  const Node* n = e.node();
  if (n->kind == Kind::kConst) return n->value;
  if (n->kind == Kind::kSymbol) {
    SJ_CHECK(n->value >= 0 && static_cast<size_t>(n->value) < values.size(), "symbol without a value");
    return values[n->value];
  }
  constexpr size_t kInline = 8;
  int64_t inline_args[kInline];
  std::vector<int64_t> heap;
  int64_t* args = inline_args;
  if (n->args.size() > kInline) {
    heap.resize(n->args.size());
    args = heap.data();
  }
  for (size_t i = 0; i < n->args.size(); ++i) args[i] = evaluate(Expr(n->args[i]), values);
  return apply_node(n, args);
}

}  // namespace shapejit::sym
