#include "backends/llvm/fast_math.h"

#include <llvm/IR/Intrinsics.h>

#include <cmath>
#include <functional>
#include <vector>

namespace shapejit::backends::llvm {

namespace {

::llvm::Value* fmuladd(::llvm::IRBuilder<>& b, ::llvm::Value* m1, ::llvm::Value* m2, ::llvm::Value* a) {
  return b.CreateIntrinsic(::llvm::Intrinsic::fmuladd, {m1->getType()}, {m1, m2, a});
}

// y rounded to the nearest integer n, as a float and as an integer of the
// float's width, for |y| < 2^22: adding 1.5 * 2^mantissa rounds y into the
// low bits of the sum, whose bits less the shifter's are n. Integer
// arithmetic only: AVX2 has no vector double-to-int64 conversion, and
// fptosi there is four scalar conversions and their shuffles.
struct Rounded {
  ::llvm::Value* n;
  ::llvm::Value* ni;
};
Rounded round_to_int(::llvm::IRBuilder<>& b, ::llvm::Value* y) {
  ::llvm::Type* t = y->getType();
  const bool single = t->isFloatTy();
  ::llvm::Type* it = single ? b.getInt32Ty() : b.getInt64Ty();
  const double shifter = single ? 12582912.0 : 6755399441055744.0;  // 1.5 * 2^23, 1.5 * 2^52
  ::llvm::Constant* shift = ::llvm::ConstantFP::get(t, shifter);
  ::llvm::Value* sum = b.CreateFAdd(y, shift);
  return {b.CreateFSub(sum, shift), b.CreateSub(b.CreateBitCast(sum, it), b.CreateBitCast(shift, it))};
}

// ln2 in two parts, hi with few enough bits that n * hi is exact for the
// n a reduction meets.
struct Ln2 {
  double hi, lo;
};
Ln2 ln2_parts(bool single) {
  return single ? Ln2{0.693359375, -2.12194440e-4} : Ln2{6.93147180369123816490e-01, 1.90821492927058770002e-10};
}

// n = rint(x * scale) and 2^(n + 64): t = x scale + magic rounds n into
// t's low bits, already offset by the exponent's bias plus 64, so that t's
// bits shifted up to the exponent field are 2^(n + 64), normal for every n
// down to the smallest subnormal result's (-150, -1075).
struct ScaledPow2 {
  ::llvm::Value* n;
  ::llvm::Value* s;
};
ScaledPow2 rint_and_pow2(::llvm::IRBuilder<>& b, ::llvm::Value* x, double scale) {
  ::llvm::Type* t = x->getType();
  const bool single = t->isFloatTy();
  const int mantissa = single ? 23 : 52, bias = single ? 127 : 1023;
  ::llvm::Constant* magic = ::llvm::ConstantFP::get(t, std::ldexp(1.5, mantissa) + bias + 64);
  ::llvm::Value* tm = fmuladd(b, x, ::llvm::ConstantFP::get(t, scale), magic);
  ::llvm::Type* it = single ? b.getInt32Ty() : b.getInt64Ty();
  return {b.CreateFSub(tm, magic), b.CreateBitCast(b.CreateShl(b.CreateBitCast(tm, it), mantissa), t)};
}

// sum c_k x^k by Estrin's scheme: pairs c_2i + c_2i+1 x, then pairs of
// those with x^2, x^4, ...: about Horner's work, in log2(n) dependent
// steps rather than n. A vector loop's iterations overlap a long chain,
// but its scalar remainder, up to 15 elements of a row of 16-wide
// vectors, runs one chain after another: exp, which runs on rows of any
// length (softmax's), takes Estrin's scheme so that a row just short of a
// multiple of 16 costs no more than that multiple.
::llvm::Value* polynomial(::llvm::IRBuilder<>& b, ::llvm::Value* x, const std::vector<double>& c) {
  ::llvm::Type* t = x->getType();
  std::vector<::llvm::Value*> terms;
  for (double v : c) terms.push_back(::llvm::ConstantFP::get(t, v));
  ::llvm::Value* power = x;
  while (terms.size() > 1) {
    std::vector<::llvm::Value*> next;
    for (size_t i = 0; i + 1 < terms.size(); i += 2) next.push_back(fmuladd(b, terms[i + 1], power, terms[i]));
    if (terms.size() % 2) next.push_back(terms.back());
    terms = std::move(next);
    if (terms.size() > 1) power = b.CreateFMul(power, power);
  }
  return terms[0];
}

// sum c_k x^k by Horner's rule: n dependent steps, each rounding once
// into a sum that the next scales down: fewer multiplies than Estrin's,
// and fewer roundings where terms alternate. erf's g and erfc's h take it:
// their error bounds need the fewer roundings, and gelu's rows are a
// matmul's, whole vectors with no scalar remainder to serialize.
::llvm::Value* horner(::llvm::IRBuilder<>& b, ::llvm::Value* x, const std::vector<double>& c) {
  ::llvm::Type* t = x->getType();
  ::llvm::Value* p = ::llvm::ConstantFP::get(t, c.back());
  for (size_t k = c.size() - 1; k-- > 0;) p = fmuladd(b, p, x, ::llvm::ConstantFP::get(t, c[k]));
  return p;
}

}  // namespace

::llvm::Value* emit_exp(::llvm::IRBuilder<>& b, ::llvm::Value* x) {
  ::llvm::Type* t = x->getType();
  const bool single = t->isFloatTy();
  auto c = [&](double v) { return ::llvm::ConstantFP::get(t, v); };
  // Past these, exp is inf, or 0 (below half the smallest subnormal); the
  // arithmetic then runs on 0 instead, so that no step is subnormal (a
  // subnormal operand costs a microcode assist on every x86 lane).
  const double hi = single ? 88.72283935546875 : 709.782712893384;
  const double lo = single ? -103.97208404541016 : -745.1332191019412;
  ::llvm::Value* over = b.CreateFCmpOGT(x, c(hi));
  ::llvm::Value* under = b.CreateFCmpOLT(x, c(lo));
  ::llvm::Value* xc = b.CreateSelect(b.CreateOr(over, under), c(0.0), x);
  const auto [n, ni] = round_to_int(b, b.CreateFMul(xc, c(1.4426950408889634)));
  // r = x - n ln2, with ln2 in two parts (n * ln2_hi is exact).
  const Ln2 ln2 = ln2_parts(single);
  ::llvm::Value* r = fmuladd(b, n, c(-ln2.hi), xc);
  r = fmuladd(b, n, c(-ln2.lo), r);
  // Taylor: sum r^k / k!.
  const int degree = single ? 7 : 13;
  std::vector<double> inv_fact(degree + 1, 1.0);
  for (int k = 1; k <= degree; ++k) inv_fact[k] = inv_fact[k - 1] / k;
  ::llvm::Value* p = polynomial(b, r, inv_fact);
  // 2^n as two powers, each a normal number: n1 + n2 = n.
  ::llvm::Type* it = single ? b.getInt32Ty() : b.getInt64Ty();
  const int mantissa = single ? 23 : 52, bias = single ? 127 : 1023;
  ::llvm::Value* n1 = b.CreateAShr(ni, 1);
  ::llvm::Value* n2 = b.CreateSub(ni, n1);
  auto pow2 = [&](::llvm::Value* e) {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, ::llvm::ConstantInt::get(it, bias)), mantissa), t);
  };
  ::llvm::Value* res = b.CreateFMul(b.CreateFMul(p, pow2(n1)), pow2(n2));
  res = b.CreateSelect(over, ::llvm::ConstantFP::getInfinity(t), res);
  return b.CreateSelect(under, c(0.0), res);  // NaN: the arithmetic's NaN
}

