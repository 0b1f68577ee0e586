// Lowering a graph to loops (backends/loops): which values get buffers,
// which are folded into the loops that read them, how a step's loops are
// merged and tiled, and which steps the patterns become. The programs'
// results are checked against the reference by the backends' tests; these
// check the program's shape.
#include "backends/loops/lower.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "backends/loops/lowering.h"
#include "bench/bench_util.h"

namespace shapejit::backends::loops {
namespace {

using Kind = Step::Kind;

LoopProgram lowered(const std::string& graph, const std::vector<std::vector<int64_t>>& shapes, bool dynamic = false,
                    const LowerOptions& options = {}) {
  const bench::Specialized sg = bench::specialize(graph, shapes, dynamic);
  Expected<LoopProgram> p = lower(*sg.graph, options);
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  return p.is_ok() ? std::move(p).value() : LoopProgram{};
}

int count(const LoopProgram& p, Buffer::Kind kind) {
  return static_cast<int>(std::count_if(p.buffers.begin(), p.buffers.end(), [&](const Buffer& b) { return b.kind == kind; }));
}

std::vector<Kind> kinds(const LoopProgram& p) {
  std::vector<Kind> out;
  for (const Step& s : p.steps) out.push_back(s.kind);
  return out;
}

int steps_of(const LoopProgram& p, Kind kind) {
  return static_cast<int>(std::count_if(p.steps.begin(), p.steps.end(), [&](const Step& s) { return s.kind == kind; }));
}

std::optional<int64_t> constant(const sym::Expr& e) { return e.as_const(); }

const std::string kChain3d = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["a", "b", "c"]}],
  "nodes": [{"op": "exp", "in": ["x"], "out": "e"}, {"op": "mul", "in": ["e", 2.0], "out": "y"}], "outputs": ["y"]})";

TEST(Lower, ADenseChainIsOneLoopOverEveryElement) {
  const LoopProgram p = lowered(kChain3d, {{4, 5, 6}});
  ASSERT_EQ(kinds(p), std::vector<Kind>{Kind::kLoops});
  EXPECT_EQ(count(p, Buffer::Kind::kTemp), 0);  // exp is folded into the store's loop
  const LoopStep& ls = p.steps[0].loops;
  ASSERT_EQ(ls.phases.size(), 1u);
  ASSERT_EQ(ls.phases[0].extents.size(), 1u);  // three dims merged
  EXPECT_EQ(constant(ls.phases[0].extents[0]), 120);
  EXPECT_TRUE(ls.outer_vars.empty());
}

TEST(Lower, StaticDimsAreConstantsAndDynamicOnesSymbols) {
  const LoopProgram st = lowered(kChain3d, {{4, 5, 6}}, /*dynamic=*/false);
  EXPECT_TRUE(constant(st.steps[0].loops.work_per_row).has_value());
  // Dynamic, the dense dims still merge (their strides are products of the
  // same symbols), and the extents are expressions over the graph's symbols.
  const LoopProgram dy = lowered(kChain3d, {{4, 5, 6}}, /*dynamic=*/true);
  EXPECT_EQ(dy.num_graph_symbols, 3);
  ASSERT_EQ(dy.steps.size(), 1u);
  const LoopStep& ls = dy.steps[0].loops;
  const sym::Expr& extent = ls.outer_extents.empty() ? ls.phases[0].extents[0] : ls.outer_extents[0];
  EXPECT_FALSE(constant(extent).has_value()) << extent.str();
}

TEST(Lower, ALongInnermostLoopIsSplitIntoTilesThatThreadsShare) {
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["a", "b"]}],
    "nodes": [{"op": "exp", "in": ["x"], "out": "y"}], "outputs": ["y"]})";
  const LoopProgram tiled = lowered(g, {{3, 50000}});
  const LoopStep& ls = tiled.steps[0].loops;
  ASSERT_EQ(ls.outer_extents.size(), 1u);
  EXPECT_EQ(constant(ls.outer_extents[0]), (150000 + 4095) / 4096);
  EXPECT_EQ(constant(ls.work_per_row), 4096);

  LowerOptions gpu;
  gpu.tile = 0;  // a GPU's grid spreads the loop itself
  const LoopProgram whole = lowered(g, {{3, 50000}}, false, gpu);
  EXPECT_TRUE(whole.steps[0].loops.outer_extents.empty());
  EXPECT_EQ(constant(whole.steps[0].loops.phases[0].extents[0]), 150000);
}

