#include "backends/cuda/codegen.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string_view>

#include "backends/cuda/values.h"

namespace shapejit::backends::cuda {

namespace {

using ir::DType;
using loops::Combine;
using loops::Inst;
using loops::InstKind;
using loops::Phase;
using sym::Expr;

// A reduction's accumulator type, initial value and combine, in C.
struct AccForm {
  std::string type, init, combine;
};

AccForm acc_form(const loops::Reduction& r) {
  const DType t = r.acc_dtype;
  const std::string ct = ctype(t);
  const bool fl = ir::is_float(t);
  const bool low = r.combine == Combine::kMax || r.combine == Combine::kMaxSkipNaN || r.combine == Combine::kArgmax;
  std::string extreme;
  if (fl) extreme = std::string(low ? "(-" : "(") + (t == DType::kF32 ? "SJ_INF_F" : "SJ_INF_D") + ")";
  else if (t == DType::kBool) extreme = low ? "false" : "true";
  else if (t == DType::kI32) extreme = low ? "(-2147483647 - 1)" : "2147483647";
  else extreme = low ? "SJ_I64_MIN" : "9223372036854775807LL";
  switch (r.combine) {
    case Combine::kSum: return {ct, "(" + ct + ")0", "sj_sum"};
    case Combine::kProd: return {ct, "(" + ct + ")1", "sj_prod"};
    case Combine::kMax: return {ct, extreme, "sj_max"};
    case Combine::kMin: return {ct, extreme, "sj_min"};
    case Combine::kMaxSkipNaN: return {ct, extreme, "sj_max_skip_nan"};
    case Combine::kArgmax: return {"sj_arg<" + ct + ">", "sj_arg<" + ct + ">{" + extreme + ", 0}", "sj_argmax"};
  }
  return {ct, "0", "sj_sum"};
}

class Emitter {
 public:
  explicit Emitter(const loops::LoopProgram& p) : p_(p), values_(p), nparams_(values_.num_params()) {}

  Expected<CudaSource> run();

 private:
  // How a phase's loads and stores are written: element by element, or per
  // lane of a four-element access (`quad` loads, inst → array).
  struct Lanes {
    std::map<int, std::string> loads;
    std::map<size_t, std::string> stores;  // store index → array
  };

  std::string sym(int id) const { return values_.sym(id); }
  std::string expr(Expr e) const { return values_.expr(e); }
  std::string acc_name(int phase, int k) const { return "acc" + std::to_string(phase) + "_" + std::to_string(k); }

  // Code fragments (each a statement list).
  std::string prologue(std::string_view body) const;
  void declare(size_t at);
  std::string decode(const std::vector<int>& vars, const std::vector<Expr>& extents, const std::string& flat) const;
  std::string body(const Phase& ph, int phase, const Lanes* lanes, bool hoisted_part = false) const;
  std::string hoist(const Phase& ph, int phase);
  std::string extent(const Phase& ph) const;
  std::string reduce_into(const Phase& ph, int phase, const std::string& group) const;

  void pointwise_kernel(const loops::LoopStep& st, const std::string& name);
  void rows_kernels(const loops::LoopStep& st, const std::string& name);
  void split_kernels(const loops::LoopStep& st, const std::string& name);
  void compact_kernel(const loops::CompactStep& c, const std::string& name);
  std::string quad_path(const loops::LoopStep& st, const Phase& ph) const;

