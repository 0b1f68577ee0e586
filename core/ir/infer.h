// Shape inference: the type (dtype and symbolic shape, or SymInt value) of
// every value of a Graph, derived under a ShapeEnv.
//
// While tracing, the env has hints and inference records the decisions it
// takes (broadcast equalities, 0/1 specializations, reshape divisibility) as
// bindings and facts. Under an env made from a Specialization, every
// decision is already answered, so a backend gets the same shapes, with
// specialized symbols folded to constants.
//
// Shapes are SymExprs over the graph's symbols; for an op whose output size
// depends on data, a fresh unbacked symbol bounded by the input's numel.
// `aux` holds per-node expressions a kernel needs besides shapes (a slice's
// clamped start and its step, arange's start and step).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "core/ir/graph.h"
#include "core/support/status.h"
#include "core/sym/shape_env.h"

namespace shapejit::ir {

struct ValueType {
  bool is_tensor = true;
  DType dtype = DType::kF32;
  std::vector<sym::Expr> shape;  // tensors
  sym::Expr scalar;              // SymInts
  std::vector<sym::Expr> aux;    // see above
};

// Input hints: each input's concrete shape on the call being traced.
using ShapeHints = std::vector<std::vector<int64_t>>;

// Declares the inputs' dims in `env` and returns their types. With hints,
// a call whose ranks or pinned dims disagree with the graph is an error.
Expected<std::vector<ValueType>> infer_inputs(const Graph& g, sym::ShapeEnv& env, const ShapeHints* hints);
// Infers `node`'s results and appends nothing: `types` must already have a
// slot for every value; the results' slots are filled.
Status infer_node(const Graph& g, const Node& node, std::vector<ValueType>& types, sym::ShapeEnv& env);
// Re-resolves every stored expression after later decisions bound symbols.
void resolve_types(std::vector<ValueType>& types, sym::ShapeEnv& env);
// All of the above: inputs, nodes in order, outputs must be tensors.
Expected<std::vector<ValueType>> infer(const Graph& g, sym::ShapeEnv& env, const ShapeHints* hints);

sym::Expr numel(const std::vector<sym::Expr>& shape);

}  // namespace shapejit::ir
