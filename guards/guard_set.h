// GuardSet: the typed predicates over a call's arguments under which one
// compiled entry is valid, each with its origin.
//
// A guard reads only metadata (dtype, rank, sizes, strides, device), never
// tensor data, and `check` allocates nothing. Guards are ordered: dtype,
// rank and device of every input come first, so the dim guards after them
// may read `shape[dim]` safely.
//
// `check` is the fast path; `explain` is the deliberate duplicate that says
// which guards failed, with input, dim, expected, actual and origin.
#pragma once

#include <dlpack/dlpack.h>

#include <span>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/sym/program.h"
#include "core/sym/shape_env.h"

namespace shapejit::guards {

using Args = std::span<const DLTensor* const>;

enum class Kind : uint8_t {
  kDType,       // input's dtype word == a
  kRank,        // input's ndim == a
  kDevice,      // input's device type == a and id == b
  kContiguous,  // input is dense row-major
  kPermuted,    // input is dense in a permuted order of its dims: sym::Layout word a
  kDimEq,       // shape[dim] == a
  kDimRange,    // a <= shape[dim] <= b
  kDimsEq,      // shape[dim] == input2's shape[dim2]
  kExpr,        // expr REL 0, expr over input dims
};

struct Guard {
  Kind kind;
  sym::Origin origin;
  int32_t input = -1, dim = -1;
  int32_t input2 = -1, dim2 = -1;
  int64_t a = 0, b = 0;
  sym::Rel rel = sym::Rel::kEq;
  sym::Program expr{};  // kExpr; loads are (input, dim)
  std::string text{};   // kExpr: the predicate, readable
  std::string label{};  // the interpreter's label, for observations

  // Same predicate (origin and label aside).
  bool same_predicate(const Guard& o) const;
  std::string predicate() const;  // "input 0 dim 1 == 128"
  // kContiguous, kPermuted: the layout the input must have.
  sym::Layout layout() const { return kind == Kind::kPermuted ? sym::Layout::from_word(static_cast<uint64_t>(a)) : sym::Layout::dense(); }
  // The (input, dim) pairs the guard reads: what a failure is attributed to.
  std::vector<std::pair<int, int>> dims() const;
};

struct Failure {
  const Guard* guard;
  std::string actual;  // "96"
  std::string describe() const;  // "input 0 dim 1 == 128 failed (got 96), origin: policy static"
};

bool check_guard(const Guard& g, Args args);

class GuardSet {
 public:
  GuardSet() = default;
  GuardSet(int num_inputs, std::vector<Guard> guards) : num_inputs_(num_inputs), guards_(std::move(guards)) {}

  int num_inputs() const { return num_inputs_; }
  const std::vector<Guard>& guards() const { return guards_; }

  bool check(Args args) const {
    if (static_cast<int>(args.size()) != num_inputs_) return false;
    for (const Guard& g : guards_) {
      if (!check_guard(g, args)) return false;
    }
    return true;
  }
  // Every failed guard; dim guards of an input whose dtype or rank failed
  // are not evaluated.
  std::vector<Failure> explain(Args args) const;

 private:
  int num_inputs_ = 0;
  std::vector<Guard> guards_;
};

// The guards of a trace (derived once, when it is traced): every input's
// dtype, rank and device, its layout where the env assumed one, and for every
// input dim the decision the env holds about it (pinned, bound, equal to
// another dim, in a range), plus every recorded fact. A free symbol's range
// is guarded at its own dim, and only there. See guard_set.cpp for the rules.
GuardSet derive_guards(const ir::Graph& g, const sym::ShapeEnv& env, DLDevice device = {kDLCPU, 0});

// The guards of an entry specialized from a trace: the trace's guards, with
// each dim the specialization narrowed guarded as it was narrowed (a policy
// constant, a range bucket), and each layout the entry assumes. `env` is
// the trace's env after the policy's choices; nothing is derived again.
GuardSet specialize_guards(const GuardSet& trace, const sym::ShapeEnv& env);

}  // namespace shapejit::guards
