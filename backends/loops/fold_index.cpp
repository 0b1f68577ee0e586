// Pass: index folding (fusion). A value at an index, as instructions of a
// phase: pointwise ops become instructions, views become index expressions,
// broadcasting a zero index, a gather a checked load; a value with a buffer
// is a load. Within a phase each (value, index) is computed once.
#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

namespace {

// A literal or full's value as `dt` holds it, converted as `cast` converts.
ir::Scalar typed_scalar(DType dt, bool is_float, int64_t i, double f) {
  ir::Scalar s;
  ir::visit_dtype(dt, [&]<typename T>() {
    T v = is_float ? ir::from_double<T>(f) : static_cast<T>(i);
    s.is_float = ir::is_float(dt);
    if (s.is_float) s.f = static_cast<double>(v);
    else s.i = static_cast<int64_t>(v);
  });
  return s;
}

// The index into a dim of extent `dim` that broadcasts to `out`: 0 for a
// dim of 1, the index itself for a dim that is `out`. A dim that is
// neither as written (an expression a guard found to be 1, or equal to
// `out`, at this entry's calls: x + x[(n - 1) // 2:(n - 1) // 2 + 1]) is
// read at min(index, dim - 1), which is each of those where it holds.
Expr broadcast_index(const Expr& dim, const Expr& out, const Expr& index) {
  if (is_one(dim)) return Expr(0);
  if (dim == out || dim.is_const()) return index;
  return sym::min(index, dim - Expr(1));
}

}  // namespace

int BodyBuilder::emit(Inst inst) {
  ph_.body.push_back(std::move(inst));
  return static_cast<int>(ph_.body.size()) - 1;
}

int BodyBuilder::constant(DType dt, double f) {
  Inst i{InstKind::kConst, dt};
  i.value = typed_scalar(dt, true, 0, f);
  return emit(i);
}

int BodyBuilder::index(Expr e, DType dt) {
  Inst i{InstKind::kIndex, dt};
  i.expr = e;
  return emit(i);
}

int BodyBuilder::op(Op o, DType dt, std::vector<int> args) {
  Inst i{InstKind::kOp, dt};
  i.op = o;
  i.args = std::move(args);
  return emit(i);
}

int BodyBuilder::exp_nonpositive(int arg, DType dt) {
  const int e = op(Op::kExp, dt, {arg});
  ph_.body[e].nonpositive_arg = true;
  return e;
}

int BodyBuilder::cast(int inst, DType to) { return dtype(inst) == to ? inst : op(Op::kCast, to, {inst}); }

int BodyBuilder::acc(int phase, int which, DType dt, int part) {
  Inst i{InstKind::kAcc, dt};
  i.acc_phase = phase;
  i.acc = which;
  i.acc_part = part;
  return emit(i);
}

int BodyBuilder::value(int v, const std::vector<Expr>& idx) {
  std::vector<uintptr_t> key{static_cast<uintptr_t>(v)};
  for (const Expr& e : idx) key.push_back(reinterpret_cast<uintptr_t>(e.node()));
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
  int r = compute(v, idx);
  memo_.emplace(std::move(key), r);
  return r;
}

// Operand i of a pointwise node at the node's index: broadcast (a dim of 1
// reads index 0; missing leading dims are dropped), or a literal.
int BodyBuilder::operand(const ir::Node& node, size_t i, DType dt, const std::vector<Expr>& out_shape, const std::vector<Expr>& idx) {
  const ir::Operand& o = node.in[i];
  if (!o.is_value()) {
    Inst c{InstKind::kConst, dt};
    c.value = typed_scalar(dt, o.kind == ir::Operand::Kind::kFloat, o.i, o.f);
    return emit(c);
  }
  const std::vector<Expr>& s = l_.shape(o.value);
  std::vector<Expr> sub;
  size_t lead = out_shape.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d) sub.push_back(broadcast_index(s[d], out_shape[lead + d], idx[lead + d]));
  return value(o.value, sub);
}