namespace {

// expm1(y) for y in [0, 40] (tanh's domain): y = n ln2 + r with |r| <=
// ln2 / 2, expm1(y) = 2^n expm1(r) + (2^n - 1); expm1(r) by its Taylor
// series, so that a small y loses nothing to the subtraction of 1.
::llvm::Value* expm1_nonneg(::llvm::IRBuilder<>& b, ::llvm::Value* y) {
  ::llvm::Type* t = y->getType();
  const bool single = t->isFloatTy();
  auto c = [&](double v) { return ::llvm::ConstantFP::get(t, v); };
  const auto [n, ni] = round_to_int(b, b.CreateFMul(y, c(1.4426950408889634)));
  const Ln2 ln2 = ln2_parts(single);
  ::llvm::Value* r = fmuladd(b, n, c(-ln2.hi), y);
  r = fmuladd(b, n, c(-ln2.lo), r);
  // expm1(r) = r + r^2 (1/2! + r/3! + ...).
  const int degree = single ? 9 : 16;
  std::vector<double> inv_fact(degree + 1, 1.0);
  for (int k = 1; k <= degree; ++k) inv_fact[k] = inv_fact[k - 1] / k;
  ::llvm::Value* p = polynomial(b, r, std::vector<double>(inv_fact.begin() + 2, inv_fact.end()));
  ::llvm::Value* em = fmuladd(b, b.CreateFMul(r, r), p, r);
  // 2^n is a normal number: n <= 58.
  ::llvm::Type* it = single ? b.getInt32Ty() : b.getInt64Ty();
  const int mantissa = single ? 23 : 52, bias = single ? 127 : 1023;
  ::llvm::Value* pow2 = b.CreateBitCast(b.CreateShl(b.CreateAdd(ni, ::llvm::ConstantInt::get(it, bias)), mantissa), t);
  return fmuladd(b, pow2, em, b.CreateFSub(pow2, c(1.0)));
}

// erf's fits, made once from the C library's erf and erfc in double by
// Chebyshev interpolation:
//   near 0, g(s) = erf(sqrt s) / sqrt s for s = x^2 in [0, 0.875^2], as a
//     polynomial in s (degree 6, 2e-10 relative);
//   beyond, h(x) = erfc(x) exp(x^2) for x in [lo, 10.25] as a polynomial
//     in v = x / (x + 2) mapped to [-1, 1], where h is nearly polynomial:
//     from lo = 0.875 for erf (11 terms, 6e-10 relative), from 0 for gelu
//     (10 terms: gelu_fit). Past 10.25, exp(-x^2) is below the smallest
//     float.
constexpr double kErfSmall = 0.875, kErfLimit = 10.25;
constexpr int kErfNearTerms = 7;
struct ErfcFit {
  std::vector<double> mono;  // monomial coefficients in u, |u| <= 1
  double v_lo, v_hi;
};

// Chebyshev coefficients of f on [a, b], interpolating at n nodes.
std::vector<double> chebyshev(const std::function<double(double)>& f, double a, double b, int n) {
  std::vector<double> at(n), c(n);
  for (int j = 0; j < n; ++j) at[j] = f((b - a) / 2 * std::cos(M_PI * (j + 0.5) / n) + (a + b) / 2);
  for (int k = 0; k < n; ++k) {
    double sum = 0;
    for (int j = 0; j < n; ++j) sum += at[j] * std::cos(M_PI * k * (j + 0.5) / n);
    c[k] = sum * 2 / n / (k == 0 ? 2 : 1);
  }
  return c;
}

// Chebyshev coefficients (sum c_k T_k(u)) as monomial coefficients in u.
std::vector<double> monomials(const std::vector<double>& c) {
  std::vector<double> tp = {1}, tc = {0, 1}, mono(c.size(), 0);
  mono[0] = c[0];
  for (size_t k = 1; k < c.size(); ++k) {
    for (size_t i = 0; i < tc.size(); ++i) mono[i] += c[k] * tc[i];
    std::vector<double> next(tc.size() + 1, 0);  // T_{k+1} = 2u T_k - T_{k-1}
    for (size_t i = 0; i < tc.size(); ++i) next[i + 1] += 2 * tc[i];
    for (size_t i = 0; i < tp.size(); ++i) next[i] -= tp[i];
    tp = std::move(tc);
    tc = std::move(next);
  }
  return mono;
}

// g as monomials in s: sum c_k T_k(u), u = 2s / b - 1, expanded in s.
std::vector<double> fit_erf_near() {
  const double b = kErfSmall * kErfSmall;
  const std::vector<double> c =
      chebyshev([](double s) { return s == 0 ? 1.1283791670955126 : std::erf(std::sqrt(s)) / std::sqrt(s); }, 0, b, kErfNearTerms);
  std::vector<double> t_prev = {1}, t_cur = {-1, 2 / b}, poly(kErfNearTerms, 0);  // T_0, T_1 of u(s), in s
  poly[0] = c[0];
  for (int k = 1; k < kErfNearTerms; ++k) {
    for (size_t i = 0; i < t_cur.size(); ++i) poly[i] += c[k] * t_cur[i];
    std::vector<double> next(t_cur.size() + 1, 0);  // T_{k+1} = 2u T_k - T_{k-1}
    for (size_t i = 0; i < t_cur.size(); ++i) {
      next[i] -= 2 * t_cur[i];
      next[i + 1] += 4 / b * t_cur[i];
    }
    for (size_t i = 0; i < t_prev.size(); ++i) next[i] -= t_prev[i];
    t_prev = std::move(t_cur);
    t_cur = std::move(next);
  }
  return poly;
}

// h on [x_lo, kErfLimit] in `terms` terms.
ErfcFit fit_erfc_scaled(double x_lo, int terms) {
  ErfcFit fit;
  fit.v_lo = x_lo / (x_lo + 2);
  fit.v_hi = kErfLimit / (kErfLimit + 2);
  fit.mono = monomials(chebyshev(
      [](double v) {
        const double x = 2 * v / (1 - v);
        return std::erfc(x) * std::exp(x * x);
      },
      fit.v_lo, fit.v_hi, terms));
  return fit;
}

// x^2 = hi + lo exactly (lo by a fused multiply-add).
struct Square {
  ::llvm::Value* hi;
  ::llvm::Value* lo;
};
Square exact_square(::llvm::IRBuilder<>& b, ::llvm::Value* x) {
  ::llvm::Value* hi = b.CreateFMul(x, x);
  return {hi, b.CreateIntrinsic(::llvm::Intrinsic::fma, {x->getType()}, {x, x, b.CreateFNeg(hi)})};
}

// erfc(|x|) = exp(-x^2) h(|x|) for |x| = ax in [fit's lo, kErfLimit], 0
// from kErfLimit on (ax arrives clamped there), with x^2 as its exact
// parts: exp(-x^2) = exp(-hi)(1 - lo) is as good as exp itself, where the
// rounded x^2 would move it by 2 x^2 half-ulps. v = ax / (ax + 2) rather
// than 1 - v = 1 / (1 + ax / 2): near 0, v's rounding is that of a small
// number, where 1 - v's (a number near 1) moves h by 2.3 times its size.
::llvm::Value* emit_erfc_abs(::llvm::IRBuilder<>& b, ::llvm::Value* ax, Square x2, const ErfcFit& fit) {
  ::llvm::Type* t = ax->getType();
  auto c = [&](double v) { return ::llvm::ConstantFP::get(t, v); };
  ::llvm::Value* v = b.CreateFDiv(ax, b.CreateFAdd(ax, c(2.0)));
  ::llvm::Value* u = fmuladd(b, v, c(2 / (fit.v_hi - fit.v_lo)), c(-(fit.v_hi + fit.v_lo) / (fit.v_hi - fit.v_lo)));
  ::llvm::Value* h = horner(b, u, fit.mono);
  ::llvm::Value* q = b.CreateFMul(b.CreateFMul(emit_exp_nonpositive(b, b.CreateFNeg(x2.hi)), b.CreateFSub(c(1.0), x2.lo)), h);
  return b.CreateSelect(b.CreateFCmpOGE(ax, c(kErfLimit)), c(0.0), q);
}

// g(r) = (exp(r) - 1) / r on [-ln2 / 2, ln2 / 2] as monomials in r, by
// Chebyshev interpolation in double: 6 terms for float (1e-8 relative),
// 11 for double (2e-17).
std::vector<double> fit_expm1_over_x(int terms) {
  const double h = M_LN2 / 2;
  std::vector<double> mono = monomials(chebyshev([](double r) { return r == 0 ? 1.0 : std::expm1(r) / r; }, -h, h, terms));
  for (size_t k = 1; k < mono.size(); ++k) mono[k] /= std::pow(h, static_cast<double>(k));  // u = r / h
  return mono;
}

}  // namespace

