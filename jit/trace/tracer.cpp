#include "jit/trace/tracer.h"

namespace shapejit::trace {

using sym::Expr;
using sym::Origin;
using sym::Rel;

const char* cmp_name(Cmp c) {
  switch (c) {
    case Cmp::kEq: return "eq";
    case Cmp::kNe: return "ne";
    case Cmp::kLt: return "lt";
    case Cmp::kLe: return "le";
    case Cmp::kGt: return "gt";
    case Cmp::kGe: return "ge";
  }
  return "?";
}

std::optional<Cmp> parse_cmp(std::string_view s) {
  for (Cmp c : {Cmp::kEq, Cmp::kNe, Cmp::kLt, Cmp::kLe, Cmp::kGt, Cmp::kGe}) {
    if (s == cmp_name(c)) return c;
  }
  return std::nullopt;
}

Expected<std::unique_ptr<Tracer>> Tracer::create(std::vector<ir::InputSpec> inputs, ir::ShapeHints hints, TraceOptions options) {
  std::unique_ptr<Tracer> t(new Tracer(std::move(options)));
  for (ir::InputSpec& in : inputs) {
    t->graph_.value_names.push_back(in.name);
    t->graph_.inputs.push_back(std::move(in));
  }
  t->types_ = SJ_TRY(ir::infer_inputs(t->graph_, t->env_, &hints));
  return t;
}

Status Tracer::add_node(ir::Node node, std::string name) {
  const ir::OpInfo& info = ir::op_info(node.op);
  const int n = static_cast<int>(node.in.size());
  const std::string where = std::string("trace: op '") + info.name + "'";
  if (n < info.min_in || (info.max_in >= 0 && n > info.max_in)) {
    return invalid(where + ": wrong number of operands (" + std::to_string(n) + ")");
  }
  if (uint32_t extra = node.attrs.present & ~info.attrs) {
    return invalid(where + ": attribute '" + ir::attr_name(static_cast<ir::AttrBit>(extra & -extra)) + "' is not one of its attributes");
  }
  if (uint32_t missing = info.required & ~node.attrs.present) {
    return invalid(where + ": needs attribute '" + ir::attr_name(static_cast<ir::AttrBit>(missing & -missing)) + "'");
  }
  for (const ir::Operand& o : node.in) {
    if (o.is_value() && (o.value < 0 || o.value >= graph_.num_values())) return invalid(where + ": operand is not a value of this trace");
  }
  ir::normalize_attrs(node);
  const int id = graph_.num_values();
  node.out = {id};
  graph_.value_names.push_back(name.empty() ? "v" + std::to_string(id) : std::move(name));
  types_.emplace_back();
  graph_.nodes.push_back(std::move(node));
  Status s = ir::infer_node(graph_, graph_.nodes.back(), types_, env_);
  // A size past int64 at this call's sizes: shape inference reports a
  // runtime error of the node (a graph run at these sizes fails); a trace
  // breaks, uncached, as it does for a guard past int64 (overflow_break).
  if (s.detail() == Detail::kOverflow) s = Status(Code::kGraphBreak, s.message(), Detail::kOverflow);
  else broke_ |= s.code() == Code::kGraphBreak;
  if (!s.is_ok()) {  // leave the trace as it was
    graph_.nodes.pop_back();
    graph_.value_names.pop_back();
    types_.pop_back();
  }
  return s;
}

Expected<Tracer::Value> Tracer::op(ir::Op op, const std::vector<Arg>& in, ir::Attrs attrs, std::string name) {
  ir::Node node{op, {}, {}, std::move(attrs)};
  for (const Arg& a : in) {
    if (auto* v = std::get_if<Value>(&a)) node.in.push_back(ir::Operand::of(v->id));
    else if (auto* i = std::get_if<int64_t>(&a)) node.in.push_back(ir::Operand::integer(*i));
    else node.in.push_back(ir::Operand::real(std::get<double>(a)));
  }
  SJ_TRY(add_node(std::move(node), std::move(name)));
  return Value{graph_.num_values() - 1};
}

Status Tracer::append(const ir::Node& node, const std::string& name) { return add_node(node, name); }

Expected<Expr> Tracer::symint_expr(const Arg& a) const {
  if (auto* i = std::get_if<int64_t>(&a)) return Expr(*i);
  if (std::holds_alternative<double>(a)) return invalid("trace: a float literal where a SymInt is expected");
  const Value v = std::get<Value>(a);
  if (v.id < 0 || v.id >= graph_.num_values()) return invalid("trace: not a value of this trace");
  if (types_[v.id].is_tensor) return invalid("trace: '" + graph_.value_names[v.id] + "' is a tensor, not a SymInt");
  return env_.resolve(types_[v.id].scalar);
}

namespace {

// A value this call's sizes make past int64 while tracing: a break the
// site does not cache (another call's sizes may fit), so that the
// interpreter computes it with its own integers.
Status overflow_break(const std::string& what) {
  return Status(Code::kGraphBreak, "trace: " + what + " overflows int64 at this call", Detail::kOverflow);
}

}  // namespace

Expected<int64_t> Tracer::guard_int_expr(Expr e, const std::string& label) {
  e = env_.resolve(e);
  if (auto c = e.as_const()) return *c;
  for (int id : sym::symbols_of(e)) {
    const sym::Symbol& s = env_.symbols()[id];
    IntUse use = IntUse::specialize();
    if (s.unbacked) use = IntUse::break_graph("the value of " + env_.str(e) + " depends on data");
    else if (options_.on_guard_int) use = options_.on_guard_int(s.input, s.dim);
    if (use.graph_break) {
      broke_ = true;
      return graph_break("trace: " + use.why);
    }
  }
  sym::OverflowWatch watch;
  const std::optional<int64_t> hint = env_.hint(e);
  if (!hint || watch.overflowed()) return overflow_break("the value of " + env_.str(e));
  const int64_t value = *hint;
  if (e.is_symbol()) {
    const sym::Symbol& s = env_.symbols()[e.symbol_id()];
    observed_.push_back({s.input, s.dim, true, Cmp::kEq, 0});
    SJ_TRY(env_.bind(e.symbol_id(), Expr(value), Origin::kObservedInt, label));
  } else {
    SJ_TRY(env_.decide(e - Expr(value), Rel::kEq, Origin::kObservedInt, label));
  }
  return value;
}

Expected<bool> Tracer::guard_bool_expr(Cmp cmp, Expr a, Expr b, const std::string& label) {
  a = env_.resolve(a);
  b = env_.resolve(b);
  sym::OverflowWatch watch;
  Expr d = a - b;
  bool out = false;
  switch (cmp) {
    case Cmp::kEq: out = SJ_TRY(env_.decide(d, Rel::kEq, Origin::kObservedBool, label)); break;
    case Cmp::kNe: out = !SJ_TRY(env_.decide(d, Rel::kEq, Origin::kObservedBool, label)); break;
    case Cmp::kLt: out = SJ_TRY(env_.decide(-d - Expr(1), Rel::kGe, Origin::kObservedBool, label)); break;
    case Cmp::kLe: out = SJ_TRY(env_.decide(-d, Rel::kGe, Origin::kObservedBool, label)); break;
    case Cmp::kGt: out = SJ_TRY(env_.decide(d - Expr(1), Rel::kGe, Origin::kObservedBool, label)); break;
    case Cmp::kGe: out = SJ_TRY(env_.decide(d, Rel::kGe, Origin::kObservedBool, label)); break;
  }
  if (watch.overflowed()) return overflow_break("comparing " + env_.str(a) + " with " + env_.str(b));
  if (a.is_symbol() && b.is_const() && !env_.symbols()[a.symbol_id()].unbacked) {
    const sym::Symbol& s = env_.symbols()[a.symbol_id()];
    observed_.push_back({s.input, s.dim, false, cmp, b.const_value()});
  }
  return out;
}

Expected<int64_t> Tracer::guard_int(Value symint, const std::string& label) {
  Expr e = SJ_TRY(symint_expr(symint));
  return guard_int_expr(e, label);
}

Expected<bool> Tracer::guard_bool(Cmp cmp, Arg lhs, Arg rhs, const std::string& label) {
  Expr a = SJ_TRY(symint_expr(lhs));
  Expr b = SJ_TRY(symint_expr(rhs));
  auto out = guard_bool_expr(cmp, a, b, label);
  broke_ |= out.status().code() == Code::kGraphBreak && out.status().detail() != Detail::kOverflow;  // a data-dependent branch
  return out;
}

Status Tracer::observe(const Observation& o) {
  if (o.input < 0 || o.input >= num_inputs() || o.dim < 0 || o.dim >= static_cast<int>(types_[o.input].shape.size())) {
    return invalid("observation of input " + std::to_string(o.input) + " dim " + std::to_string(o.dim) + ": no such dim");
  }
  Expr d = types_[o.input].shape[o.dim];
  Status s = o.as_int ? guard_int_expr(d, {}).status() : guard_bool_expr(o.cmp, d, Expr(o.value), {}).status();
  broke_ |= s.code() == Code::kGraphBreak && s.detail() != Detail::kOverflow;
  return s;
}

Status Tracer::output(Value t) {
  if (t.id < 0 || t.id >= graph_.num_values()) return invalid("trace: output is not a value of this trace");
  if (!types_[t.id].is_tensor) return invalid("trace: output '" + graph_.value_names[t.id] + "' is a SymInt; outputs are tensors");
  graph_.outputs.push_back(t.id);
  return Status::ok();
}

Trace Tracer::finish() && {
  ir::resolve_types(types_, env_);
  return Trace{std::move(graph_), std::move(env_), std::move(types_), std::move(observed_)};
}

}  // namespace shapejit::trace
