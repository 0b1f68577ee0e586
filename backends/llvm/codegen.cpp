#include "backends/llvm/codegen.h"

#include <map>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "backends/llvm/emitter.h"

namespace shapejit::backends::llvm {

extern "C" int64_t shapejit_udiv_magic(int64_t divisor) {
  const auto d = static_cast<uint64_t>(divisor);
  const int l = d <= 1 ? 0 : 64 - __builtin_clzll(d - 1);  // ceil(log2 d)
  const unsigned __int128 excess = (static_cast<unsigned __int128>(1) << l) - d;
  return static_cast<int64_t>(static_cast<uint64_t>((excess << 64) / d) + 1);
}

// Whether `e` reads only what the step's entry block loads (the program's
// symbols): not a loop's index, nor a row's outer index, nor a value.
bool StepEmitter::invariant(Expr e) {
  switch (e.kind()) {
    case Kind::kConst: return true;
    case Kind::kSymbol: {
      auto* inst = ::llvm::dyn_cast<::llvm::Instruction>(syms_.at(e.symbol_id()));
      return !inst || inst->getParent() == &fn_->getEntryBlock();
    }
    default:
      for (size_t i = 0; i < e.num_args(); ++i) {
        if (!invariant(e.arg(i))) return false;
      }
      return true;
  }
}

// A divisor the loops do not change, made ready in the entry block for
// division by a multiply: Granlund and Montgomery's round-up method
// ("Division by invariant integers using multiplication", 1994, figure
// 4.1), exact for every x below 2^64. A dynamic kernel's views divide by
// sizes it reads at run time (a reshape of a permuted [heads, tokens, head
// size] into [tokens, width]: each element's head and its place in it),
// and there two divisions an element cost more than the copy they index.
StepEmitter::Divisor StepEmitter::invariant_divisor(Expr e) {
  ::llvm::IRBuilderBase::InsertPointGuard keep(b_);
  // Before the entry block's branch into the loops (while the entry block
  // is still being written, there is no branch yet, and this is its end).
  if (::llvm::Instruction* branch = fn_->getEntryBlock().getTerminator()) b_.SetInsertPoint(branch);
  Divisor d;
  ::llvm::Value* y = expr(e);
  d.is_zero = b_.CreateICmpEQ(y, b_.getInt64(0));
  d.value = b_.CreateSelect(d.is_zero, b_.getInt64(1), y);
  ::llvm::FunctionCallee f = m_.getOrInsertFunction("shapejit_udiv_magic", i64_, i64_);
  if (auto* fn = ::llvm::dyn_cast<::llvm::Function>(f.getCallee())) {
    fn->setDoesNotAccessMemory();
    fn->setDoesNotThrow();
    fn->setWillReturn();
  }
  d.magic = b_.CreateCall(f, {d.value});
  ::llvm::Value* lz = b_.CreateBinaryIntrinsic(::llvm::Intrinsic::ctlz, b_.CreateSub(d.value, b_.getInt64(1)), b_.getFalse());
  ::llvm::Value* l = b_.CreateSub(b_.getInt64(64), lz);  // ceil(log2 d): 0 for d = 1
  d.shift1 = b_.CreateSelect(b_.CreateICmpEQ(l, b_.getInt64(0)), b_.getInt64(0), b_.getInt64(1));
  d.shift2 = b_.CreateSub(l, d.shift1);
  return d;
}

// x / d: the high half of x * magic, from four 32 x 32-bit products (which
// vectorize, where a 128-bit multiply is scalarized lane by lane), then
// the shifts.
::llvm::Value* StepEmitter::divide(::llvm::Value* x, const Divisor& d) {
  ::llvm::Value* low32 = b_.getInt64(0xffffffff);
  ::llvm::Value *xl = b_.CreateAnd(x, low32), *xh = b_.CreateLShr(x, 32);
  ::llvm::Value *ml = b_.CreateAnd(d.magic, low32), *mh = b_.CreateLShr(d.magic, 32);
  ::llvm::Value* u = b_.CreateAdd(b_.CreateMul(xh, ml), b_.CreateLShr(b_.CreateMul(xl, ml), 32));
  ::llvm::Value* v = b_.CreateAdd(b_.CreateMul(xl, mh), b_.CreateAnd(u, low32));
  ::llvm::Value* high = b_.CreateAdd(b_.CreateMul(xh, mh), b_.CreateAdd(b_.CreateLShr(u, 32), b_.CreateLShr(v, 32)));
  return b_.CreateLShr(b_.CreateAdd(high, b_.CreateLShr(b_.CreateSub(x, high), d.shift1)), d.shift2);
}

// Python's floor division and modulo; x // 0 and x % 0 are 0 (never observed:
// divisors come from sizes that are non-zero wherever the code runs).
::llvm::Value* StepEmitter::floordiv(Expr a, Expr b, bool want_mod) {
  ::llvm::Value* zero = b_.getInt64(0);
  if (!b.is_const() && nonneg(a) && nonneg(b) && invariant(b)) {
    ::llvm::Value* x = expr(a);
    const Divisor d = invariant_divisor(b);
    ::llvm::Value* q = divide(x, d);
    return b_.CreateSelect(d.is_zero, zero, want_mod ? b_.CreateSub(x, b_.CreateMul(q, d.value)) : q);
  }
  ::llvm::Value *x = expr(a), *y = expr(b);
  ::llvm::Value* is_zero = b_.CreateICmpEQ(y, zero);
  ::llvm::Value* safe = b.is_const() && b.const_value() != 0 ? y : b_.CreateSelect(is_zero, b_.getInt64(1), y);
  ::llvm::Value* r;
  if (nonneg(a) && nonneg(b)) {
    r = want_mod ? b_.CreateURem(x, safe) : b_.CreateUDiv(x, safe);
  } else {
    // sdiv overflows on INT64_MIN / -1: route -1 through negation.
    ::llvm::Value* minus_one = b_.CreateICmpEQ(safe, b_.getInt64(-1));
    ::llvm::Value* d = b_.CreateSelect(minus_one, b_.getInt64(1), safe);
    ::llvm::Value* q = b_.CreateSDiv(x, d);
    ::llvm::Value* m = b_.CreateSRem(x, d);
    ::llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(m, zero), b_.CreateICmpSLT(b_.CreateXor(m, d), zero));
    q = b_.CreateSub(q, b_.CreateZExt(adjust, i64_));
    m = b_.CreateSelect(adjust, b_.CreateAdd(m, d), m);
    q = b_.CreateSelect(minus_one, b_.CreateNeg(x), q);
    m = b_.CreateSelect(minus_one, zero, m);
    r = want_mod ? m : q;
  }
  return b.is_const() ? r : b_.CreateSelect(is_zero, zero, r);
}