// A value at an index, by what makes it: a buffer, a pointwise op, a
// generator (full, arange), a view, or a gather.
int BodyBuilder::broadcast_value(int v, const std::vector<Expr>& shape, const std::vector<Expr>& at) {
  const std::vector<Expr>& vs = l_.shape(v);
  const size_t lead = shape.size() - vs.size();
  std::vector<Expr> idx(vs.size());
  for (size_t d = 0; d < vs.size(); ++d) idx[d] = is_one(vs[d]) ? Expr(0) : at[lead + d];
  return value(v, idx);
}

int BodyBuilder::compute(int v, const std::vector<Expr>& idx) {
  if (l_.buffer_of_[v] >= 0) return load(l_.buffer_of_[v], l_.offset(l_.buffer_of_[v], idx));
  const ir::Node& node = l_.g_.nodes[l_.producer_[v]];
  if (v == selection_.first) {  // a summed selection: its values at the domain's index
    return broadcast_value(node.in[0].value, l_.types_[v].aux, selection_.second);
  }
  const ir::ValueType& t = l_.types_[v];
  const OpClass cls = ir::op_info(node.op).cls;
  if (ir::is_pointwise(cls)) return pointwise(node, t, idx);
  if (is_view(cls)) return view(node, t, idx);
  if (is_gather(cls)) return gather(node, idx);
  if (cls == OpClass::kFull) {
    Inst c{InstKind::kConst, t.dtype};
    c.value = typed_scalar(t.dtype, node.attrs.value.is_float, node.attrs.value.i, node.attrs.value.f);
    return emit(c);
  }
  SJ_CHECK(cls == OpClass::kArange, "a value folded into a loop has a fusible producer");
  return index(t.aux[0] + idx[0] * t.aux[1], t.dtype);
}

int BodyBuilder::load(int buffer, Expr offset) {
  Inst ld{InstKind::kLoad, l_.p_.buffers[buffer].dtype};
  ld.buffer = buffer;
  ld.expr = std::move(offset);
  return emit(ld);
}

int BodyBuilder::pointwise(const ir::Node& node, const ir::ValueType& t, const std::vector<Expr>& idx) {
  const OpClass cls = ir::op_info(node.op).cls;
  DType operand_dt = t.dtype;
  if (cls == OpClass::kUnary || cls == OpClass::kCast || cls == OpClass::kNot) {
    operand_dt = l_.types_[node.in[0].value].dtype;
  } else if (cls != OpClass::kWhere) {
    operand_dt = l_.types_[node.in[node.in[0].is_value() ? 0 : 1].value].dtype;
  }
  std::vector<int> args;
  for (size_t i = 0; i < node.in.size(); ++i) {
    DType dt = cls == OpClass::kWhere && i == 0 ? DType::kBool : operand_dt;
    args.push_back(operand(node, i, dt, t.shape, idx));
  }
  Inst i{InstKind::kOp, t.dtype};
  i.op = node.op;
  i.approximate_tanh = node.attrs.approximate_tanh;
  i.args = std::move(args);
  return emit(i);
}

// A view's value at `idx` is its operand's at the index it maps `idx` to.
int BodyBuilder::view(const ir::Node& node, const ir::ValueType& t, const std::vector<Expr>& idx) {
  const ir::Attrs& a = node.attrs;
  const int src = node.in[0].value;
  const std::vector<Expr>& s = l_.shape(src);
  std::vector<Expr> in;
  switch (ir::op_info(node.op).cls) {
    case OpClass::kPermute:
      in.resize(idx.size());
      for (size_t d = 0; d < idx.size(); ++d) in[norm_axis(a.perm[d], idx.size())] = idx[d];
      break;
    case OpClass::kTranspose:
      in = idx;
      std::swap(in[norm_axis(a.dim0, idx.size())], in[norm_axis(a.dim1, idx.size())]);
      break;
    case OpClass::kExpand: {
      const size_t lead = idx.size() - s.size();
      for (size_t d = 0; d < s.size(); ++d) in.push_back(broadcast_index(s[d], t.shape[lead + d], idx[lead + d]));
      break;
    }
    case OpClass::kSlice: {
      in = idx;
      const int d = norm_axis(a.dim, idx.size());
      in[d] = t.aux[0] + idx[d] * t.aux[1];
      break;
    }
    case OpClass::kSqueeze: {
      // The squeezed dims (size 1, checked by inference though their size
      // may be an expression, not the literal 1) read index 0; the others
      // take the result's indices in order.
      std::vector<bool> squeezed(s.size(), false);
      for (int64_t d : a.dims) squeezed[norm_axis(d, s.size())] = true;
      size_t k = 0;
      for (size_t d = 0; d < s.size(); ++d) in.push_back(squeezed[d] ? Expr(0) : idx[k++]);
      break;
    }
    case OpClass::kUnsqueeze:
      in = idx;
      in.erase(in.begin() + norm_axis(a.dim, idx.size()));
      break;
    case OpClass::kReshape: return reshape(node, t, idx);
    SJ_POINTWISE_CLASSES(SJ_CLASS_CASE)
    SJ_ALONG_AXES_CLASSES(SJ_CLASS_CASE)
    SJ_INDEXING_CLASSES(SJ_CLASS_CASE)
    SJ_SYM_CLASSES(SJ_CLASS_CASE)
    case OpClass::kMatmul: SJ_CHECK(false, "view() takes views only");
  }
  return value(src, in);
}

