#include "core/sym/program.h"

#include <algorithm>

#include "core/support/status.h"

namespace shapejit::sym {

namespace {

struct Emitter {
  const std::function<std::pair<int32_t, int32_t>(int)>& load;
  std::vector<Program::Instr> code;
  int depth = 0, max_depth = 0;

  void push(Program::Instr in) {
    code.push_back(in);
    if (in.op == Program::Op::kConst || in.op == Program::Op::kLoad) {
      max_depth = std::max(max_depth, ++depth);
    } else {
      --depth;
    }
  }
  void constant(int64_t v) { push({Program::Op::kConst, 0, 0, v}); }

  void emit(Expr e) {
    switch (e.kind()) {
      case Kind::kConst: constant(e.const_value()); return;
      case Kind::kSymbol: {
        auto [a, b] = load(e.symbol_id());
        push({Program::Op::kLoad, a, b, 0});
        return;
      }
      case Kind::kAdd:
        constant(e.add_constant());
        for (size_t i = 0; i < e.num_args(); ++i) {
          emit(e.arg(i));
          if (e.coeff(i) != 1) {
            constant(e.coeff(i));
            push({Program::Op::kMul});
          }
          push({Program::Op::kAdd});
        }
        return;
      case Kind::kMul:
        emit(e.arg(0));
        for (size_t i = 1; i < e.num_args(); ++i) {
          emit(e.arg(i));
          push({Program::Op::kMul});
        }
        return;
      case Kind::kFloorDiv: return binary(e, Program::Op::kFloorDiv);
      case Kind::kMod: return binary(e, Program::Op::kMod);
      case Kind::kMin: return binary(e, Program::Op::kMin);
      case Kind::kMax: return binary(e, Program::Op::kMax);
    }
  }
  void binary(Expr e, Program::Op op) {
    emit(e.arg(0));
    emit(e.arg(1));
    push({op});
  }
};

}  // namespace

Program Program::compile(Expr e, const std::function<std::pair<int32_t, int32_t>(int)>& load) {
  Emitter em{load, {}, 0, 0};
  em.emit(e);
  Program p;
  p.code_ = std::move(em.code);
  p.stack_size_ = em.max_depth;
  return p;
}

int64_t Program::apply(Op op, int64_t x, int64_t y, bool& overflow) {
  int64_t r = 0;
  switch (op) {
    case Op::kAdd: overflow |= __builtin_add_overflow(x, y, &r); return r;
    case Op::kMul: overflow |= __builtin_mul_overflow(x, y, &r); return r;
    case Op::kFloorDiv:
      overflow |= x == INT64_MIN && y == -1;
      return floordiv_i64(x, y);
    case Op::kMod: return mod_i64(x, y);
    case Op::kMin: return std::min(x, y);
    case Op::kMax: return std::max(x, y);
    default: return 0;
  }
}

}  // namespace shapejit::sym
