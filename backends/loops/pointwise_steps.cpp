// Steps: pointwise chains (one phase; what a buffer stores), and concat as
// one pointwise step per operand into its slice of the result.
#include "backends/loops/lowering.h"

namespace shapejit::backends::loops::detail {

// A pointwise step's loops, once its body is built: merged, then tiled.
void Lowering::finish_pointwise(LoopStep& step, std::vector<Expr> vars, std::vector<Expr> extents) {
  merge_dims(step.phases[0], vars, extents);
  tile(step, vars, extents);
}

Status Lowering::pointwise_step(int v, int buffer, const std::vector<Expr>& store_shift, int node) {
  Step st{Step::Kind::kLoops};
  st.label = node >= 0 ? label(node) : "output copy";
  st.loops.phases.emplace_back();
  Phase& ph = st.loops.phases[0];
  const std::vector<Expr>& s = shape(v);
  std::vector<Expr> vars = new_vars(s.size());
  BodyBuilder b(*this, ph);
  int r = b.value(v, vars);
  r = b.cast(r, p_.buffers[buffer].dtype);
  std::vector<Expr> at = vars;
  for (size_t d = 0; d < at.size(); ++d) at[d] = at[d] + store_shift[d];
  ph.stores.push_back({buffer, offset(buffer, at), r});
  SJ_TRY(check_budget(ph, std::max(node, 0)));
  finish_pointwise(st.loops, vars, s);
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

Status Lowering::materialize(int v, int buffer, int node) {
  return pointwise_step(v, buffer, std::vector<Expr>(shape(v).size(), Expr(0)), node);
}

Expected<int> Lowering::ensure_dense(int v, int node) {
  if (buffer_of_[v] >= 0) {
    const Buffer& b = p_.buffers[buffer_of_[v]];
    if (b.strides == dense_strides(b.shape)) return buffer_of_[v];
  }
  int t = new_temp(v);
  SJ_TRY(materialize(v, t, node));
  return t;
}

// The reduction's loops: kept dims outer, reduced dims inner.

Status Lowering::concat_step(int node, int buffer) {
  const ir::Node& n = g_.nodes[node];
  const size_t rank = shape(n.out[0]).size();
  const int dim = norm_axis(n.attrs.dim, rank);
  Expr at = 0;
  for (const ir::Operand& o : n.in) {
    std::vector<Expr> shift(rank, Expr(0));
    shift[dim] = at;
    SJ_TRY(pointwise_step(o.value, buffer, shift, node));
    at = at + shape(o.value)[dim];
  }
  return Status::ok();
}

}  // namespace shapejit::backends::loops::detail