::llvm::Value* emit_exp_nonpositive(::llvm::IRBuilder<>& b, ::llvm::Value* x) {
  ::llvm::Type* t = x->getType();
  const bool single = t->isFloatTy();
  auto c = [&](double v) { return ::llvm::ConstantFP::get(t, v); };
  static const std::vector<double> g32 = fit_expm1_over_x(6), g64 = fit_expm1_over_x(11);
  const std::vector<double>& g = single ? g32 : g64;
  // Below lo, exp(x) rounds to 0: computed on 0 instead (emit_exp says why).
  const double lo = single ? -103.97208404541016 : -745.1332191019412;
  ::llvm::Value* gone = b.CreateFCmpOLT(x, c(lo));
  x = b.CreateSelect(gone, c(0.0), x);
  const auto [n, s] = rint_and_pow2(b, x, 1.4426950408889634);
  // r = x - n ln2 (ln2 in two parts, n ln2_hi exact), |r| <= ln2 / 2.
  const Ln2 ln2 = ln2_parts(single);
  ::llvm::Value* r = fmuladd(b, n, c(-ln2.hi), x);
  r = fmuladd(b, n, c(-ln2.lo), r);
  ::llvm::Value* p = polynomial(b, r, g);
  // exp(x) = 2^n (1 + r g(r)), scaled back by 2^-64 (exact for a normal
  // result, one rounding for a subnormal one); 0 below the smallest
  // subnormal's half, and for -inf. NaN stays NaN.
  ::llvm::Value* e = b.CreateFMul(fmuladd(b, b.CreateFMul(r, s), p, s), c(std::ldexp(1.0, -64)));
  return b.CreateSelect(gone, c(0.0), e);
}

