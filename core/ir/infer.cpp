#include "core/ir/infer.h"

#include <algorithm>
#include <cmath>

#include "core/ir/infer_util.h"

namespace shapejit::ir {

using sym::Expr;
using sym::Origin;
using sym::Rel;

Expr numel(const std::vector<Expr>& shape) {
  Expr n(1);
  for (const Expr& d : shape) n = n * d;
  return n;
}

namespace detail {

Status Ctx::error(const std::string& msg) const {
  size_t index = &node - g.nodes.data();
  std::string where = "node " + std::to_string(index) + " (" + op_name(node.op);
  if (!node.out.empty()) where += " -> '" + g.value_names[node.out[0]] + "'";
  return invalid(where + "): " + msg);
}

Status Ctx::type_error(const std::string& msg) const {
  const Status s = error(msg);
  return Status(s.code(), s.message(), Detail::kType);
}

bool Ctx::is_tensor(size_t i) const { return node.in[i].is_value() && types[node.in[i].value].is_tensor; }

Expected<const ValueType*> Ctx::tensor(size_t i) const {
  const Operand& o = node.in[i];
  if (!o.is_value()) return type_error("operand " + std::to_string(i) + " must be a tensor, got a literal");
  const ValueType& t = types[o.value];
  if (!t.is_tensor) return type_error("operand " + std::to_string(i) + " must be a tensor, got SymInt '" + g.value_names[o.value] + "'");
  return &t;
}

Expected<Expr> Ctx::symint(size_t i) const {
  const Operand& o = node.in[i];
  if (o.kind == Operand::Kind::kInt) return Expr(o.i);
  if (o.kind == Operand::Kind::kFloat) return type_error("operand " + std::to_string(i) + " must be an integer or a SymInt, got a float literal");
  const ValueType& t = types[o.value];
  if (t.is_tensor) return type_error("operand " + std::to_string(i) + " must be an integer or a SymInt, got tensor '" + g.value_names[o.value] + "'");
  return env.resolve(t.scalar);
}

Expected<int> Ctx::axis(int64_t d, size_t rank, const char* what) const {
  int64_t r = static_cast<int64_t>(rank);
  if (d < -r || d >= r) {
    return error(std::string(what) + " " + std::to_string(d) + " is out of range for rank " + std::to_string(rank));
  }
  return static_cast<int>(d < 0 ? d + r : d);
}

Expected<Expr> Ctx::broadcast_dim(Expr a, Expr b) const {
  a = env.resolve(a);
  b = env.resolve(b);
  if (a == b || b == Expr(1)) return a;
  if (a == Expr(1)) return b;
  if (SJ_TRY(env.unify(a, b, Origin::kBroadcast))) return env.resolve(a);
  // A dim that broadcasts is bound to 1, not merely known to be 1: code
  // generated from the shapes indexes it with 0 (without the 0/1 rule,
  // this is where a symbol meets 1).
  if (SJ_TRY(env.unify(a, Expr(1), Origin::kBroadcast))) return env.resolve(b);
  if (SJ_TRY(env.unify(b, Expr(1), Origin::kBroadcast))) return env.resolve(a);
  std::string va = str(a), vb = str(b);
  if (auto h = env.hint(a); h && !a.is_const()) va += " = " + std::to_string(*h);
  if (auto h = env.hint(b); h && !b.is_const()) vb += " = " + std::to_string(*h);
  return error("dims " + va + " and " + vb + " do not broadcast");
}

Expected<std::vector<Expr>> Ctx::broadcast(const std::vector<Expr>& a, const std::vector<Expr>& b) const {
  size_t n = std::max(a.size(), b.size());
  std::vector<Expr> out(n);
  for (size_t i = 0; i < n; ++i) {
    // Align from the right, as NumPy does.
    size_t ia = i + a.size(), ib = i + b.size();
    bool has_a = ia >= n, has_b = ib >= n;
    Expr da = has_a ? a[ia - n] : Expr(1);
    Expr db = has_b ? b[ib - n] : Expr(1);
    out[i] = SJ_TRY(broadcast_dim(da, db));
  }
  return out;
}

namespace {

// The dtype a literal takes next to a tensor of dtype `t`.
Status check_literal(const Ctx& c, const Operand& o, DType t) {
  if (o.kind == Operand::Kind::kFloat && !is_float(t)) {
    if (std::isfinite(o.f) && o.f == std::trunc(o.f)) return Status::ok();
    return c.type_error("float literal " + std::to_string(o.f) + " cannot take the tensor's dtype " + dtype_name(t));
  }
  if (t == DType::kBool && o.kind == Operand::Kind::kInt && o.i != 0 && o.i != 1) {
    return c.type_error("literal " + std::to_string(o.i) + " cannot be a bool");
  }
  return Status::ok();
}

// Operands that are tensors or scalar literals; returns the common dtype and
// the broadcast shape. With no tensor operand, literals give i64 or f32.
Expected<std::pair<DType, std::vector<Expr>>> elementwise(Ctx& c, size_t first, size_t count, bool need_tensor) {
  std::optional<DType> dt;
  std::vector<Expr> shape;
  bool any_float_literal = false;
  for (size_t i = first; i < first + count; ++i) {
    const Operand& o = c.node.in[i];
    if (o.kind == Operand::Kind::kFloat) any_float_literal = true;
    if (!o.is_value()) continue;
    const ValueType* t = SJ_TRY(c.tensor(i));
    if (dt && *dt != t->dtype) {
      return c.type_error(std::string("operands have dtypes ") + dtype_name(*dt) + " and " + dtype_name(t->dtype) + "; insert a cast");
    }
    dt = t->dtype;
    shape = SJ_TRY(c.broadcast(shape, t->shape));
  }
  if (!dt) {
    if (need_tensor) return c.error("at least one operand must be a tensor");
    dt = any_float_literal ? DType::kF32 : DType::kI64;
  }
  for (size_t i = first; i < first + count; ++i) SJ_TRY(check_literal(c, c.node.in[i], *dt));
  return std::make_pair(*dt, shape);
}

Status infer_elementwise(Ctx& c) {
  ValueType& r = c.result();
  const OpInfo& info = op_info(c.node.op);
  switch (info.cls) {
    case OpClass::kUnary: {
      const ValueType* x = SJ_TRY(c.tensor(0));
      if (c.node.op == Op::kInvert) {
        if (!is_int(x->dtype)) return c.type_error(std::string("takes integer tensors, got ") + dtype_name(x->dtype));
        r.dtype = x->dtype;
        r.shape = x->shape;
        return Status::ok();
      }
      bool numeric_ok = c.node.op == Op::kNeg || c.node.op == Op::kAbs || c.node.op == Op::kRelu;
      if (x->dtype == DType::kBool || (!numeric_ok && !is_float(x->dtype))) {
        return c.type_error(std::string("takes ") + (numeric_ok ? "numeric" : "float") + " tensors, got " + dtype_name(x->dtype));
      }
      r.dtype = x->dtype;
      r.shape = x->shape;
      return Status::ok();
    }
    case OpClass::kCast: {
      const ValueType* x = SJ_TRY(c.tensor(0));
      r.dtype = c.attrs().dtype;
      r.shape = x->shape;
      return Status::ok();
    }
    case OpClass::kNot: {
      const ValueType* x = SJ_TRY(c.tensor(0));
      if (x->dtype != DType::kBool) return c.type_error(std::string("takes bool, got ") + dtype_name(x->dtype));
      r.dtype = DType::kBool;
      r.shape = x->shape;
      return Status::ok();
    }
    case OpClass::kArith: {
      auto [dt, shape] = SJ_TRY(elementwise(c, 0, 2, true));
      if (dt == DType::kBool) return c.type_error("takes numeric tensors, got bool (cast first)");
      if ((c.node.op == Op::kAtan2 || c.node.op == Op::kHypot || c.node.op == Op::kFmod || c.node.op == Op::kNextafter) && !is_float(dt)) {
        return c.type_error(std::string("takes float tensors, got ") + dtype_name(dt));
      }
      if ((is_bitwise(c.node.op) || c.node.op == Op::kGcd) && !is_int(dt)) return c.type_error(std::string("takes integer tensors, got ") + dtype_name(dt));
      r.dtype = dt;
      r.shape = shape;
      return Status::ok();
    }
    case OpClass::kLogical: {
      for (size_t i = 0; i < 2; ++i) {
        const ValueType* t = SJ_TRY(c.tensor(i));
        if (t->dtype != DType::kBool) return c.type_error(std::string("takes bool tensors, got ") + dtype_name(t->dtype));
      }
      auto [dt, shape] = SJ_TRY(elementwise(c, 0, 2, true));
      r.dtype = dt;
      r.shape = shape;
      return Status::ok();
    }
    case OpClass::kCompare: {
      auto [dt, shape] = SJ_TRY(elementwise(c, 0, 2, true));
      r.dtype = DType::kBool;
      r.shape = shape;
      return Status::ok();
    }
    case OpClass::kWhere: {
      const ValueType* cond = SJ_TRY(c.tensor(0));
      if (cond->dtype != DType::kBool) return c.type_error(std::string("condition must be bool, got ") + dtype_name(cond->dtype));
      auto [dt, shape] = SJ_TRY(elementwise(c, 1, 2, false));
      r.dtype = dt;
      r.shape = SJ_TRY(c.broadcast(cond->shape, shape));
      return Status::ok();
    }
    SJ_ALONG_AXES_CLASSES(SJ_CLASS_CASE)
    SJ_VIEW_CLASSES(SJ_CLASS_CASE)
    SJ_INDEXING_CLASSES(SJ_CLASS_CASE)
    SJ_SYM_CLASSES(SJ_CLASS_CASE)
    case OpClass::kMatmul: break;
  }
  return c.error("not an elementwise op");
}

// Sorted, distinct, normalized axes; empty `given` with `all_if_absent`
// means every axis.
Expected<std::vector<int>> axes_of(const Ctx& c, const std::vector<int64_t>& given, bool present, size_t rank) {
  std::vector<int> axes;
  if (!present) {
    for (size_t i = 0; i < rank; ++i) axes.push_back(static_cast<int>(i));
    return axes;
  }
  for (int64_t a : given) axes.push_back(SJ_TRY(c.axis(a, rank, "axis")));
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return c.error("axes repeat an axis");
  return axes;
}

Status infer_reduction(Ctx& c) {
  ValueType& r = c.result();
  const ValueType* x = SJ_TRY(c.tensor(0));
  const Attrs& a = c.attrs();
  switch (op_info(c.node.op).cls) {
    case OpClass::kReduce: {
      if (c.node.op == Op::kMean && !is_float(x->dtype)) return c.type_error(std::string("takes float tensors, got ") + dtype_name(x->dtype));
      if ((c.node.op == Op::kSum || c.node.op == Op::kProd) && x->dtype == DType::kBool) {
        return c.type_error("takes numeric tensors, got bool (cast first)");
      }
      std::vector<int> axes = SJ_TRY(axes_of(c, a.axes, a.has(kAttrAxes), x->shape.size()));
      r.dtype = x->dtype;
      for (size_t i = 0; i < x->shape.size(); ++i) {
        bool reduced = std::find(axes.begin(), axes.end(), static_cast<int>(i)) != axes.end();
        if (!reduced) r.shape.push_back(x->shape[i]);
        else if (a.keepdim) r.shape.push_back(Expr(1));
      }
      return Status::ok();
    }
    case OpClass::kArgmax: {
      int d = SJ_TRY(c.axis(a.dim, x->shape.size(), "dim"));
      r.dtype = DType::kI64;
      for (size_t i = 0; i < x->shape.size(); ++i) {
        if (static_cast<int>(i) != d) r.shape.push_back(x->shape[i]);
        else if (a.keepdim) r.shape.push_back(Expr(1));
      }
      return Status::ok();
    }
    case OpClass::kScan: {  // cumsum, cumprod, cummax, cummin, sort: along `dim`, in the input's dtype; argsort: i64
      const bool orders = c.node.op == Op::kSort || c.node.op == Op::kArgsort;
      if (!orders && x->dtype == DType::kBool) return c.type_error("takes numeric tensors, got bool (cast first)");
      SJ_TRY(c.axis(a.dim, x->shape.size(), "dim"));
      r.dtype = c.node.op == Op::kArgsort ? DType::kI64 : x->dtype;
      r.shape = x->shape;
      return Status::ok();
    }
    case OpClass::kSoftmax: {
      if (!is_float(x->dtype)) return c.type_error(std::string("takes float tensors, got ") + dtype_name(x->dtype));
      SJ_TRY(c.axis(a.dim, x->shape.size(), "dim"));
      r.dtype = x->dtype;
      r.shape = x->shape;
      return Status::ok();
    }
    case OpClass::kLayerNorm:
    case OpClass::kRmsNorm: {
      if (!is_float(x->dtype)) return c.type_error(std::string("takes float tensors, got ") + dtype_name(x->dtype));
      std::vector<int> axes = SJ_TRY(axes_of(c, a.axes, true, x->shape.size()));
      for (size_t i = 1; i < c.node.in.size(); ++i) {
        const ValueType* p = SJ_TRY(c.tensor(i));
        const char* what = i == 1 ? "weight" : "bias";
        if (p->dtype != x->dtype) return c.type_error(std::string(what) + " has dtype " + dtype_name(p->dtype) + ", the input " + dtype_name(x->dtype));
        if (p->shape.size() != axes.size()) {
          return c.error(std::string(what) + " must have the normalized dims' shape (rank " + std::to_string(axes.size()) + "), got rank " + std::to_string(p->shape.size()));
        }
        for (size_t k = 0; k < axes.size(); ++k) {
          if (!SJ_TRY(c.env.unify(p->shape[k], x->shape[axes[k]], Origin::kBroadcast))) {
            return c.error(std::string(what) + " dim " + std::to_string(k) + " is " + c.str(p->shape[k]) + ", the input's dim " + std::to_string(axes[k]) + " is " + c.str(x->shape[axes[k]]));
          }
        }
      }
      r.dtype = x->dtype;
      r.shape = x->shape;
      return Status::ok();
    }
    SJ_POINTWISE_CLASSES(SJ_CLASS_CASE)
    SJ_VIEW_CLASSES(SJ_CLASS_CASE)
    SJ_INDEXING_CLASSES(SJ_CLASS_CASE)
    SJ_SYM_CLASSES(SJ_CLASS_CASE)
    case OpClass::kMatmul: break;
  }
  return c.error("not a reduction");
}

Status infer_matmul(Ctx& c) {
  const ValueType* a = SJ_TRY(c.tensor(0));
  const ValueType* b = SJ_TRY(c.tensor(1));
  if (a->dtype != b->dtype) return c.type_error(std::string("operands have dtypes ") + dtype_name(a->dtype) + " and " + dtype_name(b->dtype));
  if (a->dtype == DType::kBool) return c.type_error("takes numeric tensors, got bool");
  if (a->shape.empty() || b->shape.empty()) return c.error("operands must have rank >= 1");
  std::vector<Expr> sa = a->shape, sb = b->shape;
  bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), Expr(1));
  if (b_vec) sb.push_back(Expr(1));
  Expr k_a = sa.back(), k_b = sb[sb.size() - 2];
  if (!SJ_TRY(c.env.unify(k_a, k_b, Origin::kBroadcast))) {
    return c.error("contraction dims differ: " + c.str(k_a) + " and " + c.str(k_b));
  }
  std::vector<Expr> batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  std::vector<Expr> out = SJ_TRY(c.broadcast(batch_a, batch_b));
  if (!a_vec) out.push_back(sa[sa.size() - 2]);
  if (!b_vec) out.push_back(sb.back());
  ValueType& r = c.result();
  r.dtype = a->dtype;
  r.shape = out;
  return Status::ok();
}

Status infer_symint(Ctx& c) {
  ValueType& r = c.result();
  r.is_tensor = false;
  r.dtype = DType::kI64;
  if (c.node.op == Op::kSymSize) {
    const ValueType* x = SJ_TRY(c.tensor(0));
    int d = SJ_TRY(c.axis(c.attrs().dim, x->shape.size(), "dim"));
    r.scalar = x->shape[d];
    return Status::ok();
  }
  Expr a = SJ_TRY(c.symint(0)), b = SJ_TRY(c.symint(1));
  switch (c.node.op) {
    case Op::kSymAdd: r.scalar = a + b; break;
    case Op::kSymSub: r.scalar = a - b; break;
    case Op::kSymMul: r.scalar = a * b; break;
    case Op::kSymMin: r.scalar = sym::min(a, b); break;
    case Op::kSymMax: r.scalar = sym::max(a, b); break;
    case Op::kSymFloorDiv:
    case Op::kSymMod:
      if (!SJ_TRY(c.env.decide(b, Rel::kNe, Origin::kShapeCheck))) return c.error("divisor " + c.str(b) + " is zero");
      r.scalar = c.node.op == Op::kSymFloorDiv ? sym::floordiv(a, b) : sym::mod(a, b);
      break;
    SJ_POINTWISE_OPS(SJ_OP_CASE)
    SJ_ALONG_AXES_OPS(SJ_OP_CASE)
    SJ_VIEW_OPS(SJ_OP_CASE)
    SJ_INDEXING_OPS(SJ_OP_CASE)
    case Op::kMatmul:
    case Op::kSymSize: return c.error("not a SymInt op");
  }
  r.scalar = c.env.resolve(r.scalar);
  return Status::ok();
}

}  // namespace
}  // namespace detail