// Dims equal at both ends map one to one; the middle goes through the
// row-major linear index. A dense buffer needs no unraveling: its offset is
// that linear index already.
int BodyBuilder::reshape(const ir::Node& node, const ir::ValueType& t, const std::vector<Expr>& idx) {
  const int src = node.in[0].value;
  const std::vector<Expr>& s = l_.shape(src);
  const int buffer = l_.buffer_of_[src];
  if (buffer >= 0) {
    const Buffer& b = l_.p_.buffers[buffer];
    if (b.strides == dense_strides(b.shape)) {
      const std::vector<Expr> strides = dense_strides(t.shape);
      Expr off = 0;
      for (size_t d = 0; d < idx.size(); ++d) off = off + idx[d] * strides[d];
      return load(buffer, off);
    }
  }
  size_t pre = 0, post = 0;
  while (pre < s.size() && pre < idx.size() && s[pre] == t.shape[pre]) ++pre;
  while (post < s.size() - pre && post < idx.size() - pre && s[s.size() - 1 - post] == t.shape[idx.size() - 1 - post]) ++post;
  std::vector<Expr> mid_out(t.shape.begin() + pre, t.shape.end() - post);
  std::vector<Expr> mid_in(s.begin() + pre, s.end() - post);
  std::vector<Expr> out_strides = dense_strides(mid_out), in_strides = dense_strides(mid_in);
  Expr linear = 0;
  for (size_t d = 0; d < mid_out.size(); ++d) linear = linear + idx[pre + d] * out_strides[d];
  std::vector<Expr> in(idx.begin(), idx.begin() + pre);
  for (size_t d = 0; d < mid_in.size(); ++d) {
    Expr q = sym::floordiv(linear, in_strides[d]);
    in.push_back(d == 0 ? q : sym::mod(q, mid_in[d]));
  }
  in.insert(in.end(), idx.end() - post, idx.end());
  return value(src, in);
}

// index_select and embedding: the index read at `idx`, checked against the
// gathered dim, then the table at it.
int BodyBuilder::gather(const ir::Node& node, const std::vector<Expr>& idx) {
  const int x = node.in[0].value, ids = node.in[1].value;
  const std::vector<Expr>& xs = l_.shape(x);
  std::vector<Expr> in;
  int k, d;
  if (ir::op_info(node.op).cls == OpClass::kIndexSelect) {
    d = norm_axis(node.attrs.dim, xs.size());
    k = value(ids, {idx[d]});
    in = idx;
  } else {
    d = 0;
    const size_t r = l_.shape(ids).size();
    k = value(ids, std::vector<Expr>(idx.begin(), idx.begin() + static_cast<int64_t>(r)));
    in = {Expr(0), idx[r]};
  }
  Inst check{InstKind::kCheckIndex, DType::kI64};
  check.args = {k};
  check.expr = xs[d];
  Expr bound = l_.new_symbol();
  check.symbol = bound.symbol_id();
  emit(check);
  in[d] = bound;
  return value(x, in);
}

}  // namespace shapejit::backends::loops
