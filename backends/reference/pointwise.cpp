// Unary, cast, binary, comparison and where ops, with NumPy broadcasting.
#include <algorithm>

#include "backends/reference/kernels.h"
#include "core/ir/strided.h"

namespace shapejit::backends::reference {

using ir::DType;
using ir::Op;
using ir::Tensor;

namespace {

template <typename T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b));
  else return a + b;
}
template <typename T>
T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) - static_cast<std::make_unsigned_t<T>>(b));
  else return a - b;
}
template <typename T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) * static_cast<std::make_unsigned_t<T>>(b));
  else return a * b;
}

template <typename T>
T floor_div(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return 0;
    if (b == -1) return wrap_sub<T>(0, a);
    T q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  } else {
    return a / b;
  }
}

template <typename T>
T int_pow(T base, T exp) {
  using U = std::make_unsigned_t<T>;
  U result = 1, b = static_cast<U>(base);
  for (auto e = static_cast<U>(exp); e; e >>= 1) {
    if (e & 1) result *= b;
    b *= b;
  }
  return static_cast<T>(result);
}

// NumPy's gcd: Euclid's on the magnitudes as unsigned (|INT_MIN| is 2^63),
// the result back in T (gcd(INT_MIN, 0) is INT_MIN).
template <typename T>
T int_gcd(T a, T b) {
  using U = std::make_unsigned_t<T>;
  U x = a < 0 ? U(0) - static_cast<U>(a) : static_cast<U>(a), y = b < 0 ? U(0) - static_cast<U>(b) : static_cast<U>(b);
  while (x != 0) {
    const U r = static_cast<U>(y % x);
    y = x;
    x = r;
  }
  return static_cast<T>(y);
}

template <typename T>
T nan_max(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  }
  return a < b ? b : a;
}
template <typename T>
T nan_min(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  }
  return b < a ? b : a;
}

template <typename A, typename R, typename F>
Tensor map1(const Tensor& a, DType out_dt, F f) {
  Tensor out = Tensor::empty(out_dt, a.shape());
  const A* pa = a.ptr<A>();
  R* po = out.ptr<R>();
  ir::for_each_offset<2>(a.shape(), {out.strides().data(), a.strides().data()},
                         [&](const std::array<int64_t, 2>& o) { po[o[0]] = f(pa[o[1]]); });
  return out;
}

template <typename A, typename R, typename F>
Tensor map2(const Tensor& a, const Tensor& b, const std::vector<int64_t>& shape, DType out_dt, F f) {
  Tensor out = Tensor::empty(out_dt, shape);
  auto sa = ir::broadcast_strides(a.shape(), a.strides(), shape);
  auto sb = ir::broadcast_strides(b.shape(), b.strides(), shape);
  const A* pa = a.ptr<A>();
  const A* pb = b.ptr<A>();
  R* po = out.ptr<R>();
  ir::for_each_offset<3>(shape, {out.strides().data(), sa.data(), sb.data()},
                         [&](const std::array<int64_t, 3>& o) { po[o[0]] = f(pa[o[1]], pb[o[2]]); });
  return out;
}