WithOnePlus emit_tanh(::llvm::IRBuilder<>& b, ::llvm::Value* x) {
  ::llvm::Type* t = x->getType();
  const bool single = t->isFloatTy();
  auto c = [&](double v) { return ::llvm::ConstantFP::get(t, v); };
  ::llvm::Value* nan = b.CreateFCmpUNO(x, x);
  ::llvm::Value* abs = b.CreateUnaryIntrinsic(::llvm::Intrinsic::fabs, x);
  // tanh(|x|) = e / (e + 2), e = expm1(2|x|); past the clamp, tanh rounds
  // to 1 (and the reduction's 2^n stays normal).
  ::llvm::Value* ax = b.CreateBinaryIntrinsic(::llvm::Intrinsic::minnum, abs, c(single ? 9.5 : 20));
  ::llvm::Value* e = expm1_nonneg(b, b.CreateFAdd(ax, ax));
  ::llvm::Value* mag = b.CreateFDiv(e, b.CreateFAdd(e, c(2.0)));
  ::llvm::Value* value = b.CreateSelect(nan, x, b.CreateBinaryIntrinsic(::llvm::Intrinsic::copysign, mag, x));
  // 1 + tanh(x) = 2 / (1 + w) for x >= 0 and 2w / (1 + w) below, with
  // w = exp(-2|x|) in [0, 1]: neither subtracts, and the negative tail
  // decays to exp's last subnormal.
  ::llvm::Value* w = emit_exp_nonpositive(b, b.CreateFMul(abs, c(-2.0)));
  ::llvm::Value* num = b.CreateSelect(b.CreateFCmpOLT(x, c(0.0)), b.CreateFAdd(w, w), c(2.0));
  ::llvm::Value* one_plus = b.CreateFDiv(num, b.CreateFAdd(c(1.0), w));
  return {value, b.CreateSelect(nan, x, one_plus)};
}

