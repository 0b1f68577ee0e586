#include "core/ir/specialize.h"

#include <unordered_set>

#include "core/ir/tensor.h"

namespace shapejit::ir {

namespace {

// The sizes a call's symbols decide whose arithmetic could leave int64: the
// integers computed from sizes (SymInt values: an int argument squared) and
// each tensor's dims and element count, each distinct expression once. A
// constant, or a single symbol (an input's dim, an int argument), fits.
std::vector<SizeCheck> size_checks(const std::vector<ValueType>& types, const sym::ShapeEnv& env) {
  std::vector<SizeCheck> out;
  std::unordered_set<const sym::Node*> seen;
  const auto add = [&](const sym::Expr& e) {
    if (e.depth() <= 1 || !seen.insert(e.node()).second) return;
    out.push_back({sym::Program::compile(e, [](int id) { return std::make_pair(int32_t{id}, int32_t{0}); }), e.str(), env.has_unbacked(e)});
  };
  for (const ValueType& t : types) {
    if (!t.is_tensor) {
      add(t.scalar);
      continue;
    }
    for (const sym::Expr& d : t.shape) add(d);
    if (t.shape.size() > 1) {
      // Built as a probe: a product whose constants alone overflow is a
      // tensor no call can allocate, which allocation reports.
      if (std::optional<sym::Expr> n = sym::probe([&] {
            sym::Expr p(1);
            for (const sym::Expr& d : t.shape) p = p * d;
            return p;
          })) {
        add(*n);
      }
    }
  }
  return out;
}

}  // namespace

Expected<SpecializedGraphPtr> specialize(std::shared_ptr<const Graph> graph, sym::Specialization spec) {
  auto sg = std::make_shared<SpecializedGraph>();
  sym::ShapeEnv env = sym::ShapeEnv::from_specialization(spec);
  sg->types = SJ_TRY(infer(*graph, env, nullptr));
  for (int o : graph->outputs) {
    const ValueType& t = sg->types[o];
    if (t.shape.size() > static_cast<size_t>(kMaxRank)) {
      return invalid("output '" + graph->value_names[o] + "' has rank " + std::to_string(t.shape.size()) + "; at most " +
                     std::to_string(kMaxRank) + " is supported");
    }
    OutputType out{t.dtype, {}, false};
    for (const sym::Expr& d : t.shape) {
      out.data_dependent |= env.has_unbacked(d);
      out.shape.push_back(sym::Program::compile(d, [](int id) { return std::make_pair(int32_t{id}, int32_t{0}); }));
    }
    sg->outputs.push_back(std::move(out));
  }
  sg->size_checks = size_checks(sg->types, env);
  for (const SizeCheck& c : sg->size_checks) sg->size_checks_after_run |= c.after_run;
  sg->spec_hash = spec.hash();
  sg->spec = std::move(spec);
  sg->graph = std::move(graph);
  return SpecializedGraphPtr(std::move(sg));
}

}  // namespace shapejit::ir