TEST(Lower, ViewsAreFoldedIntoIndicesNotCopied) {
  const LoopProgram p = lowered(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["a", "b"]}],
    "nodes": [{"op": "transpose", "in": ["x"], "out": "t", "attrs": {"dim0": 0, "dim1": 1}},
              {"op": "exp", "in": ["t"], "out": "y"}], "outputs": ["y"]})",
                                {{3, 7}});
  ASSERT_EQ(kinds(p), std::vector<Kind>{Kind::kLoops});
  EXPECT_EQ(count(p, Buffer::Kind::kTemp), 0);
  // The transpose is in the load's offset: the two dims stride differently
  // in the input and the output, so they do not merge.
  const LoopStep& ls = p.steps[0].loops;
  EXPECT_EQ(ls.phases[0].extents.size() + ls.outer_extents.size(), 2u);
}

TEST(Lower, AValueAViewReadsBesideAnotherUseGetsABuffer) {
  // e is read at its own index and, through the transpose, at another: one
  // buffer, so that exp runs once per element.
  const LoopProgram p = lowered(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [6, 6]}],
    "nodes": [{"op": "exp", "in": ["x"], "out": "e"},
              {"op": "transpose", "in": ["e"], "out": "t", "attrs": {"dim0": 0, "dim1": 1}},
              {"op": "add", "in": ["t", "e"], "out": "y"}], "outputs": ["y"]})",
                                {{6, 6}});
  EXPECT_EQ(count(p, Buffer::Kind::kTemp), 1);
  EXPECT_EQ(p.steps.size(), 2u);
}

TEST(Lower, AFloatSoftmaxSumsInAPassOfItsOwnUnlessAskedNotTo) {
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["r", "c"]}],
    "nodes": [{"op": "softmax", "in": ["x"], "out": "y", "attrs": {"dim": -1}}], "outputs": ["y"]})";
  EXPECT_EQ(lowered(g, {{4, 33}}).steps[0].loops.phases.size(), 4u);  // max, exp, sum, scale
  LowerOptions gpu;
  gpu.softmax_sum_pass = false;
  EXPECT_EQ(lowered(g, {{4, 33}}, false, gpu).steps[0].loops.phases.size(), 3u);  // max, exp with its sum, scale
}

TEST(Lower, APointwiseStepAfterAMatmulIsItsEpilogue) {
  const LoopProgram p = lowered(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["m", "k"]},
                                               {"name": "w", "dtype": "f32", "shape": ["k", "n"]},
                                               {"name": "b", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "matmul", "in": ["x", "w"], "out": "h"}, {"op": "add", "in": ["h", "b"], "out": "hb"},
              {"op": "relu", "in": ["hb"], "out": "y"}], "outputs": ["y"]})",
                                {{8, 16}, {16, 32}, {32}});
  ASSERT_EQ(kinds(p), (std::vector<Kind>{Kind::kMatmul, Kind::kLoops}));
  EXPECT_TRUE(p.steps[0].matmul.epilogue);
}

TEST(Lower, WithoutBlasAMatmulIsLoops) {
  LowerOptions loops_only;
  loops_only.blas = false;
  const LoopProgram p = lowered(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [8, 16]}, {"name": "w", "dtype": "f32", "shape": [16, 32]}],
    "nodes": [{"op": "matmul", "in": ["x", "w"], "out": "y"}], "outputs": ["y"]})",
                                {{8, 16}, {16, 32}}, false, loops_only);
  EXPECT_EQ(kinds(p), std::vector<Kind>{Kind::kLoops});
}

