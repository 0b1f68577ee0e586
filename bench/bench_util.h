// What the kernel benchmarks share: the 10-op chain graph, and a graph
// specialized for given shapes, fully dynamic or fully static.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "core/ir/graph_json.h"
#include "core/ir/specialize.h"

namespace shapejit::bench {

inline std::string chain10(const std::string& n) {
  return R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [")" + n + R"("]}],
    "nodes": [{"op": "mul", "in": ["x", 1.5], "out": "a"}, {"op": "add", "in": ["a", 0.25], "out": "b"},
              {"op": "relu", "in": ["b"], "out": "c"}, {"op": "sub", "in": ["c", "x"], "out": "d"},
              {"op": "abs", "in": ["d"], "out": "e"}, {"op": "sqrt", "in": ["e"], "out": "f"},
              {"op": "neg", "in": ["f"], "out": "g"}, {"op": "maximum", "in": ["g", "x"], "out": "h"},
              {"op": "mul", "in": ["h", "h"], "out": "i"}, {"op": "minimum", "in": ["i", 4.0], "out": "z"}],
    "outputs": ["z"]})";
}

// The graph for inputs of `shapes`, dense: `dynamic` leaves every dim a
// symbol, otherwise each is bound to its value (as always_static does).
struct Specialized {
  ir::SpecializedGraphPtr graph;
  std::vector<int64_t> symbols;  // this call's values
};

inline Specialized specialize(const std::string& json, const std::vector<std::vector<int64_t>>& shapes, bool dynamic) {
  ir::Graph g = std::move(ir::parse_graph(json)).value();
  sym::ShapeEnv env;
  ir::ShapeHints hints = shapes;
  if (!ir::infer(g, env, &hints).is_ok()) std::abort();
  if (!dynamic) {
    for (size_t id = 0; id < env.symbols().size(); ++id) {
      const sym::Symbol& s = env.symbols()[id];
      if (!s.binding && s.hint) (void)env.bind(static_cast<int>(id), *s.hint, sym::Origin::kPolicy);
    }
  }
  env.set_layouts(std::vector<sym::Layout>(shapes.size(), sym::Layout::dense()));
  Specialized out;
  auto sg = ir::specialize(g, env.specialization());
  if (!sg.is_ok()) std::abort();
  out.graph = std::move(sg).value();
  for (const sym::Symbol& s : env.symbols()) out.symbols.push_back(s.hint.value_or(0));
  return out;
}

// Allocates the outputs of `graph` for `symbols` on `backend` (as the runtime does).
inline void allocate_outputs(backends::Backend& backend, const ir::SpecializedGraph& graph, std::span<const DLTensor* const> args,
                             const std::vector<int64_t>& symbols, std::vector<ir::Tensor>& outputs) {
  if (!backends::prepare_outputs(backend, {}, graph, args, symbols, outputs).is_ok()) std::abort();
}

}  // namespace shapejit::bench
