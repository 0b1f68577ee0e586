// Pass: matmul steps. A float matmul becomes a BLAS step on dense
// operands (a non-dense operand is materialized first), batch dims
// broadcast by stride; an integer one (or any without BLAS) a loop nest
// that accumulates in i64 / f64.
#include "backends/loops/lowering.h"

namespace shapejit::backends::loops::detail {

Status Lowering::matmul_step(int node, int buffer) {
  const ir::Node& n = g_.nodes[node];
  const int av = n.in[0].value, bv = n.in[1].value;
  const std::vector<Expr>&sa = shape(av), &sb = shape(bv), &so = shape(n.out[0]);
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  const size_t nbatch = so.size() - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
  const Expr k = sa.back();
  const DType dt = types_[av].dtype;
  if (options_.blas && ir::is_float(dt)) {
    Step st{Step::Kind::kMatmul};
    st.label = label(node);
    MatmulStep& m = st.matmul;
    m.a = SJ_TRY(ensure_dense(av, node));
    m.b = SJ_TRY(ensure_dense(bv, node));
    m.c = buffer;
    m.m = a_vec ? Expr(1) : sa[sa.size() - 2];
    m.n = b_vec ? Expr(1) : sb.back();
    m.k = k;
    m.batch.assign(so.begin(), so.begin() + static_cast<int64_t>(nbatch));
    auto batch_of = [&](const std::vector<Expr>& s, bool vec, std::vector<Expr>& dims, std::vector<bool>& bcast) {
      size_t own = vec ? 0 : s.size() - 2;
      for (size_t i = 0; i < nbatch; ++i) {
        Expr d = i + own >= nbatch ? s[i + own - nbatch] : Expr(1);
        dims.push_back(d);
        bcast.push_back(is_one(d) && !is_one(m.batch[i]));
      }
    };
    batch_of(sa, a_vec, m.a_batch, m.a_batch_bcast);
    batch_of(sb, b_vec, m.b_batch, m.b_batch_bcast);
    p_.steps.push_back(std::move(st));
    return Status::ok();
  }
  // Loops: out[..., i, j] = sum_p a[..., i, p] * b[..., p, j].
  Step st{Step::Kind::kLoops};
  st.label = label(node);
  std::vector<Expr> out_vars = new_vars(so.size());
  for (size_t d = 0; d < so.size(); ++d) {
    st.loops.outer_vars.push_back(out_vars[d].symbol_id());
    st.loops.outer_extents.push_back(so[d]);
  }
  Expr p = new_symbol();
  auto operand_idx = [&](const std::vector<Expr>& s, bool vec, bool lhs) {
    std::vector<Expr> idx;
    if (vec) return std::vector<Expr>{p};
    size_t own = s.size() - 2;
    for (size_t i = 0; i < own; ++i) idx.push_back(is_one(s[i]) ? Expr(0) : out_vars[nbatch - own + i]);
    if (lhs) {
      idx.push_back(out_vars[nbatch]);
      idx.push_back(p);
    } else {
      idx.push_back(p);
      idx.push_back(out_vars[so.size() - 1]);
    }
    return idx;
  };
  const DType acc = ir::is_float(dt) ? DType::kF64 : DType::kI64;
  Phase& p0 = add_phase(st.loops, {p}, {k});
  BodyBuilder b0(*this, p0);
  int prod = b0.op(Op::kMul, acc, {b0.cast(b0.value(av, operand_idx(sa, a_vec, true)), acc), b0.cast(b0.value(bv, operand_idx(sb, b_vec, false)), acc)});
  p0.reductions.push_back({Combine::kSum, prod, -1, acc});
  SJ_TRY(check_budget(p0, node));
  Phase& p1 = add_phase(st.loops, {}, {});
  BodyBuilder b1(*this, p1);
  p1.stores.push_back({buffer, offset(buffer, out_vars), b1.cast(b1.acc(0, 0, acc), types_[n.out[0]].dtype)});
  st.loops.work_per_row = k;
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

}  // namespace shapejit::backends::loops::detail
