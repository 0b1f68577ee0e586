// Steps: reductions (sum, mean, max, min), argmax, softmax and
// log_softmax, layer_norm and rms_norm. Each is the kept dims as outer loops
// and phases over the reduced dims, accumulating in f64 (floats) or i64 as
// the reference does; a reduction that keeps the last dim accumulates along
// it instead (column_reduce_step), so that its loads stay contiguous.
#include <algorithm>
#include <limits>
#include <numeric>

#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

struct ReduceLoops {
  std::vector<Expr> x_idx, out_idx, inner_vars, inner_extents;
};

ReduceLoops reduce_loops(const std::function<Expr()>& new_symbol, LoopStep& step, const std::vector<Expr>& xs, const std::vector<int>& axes, bool keepdim) {
  ReduceLoops r;
  for (size_t d = 0; d < xs.size(); ++d) {
    Expr v = new_symbol();
    r.x_idx.push_back(v);
    bool reduced = std::find(axes.begin(), axes.end(), static_cast<int>(d)) != axes.end();
    if (reduced) {
      r.inner_vars.push_back(v);
      r.inner_extents.push_back(xs[d]);
      if (keepdim) r.out_idx.push_back(0);
    } else {
      step.outer_vars.push_back(v.symbol_id());
      step.outer_extents.push_back(xs[d]);
      r.out_idx.push_back(v);
    }
  }
  step.work_per_row = product(r.inner_extents);
  return r;
}

// How sum, mean, prod, max and min accumulate: sums and products in f64
// (floats) or i64, as the reference does, from an identity (so an empty
// axis is fine); max and min in the input's type, with none.
struct Accumulation {
  bool sum;  // a sum or a product: f64 or i64, and an identity
  DType dtype;
  Combine combine;
};
Accumulation accumulation(Op op, DType dt) {
  const bool sum = op == Op::kSum || op == Op::kMean || op == Op::kProd;
  return {sum, sum ? (ir::is_float(dt) ? DType::kF64 : DType::kI64) : dt,
          op == Op::kProd ? Combine::kProd : sum ? Combine::kSum : op == Op::kMax ? Combine::kMax : Combine::kMin};
}

std::vector<int> axes_of(const ir::Attrs& a, size_t rank, bool all_by_default) {
  std::vector<int> axes;
  if (!a.has(ir::kAttrAxes) && all_by_default) {
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
    return axes;
  }
  for (int64_t x : a.axes) axes.push_back(norm_axis(x, rank));
  std::sort(axes.begin(), axes.end());
  return axes;
}