const std::string kAttention = R"({"inputs": [{"name": "q", "dtype": "f32", "shape": ["b", "t", 16]},
                                             {"name": "k", "dtype": "f32", "shape": ["b", "s", 16]},
                                             {"name": "v", "dtype": "f32", "shape": ["b", "s", 16]}],
  "nodes": [{"op": "transpose", "in": ["k"], "out": "kt", "attrs": {"dim0": 1, "dim1": 2}},
            {"op": "matmul", "in": ["q", "kt"], "out": "scores"},
            {"op": "mul", "in": ["scores", 0.25], "out": "scaled"},
            {"op": "softmax", "in": ["scaled"], "out": "p", "attrs": {"dim": -1}},
            {"op": "matmul", "in": ["p", "v"], "out": "y"}], "outputs": ["y"]})";

TEST(Lower, SoftmaxOfScoresTimesValuesIsOneAttentionStep) {
  const LoopProgram fused = lowered(kAttention, {{2, 10, 16}, {2, 12, 16}, {2, 12, 16}});
  ASSERT_EQ(kinds(fused), std::vector<Kind>{Kind::kAttention});
  EXPECT_EQ(count(fused, Buffer::Kind::kTemp), 0);     // no t x s scores, no probabilities
  EXPECT_EQ(count(fused, Buffer::Kind::kScratch), 2);  // the task's tile and its rows' state
  EXPECT_EQ(fused.task_symbols, 5);

  LowerOptions apart;
  apart.fuse_attention = false;
  const LoopProgram split = lowered(kAttention, {{2, 10, 16}, {2, 12, 16}, {2, 12, 16}}, false, apart);
  EXPECT_EQ(steps_of(split, Kind::kAttention), 0);
  EXPECT_EQ(steps_of(split, Kind::kMatmul), 2);
}

TEST(Lower, ScoresAnotherOpReadsAreNotFusedIntoAttention) {
  std::string g = kAttention;
  g.replace(g.find(R"("outputs": ["y"])"), 16, R"("outputs": ["y", "scores"])");
  const LoopProgram p = lowered(g, {{2, 10, 16}, {2, 12, 16}, {2, 12, 16}});
  EXPECT_EQ(steps_of(p, Kind::kAttention), 0);
}

// The attention graph with its softmax written out, as NumPy code and
// PyTorch's exports spell it: exp(x - max(x)) / sum(exp(x - max(x))).
std::string written_out_softmax(const std::string& extra_outputs = "") {
  std::string g = kAttention;
  g.replace(g.find(R"({"op": "softmax")"), std::string(R"({"op": "softmax", "in": ["scaled"], "out": "p", "attrs": {"dim": -1}})").size(),
            R"({"op": "max", "in": ["scaled"], "out": "m", "attrs": {"axes": [-1], "keepdim": true}},
               {"op": "sub", "in": ["scaled", "m"], "out": "d"}, {"op": "exp", "in": ["d"], "out": "e"},
               {"op": "sum", "in": ["e"], "out": "z", "attrs": {"axes": [-1], "keepdim": true}},
               {"op": "div", "in": ["e", "z"], "out": "p"})");
  g.replace(g.find(R"("outputs": ["y"])"), 16, R"("outputs": ["y")" + extra_outputs + "]");
  return g;
}

TEST(Lower, ASoftmaxWrittenOutIsFusedIntoAttentionAsTheOpIs) {
  const LoopProgram p = lowered(written_out_softmax(), {{2, 10, 16}, {2, 12, 16}, {2, 12, 16}});
  EXPECT_EQ(kinds(p), std::vector<Kind>{Kind::kAttention}) << p.dump();
  EXPECT_EQ(count(p, Buffer::Kind::kTemp), 0);
  // Its exponentials read elsewhere: the spelling stays, computed once.
  const LoopProgram kept = lowered(written_out_softmax(R"(, "e")"), {{2, 10, 16}, {2, 12, 16}, {2, 12, 16}});
  EXPECT_EQ(steps_of(kept, Kind::kAttention), 0);
}

