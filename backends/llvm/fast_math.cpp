#include "backends/llvm/fast_math.h"

#include <llvm/IR/Intrinsics.h>

namespace shapejit::backends::cpu {

llvm::Value* emit_exp(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  const bool single = t->isFloatTy();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto fmuladd = [&](llvm::Value* m1, llvm::Value* m2, llvm::Value* a) {
    return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {t}, {m1, m2, a});
  };
  // Past these, exp is inf, or 0 (below half the smallest subnormal).
  const double hi = single ? 88.72283935546875 : 709.782712893384;
  const double lo = single ? -103.97208404541016 : -745.1332191019412;
  llvm::Value* xc = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, c(lo)), c(hi));
  llvm::Value* n = b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b.CreateFMul(xc, c(1.4426950408889634)));
  // r = x - n ln2, with ln2 in two parts (n * ln2_hi is exact).
  const double ln2_hi = single ? 0.693359375 : 6.93147180369123816490e-01;
  const double ln2_lo = single ? -2.12194440e-4 : 1.90821492927058770002e-10;
  llvm::Value* r = fmuladd(n, c(-ln2_hi), xc);
  r = fmuladd(n, c(-ln2_lo), r);
  // Taylor: sum r^k / k!, Horner's form.
  const int degree = single ? 7 : 13;
  double inv_fact[14] = {1};
  for (int k = 1; k <= degree; ++k) inv_fact[k] = inv_fact[k - 1] / k;
  llvm::Value* p = c(inv_fact[degree]);
  for (int k = degree - 1; k >= 0; --k) p = fmuladd(p, r, c(inv_fact[k]));
  // 2^n as two powers, each a normal number: n1 + n2 = n.
  llvm::Type* it = single ? b.getInt32Ty() : b.getInt64Ty();
  const int mantissa = single ? 23 : 52, bias = single ? 127 : 1023;
  llvm::Value* ni = b.CreateFPToSI(n, it);
  llvm::Value* n1 = b.CreateAShr(ni, 1);
  llvm::Value* n2 = b.CreateSub(ni, n1);
  auto pow2 = [&](llvm::Value* e) {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, llvm::ConstantInt::get(it, bias)), mantissa), t);
  };
  llvm::Value* res = b.CreateFMul(b.CreateFMul(p, pow2(n1)), pow2(n2));
  res = b.CreateSelect(b.CreateFCmpOGT(x, c(hi)), llvm::ConstantFP::getInfinity(t), res);
  res = b.CreateSelect(b.CreateFCmpOLT(x, c(lo)), c(0.0), res);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, res);
}

}  // namespace shapejit::backends::cpu
