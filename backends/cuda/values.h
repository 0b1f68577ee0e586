// One value of a generated kernel as a C expression: the C types, literals,
// index arithmetic over the symbols, and each op of a loop body, as the
// reference computes them. Internal to backends/cuda; codegen.cpp writes the
// kernels around these expressions.
#pragma once

#include <string>
#include <vector>

#include "backends/loops/loop_ir.h"

namespace shapejit::backends::cuda {

const char* ctype(ir::DType t);  // a value's C type
const char* mtype(ir::DType t);  // in memory: bool is a byte
std::string literal(ir::DType t, const ir::Scalar& v);

class ValueCode {
 public:
  explicit ValueCode(const loops::LoopProgram& p);

  // The kernel's parameters: the graph's symbols, then the strided inputs'.
  int num_params() const { return nparams_; }
  // S<id> for a parameter (a field of the kernel's Args), V<id> for a loop
  // variable.
  std::string sym(int id) const { return (id < nparams_ ? "S" : "V") + std::to_string(id); }
  // Index arithmetic (i64), Python's floor division and modulo where an
  // operand may be negative.
  std::string expr(sym::Expr e) const;
  // As the reference's cast.
  std::string convert(const std::string& v, ir::DType from, ir::DType to) const;
  // An op instruction of `ph` over its operands' names `vals`; "" for an op
  // with no CUDA code.
  std::string op(const loops::Inst& inst, const std::vector<std::string>& vals, const loops::Phase& ph) const;

 private:
  bool launch_invariant(const loops::Phase& ph, int k) const;

  const loops::LoopProgram& p_;
  const int nparams_;
};

}  // namespace shapejit::backends::cuda