::llvm::Value* StepEmitter::expr(Expr e) {
  switch (e.kind()) {
    case Kind::kConst: return b_.getInt64(e.const_value());
    case Kind::kSymbol: return syms_.at(e.symbol_id());
    case Kind::kAdd: {
      ::llvm::Value* v = b_.getInt64(e.add_constant());
      for (size_t i = 0; i < e.num_args(); ++i) {
        ::llvm::Value* t = expr(e.arg(i));
        if (e.coeff(i) != 1) t = b_.CreateMul(t, b_.getInt64(e.coeff(i)));
        v = b_.CreateAdd(v, t);
      }
      return v;
    }
    case Kind::kMul: {
      ::llvm::Value* v = expr(e.arg(0));
      for (size_t i = 1; i < e.num_args(); ++i) v = b_.CreateMul(v, expr(e.arg(i)));
      return v;
    }
    case Kind::kFloorDiv: return floordiv(e.arg(0), e.arg(1), false);
    case Kind::kMod: return floordiv(e.arg(0), e.arg(1), true);
    case Kind::kMin:
    case Kind::kMax: {
      ::llvm::Value *x = expr(e.arg(0)), *y = expr(e.arg(1));
      ::llvm::Value* lt = b_.CreateICmpSLT(x, y);
      return e.kind() == Kind::kMin ? b_.CreateSelect(lt, x, y) : b_.CreateSelect(lt, y, x);
    }
  }
  return b_.getInt64(0);
}

