// Pass: matmul steps. A float matmul becomes a BLAS step, batch dims
// broadcast by stride. An operand that is a view of a buffer (a transpose,
// a permutation, a slice, a reshape of a dense buffer) is read in place by
// its strides, transposed for BLAS when its rows are the contiguous ones;
// any other is materialized dense first. An integer matmul (or any without
// BLAS) is a loop nest that accumulates in i64 / f64.
#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

// `v` (rank >= 2) read in place: its fold is one load whose offset is
// linear in the indices, with non-negative strides, and rows or columns
// contiguous. Dims of size 1 stride 0, as everywhere; a matrix of one row
// or column takes stride 1 there, so that BLAS may read it either way.
std::optional<MatmulOperand> Lowering::strided_operand(int v, const std::vector<Expr>& batch) {
  const std::vector<Expr>& s = shape(v);
  const size_t rank = s.size();
  Phase scratch;
  BodyBuilder fold(*this, scratch);
  const std::vector<Expr> vars = new_vars(rank);
  fold.value(v, vars);
  if (scratch.body.size() != 1 || scratch.body[0].kind != InstKind::kLoad) return std::nullopt;
  const Inst& load = scratch.body[0];
  auto at = [&](size_t unit) {  // the offset with index `unit` 1 and the others 0 (unit == rank: all 0)
    return sym::substitute(load.expr, [&](int id) -> std::optional<Expr> {
      for (size_t d = 0; d < rank; ++d) {
        if (vars[d].symbol_id() == id) return Expr(d == unit ? 1 : 0);
      }
      return std::nullopt;
    });
  };
  MatmulOperand o;
  o.buffer = load.buffer;
  o.offset = at(rank);
  std::vector<Expr> strides(rank);
  Expr linear = o.offset;
  for (size_t d = 0; d < rank; ++d) {
    strides[d] = at(d) - o.offset;
    linear = linear + strides[d] * vars[d];
    if (!is_nonnegative(p_, strides[d])) return std::nullopt;
    if (is_one(s[d])) strides[d] = 0;
  }
  if (!((load.expr - linear) == Expr(0))) return std::nullopt;
  o.row_stride = is_one(s[rank - 2]) ? Expr(1) : strides[rank - 2];
  o.col_stride = is_one(s[rank - 1]) ? Expr(1) : strides[rank - 1];
  const bool rows_contiguous = o.row_stride == Expr(1), cols_contiguous = o.col_stride == Expr(1);
  if (!rows_contiguous && !cols_contiguous) return std::nullopt;
  // The other stride is BLAS's leading dimension: 0 (a broadcast) is not one.
  if ((cols_contiguous ? o.row_stride : o.col_stride) == Expr(0)) return std::nullopt;
  const size_t own = rank - 2;
  for (size_t i = 0; i < batch.size(); ++i) {
    const size_t lead = batch.size() - own;
    o.batch_strides.push_back(i >= lead ? strides[i - lead] : Expr(0));
  }
  return o;
}

// Operand `v` of a BLAS step: in place where it can be, else dense.
Expected<MatmulOperand> Lowering::blas_operand(int v, bool vec, const std::vector<Expr>& batch, int node) {
  if (!vec && options_.strided_operands) {
    if (std::optional<MatmulOperand> o = strided_operand(v, batch)) return *o;
  }
  MatmulOperand o;
  o.buffer = SJ_TRY(ensure_dense(v, node));
  const std::vector<Expr>& s = shape(v);
  if (vec) {  // [k]: one row of A, or one column of B; nothing to stride
    o.row_stride = 1;
    o.batch_strides.assign(batch.size(), Expr(0));
    return o;
  }
  const std::vector<Expr> dense = dense_strides(s);
  const size_t own = s.size() - 2;
  o.row_stride = dense[own];
  for (size_t i = 0; i < batch.size(); ++i) {
    const size_t lead = batch.size() - own;
    o.batch_strides.push_back(i >= lead && !is_one(s[i - lead]) ? dense[i - lead] : Expr(0));
  }
  return o;
}

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
    m.batch.assign(so.begin(), so.begin() + static_cast<int64_t>(nbatch));
    m.a = SJ_TRY(blas_operand(av, a_vec, m.batch, node));
    m.b = SJ_TRY(blas_operand(bv, b_vec, m.batch, node));
    m.c = buffer;
    m.m = a_vec ? Expr(1) : sa[sa.size() - 2];
    m.n = b_vec ? Expr(1) : sb.back();
    m.k = k;
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

}  // namespace shapejit::backends::loops