::llvm::Value* emit_erf_f32(::llvm::IRBuilder<>& b, ::llvm::Value* x) {
  ::llvm::Type* t = x->getType();
  auto c = [&](double v) { return ::llvm::ConstantFP::get(t, v); };
  static const std::vector<double> near = fit_erf_near();
  static const ErfcFit far = fit_erfc_scaled(kErfSmall, 11);
  ::llvm::Value* ax = b.CreateBinaryIntrinsic(::llvm::Intrinsic::minnum, b.CreateUnaryIntrinsic(::llvm::Intrinsic::fabs, x), c(kErfLimit));
  // Small |x|: erf = x g(x^2). Otherwise 1 - erfc(|x|), with the sign of x.
  ::llvm::Value* g = horner(b, b.CreateFMul(ax, ax), near);
  ::llvm::Value* q = emit_erfc_abs(b, ax, exact_square(b, x), far);
  ::llvm::Value* value = b.CreateSelect(b.CreateFCmpOLT(ax, c(kErfSmall)), b.CreateFMul(x, g),
                                      b.CreateBinaryIntrinsic(::llvm::Intrinsic::copysign, b.CreateFSub(c(1.0), q), x));
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, value);
}

namespace {

// gelu's h from 0 in 10 terms (1.5e-7 relative at worst, 3.6e-8 where
// |x| < 3, the 8 ulp range), as monomials in w = v - the fit's middle
// (an add, where u's map is a multiply-add), scaled by 2^-65: the exp below
// comes back 2^64 times too large, and gelu wants erfc / 2.
struct GeluFit {
  std::vector<double> h;
  double v_mid;
};
const GeluFit& gelu_fit() {
  static const GeluFit fit = [] {
    const ErfcFit f = fit_erfc_scaled(0, 10);
    const double half = (f.v_hi - f.v_lo) / 2;
    GeluFit g{f.mono, (f.v_hi + f.v_lo) / 2};
    for (size_t k = 0; k < g.h.size(); ++k) g.h[k] = std::ldexp(g.h[k] / std::pow(half, static_cast<double>(k)), -65);
    return g;
  }();
  return fit;
}

// exp(r) = 1 + r g(r) for |r| <= ln2 / 2 (fit_expm1_over_x's 6 terms) as
// 1 + (2r) g'(2r): g's coefficients for the argument 2r, halved.
const std::vector<double>& gelu_exp_fit() {
  static const std::vector<double> g = [] {
    std::vector<double> p = fit_expm1_over_x(6);
    for (size_t k = 0; k < p.size(); ++k) p[k] = std::ldexp(p[k], -static_cast<int>(k) - 1);
    return p;
  }();
  return g;
}

}  // namespace

