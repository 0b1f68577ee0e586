// The reference interpreter's op families. Internal to backends/reference.
//
// Semantics are NumPy's where NumPy has the op, with these choices where it
// has none or where NumPy's would be undefined behaviour in C++:
//   - integer add/sub/mul/neg/abs wrap around (two's complement);
//   - integer div is floor division; x // 0 is 0 (NumPy's value); pow of an
//     integer to a negative integer power is a runtime error (as in NumPy);
//   - float to integer casts truncate, saturate at the type's limits, and
//     map NaN to 0; float to bool is `x != 0`;
//   - maximum, minimum, max and min propagate NaN; argmax returns the first
//     maximal index and treats NaN as maximal;
//   - float sums, means, norms and matmuls accumulate in double;
//   - max, min and argmax over an empty axis, and out-of-range indices, are
//     runtime errors.
#pragma once

#include <cmath>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "core/ir/infer.h"
#include "core/ir/tensor.h"

namespace shapejit::backends::reference {

struct NodeCtx {
  const ir::Graph& graph;
  const ir::Node& node;
  const ir::ValueType& type;  // the result's
  const std::vector<ir::ValueType>& types;
  const std::vector<ir::Tensor>& values;
  std::span<int64_t> symbols;

  Status error(const std::string& msg, Detail detail = Detail::kNone) const;
  int64_t eval(sym::Expr e) const { return sym::evaluate(e, symbols); }
  std::vector<int64_t> out_shape() const;
  const ir::Tensor& tensor(size_t i) const { return values[node.in[i].value]; }
  // Operand i as a tensor of dtype `dt`: a value, or a literal as a 0-d tensor.
  ir::Tensor operand(size_t i, ir::DType dt) const;
  int64_t symint(size_t i) const;
};

using ir::from_double;

Expected<ir::Tensor> run_pointwise(const NodeCtx& c);
Expected<ir::Tensor> run_reduction(const NodeCtx& c);
Expected<ir::Tensor> run_normalization(const NodeCtx& c);
Expected<ir::Tensor> run_matmul(const NodeCtx& c);
Expected<ir::Tensor> run_view(const NodeCtx& c);
Expected<ir::Tensor> run_indexing(const NodeCtx& c);

// Runs the graph's live nodes (those an output depends on); see Kernel::run.
// A dead node has no effect, its runtime errors included, as in the compiled
// backends, which never emit it.
Status interpret(const ir::Graph& g, const std::vector<ir::ValueType>& types, std::span<const DLTensor* const> args,
                 std::span<int64_t> symbols, std::span<ir::Tensor> outputs);

}  // namespace shapejit::backends::reference
