// Pointwise ops, the unary family (neg, abs, relu, the transcendentals,
// sigmoid, silu, gelu, and the rest of NumPy's float functions). exp, tanh
// and float erf are inline vector arithmetic (fast_math.h); log, sin, cos,
// double erf and the other transcendentals are libm calls, bit-identical to
// the reference; floor, ceil, trunc and rint are exact.
#include <llvm/IR/Module.h>

#include "backends/llvm/emitter.h"
#include "backends/llvm/fast_math.h"

namespace shapejit::backends::llvm {

::llvm::Value* StepEmitter::intrinsic(::llvm::Intrinsic::ID id, ::llvm::Value* x) { return b_.CreateUnaryIntrinsic(id, x); }

// A libm function, declared as the C library has it; no errno is read.
::llvm::Value* StepEmitter::math(const char* f32, const char* f64, ::llvm::Value* x, ::llvm::Value* y) {
  ::llvm::Type* t = x->getType();
  const bool single = t->isFloatTy();
  ::llvm::FunctionCallee f = y ? m_.getOrInsertFunction(single ? f32 : f64, t, t, t) : m_.getOrInsertFunction(single ? f32 : f64, t, t);
  if (auto* fn = ::llvm::dyn_cast<::llvm::Function>(f.getCallee())) {
    fn->setDoesNotAccessMemory();
    fn->setDoesNotThrow();
    fn->setWillReturn();
  }
  if (y) return b_.CreateCall(f, {x, y});
  return b_.CreateCall(f, {x});
}

::llvm::Value* StepEmitter::unary(const Inst& inst, const Operands& arg) {
  const DType dt = inst.dtype;
  ::llvm::Type* t = reg_type(dt);
  auto fconst = [&](double c) { return ::llvm::ConstantFP::get(t, c); };
  const bool fl = ir::is_float(dt);
  switch (inst.op) {
    case Op::kNeg: return fl ? b_.CreateFNeg(arg[0]) : b_.CreateNeg(arg[0]);
    case Op::kAbs: {
      if (fl) return intrinsic(::llvm::Intrinsic::fabs, arg[0]);
      ::llvm::Value* x = arg[0];
      return b_.CreateSelect(b_.CreateICmpSLT(x, ::llvm::ConstantInt::get(t, 0)), b_.CreateNeg(x), x);
    }
    case Op::kInvert: return b_.CreateNot(arg[0]);
    case Op::kRelu: {
      ::llvm::Value* x = arg[0];
      ::llvm::Value* neg = fl ? b_.CreateFCmpOLT(x, fconst(0)) : b_.CreateICmpSLT(x, ::llvm::ConstantInt::get(t, 0));
      return b_.CreateSelect(neg, ::llvm::Constant::getNullValue(t), x);
    }
    // libm calls, not intrinsics: the vectorizer would widen an intrinsic
    // into a row of scalar calls (slower code, 3x the compile time). The
    // transformer's functions (exp in softmax and the gates, tanh, erf in
    // gelu) are inline arithmetic (fast_math.h).
    case Op::kExp: return inst.nonpositive_arg ? emit_exp_nonpositive(b_, arg[0]) : emit_exp(b_, arg[0]);
    case Op::kLog: return math("logf", "log", arg[0]);
    case Op::kSqrt: return intrinsic(::llvm::Intrinsic::sqrt, arg[0]);
    case Op::kSin: return math("sinf", "sin", arg[0]);
    case Op::kCos: return math("cosf", "cos", arg[0]);
    case Op::kTan: return math("tanf", "tan", arg[0]);
    case Op::kAsin: return math("asinf", "asin", arg[0]);
    case Op::kAcos: return math("acosf", "acos", arg[0]);
    case Op::kAtan: return math("atanf", "atan", arg[0]);
    case Op::kSinh: return math("sinhf", "sinh", arg[0]);
    case Op::kCosh: return math("coshf", "cosh", arg[0]);
    case Op::kAsinh: return math("asinhf", "asinh", arg[0]);
    case Op::kAcosh: return math("acoshf", "acosh", arg[0]);
    case Op::kAtanh: return math("atanhf", "atanh", arg[0]);
    case Op::kLog1p: return math("log1pf", "log1p", arg[0]);
    case Op::kExpm1: return math("expm1f", "expm1", arg[0]);
    case Op::kLog2: return math("log2f", "log2", arg[0]);
    case Op::kLog10: return math("log10f", "log10", arg[0]);
    case Op::kExp2: return math("exp2f", "exp2", arg[0]);
    case Op::kCbrt: return math("cbrtf", "cbrt", arg[0]);
    // Exact roundings: one vector instruction each (roundps), so intrinsics.
    case Op::kFloor: return intrinsic(::llvm::Intrinsic::floor, arg[0]);
    case Op::kCeil: return intrinsic(::llvm::Intrinsic::ceil, arg[0]);
    case Op::kTrunc: return intrinsic(::llvm::Intrinsic::trunc, arg[0]);
    case Op::kRint: return intrinsic(::llvm::Intrinsic::roundeven, arg[0]);
    case Op::kRsqrt: return b_.CreateFDiv(fconst(1), intrinsic(::llvm::Intrinsic::sqrt, arg[0]));
    case Op::kTanh: return emit_tanh(b_, arg[0]).value;
    case Op::kErf: return dt == DType::kF32 ? emit_erf_f32(b_, arg[0]) : math("erff", "erf", arg[0]);
    case Op::kSigmoid:
    case Op::kSilu: {
      ::llvm::Value* x = arg[0];
      ::llvm::Value* den = b_.CreateFAdd(fconst(1), emit_exp(b_, b_.CreateFNeg(x)));
      return b_.CreateFDiv(inst.op == Op::kSigmoid ? fconst(1) : x, den);
    }
    case Op::kGelu: {
      // 0.5 x (1 + f), with 1 + f taken without cancellation (fast_math.h).
      // Float in float: a few ulps from the reference's double. Double
      // with the reference's operations (1 + erf(z) as erfc(-z)).
      ::llvm::Value* x = arg[0];
      ::llvm::Value* half_x = b_.CreateFMul(fconst(0.5), x);
      if (inst.approximate_tanh) {
        ::llvm::Value* cube = b_.CreateFMul(b_.CreateFMul(b_.CreateFMul(fconst(0.044715), x), x), x);
        return b_.CreateFMul(half_x, emit_tanh(b_, b_.CreateFMul(fconst(0.7978845608028654), b_.CreateFAdd(x, cube))).one_plus);
      }
      if (dt == DType::kF32) return emit_gelu_f32(b_, x);
      return b_.CreateFMul(half_x, math("erfcf", "erfc", b_.CreateFMul(x, fconst(-0.7071067811865476))));
    }
    SJ_NOT_UNARY_OPS(SJ_OP_CASE) break;
  }
  return nullptr;
}

}  // namespace shapejit::backends::llvm
