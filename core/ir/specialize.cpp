#include "core/ir/specialize.h"

#include "core/ir/tensor.h"

namespace shapejit::ir {

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
  sg->spec_hash = spec.hash();
  sg->spec = std::move(spec);
  sg->graph = std::move(graph);
  return SpecializedGraphPtr(std::move(sg));
}

}  // namespace shapejit::ir
