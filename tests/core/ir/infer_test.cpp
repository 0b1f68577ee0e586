// Shape inference under a ShapeEnv: symbolic result shapes, the decisions
// recorded, and clear errors for ill-typed graphs.
#include "core/ir/infer.h"

#include <gtest/gtest.h>

#include "core/ir/graph_json.h"

namespace shapejit::ir {
namespace {

struct Inferred {
  Graph graph;
  sym::ShapeEnv env{true};
  std::vector<ValueType> types;
  Status status;
  std::string shape(const std::string& value) const {
    for (int v = 0; v < graph.num_values(); ++v) {
      if (graph.value_names[v] != value) continue;
      std::string s = "[";
      for (size_t i = 0; i < types[v].shape.size(); ++i) s += (i ? ", " : "") + env.str(types[v].shape[i]);
      return s + "]";
    }
    return "?";
  }
};

// inputs: `"name": "dtype", [dims]` as JSON fragments; nodes likewise.
Inferred run(const std::string& inputs, const std::string& nodes, const std::string& outputs, const ShapeHints& hints) {
  Inferred r;
  auto g = parse_graph("{\"inputs\": [" + inputs + "], \"nodes\": [" + nodes + "], \"outputs\": [" + outputs + "]}");
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  r.graph = std::move(g).value();
  auto t = infer(r.graph, r.env, &hints);
  r.status = t.status();
  if (t.is_ok()) r.types = std::move(t).value();
  return r;
}

TEST(Infer, BroadcastUnifiesEqualDimsAndGuardsThem) {
  auto r = run(R"({"name": "x", "dtype": "f32", "shape": ["a", "b"]}, {"name": "y", "dtype": "f32", "shape": ["c"]})",
               R"({"op": "add", "in": ["x", "y"], "out": "z"})", R"("z")", {{3, 5}, {5}});
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(r.shape("z"), "[a, b]");
  EXPECT_EQ(r.env.resolve(sym::Expr::symbol(2)), sym::Expr::symbol(1));  // c := b
}

TEST(Infer, BroadcastOfMismatchedDimsIsAnError) {
  auto r = run(R"({"name": "x", "dtype": "f32", "shape": ["a"]}, {"name": "y", "dtype": "f32", "shape": ["c"]})",
               R"({"op": "mul", "in": ["x", "y"], "out": "z"})", R"("z")", {{3}, {4}});
  ASSERT_FALSE(r.status.is_ok());
  EXPECT_NE(r.status.message().find("node 0 (mul -> 'z'): dims a = 3 and c = 4 do not broadcast"), std::string::npos) << r.status.message();
}

TEST(Infer, ReshapeInfersMinusOneAndRecordsDivisibility) {
  auto r = run(R"({"name": "x", "dtype": "f32", "shape": ["a", "b"]})",
               R"({"op": "reshape", "in": ["x", 2, -1], "out": "y"})", R"("y")", {{4, 6}});
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(r.shape("y"), "[2, (a*b // 2)]");
  ASSERT_EQ(r.env.facts().size(), 1u);  // a*b % 2 == 0, decided on this call's values
  auto bad = run(R"({"name": "x", "dtype": "f32", "shape": ["a", "b"]})",
                 R"({"op": "reshape", "in": ["x", 4, -1], "out": "y"})", R"("y")", {{3, 5}});
  EXPECT_NE(bad.status.message().find("cannot reshape"), std::string::npos) << bad.status.message();
}

// The other dims are known not to be 0 (the reshape checks it), so the
// factors they share with the element count cancel: a model's
// `x.reshape(x.shape[:-1] + (-1, 2))` keeps its head dim a constant.
TEST(Infer, ReshapeMinusOneCancelsTheFactorsItShares) {
  auto r = run(R"({"name": "x", "dtype": "f32", "shape": ["b", "t", 6, 48]})",
               R"({"op": "sym_size", "in": ["x"], "out": "b", "attrs": {"dim": 0}}, {"op": "sym_size", "in": ["x"], "out": "t", "attrs": {"dim": 1}},
                  {"op": "reshape", "in": ["x", "b", "t", 6, -1, 2], "out": "y"},
                  {"op": "reshape", "in": ["x", "t", -1], "out": "z"},
                  {"op": "reshape", "in": ["x", "b", -1, 5, 3], "out": "w"})",
               R"("y", "z", "w")", {{2, 5, 6, 48}});
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(r.shape("y"), "[b, t, 6, 24, 2]");
  EXPECT_EQ(r.shape("z"), "[t, 288*b]");
  EXPECT_EQ(r.shape("w"), "[b, ((288*t) // 15), 5, 3]");  // 15 does not divide 288: the quotient stays
  // At t = 0 the reshape is NumPy's error, not a 0 where 24 was inferred.
  auto empty = run(R"({"name": "x", "dtype": "f32", "shape": ["b", "t", 6, 48]})",
                   R"({"op": "sym_size", "in": ["x"], "out": "b", "attrs": {"dim": 0}}, {"op": "sym_size", "in": ["x"], "out": "t", "attrs": {"dim": 1}},
                      {"op": "reshape", "in": ["x", "b", "t", 6, -1, 2], "out": "y"})",
                   R"("y")", {{2, 0, 6, 48}});
  EXPECT_NE(empty.status.message().find("cannot infer the -1 dim"), std::string::npos) << empty.status.message();
  // A dim that is a sum, as a row sliced at a position makes it (x[:, p:p + 1]
  // has min(p + 1, n) - min(p, n) rows): 192 times it is a sum, not a
  // product, and still a multiple of 2 times it. A decode step's key/value
  // cache keeps its head dim 96 so, not a quotient of two sums.
  auto sum = run(R"({"name": "x", "dtype": "f32", "shape": [2, "n", 96]}, {"name": "at", "dtype": "f32", "shape": ["p"]})",
                 R"({"op": "sym_size", "in": ["at"], "out": "p", "attrs": {"dim": 0}}, {"op": "sym_add", "in": ["p", 1], "out": "q"},
                    {"op": "slice", "in": ["x", "p", "q", 1], "out": "s", "attrs": {"dim": 1}},
                    {"op": "sym_size", "in": ["s"], "out": "k", "attrs": {"dim": 1}},
                    {"op": "reshape", "in": ["s", 1, "k", 2, -1], "out": "y"})",
                 R"("y")", {{2, 16, 96}, {3}});
  ASSERT_TRUE(sum.status.is_ok()) << sum.status.to_string();
  const std::string y = sum.shape("y");
  EXPECT_EQ(y.substr(y.rfind(", ")), ", 96]") << y;
}