void StepEmitter::loop(::llvm::Value* begin, ::llvm::Value* end, const std::function<void(::llvm::Value*)>& body) {
  ::llvm::BasicBlock* pre = b_.GetInsertBlock();
  ::llvm::BasicBlock* head = ::llvm::BasicBlock::Create(ctx_, "loop", fn_);
  ::llvm::BasicBlock* exit = ::llvm::BasicBlock::Create(ctx_, "exit", fn_);
  b_.CreateCondBr(b_.CreateICmpSLT(begin, end), head, exit);
  b_.SetInsertPoint(head);
  ::llvm::PHINode* i = b_.CreatePHI(i64_, 2);
  i->addIncoming(begin, pre);
  body(i);
  ::llvm::Value* next = b_.CreateAdd(i, b_.getInt64(1));
  i->addIncoming(next, b_.GetInsertBlock());
  b_.CreateCondBr(b_.CreateICmpSLT(next, end), head, exit);
  b_.SetInsertPoint(exit);
}

void StepEmitter::nest(const std::vector<int>& vars, const std::vector<Expr>& extents, size_t d, const std::function<void()>& body) {
  if (d == vars.size()) {
    body();
    return;
  }
  loop(b_.getInt64(0), expr(extents[d]), [&](::llvm::Value* i) {
    syms_[vars[d]] = i;
    nest(vars, extents, d + 1, body);
  });
}

// A buffer's address, loaded once in the entry block where the step first
// touches it (a step loads the buffers it uses, not every buffer of the
// program: a whole model's steps would be quadratic in its buffers).
::llvm::Value* StepEmitter::buffer(int b) {
  auto [it, fresh] = bufs_.try_emplace(b, nullptr);
  if (fresh) {
    ::llvm::BasicBlock& entry = fn_->getEntryBlock();
    ::llvm::IRBuilder<> at(&entry, entry.begin());
    ::llvm::Type* ptr = ::llvm::PointerType::getUnqual(ctx_);
    it->second = at.CreateLoad(ptr, at.CreateConstGEP1_64(ptr, fn_->getArg(0), b), "b" + std::to_string(b));
  }
  return it->second;
}

// Buffers never overlap (the kernel allocates outputs apart from inputs):
// each buffer the step touches gets its own alias scope, and each access
// the others' as noalias, so the vectorizer needs no runtime checks. The
// scopes are made once the step is emitted (scope_accesses), over the
// buffers it touches alone, so that a step's metadata grows with its own
// accesses, not with the square of the program's buffers.
void StepEmitter::disjoint(::llvm::Instruction* access, int buffer) { accesses_.emplace_back(access, buffer); }

void StepEmitter::scope_accesses(const std::string& name) {
  std::map<int, ::llvm::Metadata*> scope;
  for (const auto& [access, b] : accesses_) scope.emplace(b, nullptr);
  ::llvm::MDBuilder md(ctx_);
  ::llvm::MDNode* domain = md.createAnonymousAliasScopeDomain(name);
  for (auto& [b, s] : scope) s = md.createAnonymousAliasScope(domain, "b" + std::to_string(b));
  std::map<int, ::llvm::MDNode*> others;
  for (const auto& [b, s] : scope) {
    std::vector<::llvm::Metadata*> rest;
    for (const auto& [c, t] : scope) {
      if (c != b) rest.push_back(t);
    }
    others[b] = ::llvm::MDNode::get(ctx_, rest);
  }
  for (const auto& [access, b] : accesses_) {
    access->setMetadata(::llvm::LLVMContext::MD_alias_scope, ::llvm::MDNode::get(ctx_, {scope[b]}));
    access->setMetadata(::llvm::LLVMContext::MD_noalias, others[b]);
  }
  accesses_.clear();
}