TEST(Lower, ALogSoftmaxWrittenOutLowersAsTheOp) {
  const std::string op = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["a", "b"]}],
    "nodes": [{"op": "log_softmax", "in": ["x"], "out": "y", "attrs": {"dim": 0}}], "outputs": ["y"]})";
  const std::string spelled = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["a", "b"]}],
    "nodes": [{"op": "max", "in": ["x"], "out": "m", "attrs": {"axes": [0], "keepdim": true}},
              {"op": "sub", "in": ["x", "m"], "out": "d"}, {"op": "exp", "in": ["d"], "out": "e"},
              {"op": "sum", "in": ["e"], "out": "z", "attrs": {"axes": [-2], "keepdim": true}},
              {"op": "log", "in": ["z"], "out": "l"}, {"op": "sub", "in": ["d", "l"], "out": "y"}], "outputs": ["y"]})";
  const LoopProgram a = lowered(op, {{6, 5}}), b = lowered(spelled, {{6, 5}});
  EXPECT_EQ(a.dump(), b.dump());
}

TEST(Lower, AScanIsAStepOfItsOwnOverADenseOperand) {
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["a", "b"]}],
    "nodes": [{"op": "transpose", "in": ["x"], "out": "t", "attrs": {"dim0": 0, "dim1": 1}},
              {"op": "cumsum", "in": ["t"], "out": "y", "attrs": {"dim": 0}}], "outputs": ["y"]})";
  const LoopProgram p = lowered(g, {{3, 4}});
  ASSERT_EQ(kinds(p), (std::vector<Kind>{Kind::kLoops, Kind::kScan}));  // the transposed view made dense, then the scan
  const ScanStep& s = p.steps[1].scan;
  EXPECT_EQ(constant(s.outer), 1);
  EXPECT_EQ(constant(s.n), 4);
  EXPECT_EQ(constant(s.inner), 3);
  LowerOptions gpu;
  gpu.scans = false;
  const bench::Specialized sg = bench::specialize(g, {{3, 4}}, false);
  Expected<LoopProgram> none = lower(*sg.graph, gpu);
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("no scan"), std::string::npos) << none.status().message();
}

TEST(Lower, DataDependentShapesAreCompactStepsSettingTheirCount) {
  const bench::Specialized sg = bench::specialize(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "gt", "in": ["x", 0.0], "out": "m"}, {"op": "nonzero", "in": ["m"], "out": "y"},
              {"op": "add", "in": ["y", 1], "out": "z"}], "outputs": ["z"]})",
                                                  {{5}}, true);
  Expected<LoopProgram> p = lower(*sg.graph);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  // The mask (x > 0) made dense, the compaction, then z over the count.
  ASSERT_EQ(p->steps.size(), 3u) << p->dump();
  const Step& c = p->steps[1];
  ASSERT_EQ(c.kind, Step::Kind::kCompact) << p->dump();
  EXPECT_EQ(c.compact.op, ir::Op::kNonzero);
  EXPECT_EQ(p->buffers[c.compact.mask].dtype, ir::DType::kBool);
  // The mask's step counts it per block as it stores it: the backend only sums.
  ASSERT_GE(c.compact.counts, 0) << p->dump();
  EXPECT_EQ(p->steps[0].loops.phases.size(), 2u) << p->dump();
  EXPECT_EQ(p->steps[0].loops.phases[1].stores[0].buffer, c.compact.counts);
  EXPECT_EQ(p->buffers[c.compact.out].kind, Buffer::Kind::kTemp);
  EXPECT_TRUE(sg.graph->spec.symbols[c.compact.count].unbacked);
  EXPECT_TRUE(p->is_data_dependent(p->steps[2].loops.outer_extents[0]) ||
              p->is_data_dependent(p->steps[2].loops.phases[0].extents.empty() ? sym::Expr(0) : p->steps[2].loops.phases[0].extents[0]))
      << p->dump();
  // A backend without compaction refuses it, naming the node.
  LowerOptions gpu;
  gpu.compaction = false;
  Expected<LoopProgram> none = lower(*sg.graph, gpu);
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), Code::kUnsupported);
  EXPECT_NE(none.status().message().find("node 1 (nonzero -> 'y')"), std::string::npos) << none.status().message();
}

