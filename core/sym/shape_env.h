// ShapeEnv: the symbols of one traced graph, what is known about them, and
// every shape decision made while tracing.
//
// Each input dim is a symbol with a range and, while tracing, a hint (its
// value on the call being traced). With `specialize_zero_one`, a dim whose
// hint is 0 or 1 is bound to that constant and every other symbol gets the
// range [2, inf): broadcasting depends on the difference.
//
// A question about shapes (do these dims broadcast? does this reshape
// divide?) is first answered from ranges and known facts. When they cannot
// answer it, the hint decides, and the decision is recorded: as a binding
// (`s1 := s0`, `s2 := 1`) when it pins a symbol, or as a fact (`e == 0`,
// `e != 0`, `e >= 0`) otherwise. Bindings and facts, each with its origin,
// are what guards are later built from: a decision taken on this call's
// values holds for a later call only if its guard passes.
//
// A Specialization is the env without hints: what a backend compiles for and
// what the cache key hashes. A backend re-runs shape inference on an env made
// from it; every decision is then answered by a binding, range or fact.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/support/hash.h"
#include "core/support/status.h"
#include "core/sym/expr.h"
#include "core/sym/layout.h"

namespace shapejit::sym {

// Why a decision was taken; a guard carries it so a miss explains itself.
enum class Origin : uint8_t {
  kGraph,         // the graph pins the dim (an integer in the input's shape)
  kDeclared,      // the graph names two dims with one symbol
  kZeroOne,       // sizes 0 and 1 are specialized; other sizes are >= 2
  kBroadcast,     // broadcasting (or matmul, concat) needed dims equal or 1
  kShapeCheck,    // an op's validity (reshape divides, divisor non-zero)
  kObservedInt,   // the interpreter needed the value (guard_int)
  kObservedBool,  // the interpreter branched on a comparison (guard_bool)
  kPolicy,        // the recompile policy specialized the dim for speed
  kBucket,        // the policy's range bucket
  kStructural,    // dtype, rank, device
  kLayout,        // contiguity
};
const char* origin_name(Origin o);

// A fact or decision is `expr REL 0`.
enum class Rel : uint8_t { kEq, kNe, kGe };

struct Range {
  static constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  // The most a dim of a tensor that holds anything can be: no input spans
  // 2^62 bytes (the runtime refuses one that claims to, jit/runtime/inputs.cpp).
  // A dynamic dim's range stops here, so that a slice to "the end" (a stop
  // of 2^62, clamped to the dim) is the dim itself.
  static constexpr int64_t kMaxDim = int64_t{1} << 62;
  int64_t lo = kNegInf, hi = kInf;
  bool contains(int64_t v) const { return lo <= v && v <= hi; }
  bool operator==(const Range&) const = default;
};

struct Fact {
  Expr expr;
  Rel rel;
  Origin origin;
  std::string label;  // the interpreter's label for observations
};

struct Symbol {
  std::string name;
  int input = -1, dim = -1;  // where an input dim's value is read; -1 for unbacked
  Range range{0, Range::kInf};
  Origin range_origin = Origin::kGraph;
  std::optional<int64_t> hint;
  std::optional<Expr> binding;  // the symbol's value, when a decision pinned it
  Origin binding_origin = Origin::kGraph;
  std::string binding_label;
  bool unbacked = false;  // data-dependent (nonzero, masked_select)
  Expr bound;             // unbacked: its upper bound, over input symbols
};

struct Specialization {
  std::vector<Symbol> symbols;  // hints cleared
  std::vector<Fact> facts;
  std::vector<Layout> layouts;  // per input: how the kernel may assume its elements lie
  Hash128 hash() const;
};

class ShapeEnv {
 public:
  explicit ShapeEnv(bool specialize_zero_one = true) : zero_one_(specialize_zero_one) {}
  static ShapeEnv from_specialization(const Specialization& spec);
  Specialization specialization() const;

