// SymExpr: symbolic integer expressions over dims.
//
// Every Expr is hash-consed: two structurally equal expressions are the same
// node, so `==` is a pointer compare. Construction keeps a canonical form:
//   - +, -, * build a sum of products: `c0 + c1*m1 + ... + ck*mk`, with the
//     monomials m_i (products of atoms) sorted by a deterministic total order
//     and no zero coefficient. Products distribute over sums.
//   - floordiv and mod round toward negative infinity (Python's // and %);
//     `floordiv(c*X + Y, c)` becomes `X + floordiv(Y, c)` and
//     `mod(c*X + Y, c)` becomes `mod(Y, c)`; constants fold.
//   - min and max fold constants and operands whose difference is constant;
//     their operands are sorted.
// These rewrites hold for all integers, so construction needs no ranges;
// range-aware simplification lives in ShapeEnv.
//
// Symbols are small integer ids, numbered per graph (s0, s1, ...).
//
// Overflow: sizes are int64, and a size that int64 cannot hold is an error,
// never a wrapped value. Construction folds constants and evaluate() computes
// in int64; a step that overflows wraps (so the code stays defined) and is
// counted, and an OverflowWatch tells whoever builds or evaluates sizes
// whether that happened (shape inference rejects the node, naming it).
// Program::run (the dispatch path's evaluator) reports overflow itself.
// `x // 0` and `x % 0` evaluate to 0: every division that comes from user
// input is guarded non-zero by ShapeEnv, so these values are never observed.
//
// Depth: an expression records how deeply it nests; the recursive walks here
// (evaluate, substitute, str, compare) go that deep, so shape inference
// bounds it (kMaxDepth) before input can make it deep.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <span>
#include <string>
#include <vector>

namespace shapejit::sym {

enum class Kind : uint8_t { kConst, kSymbol, kAdd, kMul, kFloorDiv, kMod, kMin, kMax };

struct Node;

class Expr {
 public:
  Expr() : Expr(int64_t{0}) {}
  Expr(int64_t c);  // NOLINT: constants convert implicitly
  Expr(int c) : Expr(int64_t{c}) {}  // NOLINT
  explicit Expr(const Node* n) : n_(n) {}
  static Expr symbol(int id);

  Kind kind() const;
  bool is_const() const { return kind() == Kind::kConst; }
  bool is_symbol() const { return kind() == Kind::kSymbol; }
  std::optional<int64_t> as_const() const;
  int64_t const_value() const;  // requires is_const()
  int symbol_id() const;        // requires is_symbol()

  // kAdd: terms with coefficients and a constant; kMul: factors;
  // kFloorDiv/kMod/kMin/kMax: two operands.
  size_t num_args() const;
  Expr arg(size_t i) const;
  int64_t coeff(size_t i) const;  // kAdd only
  int64_t add_constant() const;   // kAdd only

  uint64_t hash() const;  // structural; stable across runs
  int depth() const;      // 1 for constants and symbols
  const Node* node() const { return n_; }
  bool operator==(const Expr& o) const { return n_ == o.n_; }

  // "s0*s1 + 2", with names[i] for symbol i when given.
  std::string str(const std::vector<std::string>* names = nullptr) const;

 private:
  const Node* n_;
};

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator*(Expr a, Expr b);
Expr floordiv(Expr a, Expr b);
Expr mod(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);

// The deepest expression shape inference accepts for a size.
inline constexpr int kMaxDepth = 64;

// Counts the int64 overflows of construction and evaluate() on this thread
// from its creation on (nesting is fine: each watch compares counts).
class OverflowWatch {
 public:
  OverflowWatch();
  bool overflowed() const;

 private:
  uint64_t start_;
};

// a - b built as a probe (comparisons that simplify or fold min and max):
// nullopt when its construction overflowed, which is then not counted (it
// only means "not comparable").
std::optional<Expr> difference(Expr a, Expr b);
// Any expression built as a probe, the same way: nullopt when building it
// overflowed, which is then not counted.
std::optional<Expr> probe(const std::function<Expr()>& build);
// The probe's value when it is a constant.
std::optional<int64_t> constant_difference(Expr a, Expr b);

// A deterministic total order on expressions (not pointer order), so that
// canonical forms and hashes are identical across processes.
int compare(Expr a, Expr b);

// Python semantics on int64; division by zero gives 0.
int64_t floordiv_i64(int64_t a, int64_t b);
int64_t mod_i64(int64_t a, int64_t b);

// Evaluates with values[id] for symbol id.
int64_t evaluate(Expr e, std::span<const int64_t> values);

// The symbol ids in e, sorted, without duplicates.
std::vector<int> symbols_of(Expr e);

// Rebuilds e, replacing symbol s by f(s) where f returns a value.
// `memo`, when given, keeps what each subexpression became, for many
// expressions substituted by one `f`.
using SubstituteMemo = std::unordered_map<const Node*, Expr>;
Expr substitute(Expr e, const std::function<std::optional<Expr>(int)>& f, SubstituteMemo* memo = nullptr);

// Rebuilds e top-down: a subexpression for which f returns a value is
// replaced by it (and not walked into); the others are rebuilt from their
// rewritten operands.
Expr rewrite(Expr e, const std::function<std::optional<Expr>(Expr)>& f);

}  // namespace shapejit::sym

template <>
struct std::hash<shapejit::sym::Expr> {
  size_t operator()(const shapejit::sym::Expr& e) const { return e.hash(); }
};
