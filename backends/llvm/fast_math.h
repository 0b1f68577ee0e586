// Inline, vectorizable math for generated kernels.
//
// A call to libm cannot be vectorized (the loop vectorizer would widen it
// into a row of scalar calls), and glibc's exp takes a slow path with an
// errno write for every result that underflows, which is every masked
// position of an attention softmax (exp(-1e30)). The functions here are
// plain arithmetic and selects: they vectorize with the loop around them and
// cost the same for every input.
//
// Each works on a scalar `float` or `double` value (the vectorizer widens
// it); the tests (tests/backends/llvm_test.cpp) hold each to its ulp bound
// over the whole range, and at NaN, infinities, signed zeros and subnormals.
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace shapejit::backends::llvm {

// exp(x), within 2 ulp of the correctly rounded result: Cody-Waite
// reduction x = n ln2 + r with |r| <= ln2 / 2, a Taylor polynomial in r
// (degree 7 for float, 13 for double), scaled by 2^n in two halves so that
// subnormal results are exact-ish and overflow gives inf. NaN gives NaN,
// -inf gives 0.
::llvm::Value* emit_exp(::llvm::IRBuilder<>& b, ::llvm::Value* x);

// exp(x) for x <= 0 or NaN (a difference from a row's max, -x^2),
// subnormal results included (held through softmax to 3 ulp with the
// division's rounding; 1.4 seen in float), from about two thirds of
// emit_exp's constants: n is rounded by adding a magic number that also
// carries the exponent's bias, so that the sum's bits are 2^n (times 2^64,
// undone at the end), and a fitted polynomial (degree 5 for float, 10 for
// double) stands in for the Taylor series. A loop around it keeps its
// constants in registers where one around emit_exp reloads them on every
// iteration. Correct for x up to 43 too; beyond that, not.
::llvm::Value* emit_exp_nonpositive(::llvm::IRBuilder<>& b, ::llvm::Value* x);

// A function f and 1 + f, each computed without the other's cancellation:
// gelu multiplies by 1 + f, which for negative inputs is a small difference
// of two numbers near 1 if taken as written.
struct WithOnePlus {
  ::llvm::Value* value;
  ::llvm::Value* one_plus;
};

// tanh(x) for float or double, within 3 ulp (4 for double): with e = expm1(2|x|) (its own
// reduction as in exp), tanh = sign(x) e / (e + 2), saturating where tanh
// rounds to +-1; 1 + tanh(x) from w = exp(-2|x|), 2 / (1 + w) or, for
// negative x, 2w / (1 + w).
WithOnePlus emit_tanh(::llvm::IRBuilder<>& b, ::llvm::Value* x);

// erf(x) for float, within 3 ulp: erf(x) = x g(x^2) for |x| < 0.875, and
// 1 - exp(-x^2) h(|x|) (with the sign of x) beyond, where g and h =
// erfc exp(x^2) are fitted when the library loads (fast_math.cpp): g a
// polynomial, h one in |x| / (|x| + 2). Every lane computes both and
// selects.
::llvm::Value* emit_erf_f32(::llvm::IRBuilder<>& b, ::llvm::Value* x);

// gelu(x) = x / 2 (1 + erf(y)), y = x / sqrt 2, for float, within 8 ulp
// (5.0 seen; 1e-4 relative below -3, where it decays to 0): 1 + erf(y) is
// erfc(-y), erf's far branch with its h fitted from 0 and its constants
// folded together: erfc(|y|) for negative y, down to the last subnormal,
// and 2 - erfc(|y|), in [1, 2], for the rest: one branch where erf
// computes two.
::llvm::Value* emit_gelu_f32(::llvm::IRBuilder<>& b, ::llvm::Value* x);

}  // namespace shapejit::backends::llvm