  // The expression of input `input`'s dim `dim`, named `name` in the graph.
  // The first dim with a name creates its symbol; a later one with the same
  // name must have the same hint.
  Expected<Expr> input_dim(const std::string& name, int input, int dim, std::optional<int64_t> hint);
  // A data-dependent size in [0, bound].
  Expr new_unbacked(Expr bound);
  // Before inferring the same graph again over this env: its data-dependent
  // ops, met in the same order, get this env's unbacked symbols back.
  void rewind_unbacked() { next_unbacked_ = 0; }

  // Substitutes bindings and simplifies with ranges. On an env that is not
  // const (one being built: its owner's alone), answers are remembered
  // until a binding or a range changes: shape inference resolves the same
  // few expressions for every node of a model. A const env, which threads
  // may share, works each out again.
  Expr resolve(Expr e) const;
  Expr resolve(Expr e);
  Range range(Expr e) const;
  std::optional<int64_t> hint(Expr e) const;
  bool has_unbacked(Expr e) const;

  // Whether e >= 0 wherever this env holds, by ranges (through the mins
  // and maxes in e, as resolve simplifies them) or facts; false when they
  // cannot tell. Decides and records nothing.
  bool proves_nonneg(Expr e) const;
  // The same, on an env of its owner's alone, remembered (with the ranges
  // it reads) until a binding, a range or a fact changes: a lowering asks
  // it of the same slices' bounds for every step that reads them.
  bool proves_nonneg(Expr e);
  // Answers `e REL 0`: by ranges or facts, else by hints, recording the
  // decision with `origin`. GraphBreak when it depends on data.
  Expected<bool> decide(Expr e, Rel rel, Origin origin, const std::string& label = {});
  // Answers `a == b`; when true and undecided so far, binds a symbol to the
  // other side (or records the fact).
  Expected<bool> unify(Expr a, Expr b, Origin origin, const std::string& label = {});
  // Binds a free symbol. An error when `value` is outside its range.
  Status bind(int symbol, Expr value, Origin origin, const std::string& label = {});
  void set_range(int symbol, Range r, Origin origin);
  void set_hint(int symbol, int64_t value) { symbols_[symbol].hint = value; }
  void set_layouts(std::vector<Layout> l) { layouts_ = std::move(l); }

  const std::vector<Symbol>& symbols() const { return symbols_; }
  const std::vector<Fact>& facts() const { return facts_; }
  const std::vector<Layout>& layouts() const { return layouts_; }
  bool specialize_zero_one() const { return zero_one_; }
  std::vector<std::string> symbol_names() const;
  std::string str(Expr e) const;

 private:
  Range range_of(Expr e, std::unordered_map<const Node*, Range>& memo) const;
  Range range_uncached(Expr e, std::unordered_map<const Node*, Range>& memo) const;
  using Memo = std::unordered_map<const Node*, Expr>;
  // `memo`, when given, keeps what each subexpression simplified to.
  Expr simplify(Expr e, Memo* memo) const;
  Expr simplify_node(Expr e, Memo* memo) const;
  // A lower bound of e (see shape_env.cpp): -inf when none is known.
  int64_t sign_bound(Expr e, int depth, std::unordered_map<const Node*, Range>* ranges = nullptr) const;
  std::optional<bool> known(Expr e, Rel rel) const;
  void record(Expr e, Rel rel, bool outcome, Origin origin, const std::string& label);

  bool zero_one_;
  std::vector<Symbol> symbols_;
  std::unordered_map<std::string, int> by_name_;
  std::vector<Fact> facts_;
  std::vector<Layout> layouts_;
  size_t next_unbacked_ = 0;  // see new_unbacked
  // resolve's answers, and simplify's for every subexpression, by the
  // expression's node (nodes live for the process); a copy starts empty.
  struct Resolved {
    Resolved() = default;
    Resolved(const Resolved&) {}
    Resolved(Resolved&&) = default;
    Resolved& operator=(const Resolved&) {
      clear();
      return *this;
    }
    Resolved& operator=(Resolved&&) = default;
    void clear() {
      resolved.clear();
      simplified.clear();
      ranges.clear();
      nonneg.clear();
    }
    Memo resolved, simplified;
    std::unordered_map<const Node*, Range> ranges;
    std::unordered_map<const Node*, bool> nonneg;
  };
  Resolved memo_;
};

}  // namespace shapejit::sym