TEST(Infer, FullAndArangeTakeSymIntOperands) {
  auto r = run(R"({"name": "x", "dtype": "f32", "shape": ["b", "t"]})",
               R"({"op": "sym_size", "in": ["x"], "out": "n", "attrs": {"dim": 1}},
                  {"op": "sym_mul", "in": ["n", 2], "out": "n2"},
                  {"op": "full", "in": ["n2", 3], "out": "f", "attrs": {"value": 1.5, "dtype": "f64"}},
                  {"op": "arange", "in": [0, "n", 2], "out": "r"})",
               R"("f", "r")", {{3, 7}});
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(r.shape("f"), "[2*t, 3]");
  EXPECT_EQ(r.shape("r"), "[((t + 1) // 2)]");
  EXPECT_EQ(r.types[r.graph.outputs[1]].dtype, DType::kI64);
}

TEST(Infer, SliceClampsLikePython) {
  auto r = run(R"({"name": "x", "dtype": "f32", "shape": ["n", 4]})",
               R"({"op": "slice", "in": ["x", 1, 9223372036854775807, 1], "out": "a", "attrs": {"dim": 0}},
                  {"op": "slice", "in": ["x", 0, -1, 2], "out": "b", "attrs": {"dim": 1}},
                  {"op": "slice", "in": ["x", -3, 9, 1], "out": "c", "attrs": {"dim": 0}})",
               R"("a", "b", "c")", {{10, 4}});
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(r.shape("a"), "[n - 1, 4]");  // x[1:]: the ranges prove the clamps away
  EXPECT_EQ(r.shape("b"), "[n, 2]");
  // x[-3:9]: n may be below 3 or above 12, so the clamps stay.
  EXPECT_EQ(r.shape("c"), "[max(0, min(9, n) - max(0, n - 3)), 4]");
}

TEST(Infer, ASliceToTheFrontEndsEndIsTheDim) {
  // The Python front end spells "to the end" as a stop of 2^62: a dim of a
  // tensor that holds anything is at most that (Range::kMaxDim), so the
  // clamp is the dim itself, and a write's pieces sum back to it.
  auto r = run(R"({"name": "x", "dtype": "f32", "shape": ["n", "m"]})",
               R"({"op": "slice", "in": ["x", 1, 4611686018427387904, 1], "out": "a", "attrs": {"dim": 0}},
                  {"op": "slice", "in": ["x", -1, 4611686018427387904, 1], "out": "b", "attrs": {"dim": 1}},
                  {"op": "concat", "in": ["b", "x"], "out": "c", "attrs": {"dim": 1}})",
               R"("a", "b", "c")", {{10, 4}});
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(r.shape("a"), "[n - 1, m]");
  EXPECT_EQ(r.shape("b"), "[n, 1]");
  EXPECT_EQ(r.shape("c"), "[n, m + 1]");
  EXPECT_EQ(r.env.range(sym::Expr::symbol(0)).hi, sym::Range::kMaxDim);
}