::llvm::Value* StepEmitter::load(int buffer, Expr offset, DType dt) {
  ::llvm::Value* ptr = b_.CreateGEP(mem_type(dt), this->buffer(buffer), expr(offset));
  ::llvm::LoadInst* v = b_.CreateLoad(mem_type(dt), ptr);
  disjoint(v, buffer);
  return dt == DType::kBool ? b_.CreateICmpNE(v, b_.getInt8(0)) : static_cast<::llvm::Value*>(v);
}

void StepEmitter::store(int buffer, Expr offset, ::llvm::Value* v, DType dt) {
  ::llvm::Value* ptr = b_.CreateGEP(mem_type(dt), this->buffer(buffer), expr(offset));
  if (dt == DType::kBool) v = b_.CreateZExt(v, b_.getInt8Ty());
  disjoint(b_.CreateStore(v, ptr), buffer);
}

// As the reference's cast: float to integer truncates, saturates and maps
// NaN to 0 (fptosi.sat does all three); to bool is `!= 0`.
::llvm::Value* StepEmitter::convert(::llvm::Value* v, DType from, DType to) {
  if (from == to) return v;
  ::llvm::Type* t = reg_type(to);
  if (to == DType::kBool) {
    return ir::is_float(from) ? b_.CreateFCmpUNE(v, ::llvm::ConstantFP::get(v->getType(), 0.0)) : b_.CreateICmpNE(v, ::llvm::ConstantInt::get(v->getType(), 0));
  }
  if (from == DType::kBool) return ir::is_float(to) ? b_.CreateUIToFP(v, t) : b_.CreateZExt(v, t);
  if (ir::is_float(from) && ir::is_float(to)) return to == DType::kF64 ? b_.CreateFPExt(v, t) : b_.CreateFPTrunc(v, t);
  if (ir::is_float(from)) return b_.CreateIntrinsic(::llvm::Intrinsic::fptosi_sat, {t, v->getType()}, {v});
  if (ir::is_float(to)) return b_.CreateSIToFP(v, t);
  return b_.CreateSExtOrTrunc(v, t);
}



::llvm::Value* StepEmitter::op(const Inst& inst, const std::vector<::llvm::Value*>& vals, const loops::Phase& ph) {
  const Operands arg{inst, vals, ph};
  switch (ir::op_info(inst.op).cls) {
    case ir::OpClass::kCast: return convert(arg[0], arg.dtype(0), inst.dtype);
    case ir::OpClass::kNot: return b_.CreateNot(arg[0]);
    case ir::OpClass::kUnary: return unary(inst, arg);
    case ir::OpClass::kArith: return arith(inst, arg);
    case ir::OpClass::kLogical:
    case ir::OpClass::kCompare:
    case ir::OpClass::kWhere: return compare(inst, arg);
    SJ_ALONG_AXES_CLASSES(SJ_CLASS_CASE)
    SJ_VIEW_CLASSES(SJ_CLASS_CASE)
    SJ_INDEXING_CLASSES(SJ_CLASS_CASE)
    SJ_SYM_CLASSES(SJ_CLASS_CASE)
    case ir::OpClass::kMatmul: break;  // not an instruction of a phase's body
  }
  return nullptr;
}

std::vector<::llvm::Value*> StepEmitter::body(const loops::Phase& ph) {
  std::vector<::llvm::Value*> vals(ph.body.size(), nullptr);
  for (size_t k = 0; k < ph.body.size(); ++k) {
    const Inst& inst = ph.body[k];
    switch (inst.kind) {
      case InstKind::kLoad: vals[k] = load(inst.buffer, inst.expr, inst.dtype); break;
      case InstKind::kConst: {
        ::llvm::Type* t = reg_type(inst.dtype);
        vals[k] = ir::is_float(inst.dtype) ? ::llvm::ConstantFP::get(t, inst.value.f) : ::llvm::ConstantInt::get(t, inst.value.i, true);
        break;
      }
      case InstKind::kIndex: vals[k] = convert(expr(inst.expr), DType::kI64, inst.dtype); break;
      case InstKind::kOp: vals[k] = op(inst, vals, ph); break;
      case InstKind::kAcc: {
        auto [v, i] = accs_[inst.acc_phase][inst.acc];
        vals[k] = inst.acc_part == 0 ? v : i;
        break;
      }
      case InstKind::kCheckIndex: {
        const DType from = ph.body[inst.args[0]].dtype;
        ::llvm::Value* x = convert(vals[inst.args[0]], from, DType::kI64);
        ::llvm::Value* ok = b_.CreateAnd(b_.CreateICmpSGE(x, b_.getInt64(0)), b_.CreateICmpSLT(x, expr(inst.expr)));
        fail_if(b_.CreateNot(ok));
        vals[k] = b_.CreateSelect(ok, x, b_.getInt64(0));
        syms_[inst.symbol] = vals[k];
        break;
      }
    }
  }
  return vals;
}