template <typename T>
Expected<Tensor> unary(const NodeCtx& c, const Tensor& x) {
  const DType dt = x.dtype();
  Op op = c.node.op;
  if constexpr (std::is_same_v<T, bool>) {
    return c.error("no bool kernel");
  } else if constexpr (std::is_integral_v<T>) {  // the few unary ops of integers
    if (op == Op::kNeg) return map1<T, T>(x, dt, [](T v) { return wrap_sub<T>(0, v); });
    if (op == Op::kAbs) return map1<T, T>(x, dt, [](T v) { return v < 0 ? wrap_sub<T>(0, v) : v; });
    if (op == Op::kRelu) return map1<T, T>(x, dt, [](T v) { return v < 0 ? T(0) : v; });
    if (op == Op::kInvert) return map1<T, T>(x, dt, [](T v) { return static_cast<T>(~v); });
    return c.error("no integer kernel");
  } else {
    bool tanh_form = c.node.attrs.approximate_tanh;
    switch (op) {
      case Op::kNeg: return map1<T, T>(x, dt, [](T v) { return -v; });
      case Op::kAbs: return map1<T, T>(x, dt, [](T v) { return std::abs(v); });
      case Op::kExp: return map1<T, T>(x, dt, [](T v) { return std::exp(v); });
      case Op::kLog: return map1<T, T>(x, dt, [](T v) { return std::log(v); });
      case Op::kSqrt: return map1<T, T>(x, dt, [](T v) { return std::sqrt(v); });
      case Op::kRsqrt: return map1<T, T>(x, dt, [](T v) { return T(1) / std::sqrt(v); });
      case Op::kTanh: return map1<T, T>(x, dt, [](T v) { return std::tanh(v); });
      case Op::kSigmoid: return map1<T, T>(x, dt, [](T v) { return T(1) / (T(1) + std::exp(-v)); });
      case Op::kRelu: return map1<T, T>(x, dt, [](T v) { return v < 0 ? T(0) : v; });  // NaN stays NaN
      case Op::kSilu: return map1<T, T>(x, dt, [](T v) { return v / (T(1) + std::exp(-v)); });
      case Op::kSin: return map1<T, T>(x, dt, [](T v) { return std::sin(v); });
      case Op::kCos: return map1<T, T>(x, dt, [](T v) { return std::cos(v); });
      case Op::kErf: return map1<T, T>(x, dt, [](T v) { return std::erf(v); });
      case Op::kTan: return map1<T, T>(x, dt, [](T v) { return std::tan(v); });
      case Op::kAsin: return map1<T, T>(x, dt, [](T v) { return std::asin(v); });
      case Op::kAcos: return map1<T, T>(x, dt, [](T v) { return std::acos(v); });
      case Op::kAtan: return map1<T, T>(x, dt, [](T v) { return std::atan(v); });
      case Op::kSinh: return map1<T, T>(x, dt, [](T v) { return std::sinh(v); });
      case Op::kCosh: return map1<T, T>(x, dt, [](T v) { return std::cosh(v); });
      case Op::kAsinh: return map1<T, T>(x, dt, [](T v) { return std::asinh(v); });
      case Op::kAcosh: return map1<T, T>(x, dt, [](T v) { return std::acosh(v); });
      case Op::kAtanh: return map1<T, T>(x, dt, [](T v) { return std::atanh(v); });
      case Op::kLog1p: return map1<T, T>(x, dt, [](T v) { return std::log1p(v); });
      case Op::kExpm1: return map1<T, T>(x, dt, [](T v) { return std::expm1(v); });
      case Op::kLog2: return map1<T, T>(x, dt, [](T v) { return std::log2(v); });
      case Op::kLog10: return map1<T, T>(x, dt, [](T v) { return std::log10(v); });
      case Op::kExp2: return map1<T, T>(x, dt, [](T v) { return std::exp2(v); });
      case Op::kCbrt: return map1<T, T>(x, dt, [](T v) { return std::cbrt(v); });
      case Op::kFloor: return map1<T, T>(x, dt, [](T v) { return std::floor(v); });
      case Op::kCeil: return map1<T, T>(x, dt, [](T v) { return std::ceil(v); });
      case Op::kTrunc: return map1<T, T>(x, dt, [](T v) { return std::trunc(v); });
      case Op::kRint: return map1<T, T>(x, dt, [](T v) { return std::rint(v); });
      case Op::kGelu:
        if (tanh_form) {
          return map1<T, T>(x, dt, [](T v) {
            const double k = 0.7978845608028654;  // sqrt(2 / pi)
            double d = v;
            return static_cast<T>(0.5 * d * (1.0 + std::tanh(k * (d + 0.044715 * d * d * d))));
          });
        }
        // 1 + erf(z) as erfc(-z): no cancellation where x is very negative
        // (gelu(-14) is -2.8e-44, not -0).
        return map1<T, T>(x, dt, [](T v) { return static_cast<T>(0.5 * double(v) * std::erfc(-double(v) * 0.7071067811865476)); });
      case Op::kInvert:  // integers only
      SJ_NOT_UNARY_OPS(SJ_OP_CASE) return c.error("not a unary op");
    }
    return c.error("not a unary op");
  }
}