// gelu(x) = x erfc(-x / sqrt 2) / 2. With a = |x| / sqrt 2 and
// q = erfc(a) / 2 = exp(-a^2) h(a) / 2: x q below 0, x (1 - q) from 0 up.
// A GEMM's epilogue runs this on whole vectors, bound by the multiplies
// (two ports), so every constant is folded into a neighbour:
//   v = a / (a + 2) = |x| / (|x| + 2 sqrt 2), h in v less its middle;
//   a^2 = x^2 / 2 from x^2's exact parts hi + lo: exp(-hi / 2) by
//   n = rint(-hi / 2 / ln2) and 2r = -hi - 2n ln2 (nothing halved), times
//   1 - lo / 2 (emit_erfc_abs says why);
//   exp's 2^64 and q's 1/2 in h's coefficients.
// Faster than erf's own branch, and within 5.0 ulp.
// |x| is clamped at a = kErfLimit, where q has long since rounded to 0, so
// that x^2 and 2^(n + 64) stay normal; x multiplies last (inf gives inf,
// NaN NaN, -inf NaN as 0.5 x erfc(inf) does).
::llvm::Value* emit_gelu_f32(::llvm::IRBuilder<>& b, ::llvm::Value* x) {
  ::llvm::Type* t = x->getType();
  auto c = [&](double v) { return ::llvm::ConstantFP::get(t, v); };
  const GeluFit& fit = gelu_fit();
  ::llvm::Value* ax =
      b.CreateBinaryIntrinsic(::llvm::Intrinsic::minnum, b.CreateUnaryIntrinsic(::llvm::Intrinsic::fabs, x), c(kErfLimit * M_SQRT2));
  const Square x2 = exact_square(b, ax);
  ::llvm::Value* v = b.CreateFDiv(ax, b.CreateFAdd(ax, c(2 * M_SQRT2)));
  ::llvm::Value* h = horner(b, b.CreateFSub(v, c(fit.v_mid)), fit.h);
  const auto [n, s] = rint_and_pow2(b, x2.hi, -0.5 * M_LOG2E);  // n >= -152
  const Ln2 ln2 = ln2_parts(true);
  ::llvm::Value* r2 = fmuladd(b, n, c(-2 * ln2.hi), b.CreateFNeg(x2.hi));  // 2 ln2_hi n: exact
  r2 = fmuladd(b, n, c(-2 * ln2.lo), r2);
  ::llvm::Value* e = fmuladd(b, b.CreateFMul(r2, s), horner(b, r2, gelu_exp_fit()), s);
  // h times the correction first: a subnormal q rounds once.
  ::llvm::Value* q = b.CreateFMul(e, b.CreateFMul(h, fmuladd(b, x2.lo, c(-0.5), c(1.0))));
  ::llvm::Value* half_plus = b.CreateSelect(b.CreateFCmpOLT(x, c(0.0)), q, b.CreateFSub(c(1.0), q));
  return b.CreateFMul(x, half_plus);
}

}  // namespace shapejit::backends::llvm