::llvm::Constant* StepEmitter::reduction_init(Combine c, DType dt) {
  ::llvm::Type* t = reg_type(dt);
  const bool fl = ir::is_float(dt);
  const bool low = c == Combine::kMax || c == Combine::kMaxSkipNaN || c == Combine::kArgmax;
  if (c == Combine::kSum) return ::llvm::Constant::getNullValue(t);
  if (c == Combine::kProd) return fl ? ::llvm::ConstantFP::get(t, 1.0) : ::llvm::ConstantInt::get(t, 1);
  if (fl) return ::llvm::ConstantFP::getInfinity(t, low);
  if (dt == DType::kBool) return ::llvm::ConstantInt::get(t, low ? 0 : 1);
  ::llvm::APInt v = low ? ::llvm::APInt::getSignedMinValue(t->getIntegerBitWidth()) : ::llvm::APInt::getSignedMaxValue(t->getIntegerBitWidth());
  return ::llvm::ConstantInt::get(t, v);
}

// Float max and min reduce over integer keys: the float's bits with the
// magnitude bits flipped for negatives, so that signed integer order is the
// float order (NaNs placed by their sign). An integer max is a reduction
// the loop vectorizer takes; a float one it takes only under no-NaNs math.
bool StepEmitter::float_key(const loops::Reduction& r) const {
  return (r.combine == Combine::kMax || r.combine == Combine::kMin || r.combine == Combine::kMaxSkipNaN) && ir::is_float(r.acc_dtype);
}

::llvm::Type* StepEmitter::slot_type(const loops::Reduction& r) {
  ::llvm::Type* t = reg_type(r.acc_dtype);
  return float_key(r) ? b_.getIntNTy(t->getPrimitiveSizeInBits()) : t;
}

::llvm::Value* StepEmitter::order_key(::llvm::Value* x) {
  ::llvm::Type* t = x->getType();
  const unsigned bits = t->getPrimitiveSizeInBits();
  ::llvm::Type* it = b_.getIntNTy(bits);
  ::llvm::Value* i = b_.CreateBitCast(x, it);
  ::llvm::Value* magnitude = ::llvm::ConstantInt::get(it, ::llvm::APInt::getSignedMaxValue(bits));
  return b_.CreateXor(i, b_.CreateAnd(b_.CreateAShr(i, bits - 1), magnitude));
}

::llvm::Value* StepEmitter::from_order_key(::llvm::Value* key, ::llvm::Type* t) {
  const unsigned bits = t->getPrimitiveSizeInBits();
  ::llvm::Value* magnitude = ::llvm::ConstantInt::get(key->getType(), ::llvm::APInt::getSignedMaxValue(bits));
  return b_.CreateBitCast(b_.CreateXor(key, b_.CreateAnd(b_.CreateAShr(key, bits - 1), magnitude)), t);
}