// NumPy's: a shift by a negative count or by the width or more gives 0,
// or -1 for a negative value shifted right; left shifts wrap.
template <typename T>
T bitwise(Op op, T x, T y) {
  using U = std::make_unsigned_t<T>;
  constexpr T kBits = static_cast<T>(sizeof(T) * 8);
  if (op == Op::kBitAnd) return static_cast<T>(x & y);
  if (op == Op::kBitOr) return static_cast<T>(x | y);
  if (op == Op::kBitXor) return static_cast<T>(x ^ y);
  if (op == Op::kShiftLeft) return y < 0 || y >= kBits ? T(0) : static_cast<T>(static_cast<U>(x) << y);
  return y < 0 || y >= kBits ? T(x < 0 ? -1 : 0) : static_cast<T>(x >> y);  // kShiftRight
}

template <typename T>
Expected<Tensor> arith(const NodeCtx& c, const Tensor& a, const Tensor& b, const std::vector<int64_t>& shape) {
  const DType dt = a.dtype();
  if constexpr (std::is_same_v<T, bool>) {
    return c.error("no bool kernel");
  } else {
    switch (c.node.op) {
      case Op::kAdd: return map2<T, T>(a, b, shape, dt, wrap_add<T>);
      case Op::kSub: return map2<T, T>(a, b, shape, dt, wrap_sub<T>);
      case Op::kMul: return map2<T, T>(a, b, shape, dt, wrap_mul<T>);
      case Op::kDiv: return map2<T, T>(a, b, shape, dt, floor_div<T>);
      case Op::kMaximum: return map2<T, T>(a, b, shape, dt, nan_max<T>);
      case Op::kMinimum: return map2<T, T>(a, b, shape, dt, nan_min<T>);
      case Op::kBitAnd:
      case Op::kBitOr:
      case Op::kBitXor:
      case Op::kShiftLeft:
      case Op::kShiftRight:
        if constexpr (std::is_integral_v<T>) {
          return map2<T, T>(a, b, shape, dt, [op = c.node.op](T x, T y) { return bitwise<T>(op, x, y); });
        } else {
          return c.error("takes integer tensors");
        }
      case Op::kGcd:
        if constexpr (std::is_integral_v<T>) return map2<T, T>(a, b, shape, dt, int_gcd<T>);
        else return c.error("takes integer tensors");
      case Op::kAtan2:
      case Op::kHypot:
      case Op::kFmod:
      case Op::kNextafter:
        if constexpr (std::is_integral_v<T>) {
          return c.error("takes float tensors");
        } else if (c.node.op == Op::kNextafter) {
          return map2<T, T>(a, b, shape, dt, [](T x, T y) { return std::nextafter(x, y); });
        } else if (c.node.op == Op::kAtan2) {
          return map2<T, T>(a, b, shape, dt, [](T y, T x) { return std::atan2(y, x); });
        } else if (c.node.op == Op::kFmod) {
          return map2<T, T>(a, b, shape, dt, [](T x, T y) { return std::fmod(x, y); });
        } else {
          return map2<T, T>(a, b, shape, dt, [](T x, T y) { return std::hypot(x, y); });
        }
      case Op::kPow:
        if constexpr (std::is_integral_v<T>) {
          bool negative = false;
          Tensor out = map2<T, T>(a, b, shape, dt, [&](T x, T e) {
            if (e < 0) {
              negative = true;
              return T(0);
            }
            return int_pow<T>(x, e);
          });
          if (negative) return c.error("integers to negative integer powers are not allowed", Detail::kValue);
          return out;
        } else {
          return map2<T, T>(a, b, shape, dt, [](T x, T e) { return std::pow(x, e); });
        }
      SJ_NOT_ARITH_OPS(SJ_OP_CASE) break;
    }
    return c.error("not an arithmetic op");
  }
}