  const loops::LoopProgram& p_;
  const ValueCode values_;
  const int nparams_;
  std::string out_;
  // An op a phase computes that has no CUDA code (ValueCode::op gave
  // none): the program is unsupported.
  mutable std::optional<ir::Op> missing_op_;
  const loops::LoopStep* step_ = nullptr;  // the step being emitted
  std::vector<bool> hoisted_;              // the phase's instructions written before its loop
};

// The dynamic symbols and the buffers that `body` names (S<i>, B<i>), at
// the top of a kernel: a model's graph has hundreds of each, and declaring
// them all in every kernel made the source megabytes that NVRTC parsed for
// many seconds. A buffer that the step does not store to is read through
// the read-only path.
std::string Emitter::prologue(std::string_view body) const {
  std::vector<bool> symbols(static_cast<size_t>(nparams_), false), buffers(p_.buffers.size(), false);
  for (size_t i = 0; i + 1 < body.size(); ++i) {
    const char c = body[i];
    if ((c != 'S' && c != 'B') || !std::isdigit(static_cast<unsigned char>(body[i + 1]))) continue;
    if (i > 0 && (std::isalnum(static_cast<unsigned char>(body[i - 1])) || body[i - 1] == '_')) continue;
    size_t id = 0, j = i + 1;
    for (; j < body.size() && std::isdigit(static_cast<unsigned char>(body[j])); ++j) id = id * 10 + static_cast<size_t>(body[j] - '0');
    if (j < body.size() && (std::isalpha(static_cast<unsigned char>(body[j])) || body[j] == '_')) continue;
    std::vector<bool>& used = c == 'S' ? symbols : buffers;
    if (id < used.size()) used[id] = true;
  }
  std::string s;
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (symbols[i]) s += "  const i64 S" + std::to_string(i) + " = a.s[" + std::to_string(i) + "];\n";
  }
  std::vector<bool> stored(p_.buffers.size(), false);
  for (const Phase& ph : step_->phases) {
    for (const loops::Store& st : ph.stores) stored[st.buffer] = true;
  }
  for (size_t i = 0; i < p_.buffers.size(); ++i) {
    if (!buffers[i]) continue;
    const std::string t = std::string(stored[i] ? "" : "const ") + mtype(p_.buffers[i].dtype), k = std::to_string(i);
    s += "  " + t + "* __restrict__ B" + k + " = (" + t + "*)a.b[" + k + "];\n";
  }
  return s;
}

// Writes the prologue of the kernel whose body starts at `at` in the
// output (its head written before `at`, its body after).
void Emitter::declare(size_t at) { out_.insert(at, prologue(std::string_view(out_).substr(at))); }

// Unravels `flat` into the variables, innermost fastest.
std::string Emitter::decode(const std::vector<int>& vars, const std::vector<Expr>& extents, const std::string& flat) const {
  if (vars.empty()) return "";
  if (vars.size() == 1) return "    const i64 " + sym(vars[0]) + " = " + flat + ";\n";
  const std::string rest = "rest_" + flat;
  std::string s = "    i64 " + rest + " = " + flat + ";\n";
  for (size_t d = vars.size(); d-- > 1;) {
    const std::string e = expr(extents[d]);
    s += "    const i64 " + sym(vars[d]) + " = (i64)((u64)" + rest + " % (u64)" + e + ");\n";
    s += "    " + rest + " = (i64)((u64)" + rest + " / (u64)" + e + ");\n";
  }
  return s + "    const i64 " + sym(vars[0]) + " = " + rest + ";\n";
}

std::string Emitter::extent(const Phase& ph) const {
  Expr e = 1;
  for (const Expr& x : ph.extents) e = e * x;
  return expr(e);
}

// The instructions of a phase that do not change along its loop (constants,
// arithmetic on the symbols and the row's variables, earlier phases'
// results: a mean's `sum / n`), written once before the loop; body() then
// skips them. Loads stay in the loop, which may run no iteration.
std::string Emitter::hoist(const Phase& ph, int phase) {
  hoisted_.assign(ph.body.size(), false);
  auto fixed = [&](int id) {
    return id < nparams_ || std::find(step_->outer_vars.begin(), step_->outer_vars.end(), id) != step_->outer_vars.end();
  };
  for (size_t k = 0; k < ph.body.size(); ++k) {
    const Inst& inst = ph.body[k];
    switch (inst.kind) {
      case InstKind::kConst: hoisted_[k] = true; break;
      case InstKind::kIndex: {
        const std::vector<int> ids = sym::symbols_of(inst.expr);
        hoisted_[k] = std::all_of(ids.begin(), ids.end(), fixed);
        break;
      }
      case InstKind::kAcc: hoisted_[k] = inst.acc_phase != phase; break;
      case InstKind::kOp: hoisted_[k] = std::all_of(inst.args.begin(), inst.args.end(), [&](int a) { return hoisted_[a]; }); break;
      case InstKind::kLoad:
      case InstKind::kCheckIndex: break;
    }
  }
  return body(ph, phase, nullptr, /*hoisted_part=*/true);
}

// One iteration of a phase: its body, its reductions into the thread's
// accumulators, its stores; or, for `hoisted_part`, the instructions
// hoist() took out of the loop.
std::string Emitter::body(const Phase& ph, int phase, const Lanes* lanes, bool hoisted_part) const {
  std::string s;
  std::vector<std::string> vals(ph.body.size());
  const std::string pre = "x" + std::to_string(phase) + "_";
  for (size_t k = 0; k < ph.body.size(); ++k) {
    const Inst& inst = ph.body[k];
    const std::string name = pre + std::to_string(k);
    vals[k] = name;
    if ((k < hoisted_.size() && hoisted_[k]) != hoisted_part) continue;
    std::string v;
    switch (inst.kind) {
      case InstKind::kLoad: {
        auto quad = lanes ? lanes->loads.find(static_cast<int>(k)) : decltype(lanes->loads.end()){};
        if (lanes && quad != lanes->loads.end()) v = quad->second + "[lane]";
        else v = "B" + std::to_string(inst.buffer) + "[" + expr(inst.expr) + "]";
        if (inst.dtype == DType::kBool) v = "(" + v + " != 0)";
        break;
      }
      case InstKind::kConst: v = literal(inst.dtype, inst.value); break;
      case InstKind::kIndex: v = values_.convert(expr(inst.expr), DType::kI64, inst.dtype); break;
      case InstKind::kOp: v = values_.op(inst, vals, ph); break;
      case InstKind::kAcc: {
        const loops::Reduction& r = step_->phases[inst.acc_phase].reductions[inst.acc];
        v = acc_name(inst.acc_phase, inst.acc) + (r.combine == Combine::kArgmax ? (inst.acc_part == 0 ? ".v" : ".i") : "");
        break;
      }
      case InstKind::kCheckIndex: {
        const std::string x = values_.convert(vals[inst.args[0]], ph.body[inst.args[0]].dtype, DType::kI64);
        s += "    const i64 " + name + "_i = " + x + ";\n";
        s += "    const bool " + name + "_ok = " + name + "_i >= 0 && " + name + "_i < " + expr(inst.expr) + ";\n";
        s += "    if (!" + name + "_ok) *a.err = 1;\n";
        s += "    const i64 " + sym(inst.symbol) + " = " + name + "_ok ? " + name + "_i : 0;\n";
        v = sym(inst.symbol);
        break;
      }
    }
    if (inst.kind == InstKind::kOp && v.empty()) {
      missing_op_ = inst.op;
      return s;
    }
    s += "    const " + std::string(ctype(inst.dtype)) + " " + name + " = " + v + ";\n";
  }
  if (hoisted_part) return s;
  for (size_t k = 0; k < ph.reductions.size(); ++k) {
    const loops::Reduction& r = ph.reductions[k];
    const AccForm f = acc_form(r);
    const std::string acc = acc_name(phase, static_cast<int>(k));
    if (r.combine == Combine::kArgmax) {
      s += "    " + acc + " = sj_argmax(" + acc + ", " + f.type + "{" + vals[r.value] + ", (i64)" + vals[r.index] + "});\n";
    } else {
      s += "    " + acc + " = " + f.combine + "(" + acc + ", " + vals[r.value] + ");\n";
    }
  }
  for (size_t k = 0; k < ph.stores.size(); ++k) {
    const loops::Store& st = ph.stores[k];
    const DType dt = p_.buffers[st.buffer].dtype;
    const std::string v = dt == DType::kBool ? "(u8)" + vals[st.value] : vals[st.value];
    auto quad = lanes ? lanes->stores.find(k) : decltype(lanes->stores.end()){};
    if (lanes && quad != lanes->stores.end()) s += "    " + quad->second + "[lane] = " + v + ";\n";
    else s += "    B" + std::to_string(st.buffer) + "[" + expr(st.offset) + "] = " + v + ";\n";
  }
  return s;
}

// Combines a phase's accumulators over the `group` (sj_reduce's G).
std::string Emitter::reduce_into(const Phase& ph, int phase, const std::string& group) const {
  std::string s;
  for (size_t k = 0; k < ph.reductions.size(); ++k) {
    const AccForm f = acc_form(ph.reductions[k]);
    const std::string acc = acc_name(phase, static_cast<int>(k));
    s += "  { __shared__ " + f.type + " sh_[" + group + " / 32];\n";
    s += "    " + acc + " = sj_reduce<" + group + ">(" + acc + ", [](" + f.type + " x, " + f.type + " y) { return " + f.combine +
         "(x, y); }, sh_); }\n";
  }
  return s;
}

std::string accs_declared(const Phase& ph, int phase) {
  std::string s;
  for (size_t k = 0; k < ph.reductions.size(); ++k) {
    const AccForm f = acc_form(ph.reductions[k]);
    s += "  " + f.type + " acc" + std::to_string(phase) + "_" + std::to_string(k) + " = " + f.init + ";\n";
  }
  return s;
}

// The four-element path of a pointwise row: taken when every access that
// moves with the loop variable is `variable + (the same for the whole
// row)` and each such buffer is aligned for the access; the scalar loop
// then finishes from `f0`.
std::string Emitter::quad_path(const loops::LoopStep& st, const Phase& ph) const {
  const std::string none = "    const i64 f0 = 0;\n";
  if (ph.vars.size() != 1) return none;
  const int v = ph.vars[0];
  const Expr var = Expr::symbol(v);
  auto row_constant = [&](Expr rest) {
    for (int id : sym::symbols_of(rest)) {
      const bool outer = std::find(st.outer_vars.begin(), st.outer_vars.end(), id) != st.outer_vars.end();
      if (id >= nparams_ && !outer) return false;
    }
    return true;
  };
  auto moves = [&](Expr e) {
    auto ids = sym::symbols_of(e);
    return std::find(ids.begin(), ids.end(), v) != ids.end();
  };
  Lanes lanes;
  std::string loads, stores, aligned, declared;
  auto access = [&](int buffer, Expr offset, const std::string& array, bool load) {
    const DType dt = p_.buffers[buffer].dtype;
    const std::string at = "B" + std::to_string(buffer) + " + " + expr(offset - var);
    const size_t align = std::min<size_t>(16, 4 * ir::dtype_size(dt));
    aligned += " && sj_aligned(" + at + ", " + std::to_string(align) + ")";
    declared += "        " + std::string(mtype(dt)) + " " + array + "[4];\n";
    if (load) loads += "        sj_load4(" + at + " + base_, " + array + ");\n";
    else stores += "        sj_store4(" + at + " + base_, " + array + ");\n";
  };
  for (size_t k = 0; k < ph.body.size(); ++k) {
    const Inst& inst = ph.body[k];
    if (inst.kind == InstKind::kCheckIndex) return none;
    if (inst.kind != InstKind::kLoad || !moves(inst.expr)) continue;
    if (!row_constant(inst.expr - var)) return none;
    const std::string array = "L" + std::to_string(k);
    lanes.loads[static_cast<int>(k)] = array;
    access(inst.buffer, inst.expr, array, true);
  }
  for (size_t k = 0; k < ph.stores.size(); ++k) {
    const loops::Store& st_k = ph.stores[k];
    if (!moves(st_k.offset) || !row_constant(st_k.offset - var)) return none;
    const std::string array = "O" + std::to_string(k);
    lanes.stores[k] = array;
    access(st_k.buffer, st_k.offset, array, false);
  }
  std::string s = "    i64 f0 = 0;\n";
  s += "    if (E >= 4" + aligned + ") {\n";
  s += "      for (i64 q = (i64)blockIdx.x * 256 + threadIdx.x; q < E / 4; q += stride) {\n";
  s += "        const i64 base_ = q * 4;\n" + declared + loads;
  s += "#pragma unroll\n        for (int lane = 0; lane < 4; ++lane) {\n";
  s += "    const i64 " + sym(v) + " = base_ + lane;\n" + body(ph, 0, &lanes) + "        }\n" + stores;
  s += "      }\n      f0 = E / 4 * 4;\n    }\n";
  return s;
}

void Emitter::pointwise_kernel(const loops::LoopStep& st, const std::string& name) {
  const Phase& ph = st.phases[0];
  std::string& o = out_;
  o += "extern \"C\" __global__ void __launch_bounds__(256) " + name + "(const Args a) {\n";
  const size_t at = o.size();
  o += "  const i64 E = " + extent(ph) + ";\n";
  o += "  const i64 stride = (i64)gridDim.x * 256;\n";
  o += "  if (a.splits != 0) {  // many short rows: rows and iterations flattened\n";
  o += "    for (i64 g = (i64)blockIdx.x * 256 + threadIdx.x; g < a.rows * E; g += stride) {\n";
  o += "    const i64 row = (i64)((u64)g / (u64)E), f = (i64)((u64)g % (u64)E);\n";
  hoisted_.clear();  // the flattened loop moves the row too
  o += decode(st.outer_vars, st.outer_extents, "row") + decode(ph.vars, ph.extents, "f") + body(ph, 0, nullptr);
  o += "    }\n    return;\n  }\n";
  o += "  for (i64 row = blockIdx.y; row < a.rows; row += gridDim.y) {\n" + decode(st.outer_vars, st.outer_extents, "row");
  o += hoist(ph, 0) + quad_path(st, ph);
  o += "    for (i64 f = f0 + (i64)blockIdx.x * 256 + threadIdx.x; f < E; f += stride) {\n";
  o += decode(ph.vars, ph.extents, "f") + body(ph, 0, nullptr) + "    }\n  }\n}\n\n";
  declare(at);
}

void Emitter::rows_kernels(const loops::LoopStep& st, const std::string& name) {
  std::string& o = out_;
  o += "template <int G> __device__ __forceinline__ void " + name + "_row(const Args& a, const i64 row, const int t) {\n";
  const size_t at = o.size();
  o += decode(st.outer_vars, st.outer_extents, "row");
  for (size_t p = 0; p < st.phases.size(); ++p) {
    const Phase& ph = st.phases[p];
    const int pi = static_cast<int>(p);
    o += accs_declared(ph, pi) + hoist(ph, pi);
    o += "  for (i64 f = t, E = " + extent(ph) + "; f < E; f += G) {\n";
    o += decode(ph.vars, ph.extents, "f") + body(ph, pi, nullptr) + "  }\n";
    o += reduce_into(ph, pi, "G");
    if (p + 1 < st.phases.size()) o += "  sj_sync<G>();  // the next phase may read this one's stores\n";
  }
  o += "}\n";
  declare(at);
  o += "extern \"C\" __global__ void __launch_bounds__(256) " + name + "_w(const Args a) {\n";
  o += "  for (i64 row = (i64)blockIdx.x * 8 + (threadIdx.x >> 5); row < a.rows; row += (i64)gridDim.x * 8) " + name +
       "_row<32>(a, row, threadIdx.x & 31);\n}\n";
  o += "extern \"C\" __global__ void __launch_bounds__(256) " + name + "_b(const Args a) {\n";
  o += "  for (i64 row = blockIdx.x; row < a.rows; row += gridDim.x) " + name + "_row<256>(a, row, threadIdx.x);\n}\n\n";
}

void Emitter::split_kernels(const loops::LoopStep& st, const std::string& name) {
  std::string& o = out_;
  std::vector<int> first_slot;
  int slots = 0;
  for (const Phase& ph : st.phases) {
    first_slot.push_back(slots);
    slots += static_cast<int>(ph.reductions.size());
  }
  auto slot = [&](int p, size_t k, const std::string& part) {
    return "a.ws[(" + std::to_string(first_slot[p] + static_cast<int>(k)) + " * a.rows + row) * a.splits + " + part + "]";
  };
  for (size_t p = 0; p < st.phases.size(); ++p) {
    const Phase& ph = st.phases[p];
    const int pi = static_cast<int>(p);
    o += "extern \"C\" __global__ void __launch_bounds__(256) " + name + "_p" + std::to_string(p) + "(const Args a) {\n";
    const size_t at = o.size();
    o += "  const int t = threadIdx.x;\n";
    o += "  for (i64 blk = blockIdx.x; blk < a.rows * a.splits; blk += gridDim.x) {\n";
    o += "  const i64 row = (i64)((u64)blk / (u64)a.splits), part = (i64)((u64)blk % (u64)a.splits);\n";
    o += decode(st.outer_vars, st.outer_extents, "row");
    for (size_t q = 0; q < p; ++q) {
      const int qi = static_cast<int>(q);
      o += accs_declared(st.phases[q], qi);
      for (size_t k = 0; k < st.phases[q].reductions.size(); ++k) {
        const AccForm f = acc_form(st.phases[q].reductions[k]);
        const std::string acc = acc_name(qi, static_cast<int>(k));
        o += "  for (i64 s_ = 0; s_ < a.splits; ++s_) { " + f.type + " y_; sj_get(" + slot(qi, k, "s_") + ", y_); " + acc + " = " +
             f.combine + "(" + acc + ", y_); }\n";
      }
    }
    o += accs_declared(ph, pi) + hoist(ph, pi);
    o += "  const i64 E = " + extent(ph) + ", chunk = (E + a.splits - 1) / a.splits, hi = sj_imin(E, (part + 1) * chunk);\n";
    o += "  for (i64 f = part * chunk + t; f < hi; f += 256) {\n" + decode(ph.vars, ph.extents, "f") + body(ph, pi, nullptr) + "  }\n";
    o += reduce_into(ph, pi, "256");
    for (size_t k = 0; k < ph.reductions.size(); ++k) o += "  if (t == 0) sj_put(" + slot(pi, k, "part") + ", " + acc_name(pi, static_cast<int>(k)) + ");\n";
    o += "  }\n}\n";
    declare(at);
  }
  o += "\n";
}

void Emitter::compact_kernel(const loops::CompactStep& c, const std::string& name) {
  constexpr int64_t kPerThread = loops::CompactStep::kBlock / kBlock;
  loops::LoopStep writes;  // what the prologue reads: the kernel stores `out` only
  writes.phases.emplace_back().stores.push_back({c.out, Expr(0), 0});
  step_ = &writes;
  Expr size = 1;
  for (const Expr& d : c.shape) size = size * d;
  const std::string m = "B" + std::to_string(c.mask), o = "B" + std::to_string(c.out), kb = std::to_string(loops::CompactStep::kBlock);
  std::string& s = out_;
  s += "extern \"C\" __global__ void __launch_bounds__(256) " + name + "(const Args a) {\n";
  const size_t at = s.size();
  s += "  __shared__ i64 sh_[256];\n  const int t = threadIdx.x;\n  const i64 N = " + expr(size) + ";\n";
  s += "  for (i64 blk = blockIdx.x; blk * " + kb + " < N; blk += gridDim.x) {\n";
  s += "    const i64 l0 = blk * " + kb + " + t * " + std::to_string(kPerThread) + ", l1 = sj_imin(sj_imin(N, (blk + 1) * " + kb + "), l0 + " +
       std::to_string(kPerThread) + ");\n";
  s += "    i64 n = 0;\n    for (i64 l = l0; l < l1; ++l) n += " + m + "[l] != 0;\n";
  s += "    sh_[t] = n;\n    __syncthreads();\n";
  s += "    for (int d_ = 1; d_ < 256; d_ <<= 1) {\n      const i64 v_ = t >= d_ ? sh_[t - d_] : 0;\n      __syncthreads();\n      sh_[t] += v_;\n"
       "      __syncthreads();\n    }\n";
  s += "    i64 k = B" + std::to_string(c.counts) + "[blk] + sh_[t] - n;\n    __syncthreads();  // sh_ is the next block's\n";
  s += "    for (i64 l = l0; l < l1; ++l) {\n      if (" + m + "[l] == 0) continue;\n";
  if (c.op == ir::Op::kMaskedSelect) {
    s += "      " + o + "[k] = B" + std::to_string(c.values) + "[l];\n";
  } else {
    const int64_t rank = static_cast<int64_t>(c.shape.size());
    Expr inner = 1;
    for (int64_t d = rank; d-- > 0;) {
      const std::string coord = "(l / " + expr(inner) + ")" + (d > 0 ? " % " + expr(c.shape[static_cast<size_t>(d)]) : std::string());
      s += "      " + o + "[k * " + std::to_string(rank) + " + " + std::to_string(d) + "] = " + coord + ";\n";
      inner = inner * c.shape[static_cast<size_t>(d)];
    }
  }
  s += "      ++k;\n    }\n  }\n}\n\n";
  declare(at);
}

Expected<CudaSource> Emitter::run() {
  CudaSource src;
  src.num_buffers = std::max<int>(1, static_cast<int>(p_.buffers.size()));
  src.num_symbols = std::max(1, nparams_);
  out_ = prelude();
  out_ += "struct Args { char* b[" + std::to_string(src.num_buffers) + "]; i64 s[" + std::to_string(src.num_symbols) +
          "]; int* err; i64 rows; i64 splits; sj_slot* ws; };\n\n";
  for (size_t k = 0; k < p_.steps.size(); ++k) {
    const loops::Step& step = p_.steps[k];
    StepPlan plan;
    plan.name = "s" + std::to_string(k);
    if (step.kind == loops::Step::Kind::kMatmul) {
      src.steps.push_back(plan);
      continue;
    }
    if (step.kind == loops::Step::Kind::kCompact) {
      if (step.compact.counts < 0) return internal_error("cuda: " + step.label + ": a compaction without a count step");
      out_ += "// " + plan.name + ": " + step.label + "\n";
      plan.kind = StepPlan::Kind::kCompact;
      compact_kernel(step.compact, plan.name);
      src.steps.push_back(plan);
      continue;
    }
    step_ = &step.loops;
    out_ += "// " + plan.name + ": " + step.label + "\n";
    plan.phases = static_cast<int>(step.loops.phases.size());
    for (const Phase& ph : step.loops.phases) plan.slots += static_cast<int>(ph.reductions.size());
    if (plan.slots == 0 && plan.phases == 1) {
      plan.kind = StepPlan::Kind::kPointwise;
      pointwise_kernel(step.loops, plan.name);
    } else {
      plan.kind = StepPlan::Kind::kRows;
      rows_kernels(step.loops, plan.name);
      split_kernels(step.loops, plan.name);
    }
    src.steps.push_back(plan);
  }
  if (missing_op_) return unsupported("cuda: no CUDA code for op " + std::string(ir::op_name(*missing_op_)));
  src.code = std::move(out_);
  return src;
}

}  // namespace

loops::LowerOptions lower_options(bool blas) {
  loops::LowerOptions options;
  options.blas = blas;
  options.tile = 0;
  options.strided_operands = false;  // until cuBLAS takes the strides
  options.converting_operands = false;  // cuBLAS reads one type
  options.fuse_attention = false;
  options.softmax_sum_pass = false;
  options.scans = false;  // the CPU runs graphs with a cumsum, copying the data
  options.scatters = false;  // and graphs with an index_put or index_add
  options.count_steps = true;  // a compaction's fill kernel reads dense buffers and counts
  return options;
}

Expected<CudaSource> emit_cuda(const loops::LoopProgram& p) { return Emitter(p).run(); }

}  // namespace shapejit::backends::cuda
