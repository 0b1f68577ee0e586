#include "guards/guard_set.h"

#include <algorithm>

#include "core/ir/tensor.h"

namespace shapejit::guards {

using sym::Expr;
using sym::Origin;

namespace {

std::string dim_name(int input, int dim) { return "input " + std::to_string(input) + " dim " + std::to_string(dim); }

const char* rel_text(sym::Rel r) {
  switch (r) {
    case sym::Rel::kEq: return "==";
    case sym::Rel::kNe: return "!=";
    case sym::Rel::kGe: return ">=";
  }
  return "?";
}

std::string bound(int64_t v) { return v == sym::Range::kInf ? "inf" : std::to_string(v); }

}  // namespace

bool check_guard(const Guard& g, Args args) {
  const DLTensor* t = args[g.input < 0 ? 0 : g.input];
  switch (g.kind) {
    case Kind::kDType: return ir::dl_word(t->dtype) == static_cast<uint32_t>(g.a);
    case Kind::kRank: return t->ndim == g.a;
    case Kind::kDevice: return t->device.device_type == g.a && t->device.device_id == g.b;
    case Kind::kContiguous: return ir::is_dense(t->ndim, t->shape, t->strides);
    case Kind::kPermuted: return sym::Layout::from_word(static_cast<uint64_t>(g.a)).holds(t->ndim, t->shape, t->strides);
    case Kind::kDimEq: return t->shape[g.dim] == g.a;
    case Kind::kDimRange: {
      int64_t v = t->shape[g.dim];
      return g.a <= v && v <= g.b;
    }
    case Kind::kDimsEq: return t->shape[g.dim] == args[g.input2]->shape[g.dim2];
    case Kind::kExpr: {
      // A value that overflows int64 satisfies no guard: the call misses, and
      // shape inference says what overflowed.
      const std::optional<int64_t> r = g.expr.run([&](int32_t input, int32_t dim) { return args[input]->shape[dim]; });
      if (!r) return false;
      const int64_t v = *r;
      switch (g.rel) {
        case sym::Rel::kEq: return v == 0;
        case sym::Rel::kNe: return v != 0;
        case sym::Rel::kGe: return v >= 0;
      }
    }
  }
  return false;
}

bool Guard::same_predicate(const Guard& o) const {
  if (kind != o.kind || input != o.input || dim != o.dim || input2 != o.input2 || dim2 != o.dim2 || a != o.a || b != o.b) return false;
  if (kind != Kind::kExpr) return true;
  if (rel != o.rel || expr.code().size() != o.expr.code().size()) return false;
  for (size_t i = 0; i < expr.code().size(); ++i) {
    const auto &x = expr.code()[i], &y = o.expr.code()[i];
    if (x.op != y.op || x.a != y.a || x.b != y.b || x.imm != y.imm) return false;
  }
  return true;
}

std::string Guard::predicate() const {
  switch (kind) {
    case Kind::kDType: {
      DLDataType t{static_cast<uint8_t>(a & 0xff), static_cast<uint8_t>((a >> 8) & 0xff), static_cast<uint16_t>(a >> 16)};
      auto d = ir::from_dl(t);
      return "input " + std::to_string(input) + " dtype == " + (d ? ir::dtype_name(*d) : "?");
    }
    case Kind::kRank: return "input " + std::to_string(input) + " rank == " + std::to_string(a);
    case Kind::kDevice: return "input " + std::to_string(input) + " device == " + std::to_string(a) + ":" + std::to_string(b);
    case Kind::kContiguous:
    case Kind::kPermuted: return "input " + std::to_string(input) + " is " + layout().str();
    case Kind::kDimEq: return dim_name(input, dim) + " == " + std::to_string(a);
    case Kind::kDimRange: return std::to_string(a) + " <= " + dim_name(input, dim) + " <= " + bound(b);
    case Kind::kDimsEq: return dim_name(input, dim) + " == " + dim_name(input2, dim2);
    case Kind::kExpr: return text + " " + rel_text(rel) + " 0";
  }
  return "?";
}

std::vector<std::pair<int, int>> Guard::dims() const {
  switch (kind) {
    case Kind::kDimEq:
    case Kind::kDimRange: return {{input, dim}};
    case Kind::kDimsEq: return {{input, dim}, {input2, dim2}};
    case Kind::kExpr: {
      std::vector<std::pair<int, int>> out;
      for (const auto& in : expr.code()) {
        if (in.op == sym::Program::Op::kLoad) out.emplace_back(in.a, in.b);
      }
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
      return out;
    }
    default: return {};
  }
}

std::string Failure::describe() const {
  std::string s = guard->predicate() + " failed (got " + actual + "), origin: " + sym::origin_name(guard->origin);
  if (!guard->label.empty()) s += " '" + guard->label + "'";
  return s;
}

std::vector<Failure> GuardSet::explain(Args args) const {
  std::vector<Failure> out;
  if (static_cast<int>(args.size()) != num_inputs_) return out;  // callers report arity themselves
  std::vector<bool> bad_input(args.size(), false);
  for (const Guard& g : guards_) {
    bool reads_dims = g.kind == Kind::kDimEq || g.kind == Kind::kDimRange || g.kind == Kind::kDimsEq || g.kind == Kind::kExpr;
    if (reads_dims) {
      bool skip = false;
      for (auto [i, d] : g.dims()) skip |= bad_input[i];
      if (skip) continue;
    }
    if (check_guard(g, args)) continue;
    const DLTensor* t = args[g.input < 0 ? 0 : g.input];
    std::string actual;
    switch (g.kind) {
      case Kind::kDType: {
        auto d = ir::from_dl(t->dtype);
        actual = d ? ir::dtype_name(*d) : "an unsupported dtype";
        bad_input[g.input] = true;
        break;
      }
      case Kind::kRank:
        actual = "rank " + std::to_string(t->ndim);
        bad_input[g.input] = true;
        break;
      case Kind::kDevice: actual = std::to_string(t->device.device_type) + ":" + std::to_string(t->device.device_id); break;
      case Kind::kContiguous:
      case Kind::kPermuted: actual = sym::Layout::of(t->ndim, t->shape, t->strides).str(); break;
      case Kind::kDimEq:
      case Kind::kDimRange: actual = std::to_string(t->shape[g.dim]); break;
      case Kind::kDimsEq: actual = std::to_string(t->shape[g.dim]) + " and " + std::to_string(args[g.input2]->shape[g.dim2]); break;
      case Kind::kExpr:
        if (auto v = g.expr.run([&](int32_t input, int32_t dim) { return args[input]->shape[dim]; })) actual = std::to_string(*v);
        else actual = "overflows int64";
        break;
    }
    out.push_back({&g, actual});
  }
  return out;
}

namespace {

// Substitutes symbols bound to expressions over other symbols, recursively;
// symbols bound to constants stay: their own source dims carry that guard,
// so a policy constant is checked once, where it was decided.
Expr to_sources(const sym::ShapeEnv& env, Expr e) {
  return sym::substitute(e, [&](int id) -> std::optional<Expr> {
    const sym::Symbol& s = env.symbols()[id];
    if (!s.binding || s.binding->is_const()) return std::nullopt;
    return to_sources(env, *s.binding);
  });
}

// The guard of input `input`'s layout; none for a strided one, which
// reads the call's strides.
std::optional<Guard> layout_guard(int input, sym::Layout layout) {
  if (layout.is_dense()) return Guard{Kind::kContiguous, Origin::kLayout, input};
  if (layout.is_permuted()) return Guard{Kind::kPermuted, Origin::kLayout, input, -1, -1, -1, static_cast<int64_t>(layout.word())};
  return std::nullopt;
}

Guard expr_guard(const sym::ShapeEnv& env, Expr e, sym::Rel rel, Origin origin, std::string label) {
  Guard g{Kind::kExpr, origin};
  g.rel = rel;
  g.label = std::move(label);
  g.expr = sym::Program::compile(e, [&](int id) {
    const sym::Symbol& s = env.symbols()[id];
    return std::make_pair(int32_t{s.input}, int32_t{s.dim});
  });
  std::vector<std::string> names;
  for (const sym::Symbol& s : env.symbols()) names.push_back("input" + std::to_string(s.input) + ".dim" + std::to_string(s.dim));
  g.text = e.str(&names);
  return g;
}

}  // namespace

GuardSet derive_guards(const ir::Graph& graph, const sym::ShapeEnv& env, DLDevice device) {
  std::vector<Guard> structural, dims;
  const int n = static_cast<int>(graph.inputs.size());
  for (int i = 0; i < n; ++i) {
    const ir::InputSpec& in = graph.inputs[i];
    structural.push_back({Kind::kDType, Origin::kStructural, i, -1, -1, -1, ir::dl_word(ir::to_dl(in.dtype))});
    structural.push_back({Kind::kRank, Origin::kStructural, i, -1, -1, -1, static_cast<int64_t>(in.shape.size())});
    structural.push_back({Kind::kDevice, Origin::kStructural, i, -1, -1, -1, device.device_type, device.device_id});
  }
  std::vector<Guard> layout;
  const auto& symbols = env.symbols();
  auto find_symbol = [&](const std::string& name) {
    for (size_t k = 0; k < symbols.size(); ++k) {
      if (!symbols[k].unbacked && symbols[k].name == name) return static_cast<int>(k);
    }
    SJ_CHECK(false, "an input dim's symbol is missing from the env");
    return -1;
  };
  for (int i = 0; i < n; ++i) {
    if (i < static_cast<int>(env.layouts().size())) {
      if (std::optional<Guard> g = layout_guard(i, env.layouts()[i])) layout.push_back(std::move(*g));
    }
    const ir::InputSpec& in = graph.inputs[i];
    for (int d = 0; d < static_cast<int>(in.shape.size()); ++d) {
      const ir::DimSpec& spec = in.shape[d];
      if (!spec.is_symbol) {
        dims.push_back({Kind::kDimEq, Origin::kGraph, i, d, -1, -1, spec.value});
        continue;
      }
      const int sid = find_symbol(spec.name);
      const sym::Symbol& s = symbols[sid];
      if (s.input != i || s.dim != d) {  // a second dim with the symbol's name
        dims.push_back({Kind::kDimsEq, Origin::kDeclared, i, d, s.input, s.dim});
        continue;
      }
      if (s.binding && s.binding->is_const()) {
        Guard g{Kind::kDimEq, s.binding_origin, i, d, -1, -1, s.binding->const_value()};
        g.label = s.binding_label;
        dims.push_back(std::move(g));
      } else if (s.binding) {
        Expr target = to_sources(env, *s.binding);
        if (target.is_symbol()) {
          const sym::Symbol& u = symbols[target.symbol_id()];
          Guard g{Kind::kDimsEq, s.binding_origin, i, d, u.input, u.dim};
          g.label = s.binding_label;
          dims.push_back(std::move(g));
        } else {
          dims.push_back(expr_guard(env, Expr::symbol(sid) - target, sym::Rel::kEq, s.binding_origin, s.binding_label));
        }
      } else {
        // Always emitted: even [0, inf) keeps a malformed negative size
        // away from compiled code (it misses and is reported).
        dims.push_back({Kind::kDimRange, s.range_origin, i, d, -1, -1, std::max<int64_t>(s.range.lo, 0), s.range.hi});
      }
    }
  }
  for (const sym::Fact& f : env.facts()) {
    dims.push_back(expr_guard(env, to_sources(env, f.expr), f.rel, f.origin, f.label));
  }
  std::vector<Guard> all = std::move(structural);
  for (Guard& g : layout) all.push_back(std::move(g));
  for (Guard& g : dims) all.push_back(std::move(g));
  return GuardSet(n, std::move(all));
}

GuardSet specialize_guards(const GuardSet& trace, const sym::ShapeEnv& env) {
  std::vector<Guard> out;
  out.reserve(trace.guards().size() + env.layouts().size());
  bool layout_added = false;
  auto add_layout = [&] {
    for (size_t i = 0; i < env.layouts().size(); ++i) {
      if (std::optional<Guard> g = layout_guard(static_cast<int>(i), env.layouts()[i])) out.push_back(std::move(*g));
    }
    layout_added = true;
  };
  for (const Guard& g : trace.guards()) {
    const bool structural = g.kind == Kind::kDType || g.kind == Kind::kRank || g.kind == Kind::kDevice;
    if (!structural && !layout_added) add_layout();
    if (g.kind == Kind::kContiguous || g.kind == Kind::kPermuted) continue;  // the entry's own layout decides
    if (g.kind != Kind::kDimRange) {
      out.push_back(g);
      continue;
    }
    const sym::Symbol* s = nullptr;
    for (const sym::Symbol& x : env.symbols()) {
      if (!x.unbacked && x.input == g.input && x.dim == g.dim) s = &x;
    }
    if (s && s->binding && s->binding->is_const() && s->binding_origin == Origin::kPolicy) {
      out.push_back({Kind::kDimEq, Origin::kPolicy, g.input, g.dim, -1, -1, s->binding->const_value()});
    } else if (s && s->range_origin == Origin::kBucket) {
      out.push_back({Kind::kDimRange, Origin::kBucket, g.input, g.dim, -1, -1, std::max<int64_t>(s->range.lo, 0), s->range.hi});
    } else {
      out.push_back(g);
    }
  }
  if (!layout_added) add_layout();
  return GuardSet(trace.num_inputs(), std::move(out));
}

}  // namespace shapejit::guards
