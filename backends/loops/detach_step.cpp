#include "backends/loops/detach_step.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace shapejit::backends::loops {

namespace {

using sym::Expr;

// The symbols and buffers a step uses, in the order it first uses them:
// what the detached step is numbered by.
class Uses {
 public:
  explicit Uses(const LoopProgram& p) : p_(p) {}

  void expr(Expr e) {
    for (int s : sym::symbols_of(e)) read(s);
  }
  void define(int s) {
    if (index_.emplace(s, -1).second) defined_.push_back(s);
  }
  void buffer(int b) {
    if (buffer_index_.emplace(b, static_cast<int>(buffers_.size())).second) buffers_.push_back(b);
  }

  // Numbers every symbol seen: sizes, then strides, then task symbols (the
  // kinds keep their order, so the kinds' bounds are counts), then the
  // symbols the step defines.
  void number(DetachedStep& d) {
    std::vector<int> kinds[3];
    for (int s : read_) kinds[kind(s)].push_back(s);
    for (const std::vector<int>& k : kinds) {
      for (int s : k) {
        index_[s] = static_cast<int>(d.symbols.size());
        d.symbols.push_back(s < p_.num_symbols ? s : -1 - (s - p_.num_symbols));  // a lifted offset: its index
      }
    }
    int next = static_cast<int>(d.symbols.size());
    for (int s : defined_) index_[s] = next++;
    d.program.num_graph_symbols = static_cast<int>(kinds[0].size());
    d.program.params.assign(kinds[1].size(), {-1, -1});
    d.program.task_symbols = static_cast<int>(kinds[2].size());
    d.program.num_symbols = next;
    d.buffers = buffers_;
    for (int b : buffers_) {  // code reads a buffer's dtype alone; its shape is in the original's symbols
      Buffer local = p_.buffers[b];
      local.shape.clear();
      local.strides.clear();
      d.program.buffers.push_back(std::move(local));
    }
  }

  int symbol(int s) const { return index_.at(s); }
  int buffer_of(int b) const { return buffer_index_.at(b); }
  // A step's expressions share most of their terms (strides, sizes): each
  // is renamed once.
  Expr rename(Expr e) {
    return sym::substitute(e, [&](int s) -> std::optional<Expr> { return Expr::symbol(index_.at(s)); }, &renamed_);
  }

 private:
  // 0: a size (a graph symbol), 1: a stride or a lifted offset, 2: a task symbol.
  int kind(int s) const {
    const int strides = p_.num_graph_symbols + static_cast<int>(p_.params.size());
    return s >= p_.num_symbols ? 1 : s < p_.num_graph_symbols ? 0 : s < strides ? 1 : 2;
  }
  void read(int s) {
    if (s >= p_.num_read_symbols() && s < p_.num_symbols) return;  // defined by the step itself (seen at its definition)
    if (index_.emplace(s, -1).second) read_.push_back(s);
  }

  const LoopProgram& p_;
  std::unordered_map<int, int> index_, buffer_index_;
  sym::SubstituteMemo renamed_;
  std::vector<int> read_, defined_, buffers_;
};

void add_expr(Hasher& h, Expr e) { h.add(e.hash()); }
// A loop nest's variables and their extents.
void add_dims(Hasher& h, const std::vector<int>& vars, const std::vector<Expr>& extents) {
  h.add(vars.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    h.add_i64(vars[i]);
    add_expr(h, extents[i]);
  }
}

// Everything code generation reads of a renumbered step (codegen.h).
Hash128 structure_key(const LoopProgram& p) {
  Hasher h;
  h.add_str("loop-step-v1");
  h.add_i64(p.num_graph_symbols).add(p.params.size()).add_i64(p.task_symbols).add_i64(p.num_symbols);
  h.add(p.buffers.size());
  for (const Buffer& b : p.buffers) h.add(static_cast<uint64_t>(b.dtype));
  const LoopStep& st = p.steps[0].loops;
  add_dims(h, st.outer_vars, st.outer_extents);
  h.add(st.phases.size());
  for (const Phase& ph : st.phases) {
    add_dims(h, ph.vars, ph.extents);
    h.add(ph.body.size());
    for (const Inst& in : ph.body) {
      h.add(static_cast<uint64_t>(in.kind)).add(static_cast<uint64_t>(in.dtype)).add(static_cast<uint64_t>(in.op));
      h.add(in.approximate_tanh).add(in.nonpositive_arg);
      h.add(in.args.size());
      for (int a : in.args) h.add_i64(a);
      h.add_i64(in.buffer);
      add_expr(h, in.expr);
      h.add(in.value.is_float).add_i64(in.value.i).add_f64(in.value.f);
      h.add_i64(in.acc_phase).add_i64(in.acc).add_i64(in.acc_part).add_i64(in.symbol);
    }
    h.add(ph.reductions.size());
    for (const Reduction& r : ph.reductions) {
      h.add(static_cast<uint64_t>(r.combine)).add_i64(r.value).add_i64(r.index).add(static_cast<uint64_t>(r.acc_dtype));
    }
    h.add(ph.stores.size());
    for (const Store& s : ph.stores) {
      h.add_i64(s.buffer).add_i64(s.value);
      add_expr(h, s.offset);
    }
  }
  h.add(st.may_fail);
  return h.finish();
}

// The step with each load's and store's offset split: what its loops vary
// stays, the rest (the terms that read none of the step's own symbols)
// becomes the symbol p.num_symbols + j, offsets[j] its value. Every offset
// is split, a zero rest too: the step that reads x[0] is the one that reads
// x[1]. Accesses to one buffer with equal rests share their parameter, so
// that the code still sees them at one address (an accumulator loaded and
// stored in a loop stays in a register).
LoopStep lift_offsets(const LoopProgram& p, const LoopStep& from, std::vector<Expr>& offsets) {
  std::vector<bool> own(static_cast<size_t>(std::max(p.num_symbols, 0)), false);
  auto mark = [&](int s) {
    if (s >= 0 && static_cast<size_t>(s) < own.size()) own[static_cast<size_t>(s)] = true;
  };
  for (int v : from.outer_vars) mark(v);
  for (const Phase& ph : from.phases) {
    for (int v : ph.vars) mark(v);
    for (const Inst& in : ph.body) {
      if (in.kind == InstKind::kCheckIndex) mark(in.symbol);
    }
  }
  auto varies = [&](Expr e) {
    for (int s : sym::symbols_of(e)) {
      if (s < 0 || static_cast<size_t>(s) >= own.size() || own[static_cast<size_t>(s)]) return true;
    }
    return false;
  };
  std::map<std::pair<int, const sym::Node*>, int> param_of;  // (buffer, rest): its parameter
  auto split = [&](int buffer, Expr e) -> Expr {
    Expr fixed = 0;
    if (e.kind() == sym::Kind::kAdd) {
      fixed = Expr(e.add_constant());
      for (size_t i = 0; i < e.num_args(); ++i) {
        if (!varies(e.arg(i))) fixed = fixed + Expr(e.coeff(i)) * e.arg(i);
      }
    } else if (!varies(e)) {
      fixed = e;
    }
    auto [it, fresh] = param_of.try_emplace({buffer, fixed.node()}, static_cast<int>(offsets.size()));
    if (fresh) offsets.push_back(fixed);
    return e - fixed + Expr::symbol(p.num_symbols + it->second);
  };
  LoopStep to = from;
  for (Phase& ph : to.phases) {
    for (Inst& in : ph.body) {
      if (in.kind == InstKind::kLoad) in.expr = split(in.buffer, in.expr);
    }
    for (Store& s : ph.stores) s.offset = split(s.buffer, s.offset);
  }
  return to;
}

}  // namespace