void StepEmitter::combine(const loops::Reduction& r, size_t k, int phase, const std::vector<::llvm::Value*>& vals) {
  auto [slot, index_slot] = slots_[phase][k];
  ::llvm::Type* t = slot_type(r);
  const bool fl = ir::is_float(r.acc_dtype);
  const bool u = r.acc_dtype == DType::kBool;
  ::llvm::Value* acc = b_.CreateLoad(t, slot);
  ::llvm::Value* v = vals[r.value];
  ::llvm::Value* next = nullptr;
  switch (r.combine) {
    case Combine::kSum: {
      if (!fl) {
        next = b_.CreateAdd(acc, v);
        break;
      }
      // Reassociation lets the loop vectorize; the tests document the tolerance.
      next = b_.CreateFAdd(acc, v);
      if (auto* add = ::llvm::dyn_cast<::llvm::Instruction>(next)) {
        ::llvm::FastMathFlags f;
        f.setAllowReassoc();
        add->setFastMathFlags(f);
      }
      break;
    }
    case Combine::kProd: {
      if (!fl) {
        next = b_.CreateMul(acc, v);
        break;
      }
      next = b_.CreateFMul(acc, v);  // reassociated, as sums are
      if (auto* mul = ::llvm::dyn_cast<::llvm::Instruction>(next)) {
        ::llvm::FastMathFlags f;
        f.setAllowReassoc();
        mul->setFastMathFlags(f);
      }
      break;
    }
    case Combine::kMax:
    case Combine::kMin: {
      const bool mx = r.combine == Combine::kMax;
      if (fl) {  // over keys, NaN the greatest (max) or least (min) so that it propagates
        ::llvm::Value* nan = ::llvm::ConstantFP::getNaN(v->getType(), /*Negative=*/!mx);
        next = b_.CreateBinaryIntrinsic(mx ? ::llvm::Intrinsic::smax : ::llvm::Intrinsic::smin, acc, order_key(b_.CreateSelect(is_nan(v), nan, v)));
        break;
      }
      ::llvm::Value* take;
      if (u) take = mx ? b_.CreateICmpUGT(v, acc) : b_.CreateICmpULT(v, acc);
      else take = mx ? b_.CreateICmpSGT(v, acc) : b_.CreateICmpSLT(v, acc);
      next = b_.CreateSelect(take, v, acc);
      break;
    }
    case Combine::kMaxSkipNaN: {
      ::llvm::Value* x = b_.CreateSelect(is_nan(v), ::llvm::ConstantFP::getInfinity(v->getType(), true), v);
      next = b_.CreateBinaryIntrinsic(::llvm::Intrinsic::smax, acc, order_key(x));
      break;
    }
    case Combine::kArgmax: {
      ::llvm::Value* take;
      if (fl) take = b_.CreateOr(b_.CreateFCmpOGT(v, acc), b_.CreateAnd(is_nan(v), b_.CreateNot(is_nan(acc))));
      else take = u ? b_.CreateICmpUGT(v, acc) : b_.CreateICmpSGT(v, acc);
      next = b_.CreateSelect(take, v, acc);
      ::llvm::Value* idx = b_.CreateLoad(i64_, index_slot);
      b_.CreateStore(b_.CreateSelect(take, vals[r.index], idx), index_slot);
      break;
    }
  }
  b_.CreateStore(next, slot);
}

