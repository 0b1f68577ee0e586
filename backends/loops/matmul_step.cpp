// Pass: matmul steps. A float matmul becomes a BLAS step, batch dims
// broadcast by stride. An operand that is a view of a buffer (a transpose,
// a permutation, a slice, a reshape of a dense buffer) is read in place by
// its strides, transposed for BLAS when its rows are the contiguous ones;
// any other is materialized dense first. An integer matmul (or any without
// BLAS) is a loop nest that accumulates in i64 / f64.
#include <optional>
#include <vector>

#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

namespace {

// The one load `v`'s fold makes (its buffer and offset) over the variables
// `vars`, one per dim, or nullopt when the fold is more than a load; with
// `convert`, a load cast from one float type to the other is one too.
std::optional<Inst> folded_load(BodyBuilder& fold, const Phase& scratch, int v, const std::vector<Expr>& vars, bool convert = false) {
  fold.value(v, vars);
  const std::vector<Inst>& body = scratch.body;
  if (body.empty() || body[0].kind != InstKind::kLoad) return std::nullopt;
  if (body.size() == 1) return body[0];
  const bool cast = body.size() == 2 && body[1].kind == InstKind::kOp && body[1].op == Op::kCast && body[1].args == std::vector<int>{0};
  if (convert && cast && ir::is_float(body[0].dtype) && ir::is_float(body[1].dtype)) return body[0];
  return std::nullopt;
}

// Whether e is `x // c` or `x % c` for a constant c > 1; c when it is.
std::optional<int64_t> divides_symbol(Expr e, Expr x) {
  if (e.kind() != sym::Kind::kFloorDiv && e.kind() != sym::Kind::kMod) return std::nullopt;
  if (!(e.arg(0) == x) || !e.arg(1).is_const() || e.arg(1).const_value() <= 1) return std::nullopt;
  return e.arg(1).const_value();
}

// Every constant c of an `x // c` or `x % c` in e.
void divisors_of(Expr e, Expr x, std::vector<int64_t>& out) {
  if (std::optional<int64_t> c = divides_symbol(e, x)) out.push_back(*c);
  for (size_t i = 0; i < e.num_args(); ++i) divisors_of(e.arg(i), x, out);
}

}  // namespace

// `v` (rank >= 2) read in place: its fold is one load whose offset is
// linear in the indices, with non-negative strides, and rows or columns
// contiguous. Dims of size 1 stride 0, as everywhere; a matrix of one row
// or column takes stride 1 there, so that BLAS may read it either way.
// With `split`, the batch dim it names is read as two (quotient and
// remainder by its factor): the offset must be linear in those. With
// `convert`, v may be a float cast of such a load (folded_load).
std::optional<MatmulOperand> Lowering::strided_operand(int v, const std::vector<Expr>& batch, std::optional<BatchSplit> split, bool convert) {
  const std::vector<Expr>& s = shape(v);
  const size_t rank = s.size(), own = rank - 2, lead = batch.size() - own;
  Phase scratch;
  BodyBuilder fold(*this, scratch);
  const std::vector<Expr> vars = new_vars(rank);
  const std::optional<Inst> load = folded_load(fold, scratch, v, vars, convert);
  if (!load) return std::nullopt;
  // The variables the offset is read in: the dims', and for a split dim
  // its quotient in the dim's place and its remainder last.
  std::vector<Expr> terms = vars;
  Expr expr = load->expr;
  const bool splits = split && split->dim >= lead && !is_one(s[split->dim - lead]);
  if (splits) {
    const Expr whole = vars[split->dim - lead], quotient = new_symbol(), remainder = new_symbol();
    const int64_t c = split->factor;
    expr = sym::rewrite(expr, [&](Expr e) -> std::optional<Expr> {
      if (e == whole) return Expr(c) * quotient + remainder;
      if (divides_symbol(e, whole) == c) return e.kind() == sym::Kind::kFloorDiv ? quotient : remainder;
      return std::nullopt;
    });
    terms[split->dim - lead] = quotient;
    terms.push_back(remainder);
  }
  auto at = [&](size_t unit) {  // the offset with term `unit` 1 and the others 0 (unit == terms.size(): all 0)
    return sym::substitute(expr, [&](int id) -> std::optional<Expr> {
      for (size_t t = 0; t < terms.size(); ++t) {
        if (terms[t].symbol_id() == id) return Expr(t == unit ? 1 : 0);
      }
      return std::nullopt;
    });
  };
  MatmulOperand o;
  o.buffer = load->buffer;
  o.offset = at(terms.size());
  std::vector<Expr> strides(terms.size());
  Expr linear = o.offset;
  for (size_t t = 0; t < terms.size(); ++t) {
    strides[t] = at(t) - o.offset;
    linear = linear + strides[t] * terms[t];
    if (!is_nonnegative(p_, strides[t])) return std::nullopt;
    if (t < rank && is_one(s[t])) strides[t] = 0;
  }
  if (!((expr - linear) == Expr(0))) return std::nullopt;
  o.row_stride = is_one(s[rank - 2]) ? Expr(1) : strides[rank - 2];
  o.col_stride = is_one(s[rank - 1]) ? Expr(1) : strides[rank - 1];
  const bool rows_contiguous = o.row_stride == Expr(1), cols_contiguous = o.col_stride == Expr(1);
  if (!rows_contiguous && !cols_contiguous) return std::nullopt;
  // The other stride is BLAS's leading dimension: 0 (a broadcast) is not one.
  if ((cols_contiguous ? o.row_stride : o.col_stride) == Expr(0)) return std::nullopt;
  for (size_t i = 0; i < batch.size(); ++i) {
    o.batch_strides.push_back(i >= lead ? strides[i - lead] : Expr(0));
    if (split && i == split->dim) o.batch_strides.push_back(splits ? strides[rank] : Expr(0));
  }
  return o;
}