DetachedStep detach_step(const LoopProgram& p, int step) {
  // An attention step's tile code reads its symbols as the attention step
  // gathers them (its own, the kernel's): its offsets stay whole.
  std::vector<Expr> offsets;
  const bool lifts = p.steps[static_cast<size_t>(step)].kind == Step::Kind::kLoops;
  const LoopStep lifted = lifts ? lift_offsets(p, p.steps[static_cast<size_t>(step)].loops, offsets) : LoopStep();
  const LoopStep& from = lifts ? lifted : p.steps[static_cast<size_t>(step)].loops;
  // 1. What the step uses, in order.
  Uses uses(p);
  for (size_t i = 0; i < from.outer_vars.size(); ++i) {
    uses.expr(from.outer_extents[i]);
    uses.define(from.outer_vars[i]);
  }
  for (const Phase& ph : from.phases) {
    for (size_t i = 0; i < ph.vars.size(); ++i) {
      uses.expr(ph.extents[i]);
      uses.define(ph.vars[i]);
    }
    for (const Inst& in : ph.body) {
      if (in.kind == InstKind::kLoad) uses.buffer(in.buffer);
      if (in.kind == InstKind::kLoad || in.kind == InstKind::kIndex || in.kind == InstKind::kCheckIndex) uses.expr(in.expr);
      if (in.kind == InstKind::kCheckIndex) uses.define(in.symbol);
    }
    for (const Store& s : ph.stores) {
      uses.buffer(s.buffer);
      uses.expr(s.offset);
    }
  }
  DetachedStep d;
  uses.number(d);

  // 2. The step under the new numbers.
  LoopStep to;
  for (size_t i = 0; i < from.outer_vars.size(); ++i) {
    to.outer_vars.push_back(uses.symbol(from.outer_vars[i]));
    to.outer_extents.push_back(uses.rename(from.outer_extents[i]));
  }
  for (const Phase& ph : from.phases) {
    Phase q = ph;
    for (size_t i = 0; i < ph.vars.size(); ++i) {
      q.vars[i] = uses.symbol(ph.vars[i]);
      q.extents[i] = uses.rename(ph.extents[i]);
    }
    for (Inst& in : q.body) {
      if (in.kind == InstKind::kLoad) in.buffer = uses.buffer_of(in.buffer);
      in.expr = uses.rename(in.expr);
      if (in.kind == InstKind::kCheckIndex) in.symbol = uses.symbol(in.symbol);
    }
    for (Store& s : q.stores) {
      s.buffer = uses.buffer_of(s.buffer);
      s.offset = uses.rename(s.offset);
    }
    to.phases.push_back(std::move(q));
  }
  to.may_fail = from.may_fail;
  Step local(Step::Kind::kLoops);
  local.loops = std::move(to);
  local.label = p.steps[static_cast<size_t>(step)].label;
  d.program.steps.push_back(std::move(local));
  d.offsets = std::move(offsets);
  d.key = structure_key(d.program);
  return d;
}

}  // namespace shapejit::backends::loops
