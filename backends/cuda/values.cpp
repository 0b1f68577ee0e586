#include "backends/cuda/values.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace shapejit::backends::cuda {

using ir::DType;
using ir::Op;
using loops::Inst;
using loops::InstKind;
using loops::Phase;
using sym::Expr;
using sym::Kind;

const char* ctype(DType t) {
  switch (t) {
    case DType::kF32: return "float";
    case DType::kF64: return "double";
    case DType::kI32: return "int";
    case DType::kI64: return "i64";
    case DType::kBool: return "bool";
  }
  return "i64";
}
const char* mtype(DType t) { return t == DType::kBool ? "u8" : ctype(t); }

namespace {

std::string str(int64_t v) { return v == INT64_MIN ? "SJ_I64_MIN" : "(" + std::to_string(v) + "LL)"; }

}  // namespace

std::string literal(DType t, const ir::Scalar& v) {
  if (!ir::is_float(t)) {
    if (t == DType::kBool) return v.i ? "true" : "false";
    return t == DType::kI32 ? "((int)" + str(v.i) + ")" : str(v.i);
  }
  const bool single = t == DType::kF32;
  if (std::isnan(v.f)) return single ? "SJ_NAN_F" : "SJ_NAN_D";
  if (std::isinf(v.f)) return std::string(v.f < 0 ? "(-" : "(") + (single ? "SJ_INF_F" : "SJ_INF_D") + ")";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", single ? static_cast<double>(static_cast<float>(v.f)) : v.f);
  return "(" + std::string(buf) + (single ? "f" : "") + ")";
}

ValueCode::ValueCode(const loops::LoopProgram& p) : p_(p), nparams_(p.num_graph_symbols + static_cast<int>(p.params.size())) {}

std::string ValueCode::expr(Expr e) const {
  switch (e.kind()) {
    case Kind::kConst: return str(e.const_value());
    case Kind::kSymbol: return sym(e.symbol_id());
    case Kind::kAdd: {
      std::string s = "(" + str(e.add_constant());
      for (size_t i = 0; i < e.num_args(); ++i) {
        s += " + " + (e.coeff(i) == 1 ? expr(e.arg(i)) : str(e.coeff(i)) + " * " + expr(e.arg(i)));
      }
      return s + ")";
    }
    case Kind::kMul: {
      std::string s = "(" + expr(e.arg(0));
      for (size_t i = 1; i < e.num_args(); ++i) s += " * " + expr(e.arg(i));
      return s + ")";
    }
    case Kind::kFloorDiv:
    case Kind::kMod: {
      const bool div = e.kind() == Kind::kFloorDiv;
      const std::string a = expr(e.arg(0)), b = expr(e.arg(1));
      if (loops::is_nonnegative(p_, e.arg(0)) && loops::is_nonnegative(p_, e.arg(1))) {
        auto c = e.arg(1).as_const();
        if (c && *c > 0) return "((i64)((u64)" + a + (div ? " / " : " % ") + std::to_string(*c) + "ull))";
        return std::string(div ? "sj_udiv(" : "sj_umod(") + a + ", " + b + ")";
      }
      return std::string(div ? "sj_floordiv<i64>(" : "sj_mod<i64>(") + a + ", " + b + ")";
    }
    case Kind::kMin: return "sj_imin(" + expr(e.arg(0)) + ", " + expr(e.arg(1)) + ")";
    case Kind::kMax: return "sj_imax(" + expr(e.arg(0)) + ", " + expr(e.arg(1)) + ")";
  }
  return "0";
}

// As the reference's cast: float to integer truncates, saturates and maps
// NaN to 0; to bool is `!= 0` (NaN is true).
std::string ValueCode::convert(const std::string& v, DType from, DType to) const {
  if (from == to) return v;
  if (to == DType::kBool) return "(" + v + " != 0)";
  if (ir::is_float(from) && !ir::is_float(to)) return std::string(to == DType::kI32 ? "sj_f2i32" : "sj_f2i64") + "((double)" + v + ")";
  return "((" + std::string(ctype(to)) + ")" + v + ")";
}

