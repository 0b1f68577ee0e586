// Program: a SymExpr compiled to a few stack-machine instructions, so the
// dispatch path evaluates guards and output shapes without recursion or
// allocation (TVM compiles its runtime shape checks the same way).
//
// A load instruction carries two operands (a, b) that the caller interprets:
// guards compile symbols to (input, dim) loads, shape functions to symbol ids.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/sym/expr.h"

namespace shapejit::sym {

class Program {
 public:
  enum class Op : uint8_t { kConst, kLoad, kAdd, kMul, kFloorDiv, kMod, kMin, kMax };
  struct Instr {
    Op op;
    int32_t a = 0, b = 0;
    int64_t imm = 0;
  };
  static constexpr int kInlineStack = 32;  // deeper programs (rare) take a heap stack

  Program() = default;
  // `load(symbol)` gives the (a, b) operands of the load for that symbol.
  static Program compile(Expr e, const std::function<std::pair<int32_t, int32_t>(int)>& load);

  bool is_const() const { return code_.size() == 1 && code_[0].op == Op::kConst; }
  const std::vector<Instr>& code() const { return code_; }

  // `load(a, b)` returns the value of a load instruction. The arithmetic is
  // checked: nullopt when a step overflows int64 (Python's ints would not;
  // a guard that overflows fails, a size that overflows is an error).
  template <typename Load>
  std::optional<int64_t> run(Load&& load) const {
    int64_t inline_stack[kInlineStack];
    std::vector<int64_t> heap;
    int64_t* stack = inline_stack;
    if (stack_size_ > kInlineStack) {
      heap.resize(stack_size_);
      stack = heap.data();
    }
    int sp = 0;
    bool overflow = false;
    for (const Instr& in : code_) {
      switch (in.op) {
        case Op::kConst: stack[sp++] = in.imm; break;
        case Op::kLoad: stack[sp++] = load(in.a, in.b); break;
        default: {
          int64_t y = stack[--sp];
          int64_t x = stack[sp - 1];
          stack[sp - 1] = apply(in.op, x, y, overflow);
        }
      }
    }
    if (overflow) return std::nullopt;
    return stack[0];
  }

 private:
  static int64_t apply(Op op, int64_t x, int64_t y, bool& overflow);
  std::vector<Instr> code_;
  int stack_size_ = 0;
};

}  // namespace shapejit::sym