TEST(Infer, ADimPastTheLargestATensorCanHoldKeepsItsRangeOpen) {
  // Beside a 0 dim (the tensor empty, only through DLPack): no bound.
  auto r = run(R"({"name": "x", "dtype": "f32", "shape": [0, "m"]})", R"({"op": "exp", "in": ["x"], "out": "y"})", R"("y")",
               {{0, sym::Range::kMaxDim + 5}});
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(r.env.range(sym::Expr::symbol(0)).hi, sym::Range::kInf);
}

TEST(Infer, MatmulPromotesVectorsAndBroadcastsBatches) {
  auto r = run(R"({"name": "a", "dtype": "f32", "shape": ["b", 1, "m", "k"]}, {"name": "w", "dtype": "f32", "shape": [3, "k2", "n"]},
                  {"name": "v", "dtype": "f32", "shape": ["k3"]})",
               R"({"op": "matmul", "in": ["a", "w"], "out": "y"}, {"op": "matmul", "in": ["y", "v"], "out": "z"})", R"("y", "z")",
               {{2, 1, 5, 6}, {3, 6, 7}, {7}});
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(r.shape("y"), "[b, 3, m, n]");
  EXPECT_EQ(r.shape("z"), "[b, 3, m]");
}

TEST(Infer, DataDependentOpsGetUnbackedSymbols) {
  auto r = run(R"({"name": "x", "dtype": "f32", "shape": ["a", "b"]}, {"name": "m", "dtype": "bool", "shape": ["a", "b"]})",
               R"({"op": "nonzero", "in": ["x"], "out": "nz"}, {"op": "masked_select", "in": ["x", "m"], "out": "ms"})",
               R"("nz", "ms")", {{3, 4}, {3, 4}});
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(r.shape("nz"), "[u2, 2]");
  EXPECT_EQ(r.shape("ms"), "[u3]");
  EXPECT_EQ(r.env.range(sym::Expr::symbol(2)).lo, 0);
}

TEST(Infer, TypeErrorsNameTheNode) {
  auto r = run(R"({"name": "x", "dtype": "i32", "shape": [2]})", R"({"op": "exp", "in": ["x"], "out": "y"})", R"("y")", {{2}});
  EXPECT_NE(r.status.message().find("node 0 (exp -> 'y'): takes float tensors, got i32"), std::string::npos) << r.status.message();
  r = run(R"({"name": "x", "dtype": "f32", "shape": [2]}, {"name": "y", "dtype": "f64", "shape": [2]})",
          R"({"op": "add", "in": ["x", "y"], "out": "z"})", R"("z")", {{2}, {2}});
  EXPECT_NE(r.status.message().find("insert a cast"), std::string::npos) << r.status.message();
  r = run(R"({"name": "x", "dtype": "f32", "shape": [2, 3]})", R"({"op": "squeeze", "in": ["x"], "out": "y", "attrs": {"dims": [0]}})",
          R"("y")", {{2, 3}});
  EXPECT_NE(r.status.message().find("not 1"), std::string::npos) << r.status.message();
  r = run(R"({"name": "x", "dtype": "f32", "shape": [2, 3]})", R"({"op": "permute", "in": ["x"], "out": "y", "attrs": {"perm": [0, 0]}})",
          R"("y")", {{2, 3}});
  EXPECT_NE(r.status.message().find("repeats"), std::string::npos) << r.status.message();
  r = run(R"({"name": "x", "dtype": "f32", "shape": [2, 3]})", R"({"op": "sum", "in": ["x"], "out": "y", "attrs": {"axes": [5]}})",
          R"("y")", {{2, 3}});
  EXPECT_NE(r.status.message().find("out of range for rank 2"), std::string::npos) << r.status.message();
}

TEST(Infer, CallsThatDisagreeWithTheGraphAreErrors) {
  auto r = run(R"({"name": "x", "dtype": "f32", "shape": ["a", 4]})", R"({"op": "neg", "in": ["x"], "out": "y"})", R"("y")", {{3, 5}});
  EXPECT_NE(r.status.message().find("input 0 ('x') dim 1: the graph pins it to 4, got 5"), std::string::npos) << r.status.message();
  r = run(R"({"name": "x", "dtype": "f32", "shape": ["a", 4]})", R"({"op": "neg", "in": ["x"], "out": "y"})", R"("y")", {{3}});
  EXPECT_NE(r.status.message().find("expected rank 2, got rank 1"), std::string::npos) << r.status.message();
  r = run(R"({"name": "x", "dtype": "f32", "shape": ["a"]}, {"name": "y", "dtype": "f32", "shape": ["a"]})",
          R"({"op": "add", "in": ["x", "y"], "out": "z"})", R"("z")", {{3}, {4}});
  EXPECT_NE(r.status.message().find("declares it equal to 'a'"), std::string::npos) << r.status.message();
}

}  // namespace
}  // namespace shapejit::ir