Expected<std::vector<ValueType>> infer_inputs(const Graph& g, sym::ShapeEnv& env, const ShapeHints* hints) {
  std::vector<ValueType> types(g.num_values());
  if (hints && hints->size() != g.inputs.size()) {
    return invalid("the graph has " + std::to_string(g.inputs.size()) + " inputs, the call passes " + std::to_string(hints->size()));
  }
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const InputSpec& in = g.inputs[i];
    const std::vector<int64_t>* h = hints ? &(*hints)[i] : nullptr;
    std::string where = "input " + std::to_string(i) + " ('" + in.name + "')";
    if (h && h->size() != in.shape.size()) {
      return invalid(where + ": expected rank " + std::to_string(in.shape.size()) + ", got rank " + std::to_string(h->size()));
    }
    ValueType& t = types[i];
    t.dtype = in.dtype;
    for (size_t d = 0; d < in.shape.size(); ++d) {
      std::optional<int64_t> hint;
      if (h) hint = (*h)[d];
      if (hint && *hint < 0) return invalid(where + " dim " + std::to_string(d) + " is negative");
      const DimSpec& spec = in.shape[d];
      if (!spec.is_symbol) {
        if (hint && *hint != spec.value) {
          return invalid(where + " dim " + std::to_string(d) + ": the graph pins it to " + std::to_string(spec.value) + ", got " + std::to_string(*hint));
        }
        t.shape.push_back(Expr(spec.value));
      } else {
        t.shape.push_back(SJ_TRY(env.input_dim(spec.name, static_cast<int>(i), static_cast<int>(d), hint)));
      }
    }
  }
  return types;
}