std::string ValueCode::op(const Inst& inst, const std::vector<std::string>& vals, const Phase& ph) const {
  auto arg = [&](size_t i) { return vals[inst.args[i]]; };
  auto arg_dt = [&](size_t i) { return ph.body[inst.args[i]].dtype; };
  const DType dt = inst.dtype;
  const bool fl = ir::is_float(dt), single = dt == DType::kF32;
  auto fn = [&](const char* f32, const char* f64) { return std::string(single ? f32 : f64) + "(" + arg(0) + ")"; };
  auto one = [&] { return std::string(single ? "1.0f" : "1.0"); };
  auto bin = [&](const char* o) { return "(" + arg(0) + " " + o + " " + arg(1) + ")"; };
  auto wrap = [&](const char* f) { return std::string(f) + "(" + arg(0) + ", " + arg(1) + ")"; };
  switch (inst.op) {
    case Op::kCast: return convert(arg(0), arg_dt(0), dt);
    case Op::kNot: return "(!" + arg(0) + ")";
    case Op::kInvert: return "((" + std::string(ctype(dt)) + ")~" + arg(0) + ")";
    case Op::kNeg: return fl ? "(-" + arg(0) + ")" : "sj_neg(" + arg(0) + ")";
    case Op::kAbs: return fl ? fn("fabsf", "fabs") : "sj_abs(" + arg(0) + ")";
    case Op::kRelu: return "(" + arg(0) + " < 0 ? (" + ctype(dt) + ")0 : " + arg(0) + ")";
    case Op::kExp: return fn("expf", "exp");
    case Op::kLog: return fn("logf", "log");
    case Op::kSqrt: return fn("sqrtf", "sqrt");
    case Op::kSin: return fn("sinf", "sin");
    case Op::kCos: return fn("cosf", "cos");
    case Op::kTan: return fn("tanf", "tan");
    case Op::kAsin: return fn("asinf", "asin");
    case Op::kAcos: return fn("acosf", "acos");
    case Op::kAtan: return fn("atanf", "atan");
    case Op::kSinh: return fn("sinhf", "sinh");
    case Op::kCosh: return fn("coshf", "cosh");
    case Op::kAsinh: return fn("asinhf", "asinh");
    case Op::kAcosh: return fn("acoshf", "acosh");
    case Op::kAtanh: return fn("atanhf", "atanh");
    case Op::kLog1p: return fn("log1pf", "log1p");
    case Op::kExpm1: return fn("expm1f", "expm1");
    case Op::kLog2: return fn("log2f", "log2");
    case Op::kLog10: return fn("log10f", "log10");
    case Op::kExp2: return fn("exp2f", "exp2");
    case Op::kCbrt: return fn("cbrtf", "cbrt");
    case Op::kFloor: return fn("floorf", "floor");
    case Op::kCeil: return fn("ceilf", "ceil");
    case Op::kTrunc: return fn("truncf", "trunc");
    case Op::kRint: return fn("rintf", "rint");
    case Op::kRsqrt: return "(" + one() + " / " + fn("sqrtf", "sqrt") + ")";
    case Op::kTanh: return fn("tanhf", "tanh");
    case Op::kErf: return fn("erff", "erf");
    case Op::kSigmoid: return "(" + one() + " / (" + one() + " + " + std::string(single ? "expf" : "exp") + "(-" + arg(0) + ")))";
    case Op::kSilu: return "(" + arg(0) + " / (" + one() + " + " + std::string(single ? "expf" : "exp") + "(-" + arg(0) + ")))";
    case Op::kGelu: {
      // 1 + erf(z) as erfc(-z), the reference's: no cancellation where x is very negative.
      const std::string x = arg(0);
      if (single && !inst.approximate_tanh) return "(0.5f * " + x + " * erfcf(" + x + " * -0.70710678118654752f))";
      const std::string d = "((double)" + x + ")";
      if (!inst.approximate_tanh) return "((" + std::string(ctype(dt)) + ")(0.5 * " + d + " * erfc(" + d + " * -0.7071067811865476)))";
      const std::string inner = "tanh(0.7978845608028654 * (" + d + " + 0.044715 * " + d + " * " + d + " * " + d + "))";
      return "((" + std::string(ctype(dt)) + ")(0.5 * " + d + " * (1.0 + " + inner + ")))";
    }
    case Op::kAdd: return fl ? bin("+") : wrap("sj_add");
    case Op::kSub: return fl ? bin("-") : wrap("sj_sub");
    case Op::kMul: return fl ? bin("*") : wrap("sj_mul");
    case Op::kDiv:
      if (fl && launch_invariant(ph, inst.args[1])) return wrap("sj_div_inv");
      return fl ? bin("/") : "sj_floordiv<" + std::string(ctype(dt)) + ">(" + arg(0) + ", " + arg(1) + ")";
    case Op::kPow:
      if (fl) return std::string(single ? "powf(" : "pow(") + arg(0) + ", " + arg(1) + ")";
      return "((" + std::string(ctype(dt)) + ")sj_ipow((i64)" + arg(0) + ", (i64)" + arg(1) + "))";
    case Op::kBitAnd: return bin("&");
    case Op::kBitOr: return bin("|");
    case Op::kBitXor: return bin("^");
    case Op::kShiftLeft:
    case Op::kShiftRight: {
      const std::string bits = dt == DType::kI32 ? "32" : "64", x = arg(0), y = arg(1), c = ctype(dt);
      const std::string in_range = "(" + y + " >= 0 && " + y + " < " + bits + ")";
      if (inst.op == Op::kShiftLeft) return "(" + in_range + " ? (" + c + ")((unsigned long long)" + x + " << " + y + ") : (" + c + ")0)";
      return "(" + in_range + " ? (" + c + ")(" + x + " >> " + y + ") : (" + c + ")(" + x + " < 0 ? -1 : 0))";
    }
    case Op::kAtan2: return wrap(single ? "atan2f" : "atan2");
    case Op::kHypot: return wrap(single ? "hypotf" : "hypot");
    case Op::kFmod: return wrap(single ? "fmodf" : "fmod");
    case Op::kNextafter: return wrap(single ? "nextafterf" : "nextafter");
    case Op::kGcd: return wrap("sj_gcd");
    case Op::kMaximum:
      if (fl) return wrap("sj_fmaximum");
      return "(" + arg(0) + " < " + arg(1) + " ? " + arg(1) + " : " + arg(0) + ")";
    case Op::kMinimum:
      if (fl) return wrap("sj_fminimum");
      return "(" + arg(1) + " < " + arg(0) + " ? " + arg(1) + " : " + arg(0) + ")";
    case Op::kAnd: return "(" + convert(arg(0), arg_dt(0), DType::kBool) + " && " + convert(arg(1), arg_dt(1), DType::kBool) + ")";
    case Op::kOr: return "(" + convert(arg(0), arg_dt(0), DType::kBool) + " || " + convert(arg(1), arg_dt(1), DType::kBool) + ")";
    case Op::kEq: return bin("==");
    case Op::kNe: return bin("!=");  // true for NaN, as the reference's
    case Op::kLt: return bin("<");
    case Op::kLe: return bin("<=");
    case Op::kGt: return bin(">");
    case Op::kGe: return bin(">=");
    case Op::kWhere: return "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
    SJ_NOT_POINTWISE_OPS(SJ_OP_CASE) return "";  // not an instruction of a phase's body
  }
  return "";
}

// Whether a phase's value is the same for the whole launch: constants and
// arithmetic on the dynamic symbols (a mean's count, say). Dividing by one
// multiplies by its reciprocal, which the compiler then computes once; not
// a power of two, which the compiler itself turns into a product.
bool ValueCode::launch_invariant(const Phase& ph, int k) const {
  const Inst& inst = ph.body[k];
  auto power_of_two = [](double v) {
    int e = 0;
    return v != 0 && std::frexp(std::fabs(v), &e) == 0.5;
  };
  switch (inst.kind) {
    case InstKind::kConst: return !power_of_two(inst.value.f);
    case InstKind::kIndex: {
      if (auto c = inst.expr.as_const()) return !power_of_two(static_cast<double>(*c));
      const std::vector<int> ids = sym::symbols_of(inst.expr);
      return std::all_of(ids.begin(), ids.end(), [&](int id) { return id < nparams_; });
    }
    case InstKind::kOp:
      return inst.op == Op::kCast && launch_invariant(ph, inst.args[0]);
    default: return false;
  }
}

}  // namespace shapejit::backends::cuda