// A pointwise step over the count that reads the compaction's result in
// its own row is its epilogue; one that reads other rows is not.
TEST(Lower, APointwiseStepOnTheCountsRowsIsTheCompactionsEpilogue) {
  for (const char* rows : {"own", "other"}) {
    // other: r + r[r - r], which reads row 0 from every row.
    const std::string read = std::string(rows) == "own" ? R"({"op": "reshape", "in": ["nz", -1], "out": "i"})"
                                                         : R"({"op": "reshape", "in": ["nz", -1], "out": "r"}, {"op": "sub", "in": ["r", "r"], "out": "z"},
                                                              {"op": "index_select", "in": ["r", "z"], "out": "f", "attrs": {"dim": 0}},
                                                              {"op": "add", "in": ["r", "f"], "out": "i"})";
    const bench::Specialized sg = bench::specialize(std::string(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
      "nodes": [{"op": "gt", "in": ["x", 0.5], "out": "m"}, {"op": "nonzero", "in": ["m"], "out": "nz"}, )") + read +
                                                        R"(, {"op": "add", "in": ["i", 1], "out": "y"}], "outputs": ["y"]})",
                                                    {{50}}, true);
    Expected<LoopProgram> p = lower(*sg.graph);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    ASSERT_EQ(p->steps.size(), 3u) << p->dump();
    EXPECT_EQ(p->steps[1].compact.epilogue, std::string(rows) == "own") << p->dump();
  }
}

// (x[x > 0] * 2 + 1).sum(): no compaction, one masked reduction over x's
// elements (its chunks' step, then their partials').
TEST(Lower, ASelectionOnlySummedIsAMaskedReduction) {
  const bench::Specialized sg = bench::specialize(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "gt", "in": ["x", 0.0], "out": "m"}, {"op": "masked_select", "in": ["x", "m"], "out": "s"},
              {"op": "mul", "in": ["s", 2.0], "out": "a"}, {"op": "add", "in": ["a", 1.0], "out": "b"}, {"op": "sum", "in": ["b"], "out": "y"}],
    "outputs": ["y"]})",
                                                  {{50}}, true);
  Expected<LoopProgram> p = lower(*sg.graph);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  ASSERT_EQ(p->steps.size(), 2u) << p->dump();
  for (const Step& st : p->steps) EXPECT_EQ(st.kind, Step::Kind::kLoops) << p->dump();
  EXPECT_EQ(p->steps[0].loops.phases[0].reductions.size(), 1u);
  EXPECT_EQ(p->num_temps, 1) << p->dump();  // the partials only
}

TEST(Lower, ANodeNoOutputDependsOnIsNotLowered) {
  const LoopProgram p = lowered(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [4, 4]}],
    "nodes": [{"op": "sum", "in": ["x"], "out": "dead", "attrs": {"axes": [1]}}, {"op": "exp", "in": ["x"], "out": "y"}],
    "outputs": ["y"]})",
                                {{4, 4}});
  EXPECT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(count(p, Buffer::Kind::kTemp), 0);
}

TEST(Lower, AnInputListedAsAnOutputIsCopied) {
  const LoopProgram p = lowered(R"({"inputs": [{"name": "x", "dtype": "i32", "shape": [3]}], "nodes": [], "outputs": ["x", "x"]})",
                                {{3}});
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].label, "output copy");
}

