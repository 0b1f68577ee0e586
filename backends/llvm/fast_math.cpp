#include "backends/llvm/fast_math.h"

#include <llvm/IR/Intrinsics.h>

#include <array>
#include <cmath>
#include <vector>

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

namespace {

llvm::Value* fmuladd(llvm::IRBuilder<>& b, llvm::Value* m1, llvm::Value* m2, llvm::Value* a) {
  return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {m1->getType()}, {m1, m2, a});
}

// expm1(y) for y in [0, 40] (tanh's domain): y = n ln2 + r with |r| <=
// ln2 / 2, expm1(y) = 2^n expm1(r) + (2^n - 1); expm1(r) by its Taylor
// series, so that a small y loses nothing to the subtraction of 1.
llvm::Value* expm1_nonneg(llvm::IRBuilder<>& b, llvm::Value* y) {
  llvm::Type* t = y->getType();
  const bool single = t->isFloatTy();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  llvm::Value* n = b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b.CreateFMul(y, c(1.4426950408889634)));
  const double ln2_hi = single ? 0.693359375 : 6.93147180369123816490e-01;
  const double ln2_lo = single ? -2.12194440e-4 : 1.90821492927058770002e-10;
  llvm::Value* r = fmuladd(b, n, c(-ln2_hi), y);
  r = fmuladd(b, n, c(-ln2_lo), r);
  // expm1(r) = r + r^2 (1/2! + r/3! + ...).
  const int degree = single ? 9 : 16;
  std::vector<double> inv_fact(degree + 1, 1.0);
  for (int k = 1; k <= degree; ++k) inv_fact[k] = inv_fact[k - 1] / k;
  llvm::Value* p = c(inv_fact[degree]);
  for (int k = degree - 1; k >= 2; --k) p = fmuladd(b, p, r, c(inv_fact[k]));
  llvm::Value* em = fmuladd(b, b.CreateFMul(r, r), p, r);
  // 2^n is a normal number: n <= 58.
  llvm::Type* it = single ? b.getInt32Ty() : b.getInt64Ty();
  const int mantissa = single ? 23 : 52, bias = single ? 127 : 1023;
  llvm::Value* pow2 = b.CreateBitCast(b.CreateShl(b.CreateAdd(b.CreateFPToSI(n, it), llvm::ConstantInt::get(it, bias)), mantissa), t);
  return fmuladd(b, pow2, em, b.CreateFSub(pow2, c(1.0)));
}

// Chebyshev interpolants for erf, fitted once from the C library's erf and
// erfc in double: g(s) = erf(sqrt s) / sqrt s on s = x^2 in [0, 0.875^2],
// and h(x) = erfc(x) exp(x^2) on three intervals of x up to 10.25, past
// which exp(-x^2) is below the smallest float.
constexpr int kErfTerms = 12;
constexpr double kErfSmall = 0.875, kErfLimit = 10.25;
struct ErfFit {
  double a, b;
  double coeffs[kErfTerms];
};

std::array<ErfFit, 4> fit_erf() {
  auto g = [](double s) { return s == 0 ? 1.1283791670955126 : std::erf(std::sqrt(s)) / std::sqrt(s); };
  auto h = [](double x) { return std::erfc(x) * std::exp(x * x); };
  std::array<ErfFit, 4> fits = {{{0, kErfSmall * kErfSmall, {}}, {kErfSmall, 2, {}}, {2, 4, {}}, {4, kErfLimit, {}}}};
  for (size_t i = 0; i < fits.size(); ++i) {
    ErfFit& f = fits[i];
    double at[kErfTerms];
    for (int j = 0; j < kErfTerms; ++j) {
      const double u = std::cos(M_PI * (j + 0.5) / kErfTerms);
      const double v = (f.b - f.a) / 2 * u + (f.a + f.b) / 2;
      at[j] = i == 0 ? g(v) : h(v);
    }
    for (int k = 0; k < kErfTerms; ++k) {
      double sum = 0;
      for (int j = 0; j < kErfTerms; ++j) sum += at[j] * std::cos(M_PI * k * (j + 0.5) / kErfTerms);
      f.coeffs[k] = sum * 2 / kErfTerms / (k == 0 ? 2 : 1);
    }
  }
  return fits;
}

const std::array<ErfFit, 4>& erf_fits() {
  static const std::array<ErfFit, 4> fits = fit_erf();
  return fits;
}

}  // namespace

