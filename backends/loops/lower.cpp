#include "backends/loops/lower.h"

#include <algorithm>
#include <numeric>

#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

namespace detail {

// the innermost loop. `vars` index the step's iteration space.
void Lowering::finish_pointwise(LoopStep& step, std::vector<Expr> vars, std::vector<Expr> extents) {
  Phase& ph = step.phases[0];
  auto rewrite = [&](const std::function<std::optional<Expr>(int)>& f) {
    for (Inst& i : ph.body) {
      if (i.kind == InstKind::kLoad || i.kind == InstKind::kIndex) i.expr = sym::substitute(i.expr, f);
    }
    for (Store& s : ph.stores) s.offset = sym::substitute(s.offset, f);
  };
  auto is_var = [&](int id) {
    return std::any_of(vars.begin(), vars.end(), [&](const Expr& v) { return v.symbol_id() == id; });
  };
  // Dims of extent 1 read index 0.
  for (size_t d = vars.size(); d-- > 0;) {
    if (is_one(extents[d]) && vars.size() > 1) {
      int id = vars[d].symbol_id();
      rewrite([&](int s) -> std::optional<Expr> { return s == id ? std::optional<Expr>(Expr(0)) : std::nullopt; });
      vars.erase(vars.begin() + static_cast<int64_t>(d));
      extents.erase(extents.begin() + static_cast<int64_t>(d));
    }
  }
  // The accesses, and each var's coefficient in each (nullopt: not affine).
  std::vector<Expr*> accesses;
  std::vector<bool> pinned(vars.size(), false);
  for (Inst& i : ph.body) {
    if (i.kind == InstKind::kLoad) accesses.push_back(&i.expr);
    if (i.kind == InstKind::kIndex) {
      for (int s : sym::symbols_of(i.expr)) {
        for (size_t d = 0; d < vars.size(); ++d) pinned[d] = pinned[d] || vars[d].symbol_id() == s;
      }
    }
  }
  for (Store& s : ph.stores) accesses.push_back(&s.offset);
  auto coefficient = [&](Expr e, int id) -> std::optional<Expr> {
    auto at = [&](int64_t x) { return sym::substitute(e, [&](int s) { return s == id ? std::optional<Expr>(Expr(x)) : std::nullopt; }); };
    Expr base = at(0), c = at(1) - base;
    for (int s : sym::symbols_of(c)) {
      if (is_var(s)) return std::nullopt;
    }
    if (!(base + c * Expr::symbol(id) == e)) return std::nullopt;
    return c;
  };
  for (size_t d = vars.size(); d-- > 1;) {
    if (pinned[d] || pinned[d - 1]) continue;
    const int inner = vars[d].symbol_id(), outer = vars[d - 1].symbol_id();
    bool ok = true;
    for (Expr* e : accesses) {
      auto ci = coefficient(*e, inner), co = coefficient(*e, outer);
      if (!ci || !co || !(*co == *ci * extents[d])) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    rewrite([&](int s) -> std::optional<Expr> { return s == outer ? std::optional<Expr>(Expr(0)) : std::nullopt; });
    extents[d] = extents[d - 1] * extents[d];
    vars.erase(vars.begin() + static_cast<int64_t>(d - 1));
    extents.erase(extents.begin() + static_cast<int64_t>(d - 1));
    pinned.erase(pinned.begin() + static_cast<int64_t>(d - 1));
  }
  // Tile a long (or unknown) innermost loop.
  Expr work = vars.empty() ? Expr(1) : extents.back();
  if (!vars.empty() && options_.tile > 0) {
    Expr last = extents.back();
    auto c = last.as_const();
    const int64_t tile = options_.tile;
    if (!c || *c > 2 * tile) {
      Expr t = new_symbol(), j = vars.back();
      const int jid = j.symbol_id();
      Expr jj = new_symbol();
      rewrite([&](int s) -> std::optional<Expr> { return s == jid ? std::optional<Expr>(t * tile + jj) : std::nullopt; });
      vars.back() = t;
      extents.back() = sym::floordiv(last + (tile - 1), tile);
      vars.push_back(jj);
      extents.push_back(sym::min(Expr(tile), last - t * tile));
      work = sym::min(Expr(tile), last);
    }
  }
  step.work_per_row = work;
  if (vars.empty()) return;
  ph.vars = {vars.back().symbol_id()};
  ph.extents = {extents.back()};
  for (size_t d = 0; d + 1 < vars.size(); ++d) {
    step.outer_vars.push_back(vars[d].symbol_id());
    step.outer_extents.push_back(extents[d]);
  }
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
  for (const Inst& i : ph.body) st.loops.may_fail |= i.kind == InstKind::kCheckIndex || (i.kind == InstKind::kOp && i.op == Op::kPow && ir::is_int(i.dtype));
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
struct ReduceLoops {
  std::vector<Expr> x_idx, out_idx, inner_vars, inner_extents;
};

ReduceLoops reduce_loops(Lowering& l, LoopStep& step, const std::vector<Expr>& xs, const std::vector<int>& axes, bool keepdim) {
  ReduceLoops r;
  for (size_t d = 0; d < xs.size(); ++d) {
    Expr v = l.new_symbol();
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

Phase& add_phase(LoopStep& step, const std::vector<Expr>& vars, const std::vector<Expr>& extents) {
  step.phases.emplace_back();
  Phase& ph = step.phases.back();
  for (const Expr& v : vars) ph.vars.push_back(v.symbol_id());
  ph.extents = extents;
  return ph;
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
  Step st{Step::Kind::kLoops};
  st.label = label(node);
  ReduceLoops r = reduce_loops(*this, st.loops, shape(x), axes_of(n.attrs, shape(x).size(), true), n.attrs.keepdim);
  Phase& p0 = add_phase(st.loops, r.inner_vars, r.inner_extents);
  BodyBuilder b0(*this, p0);
  int val = b0.value(x, r.x_idx);
  const bool sum = n.op == Op::kSum || n.op == Op::kMean;
  DType acc_dt = sum ? (ir::is_float(dt) ? DType::kF64 : DType::kI64) : dt;
  val = b0.cast(val, acc_dt);
  Combine c = sum ? Combine::kSum : n.op == Op::kMax ? Combine::kMax : Combine::kMin;
  p0.reductions.push_back({c, val, -1, acc_dt});
  SJ_TRY(check_budget(p0, node));
  Phase& p1 = add_phase(st.loops, {}, {});
  BodyBuilder b1(*this, p1);
  int res = b1.acc(0, 0, acc_dt);
  if (n.op == Op::kMean) res = b1.op(Op::kDiv, DType::kF64, {res, b1.index(product(r.inner_extents), DType::kF64)});
  res = b1.cast(res, types_[n.out[0]].dtype);
  p1.stores.push_back({buffer, offset(buffer, r.out_idx), res});
  if (!sum) p_.empty_checks.push_back({product(st.loops.outer_extents), product(r.inner_extents)});
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

Status Lowering::argmax_step(int node, int buffer) {
  const ir::Node& n = g_.nodes[node];
  const int x = n.in[0].value;
  Step st{Step::Kind::kLoops};
  st.label = label(node);
  ReduceLoops r = reduce_loops(*this, st.loops, shape(x), {norm_axis(n.attrs.dim, shape(x).size())}, n.attrs.keepdim);
  Phase& p0 = add_phase(st.loops, r.inner_vars, r.inner_extents);
  BodyBuilder b0(*this, p0);
  int val = b0.value(x, r.x_idx);
  int at = b0.index(r.inner_vars[0], DType::kI64);
  p0.reductions.push_back({Combine::kArgmax, val, at, types_[x].dtype});
  SJ_TRY(check_budget(p0, node));
  Phase& p1 = add_phase(st.loops, {}, {});
  BodyBuilder b1(*this, p1);
  p1.stores.push_back({buffer, offset(buffer, r.out_idx), b1.acc(0, 0, DType::kI64, 1)});
  p_.empty_checks.push_back({product(st.loops.outer_extents), product(r.inner_extents)});
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

// softmax: max; sum of e = exp(x - max), storing e; the stored e scaled by
// 1 / sum (one exp per element). log_softmax: max; sum of exp(x - max);
// x - max - log(sum). In f64 as the reference.
Status Lowering::softmax_step(int node, int buffer) {
  const ir::Node& n = g_.nodes[node];
  const int x = n.in[0].value;
  const DType dt = types_[x].dtype;
  const bool log_form = n.op == Op::kLogSoftmax;
  Step st{Step::Kind::kLoops};
  st.label = label(node);
  const int dim = norm_axis(n.attrs.dim, shape(x).size());
  ReduceLoops r = reduce_loops(*this, st.loops, shape(x), {dim}, true);
  const Expr at = offset(buffer, r.x_idx);
  Phase& p0 = add_phase(st.loops, r.inner_vars, r.inner_extents);
  BodyBuilder b0(*this, p0);
  p0.reductions.push_back({Combine::kMaxSkipNaN, b0.cast(b0.value(x, r.x_idx), DType::kF64), -1, DType::kF64});
  Phase& p1 = add_phase(st.loops, r.inner_vars, r.inner_extents);
  BodyBuilder b1(*this, p1);
  int d1 = b1.op(Op::kSub, DType::kF64, {b1.cast(b1.value(x, r.x_idx), DType::kF64), b1.acc(0, 0, DType::kF64)});
  int e = b1.op(Op::kExp, DType::kF64, {d1});
  p1.reductions.push_back({Combine::kSum, e, -1, DType::kF64});
  if (!log_form) p1.stores.push_back({buffer, at, b1.cast(e, dt)});
  SJ_TRY(check_budget(p1, node));  // the largest phase
  Phase& p2 = add_phase(st.loops, r.inner_vars, r.inner_extents);
  BodyBuilder b2(*this, p2);
  int s = b2.acc(1, 0, DType::kF64);
  int out;
  if (log_form) {
    int d2 = b2.op(Op::kSub, DType::kF64, {b2.cast(b2.value(x, r.x_idx), DType::kF64), b2.acc(0, 0, DType::kF64)});
    out = b2.op(Op::kSub, DType::kF64, {d2, b2.op(Op::kLog, DType::kF64, {s})});
  } else {
    Inst stored{InstKind::kLoad, dt};
    stored.buffer = buffer;
    stored.expr = at;
    out = b2.op(Op::kMul, DType::kF64, {b2.cast(b2.emit(stored), DType::kF64), b2.op(Op::kDiv, DType::kF64, {b2.constant(DType::kF64, 1.0), s})});
  }
  p2.stores.push_back({buffer, at, b2.cast(out, dt)});
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

// layer_norm: mean, then the variance two-pass, then the store; rms_norm
// skips the mean. f64 throughout, as the reference.
Status Lowering::norm_step(int node, int buffer) {
  const ir::Node& n = g_.nodes[node];
  const int x = n.in[0].value;
  const DType dt = types_[x].dtype;
  const bool rms = n.op == Op::kRmsNorm;
  Step st{Step::Kind::kLoops};
  st.label = label(node);
  ReduceLoops r = reduce_loops(*this, st.loops, shape(x), axes_of(n.attrs, shape(x).size(), false), true);
  const Expr count = product(r.inner_extents);
  auto centered = [&](BodyBuilder& b, int mean_phase) {
    int v = b.cast(b.value(x, r.x_idx), DType::kF64);
    if (mean_phase < 0) return v;
    int mean = b.op(Op::kDiv, DType::kF64, {b.acc(mean_phase, 0, DType::kF64), b.index(count, DType::kF64)});
    return b.op(Op::kSub, DType::kF64, {v, mean});
  };
  int mean_phase = -1;
  if (!rms) {
    Phase& p = add_phase(st.loops, r.inner_vars, r.inner_extents);
    BodyBuilder b(*this, p);
    p.reductions.push_back({Combine::kSum, b.cast(b.value(x, r.x_idx), DType::kF64), -1, DType::kF64});
    mean_phase = 0;
  }
  const int var_phase = static_cast<int>(st.loops.phases.size());
  {
    Phase& p = add_phase(st.loops, r.inner_vars, r.inner_extents);
    BodyBuilder b(*this, p);
    int d = centered(b, mean_phase);
    p.reductions.push_back({Combine::kSum, b.op(Op::kMul, DType::kF64, {d, d}), -1, DType::kF64});
  }
  Phase& p = add_phase(st.loops, r.inner_vars, r.inner_extents);
  BodyBuilder b(*this, p);
  int var = b.op(Op::kDiv, DType::kF64, {b.acc(var_phase, 0, DType::kF64), b.index(count, DType::kF64)});
  int denom = b.op(Op::kSqrt, DType::kF64, {b.op(Op::kAdd, DType::kF64, {var, b.constant(DType::kF64, n.attrs.eps)})});
  int scale = b.op(Op::kDiv, DType::kF64, {b.constant(DType::kF64, 1.0), denom});
  int v = b.op(Op::kMul, DType::kF64, {centered(b, mean_phase), scale});
  auto affine = [&](size_t i, double absent) {
    if (n.in.size() <= i) return b.constant(DType::kF64, absent);
    const std::vector<Expr>& ws = shape(n.in[i].value);
    std::vector<Expr> idx;
    size_t lead = r.inner_vars.size() - ws.size();
    for (size_t d = 0; d < ws.size(); ++d) idx.push_back(is_one(ws[d]) ? Expr(0) : r.inner_vars[lead + d]);
    return b.cast(b.value(n.in[i].value, idx), DType::kF64);
  };
  v = b.op(Op::kMul, DType::kF64, {v, affine(1, 1.0)});
  v = b.op(Op::kAdd, DType::kF64, {v, affine(2, 0.0)});
  p.stores.push_back({buffer, offset(buffer, r.x_idx), b.cast(v, dt)});
  SJ_TRY(check_budget(p, node));
  p_.steps.push_back(std::move(st));
  return Status::ok();
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

Expected<Program> Lowering::run() {
  const int nv = g_.num_values();
  producer_.assign(nv, -1);
  buffer_of_.assign(nv, -1);
  std::vector<int> uses(nv, 0);
  std::vector<bool> read_by_index_op(nv, false), need(nv, false);
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const ir::Node& n = g_.nodes[i];
    if (n.op == Op::kNonzero || n.op == Op::kMaskedSelect) {
      return unsupported(label(static_cast<int>(i)) + ": data-dependent shapes stay on the reference interpreter");
    }
    for (int o : n.out) producer_[o] = static_cast<int>(i);
    const OpClass cls = ir::op_info(n.op).cls;
    for (const ir::Operand& o : n.in) {
      if (!o.is_value() || !types_[o.value].is_tensor) continue;
      ++uses[o.value];
      if (is_view(cls) || is_gather(cls)) read_by_index_op[o.value] = true;
    }
    if (types_[n.out[0]].is_tensor && !is_fusible(cls)) need[n.out[0]] = true;
  }
  // A computed value read at other indices besides another use.
  for (int v = 0; v < nv; ++v) {
    if (producer_[v] < 0 || !types_[v].is_tensor) continue;
    const OpClass cls = ir::op_info(g_.nodes[producer_[v]].op).cls;
    if (is_pointwise(cls) && uses[v] >= 2 && read_by_index_op[v]) need[v] = true;
  }

  // Symbols: the graph's, then input strides, then loops and bodies.
  p_.num_graph_symbols = static_cast<int>(spec_.symbols.size());
  std::vector<std::vector<Expr>> input_strides;
  int params = 0;
  for (size_t i = 0; i < g_.inputs.size(); ++i) {
    bool dense = i < spec_.contiguous.size() && spec_.contiguous[i];
    if (dense) {
      input_strides.push_back(dense_strides(shape(static_cast<int>(i))));
      continue;
    }
    std::vector<Expr> s;
    for (size_t d = 0; d < shape(static_cast<int>(i)).size(); ++d) {
      s.push_back(Expr::symbol(p_.num_graph_symbols + params++));
      p_.params.emplace_back(static_cast<int>(i), static_cast<int>(d));
    }
    input_strides.push_back(std::move(s));
  }
  next_symbol_ = p_.num_graph_symbols + params;
  for (size_t i = 0; i < g_.inputs.size(); ++i) {
    int v = static_cast<int>(i);
    buffer_of_[v] = add_buffer(Buffer::Kind::kInput, v, types_[v].dtype, shape(v), input_strides[i]);
  }
  p_.num_inputs = static_cast<int>(g_.inputs.size());
  p_.num_outputs = static_cast<int>(g_.outputs.size());
  std::vector<int> out_buffer(g_.outputs.size());
  std::vector<int> first_output(nv, -1);
  for (size_t i = 0; i < g_.outputs.size(); ++i) {
    int v = g_.outputs[i];
    out_buffer[i] = add_buffer(Buffer::Kind::kOutput, static_cast<int>(i), types_[v].dtype, shape(v), dense_strides(shape(v)));
    if (first_output[v] < 0 && producer_[v] >= 0) first_output[v] = static_cast<int>(i);
  }

  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const int node = static_cast<int>(i);
    const ir::Node& n = g_.nodes[i];
    const int v = n.out[0];
    if (!types_[v].is_tensor || (!need[v] && first_output[v] < 0)) continue;
    const int buffer = first_output[v] >= 0 ? out_buffer[first_output[v]] : new_temp(v);
    switch (ir::op_info(n.op).cls) {
      case OpClass::kReduce: SJ_TRY(reduce_step(node, buffer)); break;
      case OpClass::kArgmax: SJ_TRY(argmax_step(node, buffer)); break;
      case OpClass::kSoftmax: SJ_TRY(softmax_step(node, buffer)); break;
      case OpClass::kLayerNorm:
      case OpClass::kRmsNorm: SJ_TRY(norm_step(node, buffer)); break;
      case OpClass::kMatmul: SJ_TRY(matmul_step(node, buffer)); break;
      case OpClass::kConcat: SJ_TRY(concat_step(node, buffer)); break;
      default: SJ_TRY(materialize(v, buffer, node)); break;
    }
    buffer_of_[v] = buffer;
  }
  // Outputs that are inputs, or a value listed twice: copies.
  for (size_t i = 0; i < g_.outputs.size(); ++i) {
    int v = g_.outputs[i];
    if (first_output[v] == static_cast<int>(i)) continue;
    SJ_TRY(materialize(v, out_buffer[i], -1));
  }
  p_.num_symbols = next_symbol_;
  return std::move(p_);
}

}  // namespace detail

Expected<Program> lower(const ir::SpecializedGraph& g, const LowerOptions& options) {
  return detail::Lowering(g, options).run();
}

}  // namespace shapejit::backends::loops
