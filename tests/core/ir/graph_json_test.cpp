#include "core/ir/graph_json.h"

#include <gtest/gtest.h>

#include "core/ir/infer.h"

namespace shapejit::ir {
namespace {

// The example from TRACE_FORMAT.md.
const char* kExample = R"({
  "inputs": [
    {"name": "x", "dtype": "f32", "shape": ["b", "t", 768]},
    {"name": "w", "dtype": "f32", "shape": [768, 3072]}
  ],
  "nodes": [
    {"op": "matmul", "in": ["x", "w"], "out": "h"},
    {"op": "gelu", "in": ["h"], "out": "g", "attrs": {"approximate": "tanh"}},
    {"op": "sym_size", "in": ["x"], "out": "n", "attrs": {"dim": 1}},
    {"op": "sym_mul", "in": ["n", 2], "out": "n2"},
    {"op": "reshape", "in": ["g", "n2", -1], "out": "r"},
    {"op": "sum", "in": ["r"], "out": "y", "attrs": {"axes": [-1], "keepdim": false}}
  ],
  "outputs": ["y"]
})";

std::string error_of(const std::string& text) {
  auto g = parse_graph(text);
  EXPECT_FALSE(g.is_ok());
  return g.is_ok() ? "" : g.status().message();
}

TEST(GraphJson, ReadsTheFormatExample) {
  auto g = parse_graph(kExample);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->inputs.size(), 2u);
  EXPECT_EQ(g->nodes.size(), 6u);
  EXPECT_EQ(g->nodes[1].attrs.approximate_tanh, true);
  EXPECT_EQ(g->nodes[3].in[1].kind, Operand::Kind::kInt);
  sym::ShapeEnv env(true);
  ShapeHints hints = {{2, 5, 768}, {768, 3072}};
  auto types = infer(*g, env, &hints);
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  // reshape(g, 2*t, -1): [2*t, b*3072 // 2] then sum over the last axis.
  const ValueType& y = (*types)[g->outputs[0]];
  ASSERT_EQ(y.shape.size(), 1u);
  EXPECT_EQ(env.str(y.shape[0]), "2*t");
}

TEST(GraphJson, RoundTripsThroughJson) {
  auto g = parse_graph(kExample);
  ASSERT_TRUE(g.is_ok());
  auto again = graph_from_json(graph_to_json(*g));
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ(again->canonical_hash(), g->canonical_hash());
  EXPECT_EQ(graph_to_json(*again), graph_to_json(*g));
}

TEST(GraphJson, CanonicalHashIgnoresNamesAndIndependentNodeOrder) {
  auto a = parse_graph(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "exp", "in": ["x"], "out": "e"}, {"op": "neg", "in": ["x"], "out": "m"},
              {"op": "add", "in": ["e", "m"], "out": "y"}], "outputs": ["y"]})");
  auto b = parse_graph(R"({"inputs": [{"name": "input", "dtype": "f32", "shape": ["size"]}],
    "nodes": [{"op": "neg", "in": ["input"], "out": "p"}, {"op": "exp", "in": ["input"], "out": "q"},
              {"op": "add", "in": ["q", "p"], "out": "out"}], "outputs": ["out"]})");
  auto c = parse_graph(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "exp", "in": ["x"], "out": "e"}, {"op": "neg", "in": ["x"], "out": "m"},
              {"op": "add", "in": ["m", "e"], "out": "y"}], "outputs": ["y"]})");
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok());
  EXPECT_EQ(a->canonical_hash(), b->canonical_hash());
  EXPECT_NE(a->canonical_hash(), c->canonical_hash());  // operand order matters (sub would differ)
}

TEST(GraphJson, DefaultsSpelledOutOrNotHashTheSame) {
  auto a = parse_graph(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n", 4]}],
    "nodes": [{"op": "softmax", "in": ["x"], "out": "y"}], "outputs": ["y"]})");
  auto b = parse_graph(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n", 4]}],
    "nodes": [{"op": "softmax", "in": ["x"], "out": "y", "attrs": {"dim": -1}}], "outputs": ["y"]})");
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a->canonical_hash(), b->canonical_hash());
}

TEST(GraphJson, ErrorsNameTheJsonPointer) {
  EXPECT_NE(error_of("{ not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"inputs": [], "nodes": [{"op": "frobnicate", "in": [], "out": "y"}], "outputs": []})")
                .find("/nodes/0/op: unknown op 'frobnicate'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
      "nodes": [{"op": "add", "in": ["x"], "out": "y"}], "outputs": ["y"]})")
                .find("/nodes/0/in: op 'add' takes 2 operands, got 1"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
      "nodes": [{"op": "exp", "in": ["z"], "out": "y"}], "outputs": ["y"]})")
                .find("/nodes/0/in/0: unknown value 'z'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
      "nodes": [{"op": "exp", "in": ["x"], "out": "y", "attrs": {"dim": 0}}], "outputs": ["y"]})")
                .find("/nodes/0/attrs/dim: op 'exp' has no attribute 'dim'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"inputs": [{"name": "x", "dtype": "f16", "shape": [2]}], "nodes": [], "outputs": []})")
                .find("/inputs/0/dtype"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [-2]}], "nodes": [], "outputs": []})")
                .find("/inputs/0/shape/0: a dim must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
      "nodes": [{"op": "exp", "in": ["x"], "out": "x"}], "outputs": ["x"]})")
                .find("defined twice"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"inputs": [], "nodes": [], "outputs": [], "extra": 1})").find("/extra: unknown key"), std::string::npos);
  EXPECT_NE(error_of(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
      "nodes": [{"op": "cast", "in": ["x"], "out": "y"}], "outputs": ["y"]})")
                .find("needs attribute 'dtype'"),
            std::string::npos);
}

}  // namespace
}  // namespace shapejit::ir

namespace shapejit::ir {
namespace {

std::string deep(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(GraphJson, DeepValuesInAttributesAndShapesAreQuotedShort) {
  for (const std::string& g : {
           R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [2]}], "nodes": [{"op": "gelu", "in": ["x"], "out": "y", "attrs": {"approximate": )" + deep(100000) + "}}], \"outputs\": [\"y\"]}",
           R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [)" + deep(100000) + "]}], \"nodes\": [], \"outputs\": [\"x\"]}",
           R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [2]}], "nodes": [{"op": "cast", "in": ["x"], "out": "y", "attrs": {"dtype": )" + deep(100000) + "}}], \"outputs\": [\"y\"]}"}) {
    auto r = parse_graph(g);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_LT(r.status().message().size(), 200u) << r.status().message().substr(0, 200);
  }
}

TEST(GraphJson, DuplicateKeysAndHugeIntegersAreRejectedWhereTheyAre) {
  auto dup = parse_graph(R"({"inputs": [], "nodes": [], "outputs": [], "nodes": []})");
  ASSERT_FALSE(dup.is_ok());
  EXPECT_EQ(dup.status().message(), "graph: /nodes: a duplicate key (each key may appear once in an object)");
  auto big = parse_graph(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [18446744073709551615]}], "nodes": [], "outputs": ["x"]})");
  ASSERT_FALSE(big.is_ok());
  EXPECT_NE(big.status().message().find("/inputs/0/shape/0"), std::string::npos) << big.status().message();
}

}  // namespace
}  // namespace shapejit::ir