WithOnePlus emit_tanh(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  const bool single = t->isFloatTy();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  llvm::Value* nan = b.CreateFCmpUNO(x, x);
  llvm::Value* abs = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // tanh(|x|) = e / (e + 2), e = expm1(2|x|); past the clamp, tanh rounds
  // to 1 (and the reduction's 2^n stays normal).
  llvm::Value* ax = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, abs, c(single ? 9.5 : 20));
  llvm::Value* e = expm1_nonneg(b, b.CreateFAdd(ax, ax));
  llvm::Value* mag = b.CreateFDiv(e, b.CreateFAdd(e, c(2.0)));
  llvm::Value* value = b.CreateSelect(nan, x, b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, mag, x));
  // 1 + tanh(x) = 2 / (1 + w) for x >= 0 and 2w / (1 + w) below, with
  // w = exp(-2|x|) in [0, 1]: neither subtracts, and the negative tail
  // decays to exp's last subnormal.
  llvm::Value* w = emit_exp(b, b.CreateFMul(abs, c(-2.0)));
  llvm::Value* num = b.CreateSelect(b.CreateFCmpOLT(x, c(0.0)), b.CreateFAdd(w, w), c(2.0));
  llvm::Value* one_plus = b.CreateFDiv(num, b.CreateFAdd(c(1.0), w));
  return {value, b.CreateSelect(nan, x, one_plus)};
}

WithOnePlus emit_erf_f32(llvm::IRBuilder<>& b, llvm::Value* arg, bool over_sqrt2) {
  llvm::Type* t = arg->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  const std::array<ErfFit, 4>& fits = erf_fits();
  // x^2 = hi + lo exactly (lo by a fused multiply-add), halved exactly for
  // arg / sqrt 2: exp(-x^2) is then as good as exp itself, where the
  // rounded x would move it by 2 x^2 half-ulps.
  llvm::Value* x = over_sqrt2 ? b.CreateFMul(arg, c(0.7071067811865476)) : arg;
  llvm::Value* x2 = b.CreateFMul(arg, arg);
  llvm::Value* lo = b.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {arg, arg, b.CreateFNeg(x2)});
  if (over_sqrt2) {
    x2 = b.CreateFMul(x2, c(0.5));
    lo = b.CreateFMul(lo, c(0.5));
  }
  llvm::Value* ax = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), c(kErfLimit));
  // Each lane's interval, and the interpolant's variable mapped to [-1, 1].
  llvm::Value* small = b.CreateFCmpOLT(ax, c(kErfSmall));
  llvm::Value* in[4] = {small, nullptr, b.CreateFCmpOLT(ax, c(4)), b.CreateFCmpOLT(ax, c(2))};
  auto pick = [&](auto field) {
    llvm::Value* v = c(field(fits[3]));
    v = b.CreateSelect(in[2], c(field(fits[2])), v);
    v = b.CreateSelect(in[3], c(field(fits[1])), v);
    return b.CreateSelect(in[0], c(field(fits[0])), v);
  };
  llvm::Value* scale = pick([](const ErfFit& f) { return 2 / (f.b - f.a); });
  llvm::Value* shift = pick([](const ErfFit& f) { return -(f.a + f.b) / (f.b - f.a); });
  llvm::Value* u = fmuladd(b, b.CreateSelect(small, b.CreateFMul(ax, ax), ax), scale, shift);
  // Clenshaw: b_k = c_k + 2u b_{k+1} - b_{k+2}; the value c_0 + u b_1 - b_2.
  llvm::Value* u2 = b.CreateFAdd(u, u);
  llvm::Value *b1 = c(0.0), *b2 = c(0.0);
  for (int k = kErfTerms - 1; k >= 1; --k) {
    llvm::Value* bk = b.CreateFSub(fmuladd(b, u2, b1, pick([k](const ErfFit& f) { return f.coeffs[k]; })), b2);
    b2 = b1;
    b1 = bk;
  }
  llvm::Value* r = b.CreateFSub(fmuladd(b, u, b1, pick([](const ErfFit& f) { return f.coeffs[0]; })), b2);
  // Small |x|: erf = x g(x^2). Otherwise q = erfc(|x|) = exp(-x^2) h(|x|),
  // exp(-x^2) = exp(-hi)(1 - lo).
  llvm::Value* near = b.CreateFMul(x, r);
  llvm::Value* q = b.CreateFMul(b.CreateFMul(emit_exp(b, b.CreateFNeg(x2)), b.CreateFSub(c(1.0), lo)), r);
  q = b.CreateSelect(b.CreateFCmpOGE(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), c(kErfLimit)), c(0.0), q);
  llvm::Value* far = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, b.CreateFSub(c(1.0), q), x);
  llvm::Value* nan = b.CreateFCmpUNO(x, x);
  llvm::Value* value = b.CreateSelect(nan, x, b.CreateSelect(small, near, far));
  llvm::Value* far_one_plus = b.CreateSelect(b.CreateFCmpOLT(x, c(0.0)), q, b.CreateFSub(c(2.0), q));
  llvm::Value* one_plus = b.CreateSelect(nan, x, b.CreateSelect(small, b.CreateFAdd(c(1.0), near), far_one_plus));
  return {value, one_plus};
}

}  // namespace shapejit::backends::cpu
