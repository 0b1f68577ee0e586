// Inline, vectorizable math for generated kernels.
//
// A call to libm's exp cannot be vectorized (the loop vectorizer would widen
// it into a row of scalar calls), and glibc's exp takes a slow path with an
// errno write for every result that underflows, which is every masked
// position of an attention softmax (exp(-1e30)). The exp here is plain
// arithmetic: it vectorizes with the loop around it and costs the same for
// every input.
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace shapejit::backends::cpu {

// exp(x) for a float or double `x` (scalar type), within 2 ulp of the
// correctly rounded result: Cody-Waite reduction x = n ln2 + r with
// |r| <= ln2 / 2, a Taylor polynomial in r (degree 7 for float, 13 for
// double), scaled by 2^n in two halves so that subnormal results are
// exact-ish and overflow gives inf. NaN gives NaN, -inf gives 0.
llvm::Value* emit_exp(llvm::IRBuilder<>& b, llvm::Value* x);

}  // namespace shapejit::backends::cpu