Status Lowering::reduce_step(int node, int buffer) {
  const ir::Node& n = g_.nodes[node];
  const int x = n.in[0].value;
  const DType dt = types_[x].dtype;
  const std::vector<int> axes = axes_of(n.attrs, shape(x).size(), true);
  const int last = static_cast<int>(shape(x).size()) - 1;
  if (options_.tile > 0 && !axes.empty() && axes.size() == shape(x).size()) return full_reduce_step(node, buffer, selection_under(x));
  if (options_.tile > 0 && !axes.empty() && axes.back() != last) return column_reduce_step(node, buffer, axes);
  Step st{Step::Kind::kLoops};
  st.label = label(node);
  ReduceLoops r = reduce_loops([this] { return new_symbol(); }, st.loops, shape(x), axes, n.attrs.keepdim);
  Phase& p0 = add_phase(st.loops, r.inner_vars, r.inner_extents);
  BodyBuilder b0(*this, p0);
  int val = b0.value(x, r.x_idx);
  const auto [sum, acc_dt, c] = accumulation(n.op, dt);
  val = b0.cast(val, acc_dt);
  p0.reductions.push_back({c, val, -1, acc_dt});
  SJ_TRY(check_budget(p0, node));
  Phase& p1 = add_phase(st.loops, {}, {});
  BodyBuilder b1(*this, p1);
  int res = b1.acc(0, 0, acc_dt);
  if (n.op == Op::kMean) res = b1.op(Op::kDiv, DType::kF64, {res, b1.index(product(r.inner_extents), DType::kF64)});
  res = b1.cast(res, types_[n.out[0]].dtype);
  p1.stores.push_back({buffer, offset(buffer, r.out_idx), res});
  if (!sum) p_.empty_checks.push_back({product(r.inner_extents)});
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

// A reduction that keeps the last (contiguous) dim: per kept row, the
// last dim in tiles of kColumnTile across threads, the tile's accumulators
// in a temporary (acc_dt), so that the innermost loop runs along the
// contiguous dim and vectorizes: 0. the accumulators' identities; 1. over
// the reduced dims, then the tile, acc = acc (+, max, min) x; 2. the result.
// Max and min propagate NaN (maximum / minimum), as the reference's.
Status Lowering::column_reduce_step(int node, int buffer, const std::vector<int>& axes) {
  constexpr int64_t kColumnTile = 256;
  const ir::Node& n = g_.nodes[node];
  const int x = n.in[0].value;
  const std::vector<Expr>& xs = shape(x);
  const DType dt = types_[x].dtype;
  const auto [sum, acc_dt, c] = accumulation(n.op, dt);
  Step st{Step::Kind::kLoops};
  st.label = label(node);
  LoopStep& ls = st.loops;
  const size_t rank = xs.size();
  std::vector<Expr> x_idx(rank), out_idx, r_vars, r_extents;
  for (size_t d = 0; d + 1 < rank; ++d) {
    x_idx[d] = new_symbol();
    if (std::find(axes.begin(), axes.end(), static_cast<int>(d)) != axes.end()) {
      r_vars.push_back(x_idx[d]);
      r_extents.push_back(xs[d]);
      if (n.attrs.keepdim) out_idx.push_back(0);
    } else {
      ls.outer_vars.push_back(x_idx[d].symbol_id());
      ls.outer_extents.push_back(xs[d]);
      out_idx.push_back(x_idx[d]);
    }
  }
  const Expr tile = new_symbol(), j = new_symbol();
  ls.outer_vars.push_back(tile.symbol_id());
  ls.outer_extents.push_back(sym::floordiv(xs.back() + (kColumnTile - 1), kColumnTile));
  const Expr cols = sym::min(Expr(kColumnTile), xs.back() - tile * kColumnTile);
  x_idx[rank - 1] = tile * kColumnTile + j;
  out_idx.push_back(x_idx[rank - 1]);
  ls.empty_if_zero = {xs.back()};
  ls.work_per_row = product(r_extents) * sym::min(Expr(kColumnTile), xs.back());
  const Buffer& out = p_.buffers[buffer];
  const int acc = add_buffer(Buffer::Kind::kTemp, p_.num_temps++, acc_dt, out.shape, dense_strides(out.shape));
  const Expr at = offset(acc, out_idx);
  auto load_acc = [&](BodyBuilder& b) {
    Inst ld{InstKind::kLoad, acc_dt};
    ld.buffer = acc;
    ld.expr = at;
    return b.emit(ld);
  };
  Phase& p0 = add_phase(ls, {j}, {cols});
  BodyBuilder b0(*this, p0);
  Inst identity{InstKind::kConst, acc_dt};
  ir::visit_dtype(acc_dt, [&]<typename T>() {
    const bool low = n.op == Op::kMax;
    T v = n.op == Op::kProd ? T(1) : T(0);
    if (!sum) v = std::numeric_limits<T>::has_infinity ? (low ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity())
                                                       : (low ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
    identity.value.is_float = ir::is_float(acc_dt);
    if (identity.value.is_float) identity.value.f = static_cast<double>(v);
    else identity.value.i = static_cast<int64_t>(v);
  });
  p0.stores.push_back({acc, at, b0.emit(identity)});
  std::vector<Expr> vars = r_vars, extents = r_extents;
  vars.push_back(j);
  extents.push_back(cols);
  Phase& p1 = add_phase(ls, vars, extents);
  BodyBuilder b1(*this, p1);
  const Op combine = c == Combine::kSum    ? Op::kAdd
                     : c == Combine::kProd ? Op::kMul
                     : c == Combine::kMax  ? Op::kMaximum
                                           : Op::kMinimum;
  p1.stores.push_back({acc, at, b1.op(combine, acc_dt, {load_acc(b1), b1.cast(b1.value(x, x_idx), acc_dt)})});
  SJ_TRY(check_budget(p1, node));
  Phase& p2 = add_phase(ls, {j}, {cols});
  BodyBuilder b2(*this, p2);
  int res = load_acc(b2);
  if (n.op == Op::kMean) res = b2.op(Op::kDiv, DType::kF64, {res, b2.index(product(r_extents), DType::kF64)});
  p2.stores.push_back({buffer, offset(buffer, out_idx), b2.cast(res, types_[n.out[0]].dtype)});
  if (!sum) p_.empty_checks.push_back({product(r_extents)});
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

// A reduction over every axis (a loss, a norm): one row, which alone
// would run on one thread. Its loops merged (a dense input is one loop),
// the innermost splits into chunks of kChunk elements, the step's outer
// loop, across threads; each chunk's result goes to a temporary of
// partials, and a second step reduces those as the first reduced the
// input (sums in f64 or i64 either way).
// The masked_select whose summed selection (BufferPlan::summed_selection)
// `v` is computed from, or -1.
int Lowering::selection_under(int v) const {
  while (producer_[v] >= 0 && !summed_selection_[v]) {
    const ir::Node& n = g_.nodes[producer_[v]];
    if (!ir::is_pointwise(ir::op_info(n.op).cls)) return -1;
    const auto first = std::find_if(n.in.begin(), n.in.end(), [](const ir::Operand& o) { return o.is_value(); });
    if (first == n.in.end()) return -1;
    v = first->value;
  }
  return producer_[v] >= 0 && summed_selection_[v] ? producer_[v] : -1;
}

// A full reduction split across threads: chunks of the merged loop, then
// their partials. Of a summed selection (`selection` >= 0), it runs over the
// selection's domain instead, each element where(mask, f(value), identity),
// and a mean divides by the mask's count, a second reduction beside it: the
// mask, the select, f and the sum are one pass, and no compaction is made.
Status Lowering::full_reduce_step(int node, int buffer, int selection) {
  constexpr int64_t kChunk = int64_t{1} << 14;
  const ir::Node& n = g_.nodes[node];
  const int x = n.in[0].value;
  const int sel = selection >= 0 ? g_.nodes[selection].out[0] : -1;
  const std::vector<Expr>& xs = sel >= 0 ? types_[sel].aux : shape(x);
  const DType dt = types_[x].dtype;
  const auto [sum, acc_dt, c] = accumulation(n.op, dt);
  Step st{Step::Kind::kLoops};
  st.label = label(node);
  LoopStep& ls = st.loops;
  std::vector<Expr> vars = new_vars(xs.size()), extents = xs;
  Phase& p0 = add_phase(ls, {}, {});
  BodyBuilder b0(*this, p0);
  if (sel < 0) {
    p0.reductions.push_back({c, b0.cast(b0.value(x, vars), acc_dt), -1, acc_dt});
  } else {
    b0.select_at(sel, vars);
    const int set = b0.broadcast_value(g_.nodes[selection].in[1].value, xs, vars);
    const int f = b0.cast(b0.value(x, {Expr(0)}), acc_dt);
    p0.reductions.push_back({c, b0.op(Op::kWhere, acc_dt, {set, f, b0.constant(acc_dt, n.op == Op::kProd ? 1 : 0)}), -1, acc_dt});
    if (n.op == Op::kMean) p0.reductions.push_back({Combine::kSum, b0.cast(set, DType::kI64), -1, DType::kI64});
  }
  SJ_TRY(check_budget(p0, node));
  LoopDims merged = merge_dims(p0, {std::move(vars), std::move(extents)});
  vars = std::move(merged.vars);
  extents = std::move(merged.extents);
  const Expr last = extents.back(), part = new_symbol(), j = new_symbol();
  const int split = vars.back().symbol_id();
  substitute_indices(p0, [&](int s) { return s == split ? std::optional<Expr>(part * kChunk + j) : std::nullopt; });
  const Expr parts = sym::floordiv(last + (kChunk - 1), kChunk);
  ls.outer_vars = {part.symbol_id()};
  ls.outer_extents = {parts};
  extents.back() = sym::min(Expr(kChunk), last - part * kChunk);
  vars.back() = j;
  for (const Expr& v : vars) p0.vars.push_back(v.symbol_id());
  p0.extents = extents;
  extents.back() = sym::min(Expr(kChunk), last);
  ls.work_per_row = product(extents);
  const int partials = add_buffer(Buffer::Kind::kTemp, p_.num_temps++, acc_dt, {parts}, {Expr(1)});
  const bool count = p0.reductions.size() > 1;  // a masked mean's count
  const int counts = count ? add_buffer(Buffer::Kind::kTemp, p_.num_temps++, DType::kI64, {parts}, {Expr(1)}) : -1;
  Phase& p1 = add_phase(ls, {}, {});
  BodyBuilder b1(*this, p1);
  p1.stores.push_back({partials, part, b1.acc(0, 0, acc_dt)});
  if (count) p1.stores.push_back({counts, part, b1.acc(0, 1, DType::kI64)});
  p_.steps.push_back(std::move(st));

  Step total{Step::Kind::kLoops};
  total.label = label(node);
  const Expr i = new_symbol();
  Phase& q0 = add_phase(total.loops, {i}, {parts});
  BodyBuilder c0(*this, q0);
  Inst ld{InstKind::kLoad, acc_dt};
  ld.buffer = partials;
  ld.expr = i;
  q0.reductions.push_back({c, c0.emit(ld), -1, acc_dt});
  if (count) {
    Inst lc{InstKind::kLoad, DType::kI64};
    lc.buffer = counts;
    lc.expr = i;
    q0.reductions.push_back({Combine::kSum, c0.emit(lc), -1, DType::kI64});
  }
  total.loops.work_per_row = parts;
  Phase& q1 = add_phase(total.loops, {}, {});
  BodyBuilder c1(*this, q1);
  int res = c1.acc(0, 0, acc_dt);
  if (n.op == Op::kMean) {
    const int elements = count ? c1.cast(c1.acc(0, 1, DType::kI64), DType::kF64) : c1.index(product(xs), DType::kF64);
    res = c1.op(Op::kDiv, DType::kF64, {res, elements});
  }
  q1.stores.push_back({buffer, offset(buffer, std::vector<Expr>(n.attrs.keepdim ? shape(x).size() : 0, Expr(0))), c1.cast(res, types_[n.out[0]].dtype)});
  if (!sum) p_.empty_checks.push_back({product(xs)});
  p_.steps.push_back(std::move(total));
  return Status::ok();
}

Status Lowering::argmax_step(int node, int buffer) {
  const ir::Node& n = g_.nodes[node];
  const int x = n.in[0].value;
  Step st{Step::Kind::kLoops};
  st.label = label(node);
  ReduceLoops r = reduce_loops([this] { return new_symbol(); }, st.loops, shape(x), {norm_axis(n.attrs.dim, shape(x).size())}, n.attrs.keepdim);
  Phase& p0 = add_phase(st.loops, r.inner_vars, r.inner_extents);
  BodyBuilder b0(*this, p0);
  int val = b0.value(x, r.x_idx);
  int at = b0.index(r.inner_vars[0], DType::kI64);
  p0.reductions.push_back({Combine::kArgmax, val, at, types_[x].dtype});
  SJ_TRY(check_budget(p0, node));
  Phase& p1 = add_phase(st.loops, {}, {});
  BodyBuilder b1(*this, p1);
  p1.stores.push_back({buffer, offset(buffer, r.out_idx), b1.acc(0, 0, DType::kI64, 1)});
  p_.empty_checks.push_back({product(r.inner_extents)});
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

// softmax: max; e = exp(x - max), stored; the sum of e; the stored e
// scaled by 1 / sum (one exp per element). log_softmax the same, then
// x - max - log(sum) over the stored e. The max in the input's type (exact),
// the sum in f64 as the reference. For f32 input, e is in f32 (within
// 2 ulp; x - max within half an ulp of a difference that exp scales by at
// most its size) and summed in a phase of its own from the row it stored,
// exactly: the exp phase then runs 8 lanes wide, where a sum in f64
// beside it held it to 4 (LowerOptions::softmax_sum_pass). Otherwise, one
// phase in f64.
Status Lowering::softmax_step(int node, int buffer) {
  const ir::Node& n = g_.nodes[node];
  const int x = n.in[0].value;
  const DType dt = types_[x].dtype;
  const bool log_form = n.op == Op::kLogSoftmax;
  const bool narrow = dt == DType::kF32 && options_.softmax_sum_pass;
  const DType exp_dt = narrow ? DType::kF32 : DType::kF64;
  Step st{Step::Kind::kLoops};
  st.label = label(node);
  const int dim = norm_axis(n.attrs.dim, shape(x).size());
  ReduceLoops r = reduce_loops([this] { return new_symbol(); }, st.loops, shape(x), {dim}, true);
  const Expr at = offset(buffer, r.x_idx);
  auto stored = [&](BodyBuilder& b) {
    Inst ld{InstKind::kLoad, dt};
    ld.buffer = buffer;
    ld.expr = at;
    return b.emit(ld);
  };
  Phase& p0 = add_phase(st.loops, r.inner_vars, r.inner_extents);
  BodyBuilder b0(*this, p0);
  const DType max_dt = ir::is_float(dt) ? dt : DType::kF64;
  p0.reductions.push_back({Combine::kMaxSkipNaN, b0.cast(b0.value(x, r.x_idx), max_dt), -1, max_dt});
  Phase& p1 = add_phase(st.loops, r.inner_vars, r.inner_extents);
  BodyBuilder b1(*this, p1);
  const int max1 = b1.cast(b1.acc(0, 0, max_dt), exp_dt);
  const int e = b1.exp_nonpositive(b1.op(Op::kSub, exp_dt, {b1.cast(b1.value(x, r.x_idx), exp_dt), max1}), exp_dt);
  int sum_phase = 1;
  if (narrow) {
    p1.stores.push_back({buffer, at, e});
    SJ_TRY(check_budget(p1, node));  // the largest phase
    Phase& ps = add_phase(st.loops, r.inner_vars, r.inner_extents);
    BodyBuilder bs(*this, ps);
    ps.reductions.push_back({Combine::kSum, bs.cast(stored(bs), DType::kF64), -1, DType::kF64});
    sum_phase = 2;
  } else {
    p1.reductions.push_back({Combine::kSum, e, -1, DType::kF64});
    if (!log_form) p1.stores.push_back({buffer, at, b1.cast(e, dt)});
    SJ_TRY(check_budget(p1, node));  // the largest phase
  }
  Phase& p2 = add_phase(st.loops, r.inner_vars, r.inner_extents);
  BodyBuilder b2(*this, p2);
  const int s = b2.acc(sum_phase, 0, DType::kF64);
  int out;
  if (log_form) {
    int d2 = b2.op(Op::kSub, DType::kF64, {b2.cast(b2.value(x, r.x_idx), DType::kF64), b2.cast(b2.acc(0, 0, max_dt), DType::kF64)});
    out = b2.op(Op::kSub, DType::kF64, {d2, b2.op(Op::kLog, DType::kF64, {s})});
  } else {
    out = b2.op(Op::kMul, DType::kF64, {b2.cast(stored(b2), DType::kF64), b2.op(Op::kDiv, DType::kF64, {b2.constant(DType::kF64, 1.0), s})});
  }
  p2.stores.push_back({buffer, at, b2.cast(out, dt)});
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

// layer_norm: mean, then the variance two-pass, then the store; rms_norm
// skips the mean. The sums in f64, as the reference. The store runs in f32
// for narrower input (8 lanes where f64 holds it to 4, and no conversions):
// x - mean as (x - hi) - lo, the f64 mean's two f32 parts, is within an
// ulp of the difference whatever the mean's size, and the scale rounds
// once; the result is within a few ulps of the f64 one.
Status Lowering::norm_step(int node, int buffer) {
  const ir::Node& n = g_.nodes[node];
  const int x = n.in[0].value;
  const DType dt = types_[x].dtype;
  const DType work = dt == DType::kF64 ? DType::kF64 : DType::kF32;
  const bool rms = n.op == Op::kRmsNorm;
  Step st{Step::Kind::kLoops};
  st.label = label(node);
  ReduceLoops r = reduce_loops([this] { return new_symbol(); }, st.loops, shape(x), axes_of(n.attrs, shape(x).size(), false), true);
  const Expr count = product(r.inner_extents);
  int mean_phase = -1;
  if (!rms) {
    Phase& p = add_phase(st.loops, r.inner_vars, r.inner_extents);
    BodyBuilder b(*this, p);
    p.reductions.push_back({Combine::kSum, b.cast(b.value(x, r.x_idx), DType::kF64), -1, DType::kF64});
    mean_phase = 0;
  }
  // x - mean in the type t, the mean in t's parts.
  auto centered = [&](BodyBuilder& b, DType t) {
    int v = b.cast(b.value(x, r.x_idx), t);
    if (mean_phase < 0) return v;
    int mean = b.op(Op::kDiv, DType::kF64, {b.acc(mean_phase, 0, DType::kF64), b.index(count, DType::kF64)});
    if (t == DType::kF64) return b.op(Op::kSub, t, {v, mean});
    int hi = b.cast(mean, t);
    int lo = b.cast(b.op(Op::kSub, DType::kF64, {mean, b.cast(hi, DType::kF64)}), t);
    return b.op(Op::kSub, t, {b.op(Op::kSub, t, {v, hi}), lo});
  };
  const int var_phase = static_cast<int>(st.loops.phases.size());
  {
    Phase& p = add_phase(st.loops, r.inner_vars, r.inner_extents);
    BodyBuilder b(*this, p);
    int d = centered(b, DType::kF64);
    p.reductions.push_back({Combine::kSum, b.op(Op::kMul, DType::kF64, {d, d}), -1, DType::kF64});
  }
  Phase& p = add_phase(st.loops, r.inner_vars, r.inner_extents);
  BodyBuilder b(*this, p);
  int var = b.op(Op::kDiv, DType::kF64, {b.acc(var_phase, 0, DType::kF64), b.index(count, DType::kF64)});
  int denom = b.op(Op::kSqrt, DType::kF64, {b.op(Op::kAdd, DType::kF64, {var, b.constant(DType::kF64, n.attrs.eps)})});
  int scale = b.cast(b.op(Op::kDiv, DType::kF64, {b.constant(DType::kF64, 1.0), denom}), work);
  int v = b.op(Op::kMul, work, {centered(b, work), scale});
  auto affine = [&](size_t i) {
    const std::vector<Expr>& ws = shape(n.in[i].value);
    std::vector<Expr> idx;
    size_t lead = r.inner_vars.size() - ws.size();
    for (size_t d = 0; d < ws.size(); ++d) idx.push_back(is_one(ws[d]) ? Expr(0) : r.inner_vars[lead + d]);
    return b.cast(b.value(n.in[i].value, idx), work);
  };
  if (n.in.size() > 1) v = b.op(Op::kMul, work, {v, affine(1)});
  if (n.in.size() > 2) v = b.op(Op::kAdd, work, {v, affine(2)});
  p.stores.push_back({buffer, offset(buffer, r.x_idx), b.cast(v, dt)});
  SJ_TRY(check_budget(p, node));
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

}  // namespace shapejit::backends::loops