namespace {

Status infer_rule(detail::Ctx& c) {
  switch (op_info(c.node.op).cls) {
    case OpClass::kUnary:
    case OpClass::kCast:
    case OpClass::kNot:
    case OpClass::kArith:
    case OpClass::kLogical:
    case OpClass::kCompare:
    case OpClass::kWhere: return detail::infer_elementwise(c);
    case OpClass::kReduce:
    case OpClass::kArgmax:
    case OpClass::kScan:
    case OpClass::kSoftmax:
    case OpClass::kLayerNorm:
    case OpClass::kRmsNorm: return detail::infer_reduction(c);
    case OpClass::kMatmul: return detail::infer_matmul(c);
    case OpClass::kSymSize:
    case OpClass::kSymBinary: return detail::infer_symint(c);
    SJ_VIEW_CLASSES(SJ_CLASS_CASE)
    SJ_INDEXING_CLASSES(SJ_CLASS_CASE) return detail::infer_views(c);
  }
  SJ_UNREACHABLE("an op class");
}

// The operands' values as this call has them, for a message about overflow.
std::string operand_values(const detail::Ctx& c) {
  std::string out;
  for (size_t i = 0; i < c.node.in.size() && out.size() < 200; ++i) {
    const Operand& o = c.node.in[i];
    std::string v;
    if (o.kind == Operand::Kind::kInt) v = std::to_string(o.i);
    else if (o.kind == Operand::Kind::kFloat) v = std::to_string(o.f);
    else if (!c.types[o.value].is_tensor) v = "'" + c.g.value_names[o.value] + "' = " + c.str(c.types[o.value].scalar);
    else continue;
    out += (out.empty() ? "" : ", ") + ("operand " + std::to_string(i) + " " + v);
  }
  return out.empty() ? "" : " (" + out + ")";
}

}  // namespace

