// Step: cumsum, cumprod, sort and argsort. The operand is made a dense buffer (folded
// pointwise work and views computed into it), the result is the node's
// buffer, and the scan itself is the backend's (loop_ir.h ScanStep).
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

}  // namespace shapejit::backends::loops
