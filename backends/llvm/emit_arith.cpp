// Pointwise ops: arithmetic (add, sub, mul, floor division, pow, maximum,
// minimum) with the reference's integer and NaN rules, and comparisons,
// and, or, where.
#include <llvm/IR/Module.h>

#include "backends/llvm/emitter.h"

namespace shapejit::backends::llvm {

extern "C" int64_t shapejit_ipow_i64(int64_t base, int64_t exp) {
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  for (auto e = static_cast<uint64_t>(exp); e; e >>= 1) {
    if (e & 1) result *= b;
    b *= b;
  }
  return static_cast<int64_t>(result);
}

extern "C" uint64_t shapejit_gcd_u64(uint64_t a, uint64_t b) {
  while (a != 0) {
    const uint64_t r = b % a;
    b = a;
    a = r;
  }
  return b;
}

// x ** y for floats. A whole exponent from -1 to 4 is multiplications, as
// NumPy's own power does for 2 and -1: a call of pow keeps its loop from
// vectorizing (GPT-2's gelu has x ** 3: 7% of a token). x * x and 1 / x are
// pow's own results; x ** 3 and x ** 4 round twice, within 2 ulp of it.
::llvm::Value* StepEmitter::float_pow(::llvm::Value* x, ::llvm::Value* y) {
  if (auto* c = ::llvm::dyn_cast<::llvm::ConstantFP>(y)) {
    const ::llvm::APFloat& e = c->getValueAPF();
    const double v = x->getType()->isFloatTy() ? static_cast<double>(e.convertToFloat()) : e.convertToDouble();
    ::llvm::Type* t = x->getType();
    if (v == 0) return ::llvm::ConstantFP::get(t, 1.0);  // 1 for any x, NaN too
    if (v == 1) return x;
    if (v == -1) return b_.CreateFDiv(::llvm::ConstantFP::get(t, 1.0), x);
    if (v == 2) return b_.CreateFMul(x, x);
    if (v == 3) return b_.CreateFMul(b_.CreateFMul(x, x), x);
    if (v == 4) {
      ::llvm::Value* square = b_.CreateFMul(x, x);
      return b_.CreateFMul(square, square);
    }
  }
  return math("powf", "pow", x, y);
}

::llvm::Value* StepEmitter::helper_i64(const char* name, ::llvm::Value* x, ::llvm::Value* y) {
  ::llvm::FunctionCallee f = m_.getOrInsertFunction(name, i64_, i64_, i64_);
  if (auto* fn = ::llvm::dyn_cast<::llvm::Function>(f.getCallee())) {
    fn->setDoesNotAccessMemory();
    fn->setDoesNotThrow();
    fn->setWillReturn();
  }
  return b_.CreateCall(f, {x, y});
}

::llvm::Value* StepEmitter::arith(const Inst& inst, const Operands& arg) {
  const DType dt = inst.dtype;
  ::llvm::Type* t = reg_type(dt);
  const bool fl = ir::is_float(dt);
  switch (inst.op) {
    case Op::kAdd: return fl ? b_.CreateFAdd(arg[0], arg[1]) : b_.CreateAdd(arg[0], arg[1]);
    case Op::kSub: return fl ? b_.CreateFSub(arg[0], arg[1]) : b_.CreateSub(arg[0], arg[1]);
    case Op::kMul: return fl ? b_.CreateFMul(arg[0], arg[1]) : b_.CreateMul(arg[0], arg[1]);
    case Op::kDiv: {
      if (fl) return b_.CreateFDiv(arg[0], arg[1]);
      // Floor division; x // 0 is 0; x // -1 wraps.
      ::llvm::Value *x = arg[0], *y = arg[1];
      ::llvm::Value* zero = ::llvm::ConstantInt::get(t, 0);
      ::llvm::Value* special = b_.CreateOr(b_.CreateICmpEQ(y, zero), b_.CreateICmpEQ(y, ::llvm::ConstantInt::get(t, -1)));
      ::llvm::Value* d = b_.CreateSelect(special, ::llvm::ConstantInt::get(t, 1), y);
      ::llvm::Value* q = b_.CreateSDiv(x, d);
      ::llvm::Value* m = b_.CreateSRem(x, d);
      ::llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(m, zero), b_.CreateICmpSLT(b_.CreateXor(m, d), zero));
      q = b_.CreateSub(q, b_.CreateZExt(adjust, t));
      q = b_.CreateSelect(b_.CreateICmpEQ(y, zero), zero, q);
      return b_.CreateSelect(b_.CreateICmpEQ(y, ::llvm::ConstantInt::get(t, -1)), b_.CreateNeg(x), q);
    }
    case Op::kPow: {
      if (fl) return float_pow(arg[0], arg[1]);
      fail_if(b_.CreateICmpSLT(arg[1], ::llvm::ConstantInt::get(t, 0)));
      return b_.CreateTrunc(helper_i64("shapejit_ipow_i64", b_.CreateSExt(arg[0], i64_), b_.CreateSExt(arg[1], i64_)), t);
    }
    case Op::kGcd: {
      // NumPy's: Euclid's on the magnitudes as unsigned in the element's
      // width (|INT_MIN| is 2^width-1), the result back in it.
      ::llvm::Value* zero = ::llvm::ConstantInt::get(t, 0);
      auto magnitude = [&](::llvm::Value* v) {
        return b_.CreateZExt(b_.CreateSelect(b_.CreateICmpSLT(v, zero), b_.CreateSub(zero, v), v), i64_);
      };
      return b_.CreateTrunc(helper_i64("shapejit_gcd_u64", magnitude(arg[0]), magnitude(arg[1])), t);
    }
    case Op::kBitAnd: return b_.CreateAnd(arg[0], arg[1]);
    case Op::kBitOr: return b_.CreateOr(arg[0], arg[1]);
    case Op::kBitXor: return b_.CreateXor(arg[0], arg[1]);
    case Op::kShiftLeft:
    case Op::kShiftRight: {
      // Counts outside [0, width) give NumPy's 0 (or -1 shifting a negative
      // right); LLVM's shift of them would be poison, so they shift by 0.
      ::llvm::Value *x = arg[0], *y = arg[1];
      const uint64_t bits = t->getIntegerBitWidth();
      ::llvm::Value* zero = ::llvm::ConstantInt::get(t, 0);
      ::llvm::Value* in_range = b_.CreateICmpULT(y, ::llvm::ConstantInt::get(t, bits));  // unsigned: negatives too
      ::llvm::Value* count = b_.CreateSelect(in_range, y, zero);
      if (inst.op == Op::kShiftLeft) return b_.CreateSelect(in_range, b_.CreateShl(x, count), zero);
      ::llvm::Value* fill = b_.CreateSelect(b_.CreateICmpSLT(x, zero), ::llvm::ConstantInt::get(t, -1, true), zero);
      return b_.CreateSelect(in_range, b_.CreateAShr(x, count), fill);
    }
    case Op::kAtan2: return math("atan2f", "atan2", arg[0], arg[1]);
    case Op::kHypot: {
      // Inline and vectorizable, scaled so that nothing overflows or
      // underflows: big * sqrt(1 + (small / big)^2), within an ulp or so of
      // libm's (a call per element, which fusion repeats in each reader: a
      // flock's distances were two thirds of its step). C's special cases:
      // an infinity wins over a NaN; a NaN otherwise; hypot(0, 0) is 0.
      ::llvm::Value *ax = intrinsic(::llvm::Intrinsic::fabs, arg[0]), *ay = intrinsic(::llvm::Intrinsic::fabs, arg[1]);
      ::llvm::Value* big = b_.CreateSelect(b_.CreateFCmpOGT(ax, ay), ax, ay);
      ::llvm::Value* small = b_.CreateSelect(b_.CreateFCmpOGT(ax, ay), ay, ax);
      ::llvm::Value* zero = ::llvm::ConstantFP::get(t, 0.0);
      ::llvm::Value* r = b_.CreateFDiv(small, big);
      ::llvm::Value* h = b_.CreateFMul(big, intrinsic(::llvm::Intrinsic::sqrt, b_.CreateFAdd(::llvm::ConstantFP::get(t, 1.0), b_.CreateFMul(r, r))));
      h = b_.CreateSelect(b_.CreateFCmpOEQ(big, zero), zero, h);
      h = b_.CreateSelect(b_.CreateFCmpUNO(arg[0], arg[1]), ::llvm::ConstantFP::getNaN(t), h);
      ::llvm::Value* inf = ::llvm::ConstantFP::getInfinity(t);
      return b_.CreateSelect(b_.CreateOr(b_.CreateFCmpOEQ(ax, inf), b_.CreateFCmpOEQ(ay, inf)), inf, h);
    }
    case Op::kFmod: return math("fmodf", "fmod", arg[0], arg[1]);
    case Op::kNextafter: return math("nextafterf", "nextafter", arg[0], arg[1]);
    case Op::kMaximum:
    case Op::kMinimum: {
      ::llvm::Value *x = arg[0], *y = arg[1];
      const bool mx = inst.op == Op::kMaximum;
      if (!fl) {
        ::llvm::Value* lt = dt == DType::kBool ? b_.CreateICmpULT(mx ? x : y, mx ? y : x) : b_.CreateICmpSLT(mx ? x : y, mx ? y : x);
        return b_.CreateSelect(lt, y, x);
      }
      ::llvm::Value* r = mx ? b_.CreateSelect(b_.CreateFCmpOLT(x, y), y, x) : b_.CreateSelect(b_.CreateFCmpOLT(y, x), y, x);
      return b_.CreateSelect(b_.CreateFCmpUNO(x, y), ::llvm::ConstantFP::getNaN(t), r);
    }
    SJ_NOT_ARITH_OPS(SJ_OP_CASE) break;
  }
  return nullptr;
}