Status infer_node(const Graph& g, const Node& node, std::vector<ValueType>& types, sym::ShapeEnv& env) {
  detail::Ctx c{g, node, types, env};
  types[node.out[0]] = ValueType{};
  // Sizes are int64 and their expressions stay shallow (sym/expr.h): a rule
  // whose arithmetic overflowed, or whose result nests too deep, rejects the
  // node here, whatever rule it was.
  sym::OverflowWatch watch;
  SJ_TRY(infer_rule(c));
  if (watch.overflowed()) {
    const Status e = c.error("a size it computes overflows int64" + operand_values(c));
    return Status(Code::kRuntime, e.message(), Detail::kOverflow);  // these sizes', not the graph's: another call's may fit
  }
  const ValueType& r = types[node.out[0]];
  int depth = r.scalar.depth();
  for (const Expr& d : r.shape) depth = std::max(depth, d.depth());
  for (const Expr& d : r.aux) depth = std::max(depth, d.depth());
  if (depth > sym::kMaxDepth) {
    return c.error("its size expressions nest " + std::to_string(depth) + " operations deep (at most " + std::to_string(sym::kMaxDepth) + ")");
  }
  return Status::ok();
}

void resolve_types(std::vector<ValueType>& types, sym::ShapeEnv& env) {
  for (ValueType& t : types) {
    for (Expr& d : t.shape) d = env.resolve(d);
    for (Expr& d : t.aux) d = env.resolve(d);
    t.scalar = env.resolve(t.scalar);
  }
}

Expected<std::vector<ValueType>> infer(const Graph& g, sym::ShapeEnv& env, const ShapeHints* hints) {
  std::vector<ValueType> types = SJ_TRY(infer_inputs(g, env, hints));
  for (const Node& n : g.nodes) SJ_TRY(infer_node(g, n, types, env));
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    if (!types[g.outputs[i]].is_tensor) {
      return invalid("graph: output " + std::to_string(i) + " ('" + g.value_names[g.outputs[i]] + "') is a SymInt; outputs are tensors");
    }
  }
  resolve_types(types, env);
  return types;
}

}  // namespace shapejit::ir