Status StepEmitter::emit(const loops::LoopStep& step, const std::string& name) {
  ::llvm::Type* ptr = b_.getPtrTy();
  auto* type = ::llvm::FunctionType::get(i32_, {ptr, ptr, i64_, i64_}, false);
  fn_ = ::llvm::Function::Create(type, ::llvm::Function::ExternalLinkage, name, m_);
  fn_->setDoesNotThrow();
  for (int a : {0, 1}) {
    fn_->addParamAttr(a, ::llvm::Attribute::NoAlias);
    fn_->addParamAttr(a, ::llvm::Attribute::ReadOnly);
    fn_->addParamAttr(a, ::llvm::Attribute::NoCapture);
  }
  ::llvm::Value *syms = fn_->getArg(1), *begin = fn_->getArg(2), *end = fn_->getArg(3);
  b_.SetInsertPoint(::llvm::BasicBlock::Create(ctx_, "entry", fn_));
  // Symbols read once (buffer addresses where first used: buffer()).
  const int nparams = p_.num_read_symbols();
  syms_.clear();
  for (int i = 0; i < nparams; ++i) syms_[i] = b_.CreateLoad(i64_, b_.CreateConstGEP1_64(i64_, syms, i), "s" + std::to_string(i));
  bufs_.clear();
  accesses_.clear();
  err_ = b_.CreateAlloca(b_.getInt1Ty(), nullptr, "err");
  b_.CreateStore(b_.getFalse(), err_);
  slots_.assign(step.phases.size(), {});
  accs_.assign(step.phases.size(), {});
  for (size_t ph = 0; ph < step.phases.size(); ++ph) {
    for (const loops::Reduction& r : step.phases[ph].reductions) {
      ::llvm::Value* v = b_.CreateAlloca(slot_type(r));
      ::llvm::Value* i = r.combine == Combine::kArgmax ? b_.CreateAlloca(i64_) : nullptr;
      slots_[ph].emplace_back(v, i);
    }
  }

  loop(begin, end, [&](::llvm::Value* row) {
    // Unravel the flattened row into the outer variables, innermost fastest.
    ::llvm::Value* rest = row;
    for (size_t d = step.outer_vars.size(); d-- > 0;) {
      if (d == 0) {
        syms_[step.outer_vars[d]] = rest;
        break;
      }
      ::llvm::Value* e = expr(step.outer_extents[d]);
      syms_[step.outer_vars[d]] = b_.CreateURem(rest, e);
      rest = b_.CreateUDiv(rest, e);
    }
    for (size_t ph = 0; ph < step.phases.size(); ++ph) {
      const loops::Phase& phase = step.phases[ph];
      for (size_t k = 0; k < phase.reductions.size(); ++k) {
        const loops::Reduction& r = phase.reductions[k];
        ::llvm::Value* init = reduction_init(r.combine, r.acc_dtype);
        b_.CreateStore(float_key(r) ? order_key(init) : init, slots_[ph][k].first);
        if (slots_[ph][k].second) b_.CreateStore(b_.getInt64(0), slots_[ph][k].second);
      }
      nest(phase.vars, phase.extents, 0, [&] {
        std::vector<::llvm::Value*> vals = body(phase);
        for (size_t k = 0; k < phase.reductions.size(); ++k) combine(phase.reductions[k], k, static_cast<int>(ph), vals);
        for (const loops::Store& s : phase.stores) store(s.buffer, s.offset, vals[s.value], p_.buffers[s.buffer].dtype);
      });
      for (size_t k = 0; k < phase.reductions.size(); ++k) {
        auto [v, i] = slots_[ph][k];
        const loops::Reduction& r = phase.reductions[k];
        ::llvm::Value* acc = b_.CreateLoad(slot_type(r), v);
        if (float_key(r)) acc = from_order_key(acc, reg_type(r.acc_dtype));
        ::llvm::Value* idx = i ? b_.CreateLoad(i64_, i) : nullptr;
        accs_[ph].emplace_back(acc, idx);
      }
    }
  });
  b_.CreateRet(b_.CreateZExt(b_.CreateLoad(b_.getInt1Ty(), err_), i32_));
  scope_accesses(name);
  std::string problems;
  ::llvm::raw_string_ostream os(problems);
  if (::llvm::verifyFunction(*fn_, &os)) return internal_error("llvm: generated invalid IR for " + name + ": " + os.str());
  return Status::ok();
}

std::vector<std::string> step_names(const loops::LoopProgram& p) {
  std::vector<std::string> names;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const loops::Step::Kind k = p.steps[i].kind;
    names.push_back(k == loops::Step::Kind::kLoops || k == loops::Step::Kind::kAttention ? "step_" + std::to_string(i) : "");
  }
  return names;
}

Status emit_program(const loops::LoopProgram& p, ::llvm::Module& m) {
  const std::vector<std::string> names = step_names(p);
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (names[i].empty()) continue;
    StepEmitter e(p, m);
    SJ_TRY(e.emit(p.steps[i].loops, names[i]));
  }
  return Status::ok();
}

}  // namespace shapejit::backends::llvm