::llvm::Value* StepEmitter::compare(const Inst& inst, const Operands& arg) {
  switch (inst.op) {
    case Op::kAnd: return b_.CreateAnd(convert(arg[0], arg.dtype(0), DType::kBool), convert(arg[1], arg.dtype(1), DType::kBool));
    case Op::kOr: return b_.CreateOr(convert(arg[0], arg.dtype(0), DType::kBool), convert(arg[1], arg.dtype(1), DType::kBool));
    case Op::kEq:
    case Op::kNe:
    case Op::kLt:
    case Op::kLe:
    case Op::kGt:
    case Op::kGe: {
      using P = ::llvm::CmpInst::Predicate;
      const DType od = arg.dtype(0);
      static constexpr P kF[] = {P::FCMP_OEQ, P::FCMP_UNE, P::FCMP_OLT, P::FCMP_OLE, P::FCMP_OGT, P::FCMP_OGE};
      static constexpr P kS[] = {P::ICMP_EQ, P::ICMP_NE, P::ICMP_SLT, P::ICMP_SLE, P::ICMP_SGT, P::ICMP_SGE};
      static constexpr P kU[] = {P::ICMP_EQ, P::ICMP_NE, P::ICMP_ULT, P::ICMP_ULE, P::ICMP_UGT, P::ICMP_UGE};
      int k = static_cast<int>(inst.op) - static_cast<int>(Op::kEq);
      P pred = ir::is_float(od) ? kF[k] : od == DType::kBool ? kU[k] : kS[k];
      return b_.CreateCmp(pred, arg[0], arg[1]);
    }
    case Op::kWhere: return b_.CreateSelect(arg[0], arg[1], arg[2]);
    SJ_UNARY_OPS(SJ_OP_CASE)
    case Op::kCast:
    case Op::kNot:
    SJ_ARITH_OPS(SJ_OP_CASE)
    SJ_NOT_POINTWISE_OPS(SJ_OP_CASE) break;
  }
  return nullptr;
}

}  // namespace shapejit::backends::llvm