TEST(Lower, AGatherIsACheckedLoadAndItsStepMayFail) {
  const LoopProgram p = lowered(R"({"inputs": [{"name": "table", "dtype": "f32", "shape": [10, 4]},
                                               {"name": "ids", "dtype": "i64", "shape": [3]}],
    "nodes": [{"op": "embedding", "in": ["table", "ids"], "out": "y"}], "outputs": ["y"]})",
                                {{10, 4}, {3}});
  ASSERT_EQ(p.steps.size(), 1u);
  const std::vector<Inst>& body = p.steps[0].loops.phases[0].body;
  EXPECT_TRUE(std::any_of(body.begin(), body.end(), [](const Inst& i) { return i.kind == InstKind::kCheckIndex; }));
  EXPECT_TRUE(p.steps[0].loops.may_fail);
  EXPECT_TRUE(p.has_checks());
}

TEST(Lower, AStridedInputReadsItsStridesAsSymbols) {
  const bench::Specialized sg = bench::specialize(kChain3d, {{4, 5, 6}}, false);
  sym::Specialization spec = sg.graph->spec;
  spec.layouts = {sym::Layout()};  // strided: the input's strides arrive with the call
  const ir::SpecializedGraphPtr strided = std::move(ir::specialize(sg.graph->graph, spec)).value();
  const LoopProgram p = std::move(lower(*strided)).value();
  ASSERT_EQ(p.params.size(), 3u);
  for (int d = 0; d < 3; ++d) EXPECT_EQ(p.params[d], std::make_pair(0, d));
  EXPECT_EQ(p.num_read_symbols(), p.num_graph_symbols + 3);
}

// A weight passed as W.T: under its layout (dense in dim order (1, 0))
// its strides are the dims' own, so the product reads it in place with
// contiguous columns (BLAS's transB); strided, its strides are symbols and
// it is copied dense first.
TEST(Lower, AProductReadsATransposedInputInPlace) {
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["m", "k"]}, {"name": "w", "dtype": "f32", "shape": ["k", "n"]}],
    "nodes": [{"op": "matmul", "in": ["x", "w"], "out": "y"}], "outputs": ["y"]})";
  const bench::Specialized sg = bench::specialize(g, {{3, 8}, {8, 5}}, true);
  for (const sym::Layout w : {sym::Layout::permuted(std::vector<int>{1, 0}), sym::Layout()}) {
    sym::Specialization spec = sg.graph->spec;
    spec.layouts = {sym::Layout::dense(), w};
    const LoopProgram p = std::move(lower(*std::move(ir::specialize(sg.graph->graph, spec)).value())).value();
    ASSERT_EQ(steps_of(p, Kind::kMatmul), 1);
    const MatmulStep& m = std::find_if(p.steps.begin(), p.steps.end(), [](const Step& s) { return s.kind == Kind::kMatmul; })->matmul;
    if (w.is_permuted()) {
      EXPECT_TRUE(p.params.empty()) << "no stride is read from the call";
      EXPECT_EQ(p.buffers[m.b.buffer].kind, Buffer::Kind::kInput);
      EXPECT_TRUE(is_one(m.b.row_stride));
      EXPECT_EQ(count(p, Buffer::Kind::kTemp), 0);
    } else {
      EXPECT_EQ(p.params.size(), 2u);
      EXPECT_EQ(p.buffers[m.b.buffer].kind, Buffer::Kind::kTemp);  // copied dense
    }
  }
}

TEST(Lower, AChainOfFoldedOpsIsBoundedByABuffer) {
  // A chain longer than kMaxFusedDepth folded ops gets a buffer on the way,
  // so that the folding's recursion and the loop bodies stay bounded.
  std::string nodes = R"({"op": "neg", "in": ["x"], "out": "v0"})";
  const int n = kMaxFusedDepth + 10;
  for (int i = 1; i < n; ++i) {
    nodes += R"(, {"op": "neg", "in": ["v)" + std::to_string(i - 1) + R"("], "out": "v)" + std::to_string(i) + "\"}";
  }
  const LoopProgram p = lowered(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [8]}], "nodes": [)" + nodes +
                                    R"(], "outputs": ["v)" + std::to_string(n - 1) + "\"]}",
                                {{8}});
  EXPECT_EQ(count(p, Buffer::Kind::kTemp), 1);
  EXPECT_EQ(p.steps.size(), 2u);
}

}  // namespace
}  // namespace shapejit::backends::loops