template <typename T>
Expected<Tensor> compare(const NodeCtx& c, const Tensor& a, const Tensor& b, const std::vector<int64_t>& shape) {
  switch (c.node.op) {
    case Op::kEq: return map2<T, bool>(a, b, shape, DType::kBool, [](T x, T y) { return x == y; });
    case Op::kNe: return map2<T, bool>(a, b, shape, DType::kBool, [](T x, T y) { return x != y; });
    case Op::kLt: return map2<T, bool>(a, b, shape, DType::kBool, [](T x, T y) { return x < y; });
    case Op::kLe: return map2<T, bool>(a, b, shape, DType::kBool, [](T x, T y) { return x <= y; });
    case Op::kGt: return map2<T, bool>(a, b, shape, DType::kBool, [](T x, T y) { return x > y; });
    case Op::kGe: return map2<T, bool>(a, b, shape, DType::kBool, [](T x, T y) { return x >= y; });
    case Op::kAnd: return map2<T, bool>(a, b, shape, DType::kBool, [](T x, T y) { return bool(x) && bool(y); });
    case Op::kOr: return map2<T, bool>(a, b, shape, DType::kBool, [](T x, T y) { return bool(x) || bool(y); });
    SJ_UNARY_OPS(SJ_OP_CASE)
    case Op::kCast:
    case Op::kNot:
    SJ_ARITH_OPS(SJ_OP_CASE)
    case Op::kWhere:
    SJ_NOT_POINTWISE_OPS(SJ_OP_CASE) break;
  }
  return c.error("not a comparison");
}

template <typename From, typename To>
To convert(From v) {
  if constexpr (std::is_floating_point_v<From>) return from_double<To>(static_cast<double>(v));
  else if constexpr (std::is_same_v<To, bool>) return v != 0;
  else return static_cast<To>(v);  // integer narrowing wraps (C++20)
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, const std::vector<int64_t>& shape) {
  Tensor out = Tensor::empty(a.dtype(), shape);
  auto sc = ir::broadcast_strides(cond.shape(), cond.strides(), shape);
  auto sa = ir::broadcast_strides(a.shape(), a.strides(), shape);
  auto sb = ir::broadcast_strides(b.shape(), b.strides(), shape);
  ir::visit_dtype(a.dtype(), [&]<typename T>() {
    const bool* pc = cond.ptr<bool>();
    const T* pa = a.ptr<T>();
    const T* pb = b.ptr<T>();
    T* po = out.ptr<T>();
    ir::for_each_offset<4>(shape, {out.strides().data(), sc.data(), sa.data(), sb.data()},
                           [&](const std::array<int64_t, 4>& o) { po[o[0]] = pc[o[1]] ? pa[o[2]] : pb[o[3]]; });
  });
  return out;
}

}  // namespace

Expected<Tensor> run_pointwise(const NodeCtx& c) {
  const ir::OpClass cls = ir::op_info(c.node.op).cls;
  const std::vector<int64_t> shape = c.out_shape();
  if (cls == ir::OpClass::kUnary) {
    const Tensor& x = c.tensor(0);
    return ir::visit_dtype(x.dtype(), [&]<typename T>() { return unary<T>(c, x); });
  }
  if (cls == ir::OpClass::kNot) return map1<bool, bool>(c.tensor(0), DType::kBool, [](bool v) { return !v; });
  if (cls == ir::OpClass::kCast) {
    const Tensor& x = c.tensor(0);
    DType to = c.type.dtype;
    return ir::visit_dtype(x.dtype(), [&]<typename F>() {
      return ir::visit_dtype(to, [&]<typename T>() { return map1<F, T>(x, to, convert<F, T>); });
    });
  }
  if (cls == ir::OpClass::kWhere) {
    DType dt = c.type.dtype;
    return where(c.tensor(0), c.operand(1, dt), c.operand(2, dt), shape);
  }
  // Binary: the operands' dtype is the tensor operand's.
  DType dt = c.node.in[0].is_value() ? c.tensor(0).dtype() : c.tensor(1).dtype();
  Tensor a = c.operand(0, dt), b = c.operand(1, dt);
  if (cls == ir::OpClass::kArith) return ir::visit_dtype(dt, [&]<typename T>() { return arith<T>(c, a, b, shape); });
  return ir::visit_dtype(dt, [&]<typename T>() { return compare<T>(c, a, b, shape); });
}

}  // namespace shapejit::backends::reference