// A split of a batch dim that lets BLAS read operands in place which it
// cannot read whole: a dim of constant extent whose index an operand reads
// as i // c and i % c, c dividing the extent (np.repeat of key/value heads
// for grouped-query attention: head i reads kv head i // 3).
std::optional<Lowering::BatchSplit> Lowering::batch_split(int av, int bv, const std::vector<Expr>& batch) {
  const bool convert = options_.converting_operands;
  const bool a_in_place = strided_operand(av, batch).has_value(), b_in_place = strided_operand(bv, batch, std::nullopt, convert).has_value();
  if (a_in_place && b_in_place) return std::nullopt;
  for (int v : {av, bv}) {
    if (v == av ? a_in_place : b_in_place) continue;
    const size_t rank = shape(v).size(), own = rank - 2, lead = batch.size() - own;
    Phase scratch;
    BodyBuilder fold(*this, scratch);
    const std::vector<Expr> vars = new_vars(rank);
    const std::optional<Inst> load = folded_load(fold, scratch, v, vars, v == bv && convert);
    if (!load) continue;
    for (size_t d = 0; d < own; ++d) {
      const std::optional<int64_t> extent = batch[lead + d].as_const();
      std::vector<int64_t> divisors;
      divisors_of(load->expr, vars[d], divisors);
      for (int64_t c : divisors) {
        if (!extent || *extent % c != 0 || *extent == c) continue;
        const BatchSplit split{lead + d, c};
        if (strided_operand(v, batch, split, v == bv && convert)) return split;  // the other stays as it was: linear in i is linear in both
      }
    }
  }
  return std::nullopt;
}

// Operand `v` of a BLAS step: in place where it can be, else dense.
Expected<MatmulOperand> Lowering::blas_operand(int v, bool vec, const std::vector<Expr>& batch, int node, std::optional<BatchSplit> split,
                                               bool convert) {
  if (!vec && options_.strided_operands) {
    if (std::optional<MatmulOperand> o = strided_operand(v, batch, split, convert)) return *o;
  }
  MatmulOperand o;
  o.buffer = SJ_TRY(ensure_dense(v, node));
  const std::vector<Expr>& s = shape(v);
  const size_t extra = split ? 1 : 0;
  if (vec) {  // [k]: one row of A, or one column of B; nothing to stride
    o.row_stride = 1;
    o.batch_strides.assign(batch.size() + extra, Expr(0));
    return o;
  }
  const std::vector<Expr> dense = dense_strides(s);
  const size_t own = s.size() - 2;
  o.row_stride = dense[own];
  for (size_t i = 0; i < batch.size(); ++i) {
    const size_t lead = batch.size() - own;
    const Expr stride = i >= lead && !is_one(s[i - lead]) ? dense[i - lead] : Expr(0);
    if (split && i == split->dim) {  // quotient, then remainder
      o.batch_strides.push_back(stride * Expr(split->factor));
      o.batch_strides.push_back(stride);
    } else {
      o.batch_strides.push_back(stride);
    }
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
  // A vector times a matrix that BLAS cannot read where it lies (a cast of
  // a transposed float32 table into a float64 product: GPT-2's logits under
  // NumPy's promotion) is loops that read it once, not a dense copy of the
  // matrix (written and read again) for a product that reads it once.
  const bool copy_for_one_vector = options_.blas && options_.strided_operands && a_vec != b_vec &&
                                   !strided_operand(a_vec ? bv : av, std::vector<Expr>(so.begin(), so.end() - 1)).has_value();
  if (options_.blas && ir::is_float(dt) && !copy_for_one_vector) {
    Step st{Step::Kind::kMatmul};
    st.label = label(node);
    MatmulStep& m = st.matmul;
    const std::vector<Expr> batch(so.begin(), so.begin() + static_cast<int64_t>(nbatch));
    const std::optional<BatchSplit> split = !a_vec && !b_vec && options_.strided_operands ? batch_split(av, bv, batch) : std::nullopt;
    m.a = SJ_TRY(blas_operand(av, a_vec, batch, node, split, false));
    m.b = SJ_TRY(blas_operand(bv, b_vec, batch, node, split, options_.converting_operands));
    m.batch = batch;
    if (split) {
      const int64_t c = split->factor;
      m.batch[split->dim] = Expr(*batch[split->dim].as_const() / c);
      m.batch.insert(m.batch.begin() + static_cast<int64_t>(split->dim) + 1, Expr(c));
    }
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
