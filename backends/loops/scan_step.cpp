// Steps: cumsum, cumprod, sort and argsort; index_put and index_add. The
// operands are made dense buffers (folded pointwise work and views
// computed into them), the result is the node's buffer, and the scan or
// the scatter itself is the backend's (loop_ir.h ScanStep, ScatterStep).
#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

Status Lowering::scan_step(int node, int buffer) {
  const ir::Node& n = g_.nodes[node];
  if (!options_.scans) return unsupported(label(node) + ": this backend has no scan (cumsum, cumprod, sort, argsort) yet");
  const int x = n.in[0].value;
  const std::vector<Expr>& xs = shape(x);
  const int dim = norm_axis(n.attrs.dim, xs.size());
  Step st{Step::Kind::kScan};
  st.label = label(node);
  st.scan.op = n.op;
  st.scan.in = SJ_TRY(ensure_dense(x, node));
  st.scan.out = buffer;
  st.scan.outer = product(std::vector<Expr>(xs.begin(), xs.begin() + dim));
  st.scan.n = xs[dim];
  st.scan.inner = product(std::vector<Expr>(xs.begin() + dim + 1, xs.end()));
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

Status Lowering::scatter_step(int node, int buffer) {
  const ir::Node& n = g_.nodes[node];
  if (!options_.scatters) return unsupported(label(node) + ": this backend has no scatter (index_put, index_add) yet");
  const int x = n.in[0].value;
  const std::vector<Expr>& xs = shape(x);
  const int dim = norm_axis(n.attrs.dim, xs.size());
  Step st{Step::Kind::kScatter};
  st.label = label(node);
  st.scatter.op = n.op;
  st.scatter.in = SJ_TRY(ensure_dense(x, node));
  st.scatter.index = SJ_TRY(ensure_dense(n.in[1].value, node));
  st.scatter.values = SJ_TRY(ensure_dense(n.in[2].value, node));
  st.scatter.out = buffer;
  st.scatter.outer = product(std::vector<Expr>(xs.begin(), xs.begin() + dim));
  st.scatter.n = xs[dim];
  st.scatter.m = shape(n.in[1].value)[0];
  st.scatter.inner = product(std::vector<Expr>(xs.begin() + dim + 1, xs.end()));
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

}  // namespace shapejit::backends::loops
