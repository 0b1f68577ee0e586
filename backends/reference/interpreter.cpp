#include <cmath>
#include <limits>

#include "backends/reference/kernels.h"

namespace shapejit::backends::reference {

using ir::DType;
using ir::Tensor;

Status NodeCtx::error(const std::string& msg, Detail detail) const {
  size_t index = &node - graph.nodes.data();
  return Status(Code::kRuntime,
                "node " + std::to_string(index) + " (" + ir::op_name(node.op) + " -> '" + graph.value_names[node.out[0]] + "'): " + msg, detail);
}

std::vector<int64_t> NodeCtx::out_shape() const {
  std::vector<int64_t> s;
  for (const sym::Expr& d : type.shape) s.push_back(eval(d));
  return s;
}

Tensor NodeCtx::operand(size_t i, DType dt) const {
  const ir::Operand& o = node.in[i];
  if (o.is_value()) return values[o.value];
  Tensor t = Tensor::empty(dt, {});
  ir::visit_dtype(dt, [&]<typename T>() {
    if (o.kind == ir::Operand::Kind::kInt) *t.ptr<T>() = static_cast<T>(o.i);
    else *t.ptr<T>() = from_double<T>(o.f);
  });
  return t;
}

int64_t NodeCtx::symint(size_t i) const {
  const ir::Operand& o = node.in[i];
  if (o.kind == ir::Operand::Kind::kInt) return o.i;
  return eval(types[o.value].scalar);
}

namespace {

Expected<Tensor> run_node(const NodeCtx& c) {
  switch (ir::op_info(c.node.op).cls) {
    case ir::OpClass::kUnary:
    case ir::OpClass::kCast:
    case ir::OpClass::kNot:
    case ir::OpClass::kArith:
    case ir::OpClass::kLogical:
    case ir::OpClass::kCompare:
    case ir::OpClass::kWhere: return run_pointwise(c);
    case ir::OpClass::kReduce:
    case ir::OpClass::kArgmax:
    case ir::OpClass::kScan: return run_reduction(c);
    case ir::OpClass::kSoftmax:
    case ir::OpClass::kLayerNorm:
    case ir::OpClass::kRmsNorm: return run_normalization(c);
    case ir::OpClass::kMatmul: return run_matmul(c);
    case ir::OpClass::kIndexSelect:
    case ir::OpClass::kEmbedding:
    case ir::OpClass::kNonzero:
    case ir::OpClass::kMaskedSelect:
    case ir::OpClass::kIndexPut: return run_indexing(c);
    SJ_VIEW_CLASSES(SJ_CLASS_CASE)
    SJ_SYM_CLASSES(SJ_CLASS_CASE)  // not tensors: run_view says so
    case ir::OpClass::kConcat:
    case ir::OpClass::kFull:
    case ir::OpClass::kArange: return run_view(c);
  }
  SJ_UNREACHABLE("an op class");
}

// The nodes some output depends on, found by walking operands back from the
// outputs; nodes are in topological order, so one backward pass does.
std::vector<bool> live_nodes(const ir::Graph& g) {
  std::vector<bool> live_value(g.num_values(), false);
  for (int o : g.outputs) live_value[o] = true;
  std::vector<bool> live(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const ir::Node& n = g.nodes[i];
    for (int o : n.out) live[i] = live[i] || live_value[o];
    if (!live[i]) continue;
    for (const ir::Operand& o : n.in) {
      if (o.is_value()) live_value[o.value] = true;
    }
  }
  return live;
}

}  // namespace

Status interpret(const ir::Graph& g, const std::vector<ir::ValueType>& types, std::span<const DLTensor* const> args,
                 std::span<int64_t> symbols, std::span<Tensor> outputs) {
  std::vector<Tensor> values(g.num_values());
  for (size_t i = 0; i < g.inputs.size(); ++i) values[i] = Tensor::borrow(*args[i], g.inputs[i].dtype);
  const std::vector<bool> live = live_nodes(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& node = g.nodes[i];
    const ir::ValueType& type = types[node.out[0]];
    if (!live[i] || !type.is_tensor) continue;  // SymInts are evaluated from their expressions
    NodeCtx c{g, node, type, types, values, symbols};
    Tensor t = SJ_TRY(run_node(c));
    // Every result must have the shape inference promised: a cheap check
    // that keeps shape functions and kernels honest with each other.
    std::vector<int64_t> expect = c.out_shape();
    if (t.shape() != expect || t.dtype() != type.dtype) {
      return Status(Code::kInternal, "node " + std::to_string(&node - g.nodes.data()) + " (" + ir::op_name(node.op) +
                                         "): the result's shape differs from the inferred shape");
    }
    values[node.out[0]] = std::move(t);
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const Tensor& v = values[g.outputs[i]];
    if (!outputs[i].defined() || outputs[i].shape() != v.shape()) outputs[i] = Tensor::empty(v.dtype(), v.shape());
    outputs[i].copy_from(v);
  }
  return Status::ok();
}

}  // namespace shapejit::backends::reference
