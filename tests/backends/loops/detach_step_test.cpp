// A loop step detached from its program (backends/loops/detach_step.h):
// steps that differ only in their buffers and symbols share a key, steps
// that would compile differently never do, and the maps lead back to the
// program's buffers and symbols.
#include "backends/loops/detach_step.h"

#include <gtest/gtest.h>

#include "backends/loops/lower.h"
#include "bench/bench_util.h"

namespace shapejit::backends::loops {
namespace {

LoopProgram lowered(const std::string& graph, const std::vector<std::vector<int64_t>>& shapes, bool dynamic = true) {
  const bench::Specialized sg = bench::specialize(graph, shapes, dynamic);
  Expected<LoopProgram> p = lower(*sg.graph);
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  return p.is_ok() ? std::move(p).value() : LoopProgram{};
}

// Two chains over inputs of their own; `c` is the second chain's constant.
std::string two_chains(double c, const char* second_op = "mul") {
  return std::string(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["a", "b"]}, {"name": "y", "dtype": "f32", "shape": ["c", "d"]}],
    "nodes": [{"op": "mul", "in": ["x", 2.0], "out": "p"}, {"op": "exp", "in": ["p"], "out": "u"},
              {"op": ")") + second_op + R"(", "in": ["y", )" + std::to_string(c) + R"(], "out": "q"}, {"op": "exp", "in": ["q"], "out": "v"}],
    "outputs": ["u", "v"]})";
}

TEST(DetachStep, StepsThatDifferOnlyInTheirBuffersAndSymbolsShareAKey) {
  const LoopProgram p = lowered(two_chains(2.0), {{3, 5}, {7, 11}});
  ASSERT_EQ(p.steps.size(), 2u);
  const DetachedStep a = detach_step(p, 0), b = detach_step(p, 1);
  EXPECT_EQ(a.key, b.key);
  EXPECT_NE(a.buffers, b.buffers);
  EXPECT_NE(a.symbols, b.symbols);
  // Local buffers lead to the program's, with their dtypes.
  for (size_t i = 0; i < a.buffers.size(); ++i) EXPECT_EQ(a.program.buffers[i].dtype, p.buffers[a.buffers[i]].dtype);
  // The detached step reads only what it uses: two sizes, and as strides
  // the load's and the store's lifted offsets (both zero here).
  EXPECT_EQ(a.program.num_graph_symbols, 2);
  ASSERT_EQ(a.offsets.size(), 2u);
  EXPECT_EQ(a.program.params.size(), a.offsets.size());
  EXPECT_EQ(a.symbols.size(), 4u);
  for (const sym::Expr& o : a.offsets) EXPECT_TRUE(o.is_const() && o.const_value() == 0);
}

TEST(DetachStep, AnotherConstantOrOpIsAnotherKey) {
  const LoopProgram three = lowered(two_chains(3.0), {{3, 5}, {7, 11}});
  EXPECT_NE(detach_step(three, 0).key, detach_step(three, 1).key);
  const LoopProgram add = lowered(two_chains(2.0, "add"), {{3, 5}, {7, 11}});
  EXPECT_NE(detach_step(add, 0).key, detach_step(add, 1).key);
}

TEST(DetachStep, AStaticStepIsNotADynamicOne) {
  const LoopProgram dynamic = lowered(two_chains(2.0), {{3, 5}, {7, 11}}, true);
  const LoopProgram fixed = lowered(two_chains(2.0), {{3, 5}, {7, 11}}, false);
  EXPECT_NE(detach_step(dynamic, 0).key, detach_step(fixed, 0).key);
  // A static step reads no size: only its offsets, lifted.
  for (int s : detach_step(fixed, 0).symbols) EXPECT_LT(s, 0);
}

TEST(DetachStep, AStridedInputReadsItsStridesAsStrides) {
  // One input dense, the other not known to be: the strides are symbols of
  // their own kind (they may be negative), so the two steps differ.
  const bench::Specialized sg = bench::specialize(two_chains(2.0), {{3, 5}, {7, 11}}, true);
  ir::SpecializedGraph g = *sg.graph;
  g.spec.layouts = {sym::Layout::dense(), sym::Layout()};
  Expected<LoopProgram> p = lower(g);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  const DetachedStep dense = detach_step(*p, 0), strided = detach_step(*p, 1);
  EXPECT_NE(dense.key, strided.key);
  EXPECT_EQ(dense.program.params.size(), dense.offsets.size()) << "the dense step's only strides are its offsets";
  EXPECT_GT(strided.program.params.size(), strided.offsets.size());
  int strides = 0;
  for (size_t i = 0; i < strided.program.params.size(); ++i) {
    const int original = strided.symbols[static_cast<size_t>(strided.program.num_graph_symbols) + i];
    if (original >= 0) {
      EXPECT_GE(original, p->num_graph_symbols) << "a stride maps to one of the program's stride symbols";
      ++strides;
    }
  }
  EXPECT_GT(strides, 0);
}

TEST(DetachStep, StepsThatReadOtherSlicesOfOneInputShareAKey) {
  // An unrolled loop's steps read x[0], x[1], ...: their offsets differ by
  // a term no loop of the step varies (zero for x[0]), which the step takes
  // as a parameter.
  const std::string graph = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n", "a", "b"]}],
    "nodes": [{"op": "slice", "in": ["x", 0, 1, 1], "out": "s1", "attrs": {"dim": 0}}, {"op": "exp", "in": ["s1"], "out": "u"},
              {"op": "slice", "in": ["x", 1, 2, 1], "out": "s2", "attrs": {"dim": 0}}, {"op": "exp", "in": ["s2"], "out": "v"}],
    "outputs": ["u", "v"]})";
  const LoopProgram p = lowered(graph, {{4, 3, 5}});
  ASSERT_EQ(p.steps.size(), 2u);
  const DetachedStep a = detach_step(p, 0), b = detach_step(p, 1);
  EXPECT_EQ(a.key, b.key);
  ASSERT_EQ(a.offsets.size(), b.offsets.size());
  ASSERT_FALSE(a.offsets.empty());
  // Evaluated with every size 7, the parameters are the slices' starts:
  // one slice of 7 x 7 apart.
  const std::vector<int64_t> values(static_cast<size_t>(p.num_symbols), 7);
  bool moved = false;
  for (size_t j = 0; j < a.offsets.size(); ++j) {
    const int64_t oa = sym::evaluate(a.offsets[j], values), ob = sym::evaluate(b.offsets[j], values);
    if (oa != ob) {
      EXPECT_EQ(ob - oa, 7 * 7);
      moved = true;
    }
  }
  EXPECT_TRUE(moved);
  // The parameters are read as strides are (they may be negative), each once.
  int params = 0;
  for (int s : a.symbols) params += s < 0;
  EXPECT_EQ(params, static_cast<int>(a.offsets.size()));
}

}  // namespace
}  // namespace shapejit::backends::loops
