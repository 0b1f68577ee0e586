// Shape rules for views (reshape, permute, ...), indexing, creation and
// data-dependent ops.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/ir/infer_util.h"

namespace shapejit::ir::detail {

namespace {

Expected<bool> decide(Ctx& c, Expr e, Rel rel) { return c.env.decide(e, rel, Origin::kShapeCheck); }

Status require_nonneg(Ctx& c, Expr e, const std::string& what) {
  if (!SJ_TRY(decide(c, e, Rel::kGe))) return c.error(what + " " + c.str(e) + " is negative");
  return Status::ok();
}

// e as a coefficient times a product of factors (none of them a
// constant), or nullopt when it is a sum.
std::optional<std::pair<int64_t, std::vector<Expr>>> monomial(Expr e) {
  switch (e.kind()) {
    case sym::Kind::kConst: return std::pair<int64_t, std::vector<Expr>>{e.const_value(), {}};
    case sym::Kind::kMul: {
      std::vector<Expr> factors;
      for (size_t i = 0; i < e.num_args(); ++i) factors.push_back(e.arg(i));
      return std::pair<int64_t, std::vector<Expr>>{1, std::move(factors)};
    }
    case sym::Kind::kAdd: {
      if (e.add_constant() != 0 || e.num_args() != 1) return std::nullopt;
      auto m = monomial(e.arg(0));
      if (m) m->first *= e.coeff(0);
      return m;
    }
    default: return std::pair<int64_t, std::vector<Expr>>{1, {e}};
  }
}

// q with n == q * d exactly, q a term of n over a term of d, where n and d
// are sums: 96 * (b - a) is the sum -96*a + 96*b, and 2 * (b - a) another,
// their quotient 48 all the same.
std::optional<Expr> multiple_of_sum(Expr n, Expr d) {
  if (n.kind() != sym::Kind::kAdd || d.kind() != sym::Kind::kAdd || n.num_args() == 0) return std::nullopt;
  const auto lead = monomial(n.arg(0));
  if (!lead) return std::nullopt;
  for (size_t j = 0; j < d.num_args(); ++j) {
    const auto term = monomial(d.arg(j));
    int64_t nc = 0, dc = 0;
    if (!term || __builtin_mul_overflow(n.coeff(0), lead->first, &nc) || __builtin_mul_overflow(d.coeff(j), term->first, &dc)) continue;
    if (dc == 0 || (dc == -1 && nc == INT64_MIN) || nc % dc != 0) continue;
    std::vector<Expr> rest = lead->second;
    bool divides = true;
    for (const Expr& f : term->second) {
      auto it = std::find(rest.begin(), rest.end(), f);
      if (it == rest.end()) {
        divides = false;
        break;
      }
      rest.erase(it);
    }
    if (!divides) continue;
    Expr q(nc / dc);
    for (const Expr& f : rest) q = q * f;
    const std::optional<Expr> left = sym::probe([&] { return n - q * d; });
    if (left && *left == Expr(0)) return q;
  }
  return std::nullopt;
}

// n // d where d is known not to be 0: the factors they share cancel (288 *
// L // (6 * L) is 48, where without the fact it is 0 at L = 0), so that a
// dim NumPy infers with -1 stays a constant where it is one.
Expr quotient_of_nonzero(Expr n, Expr d) {
  if (std::optional<Expr> q = multiple_of_sum(n, d)) return *q;
  auto num = monomial(n), den = monomial(d);
  if (!num || !den || den->first == 0) return sym::floordiv(n, d);
  std::vector<Expr> rest = num->second;
  for (const Expr& f : den->second) {
    auto it = std::find(rest.begin(), rest.end(), f);
    if (it == rest.end()) return sym::floordiv(n, d);
    rest.erase(it);
  }
  Expr r(1);
  for (const Expr& f : rest) r = r * f;
  if (num->first % den->first == 0) return Expr(num->first / den->first) * r;
  return sym::floordiv(Expr(num->first) * r, Expr(den->first));
}

Status infer_reshape(Ctx& c, const ValueType& x) {
  ValueType& r = c.result();
  r.dtype = x.dtype;
  int infer_at = -1;
  Expr known(1);
  for (size_t i = 1; i < c.node.in.size(); ++i) {
    const Operand& o = c.node.in[i];
    if (o.kind == Operand::Kind::kInt && o.i == -1) {
      if (infer_at >= 0) return c.error("only one dim may be -1");
      infer_at = static_cast<int>(r.shape.size());
      r.shape.push_back(Expr(0));
      continue;
    }
    Expr d = SJ_TRY(c.symint(i));
    SJ_TRY(require_nonneg(c, d, "size"));
    known = known * d;
    r.shape.push_back(d);
  }
  Expr n = c.env.resolve(numel(x.shape));
  known = c.env.resolve(known);
  if (infer_at >= 0) {
    if (!SJ_TRY(decide(c, known, Rel::kNe))) return c.error("cannot infer the -1 dim when the other dims have 0 elements");
    if (!SJ_TRY(decide(c, sym::mod(n, known), Rel::kEq))) {
      return c.error("cannot reshape " + c.str(n) + " elements into a multiple of " + c.str(known));
    }
    r.shape[infer_at] = c.env.resolve(quotient_of_nonzero(n, known));
  } else if (!SJ_TRY(decide(c, n - known, Rel::kEq))) {
    return c.error("cannot reshape " + c.str(n) + " elements into " + c.str(known));
  }
  return Status::ok();
}

Status infer_expand(Ctx& c, const ValueType& x) {
  ValueType& r = c.result();
  r.dtype = x.dtype;
  size_t n = c.node.in.size() - 1, rank = x.shape.size();
  if (n < rank) return c.error("expands rank " + std::to_string(rank) + " to fewer dims (" + std::to_string(n) + ")");
  for (size_t i = 0; i < n; ++i) {
    const Operand& o = c.node.in[i + 1];
    bool existing = i >= n - rank;
    if (o.kind == Operand::Kind::kInt && o.i == -1) {
      if (!existing) return c.error("-1 is allowed only for existing dims (dim " + std::to_string(i) + " is new)");
      r.shape.push_back(x.shape[i - (n - rank)]);
      continue;
    }
    Expr t = SJ_TRY(c.symint(i + 1));
    SJ_TRY(require_nonneg(c, t, "size"));
    if (existing) {
      Expr s = c.env.resolve(x.shape[i - (n - rank)]);
      if (s != Expr(1) && !SJ_TRY(c.env.unify(s, t, Origin::kBroadcast)) &&
          !SJ_TRY(c.env.unify(s, Expr(1), Origin::kBroadcast))) {  // bound to 1: indexed with 0
        return c.error("dim " + std::to_string(i) + " of size " + c.str(s) + " cannot expand to " + c.str(t));
      }
    }
    r.shape.push_back(t);
  }
  return Status::ok();
}

// Python's slice bound: negative counts from the end, then clamps to [0, n].
Expected<Expr> clamp_bound(Ctx& c, Expr b, Expr n) {
  if (SJ_TRY(decide(c, b, Rel::kGe))) return sym::min(b, n);
  return sym::max(b + n, Expr(0));
}

Status infer_slice(Ctx& c, const ValueType& x) {
  ValueType& r = c.result();
  int d = SJ_TRY(c.axis(c.attrs().dim, x.shape.size(), "dim"));
  Expr start = SJ_TRY(c.symint(1)), stop = SJ_TRY(c.symint(2)), step = SJ_TRY(c.symint(3));
  if (!SJ_TRY(decide(c, step - Expr(1), Rel::kGe))) return c.error("step must be >= 1, got " + c.str(step));
  Expr n = x.shape[d];
  Expr lo = c.env.resolve(SJ_TRY(clamp_bound(c, start, n)));
  Expr hi = c.env.resolve(SJ_TRY(clamp_bound(c, stop, n)));
  r.dtype = x.dtype;
  r.shape = x.shape;
  // ceil((hi - lo) / step) as floor((hi - lo - 1) / step) + 1: lo and hi lie
  // in [0, n], so nothing overflows, whatever step is (Python: x[0:3:2**63-1]).
  r.shape[d] = c.env.resolve(sym::max(Expr(0), sym::floordiv(hi - lo - Expr(1), step) + Expr(1)));
  r.aux = {lo, step};
  return Status::ok();
}

Status infer_concat(Ctx& c) {
  ValueType& r = c.result();
  const ValueType* first = SJ_TRY(c.tensor(0));
  int d = SJ_TRY(c.axis(c.attrs().dim, first->shape.size(), "dim"));
  r.dtype = first->dtype;
  r.shape = first->shape;
  for (size_t i = 1; i < c.node.in.size(); ++i) {
    const ValueType* t = SJ_TRY(c.tensor(i));
    if (t->dtype != first->dtype) return c.type_error("operand " + std::to_string(i) + " has dtype " + dtype_name(t->dtype) + ", operand 0 " + dtype_name(first->dtype));
    if (t->shape.size() != first->shape.size()) return c.error("operand " + std::to_string(i) + " has rank " + std::to_string(t->shape.size()) + ", operand 0 rank " + std::to_string(first->shape.size()));
    for (size_t k = 0; k < t->shape.size(); ++k) {
      if (static_cast<int>(k) == d) continue;
      if (!SJ_TRY(c.env.unify(first->shape[k], t->shape[k], Origin::kBroadcast))) {
        return c.error("operand " + std::to_string(i) + " dim " + std::to_string(k) + " is " + c.str(t->shape[k]) + ", operand 0's is " + c.str(first->shape[k]));
      }
    }
    r.shape[d] = r.shape[d] + t->shape[d];
  }
  return Status::ok();
}

Status infer_index(Ctx& c) {
  ValueType& r = c.result();
  const ValueType* x = SJ_TRY(c.tensor(0));
  const ValueType* idx = SJ_TRY(c.tensor(1));
  if (!is_int(idx->dtype)) return c.type_error(std::string("indices must be i32 or i64, got ") + dtype_name(idx->dtype));
  r.dtype = x->dtype;
  if (c.node.op == Op::kIndexSelect) {
    if (idx->shape.size() != 1) return c.error("index must be 1-D, got rank " + std::to_string(idx->shape.size()));
    int d = SJ_TRY(c.axis(c.attrs().dim, x->shape.size(), "dim"));
    r.shape = x->shape;
    r.shape[d] = idx->shape[0];
  } else {
    if (x->shape.size() != 2) return c.error("the table must be 2-D, got rank " + std::to_string(x->shape.size()));
    r.shape = idx->shape;
    r.shape.push_back(x->shape[1]);
  }
  return Status::ok();
}

// index_put, index_add: x with the slices along `dim` at index[k] set to
// (or added) values' slice k; values is x's shape with `dim` index's length.
Status infer_scatter(Ctx& c) {
  ValueType& r = c.result();
  const ValueType x = *SJ_TRY(c.tensor(0));  // copies: `r` may alias types' storage
  const ValueType idx = *SJ_TRY(c.tensor(1));
  const ValueType v = *SJ_TRY(c.tensor(2));
  if (!is_int(idx.dtype)) return c.type_error(std::string("indices must be i32 or i64, got ") + dtype_name(idx.dtype));
  if (idx.shape.size() != 1) return c.error("index must be 1-D, got rank " + std::to_string(idx.shape.size()));
  if (v.dtype != x.dtype) return c.type_error(std::string("values have dtype ") + dtype_name(v.dtype) + ", the tensor " + dtype_name(x.dtype));
  if (c.node.op != Op::kIndexPut && x.dtype == DType::kBool) return c.type_error(std::string(op_name(c.node.op)) + " of bool");
  const int d = SJ_TRY(c.axis(c.attrs().dim, x.shape.size(), "dim"));
  if (v.shape.size() != x.shape.size()) return c.error("values have rank " + std::to_string(v.shape.size()) + ", the tensor rank " + std::to_string(x.shape.size()));
  for (size_t k = 0; k < x.shape.size(); ++k) {
    const sym::Expr want = static_cast<int>(k) == d ? idx.shape[0] : x.shape[k];
    if (!SJ_TRY(c.env.unify(want, v.shape[k], Origin::kShapeCheck))) {
      return c.error("values dim " + std::to_string(k) + " is " + c.str(v.shape[k]) + ", expected " + c.str(want));
    }
  }
  r.dtype = x.dtype;
  r.shape = x.shape;
  return Status::ok();
}

Status infer_creation(Ctx& c) {
  ValueType& r = c.result();
  r.dtype = c.attrs().dtype;
  if (c.node.op == Op::kFull) {
    for (size_t i = 0; i < c.node.in.size(); ++i) {
      Expr d = SJ_TRY(c.symint(i));
      SJ_TRY(require_nonneg(c, d, "size"));
      r.shape.push_back(d);
    }
    return Status::ok();
  }
  if (r.dtype == DType::kBool) return c.type_error("arange cannot produce bool");
  Expr start = c.env.resolve(SJ_TRY(c.symint(0))), stop = c.env.resolve(SJ_TRY(c.symint(1))), step = c.env.resolve(SJ_TRY(c.symint(2)));
  r.aux = {start, step};
  if (start.is_const() && stop.is_const() && step.is_const()) {
    // Exact, as NumPy is: stop - start may not fit int64 though the
    // length does (arange(-2**63, 2**63 - 1, 2**62) has 4 values).
    const __int128 a = start.const_value(), b = stop.const_value(), s = step.const_value();
    if (s == 0) return c.error("step must not be 0");
    const __int128 len = s > 0 ? (b > a ? (b - a - 1) / s + 1 : 0) : (a > b ? (a - b - 1) / -s + 1 : 0);
    if (len > INT64_MAX) return c.error("it would have more than 2^63 - 1 values (start " + c.str(start) + ", stop " + c.str(stop) + ", step " + c.str(step) + ")");
    r.shape = {Expr(static_cast<int64_t>(len))};
    return Status::ok();
  }
  // ceil((stop - start) / step) as floor((stop - start - 1) / step) + 1.
  Expr len;
  if (SJ_TRY(decide(c, step - Expr(1), Rel::kGe))) {
    len = sym::floordiv(stop - start - Expr(1), step) + Expr(1);
  } else if (SJ_TRY(decide(c, -step - Expr(1), Rel::kGe))) {
    len = sym::floordiv(start - stop - Expr(1), -step) + Expr(1);
  } else {
    return c.error("step must not be 0");
  }
  r.shape = {c.env.resolve(sym::max(Expr(0), len))};
  return Status::ok();
}

}  // namespace

Status infer_views(Ctx& c) {
  ValueType& r = c.result();
  const OpClass cls = op_info(c.node.op).cls;
  if (cls == OpClass::kConcat) return infer_concat(c);
  if (cls == OpClass::kIndexSelect || cls == OpClass::kEmbedding) return infer_index(c);
  if (cls == OpClass::kIndexPut) return infer_scatter(c);
  if (cls == OpClass::kFull || cls == OpClass::kArange) return infer_creation(c);
  const ValueType x = *SJ_TRY(c.tensor(0));  // a copy: `r` may alias types' storage
  const size_t rank = x.shape.size();
  switch (cls) {
    case OpClass::kReshape: return infer_reshape(c, x);
    case OpClass::kExpand: return infer_expand(c, x);
    case OpClass::kSlice: return infer_slice(c, x);
    case OpClass::kPermute: {
      const auto& perm = c.attrs().perm;
      if (perm.size() != rank) return c.error("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(rank));
      std::vector<bool> seen(rank, false);
      r.dtype = x.dtype;
      for (int64_t p : perm) {
        int a = SJ_TRY(c.axis(p, rank, "perm entry"));
        if (seen[a]) return c.error("perm repeats dim " + std::to_string(a));
        seen[a] = true;
        r.shape.push_back(x.shape[a]);
      }
      return Status::ok();
    }
    case OpClass::kTranspose: {
      int a = SJ_TRY(c.axis(c.attrs().dim0, rank, "dim0"));
      int b = SJ_TRY(c.axis(c.attrs().dim1, rank, "dim1"));
      r.dtype = x.dtype;
      r.shape = x.shape;
      std::swap(r.shape[a], r.shape[b]);
      return Status::ok();
    }
    case OpClass::kSqueeze: {
      std::vector<bool> drop(rank, false);
      for (int64_t d : c.attrs().dims) {
        int a = SJ_TRY(c.axis(d, rank, "dim"));
        if (drop[a]) return c.error("dims repeat dim " + std::to_string(a));
        if (!SJ_TRY(decide(c, x.shape[a] - Expr(1), Rel::kEq))) {
          return c.error("dim " + std::to_string(a) + " has size " + c.str(x.shape[a]) + ", not 1");
        }
        drop[a] = true;
      }
      r.dtype = x.dtype;
      for (size_t i = 0; i < rank; ++i) {
        if (!drop[i]) r.shape.push_back(x.shape[i]);
      }
      return Status::ok();
    }
    case OpClass::kUnsqueeze: {
      int a = SJ_TRY(c.axis(c.attrs().dim, rank + 1, "dim"));
      r.dtype = x.dtype;
      r.shape = x.shape;
      r.shape.insert(r.shape.begin() + a, Expr(1));
      return Status::ok();
    }
    case OpClass::kNonzero: {
      r.dtype = DType::kI64;
      r.shape = {c.env.new_unbacked(numel(x.shape)), Expr(static_cast<int64_t>(rank))};
      return Status::ok();
    }
    case OpClass::kMaskedSelect: {
      const ValueType* mask = SJ_TRY(c.tensor(1));
      if (mask->dtype != DType::kBool) return c.type_error(std::string("mask must be bool, got ") + dtype_name(mask->dtype));
      std::vector<Expr> shape = SJ_TRY(c.broadcast(x.shape, mask->shape));
      r.dtype = x.dtype;
      r.shape = {c.env.new_unbacked(numel(shape))};
      r.aux = shape;  // the broadcast shape both operands are read at
      return Status::ok();
    }
    SJ_POINTWISE_CLASSES(SJ_CLASS_CASE)
    SJ_ALONG_AXES_CLASSES(SJ_CLASS_CASE)
    SJ_SYM_CLASSES(SJ_CLASS_CASE)
    case OpClass::kMatmul:
    case OpClass::kConcat:  // handled above, as are the four below
    case OpClass::kIndexSelect:
    case OpClass::kEmbedding:
    case OpClass::kIndexPut:
    case OpClass::kFull:
    case OpClass::kArange: break;
  }
  return c.error("no shape rule for this op");
}

}  // namespace shapejit::ir::detail
