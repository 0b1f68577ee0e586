// specialize: a traced graph under one Specialization, inferred once.
//
// Everything downstream of a trace reads its shapes from here: the runtime
// (each output's dtype and shape function, to size outputs from the call's
// symbols), the reference backend (every value's type) and the lowering to
// loops. Shape inference runs once per compile, in this pass, under an env
// made from the specialization, where every shape decision is already
// answered: specialized symbols fold to constants and nothing new is
// decided. The pass is pure: the same graph and specialization give the
// same result.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/infer.h"
#include "core/sym/program.h"
#include "core/sym/shape_env.h"

namespace shapejit::ir {

struct OutputType {
  DType dtype;
  // One program per dim, over symbol ids (loads are (symbol, 0)).
  std::vector<sym::Program> shape;
  bool data_dependent = false;  // sized by the kernel (nonzero, masked_select)
};

// A size the call's symbols decide that must fit in int64 (an integer
// computed from sizes, a tensor's element count), checked before the kernel
// runs (after it, where it reads a data-dependent size, which the kernel
// computes): int64 wraps where Python's ints would not, so a call past it
// is an overflow error (Detail::kOverflow), never a wrapped value.
struct SizeCheck {
  sym::Program program;  // over symbol ids, as OutputType's
  std::string what;      // the expression, for the message
  bool after_run = false;  // reads an unbacked symbol
};

struct SpecializedGraph {
  std::shared_ptr<const Graph> graph;
  sym::Specialization spec;
  Hash128 spec_hash;
  std::vector<ValueType> types;  // every value's, under `spec`
  std::vector<OutputType> outputs;
  std::vector<SizeCheck> size_checks;  // each distinct expression once; none is constant
  bool size_checks_after_run = false;  // any of them

  int num_symbols() const { return static_cast<int>(spec.symbols.size()); }
};
using SpecializedGraphPtr = std::shared_ptr<const SpecializedGraph>;

// An error names the output whose rank exceeds kMaxRank, or the op whose
// inference failed under the specialization (an internal error: tracing
// answered the same questions).
Expected<SpecializedGraphPtr> specialize(std::shared_ptr<const Graph> graph, sym::Specialization spec);
inline Expected<SpecializedGraphPtr> specialize(const Graph& graph, sym::Specialization spec) {
  return specialize(std::make_shared<const Graph>(graph), std::move(spec));
}

}  // namespace shapejit::ir
