// StepEmitter: one loop step of the loop IR as one LLVM function (codegen.h
// says its signature). Internal to backends/llvm: the loops, memory,
// reductions and index arithmetic are in codegen.cpp, the pointwise ops by
// family in emit_unary.cpp and emit_arith.cpp.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <functional>
#include <unordered_map>
#include <vector>

#include "backends/llvm/codegen.h"

namespace shapejit::backends::llvm {

using ir::DType;
using ir::Op;
using loops::Combine;
using loops::Inst;
using loops::InstKind;
using sym::Expr;
using sym::Kind;

// An instruction's operands: values and dtypes.
struct Operands {
  const Inst& inst;
  const std::vector<::llvm::Value*>& vals;
  const loops::Phase& ph;
  ::llvm::Value* operator[](size_t i) const { return vals[inst.args[i]]; }
  DType dtype(size_t i) const { return ph.body[inst.args[i]].dtype; }
};

class StepEmitter {
 public:
  StepEmitter(const loops::LoopProgram& p, ::llvm::Module& m)
      : p_(p), m_(m), ctx_(m.getContext()), b_(ctx_), i64_(b_.getInt64Ty()), i32_(b_.getInt32Ty()) {}

  Status emit(const loops::LoopStep& step, const std::string& name);

 private:
  // Types.
  ::llvm::Type* reg_type(DType t) {
    switch (t) {
      case DType::kF32: return b_.getFloatTy();
      case DType::kF64: return b_.getDoubleTy();
      case DType::kI32: return i32_;
      case DType::kI64: return i64_;
      case DType::kBool: return b_.getInt1Ty();
    }
    return i64_;
  }
  ::llvm::Type* mem_type(DType t) { return t == DType::kBool ? b_.getInt8Ty() : reg_type(t); }

  // Index arithmetic.
  bool nonneg(Expr e) const { return loops::is_nonnegative(p_, e); }
  ::llvm::Value* expr(Expr e);
  ::llvm::Value* floordiv(Expr a, Expr b, bool want_mod);
  bool invariant(Expr e);
  struct Divisor {
    ::llvm::Value *value, *is_zero, *magic, *shift1, *shift2;  // value: 1 where the divisor is 0
  };
  Divisor invariant_divisor(Expr e);
  ::llvm::Value* divide(::llvm::Value* x, const Divisor& d);

  // Loops: runs body(i) for i in [begin, end).
  void loop(::llvm::Value* begin, ::llvm::Value* end, const std::function<void(::llvm::Value*)>& body);
  void nest(const std::vector<int>& vars, const std::vector<Expr>& extents, size_t d, const std::function<void()>& body);

  // Values.
  ::llvm::Value* load(int buffer, Expr offset, DType dt);
  void store(int buffer, Expr offset, ::llvm::Value* v, DType dt);
  void disjoint(::llvm::Instruction* access, int buffer);
  ::llvm::Value* convert(::llvm::Value* v, DType from, DType to);
  // An instruction's pointwise op; one function per op family.
  ::llvm::Value* op(const Inst& inst, const std::vector<::llvm::Value*>& vals, const loops::Phase& ph);
  ::llvm::Value* unary(const Inst& inst, const Operands& arg);    // emit_unary.cpp
  ::llvm::Value* arith(const Inst& inst, const Operands& arg);    // emit_arith.cpp
  ::llvm::Value* compare(const Inst& inst, const Operands& arg);  // emit_arith.cpp: comparisons, and, or, where
  // libm's function of x (or of x and y), by the float's width.
  ::llvm::Value* math(const char* f32, const char* f64, ::llvm::Value* x, ::llvm::Value* y = nullptr);
  ::llvm::Value* float_pow(::llvm::Value* x, ::llvm::Value* y);
  // A call of one of the JIT's i64 helpers (shapejit_ipow_i64, shapejit_gcd_u64: session.cpp defines them).
  ::llvm::Value* helper_i64(const char* name, ::llvm::Value* x, ::llvm::Value* y);
  ::llvm::Value* intrinsic(::llvm::Intrinsic::ID id, ::llvm::Value* x);
  ::llvm::Value* is_nan(::llvm::Value* x) { return b_.CreateFCmpUNO(x, x); }
  void fail_if(::llvm::Value* cond) { b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt1Ty(), err_), cond), err_); }
  std::vector<::llvm::Value*> body(const loops::Phase& ph);
  void combine(const loops::Reduction& r, size_t k, int phase, const std::vector<::llvm::Value*>& vals);
  ::llvm::Constant* reduction_init(Combine c, DType dt);
  bool float_key(const loops::Reduction& r) const;
  ::llvm::Type* slot_type(const loops::Reduction& r);
  ::llvm::Value* order_key(::llvm::Value* x);
  ::llvm::Value* buffer(int b);
  void scope_accesses(const std::string& name);
  ::llvm::Value* from_order_key(::llvm::Value* key, ::llvm::Type* t);

  const loops::LoopProgram& p_;
  ::llvm::Module& m_;
  ::llvm::LLVMContext& ctx_;
  ::llvm::IRBuilder<> b_;
  ::llvm::Type *i64_, *i32_;
  ::llvm::Function* fn_ = nullptr;
  ::llvm::Value* err_ = nullptr;
  std::unordered_map<int, ::llvm::Value*> bufs_;  // the addresses of the buffers the step touches
  std::vector<std::pair<::llvm::Instruction*, int>> accesses_;  // loads and stores, by buffer, to scope
  std::unordered_map<int, ::llvm::Value*> syms_;
  // Per phase, per reduction: the accumulator slots (value, argmax index)
  // and, once the phase ran, their values.
  std::vector<std::vector<std::pair<::llvm::Value*, ::llvm::Value*>>> slots_, accs_;
};

}  // namespace shapejit::backends::llvm
