// The LLVM backend against the reference interpreter: every op and dtype,
// each graph compiled fully dynamic and fully static, on edge shapes (0, 1,
// broadcast, non-contiguous, odd sizes that leave vector tails, tiles, large);
// tests/support/llvm_agreement.h says the tolerance. Matmuls and attention
// are in llvm_matmul_test.cpp, views, gathers and scatters in
// llvm_index_test.cpp, scans and sorts in llvm_lines_test.cpp, the inline
// math's ulp bounds in llvm_fast_math_test.cpp.
#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <limits>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "backends/llvm/session.h"
#include "backends/loops/lower.h"
#include "bench/bench_util.h"
#include "core/ir/infer.h"
#include "tests/support/llvm_agreement.h"

#ifdef SHAPEJIT_HAVE_LLVM

namespace shapejit {
namespace {

using namespace llvm_test;

TEST(Llvm, UnaryOpsEveryDtype) {
  std::mt19937 rng(1);
  for (const char* op : {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "silu", "sin", "cos", "erf", "gelu",
                         "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log1p", "expm1", "log2", "log10", "exp2", "cbrt", "floor", "ceil", "trunc", "rint"}) {
    bool ints = std::string(op) == "neg" || std::string(op) == "abs" || std::string(op) == "relu";
    for (const char* t : kNumeric) {
      if (!ir::is_float(dt(t)) && !ints) continue;
      expect_agrees(one_op(op, {{t, {37}}}), {random_tensor(dt(t), {37}, rng)}, std::string(op) + " " + t);
    }
  }
  for (const char* t : kFloats) {
    expect_agrees(one_op("gelu", {{t, {9}}}, "", R"({"approximate": "tanh"})"), {random_tensor(dt(t), {9}, rng)}, "gelu tanh");
  }
  expect_agrees(one_op("not", {{"bool", {13}}}), {random_tensor(DType::kBool, {13}, rng)}, "not");
}

// tvm.json turns the 0/1 rule off: a dim that broadcasts is then a traced
// decision, guarded, so one Jit taking 1s and non-1s in turn never reuses an
// entry built for the other case.
TEST(Llvm, WithoutTheZeroOneRuleBroadcastsAreGuarded) {
  const std::string g = R"({"inputs": [{"name": "a", "dtype": "f32", "shape": ["n", "m"]}, {"name": "b", "dtype": "f32", "shape": ["k"]}],
    "nodes": [{"op": "add", "in": ["a", "b"], "out": "y"}], "outputs": ["y"]})";
  auto jit = runtime::Jit::create(R"({"compile": {"backend": "llvm"}, "policy": {"mode": "always_dynamic", "specialize_zero_one": false},
                             "log": {"recompiles": false}})");
  ASSERT_TRUE(jit.is_ok()) << jit.status().to_string();
  std::mt19937 rng(9);
  // One Jit for every call of a site, each call checked against a fresh reference run.
  auto agrees = [&](const std::string& site, const std::string& text, const ir::Graph& graph, const std::vector<Tensor>& in) {
    testing::ArgPack p;
    for (const Tensor& t : in) p.add(t);
    std::vector<Tensor> got;
    Status st = (*jit)->call_graph(site, graph, {}, p.args(), got);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    Outcome ref = run_with(text, in, R"({"compile": {"backend": "reference"}})");
    ASSERT_TRUE(ref.status.is_ok());
    EXPECT_TRUE(testing::tensors_close(got[0], ref.out[0], 1e-6, 0));
  };
  ir::Graph graph = testing::graph_from(g);
  for (auto [n, m, k] : std::vector<std::array<int64_t, 3>>{{3, 4, 4}, {3, 1, 4}, {3, 4, 1}, {1, 5, 5}, {2, 1, 1}, {3, 4, 4}, {0, 4, 1}}) {
    SCOPED_TRACE("n=" + std::to_string(n) + " m=" + std::to_string(m) + " k=" + std::to_string(k));
    agrees("t", g, graph, {random_tensor(DType::kF32, {n, m}, rng), random_tensor(DType::kF32, {k}, rng)});
  }
  // expand: a dim of 1 or of the target size.
  const std::string e = R"({"inputs": [{"name": "a", "dtype": "f32", "shape": ["n", "m"]}],
    "nodes": [{"op": "sym_size", "in": ["a"], "out": "n0", "attrs": {"dim": 0}},
              {"op": "expand", "in": ["a", "n0", 6], "out": "y"}], "outputs": ["y"]})";
  ir::Graph eg = testing::graph_from(e);
  for (auto [n, m] : std::vector<std::array<int64_t, 2>>{{2, 6}, {2, 1}, {3, 6}, {3, 1}}) {
    SCOPED_TRACE("expand n=" + std::to_string(n) + " m=" + std::to_string(m));
    agrees("e", e, eg, {random_tensor(DType::kF32, {n, m}, rng)});
  }
}

TEST(Llvm, CastEveryPairWithSpecialValues) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> special = {0, -0.0, 1, -1, 2.5, -2.5, 1e10, -1e10, 3e9, inf, -inf, nan, 7};
  for (const char* from : kAll) {
    for (const char* to : kAll) {
      const int64_t n = static_cast<int64_t>(special.size());
      Tensor x = ir::is_int(dt(from)) ? from_values(dt(from), {n}, std::vector<int64_t>{0, 1, -1, 2, -2, 1 << 30, -(1 << 30), 5, 6, 7, 8, 9, 10})
                                      : from_values(dt(from), {n}, special);
      expect_agrees(one_op("cast", {{from, {n}}}, "", std::string(R"({"dtype": ")") + to + "\"}"), {x}, std::string("cast ") + from + " -> " + to);
    }
  }
}

TEST(Llvm, BinaryOpsEveryDtypeWithBroadcasting) {
  std::mt19937 rng(2);
  for (const char* op : {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"}) {
    for (const char* t : kAll) {
      bool cmp = std::string(op).size() == 2;
      if (dt(t) == DType::kBool && !cmp) continue;
      Tensor a = random_tensor(dt(t), {3, 1, 5}, rng), b = random_tensor(dt(t), {4, 1}, rng);
      if (std::string(op) == "pow" && ir::is_int(dt(t))) b = random_tensor(dt(t), {4, 1}, rng, 0, 2);
      expect_agrees(one_op(op, {{t, {3, 1, 5}}, {t, {4, 1}}}), {a, b}, std::string(op) + " " + t);
      if (dt(t) != DType::kBool) {
        expect_agrees(one_op(op, {{t, {6}}}, "2"), {random_tensor(dt(t), {6}, rng)}, std::string(op) + " literal " + t);
      }
    }
  }
  // Integer bitwise ops; counts from -4 to 72 reach past the width both ways.
  for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"}) {
    for (const char* t : {"i32", "i64"}) {
      expect_agrees(one_op(op, {{t, {3, 1, 5}}, {t, {4, 1}}}), {random_tensor(dt(t), {3, 1, 5}, rng, -50, 50), random_tensor(dt(t), {4, 1}, rng, -1, 18)},
                    std::string(op) + " " + t);
    }
  }
  for (const char* t : {"i32", "i64"}) expect_agrees(one_op("invert", {{t, {9}}}), {random_tensor(dt(t), {9}, rng, -50, 50)}, "invert");
  // gcd: signs, zeros, and the type's least value (its magnitude 2^width-1).
  for (const char* t : {"i32", "i64"}) {
    expect_agrees(one_op("gcd", {{t, {3, 1, 5}}, {t, {4, 1}}}), {random_tensor(dt(t), {3, 1, 5}, rng, -60, 60), random_tensor(dt(t), {4, 1}, rng, -60, 60)},
                  std::string("gcd ") + t);
  }
  const int64_t least = std::numeric_limits<int64_t>::min();
  expect_agrees(one_op("gcd", {{"i64", {6}}, {"i64", {6}}}),
                {from_values(DType::kI64, {6}, std::vector<int64_t>{least, least, least, 0, -4, 12}),
                 from_values(DType::kI64, {6}, std::vector<int64_t>{0, least, 6, 0, 6, -18})},
                "gcd extremes");
  expect_agrees(one_op("gcd", {{"i32", {3}}, {"i32", {3}}}),
                {from_values(DType::kI32, {3}, std::vector<int>{std::numeric_limits<int>::min(), -7, 0}), from_values(DType::kI32, {3}, std::vector<int>{0, 21, -5})},
                "gcd i32 extremes");
  for (const char* op : {"atan2", "hypot", "fmod", "nextafter"}) {
    for (const char* t : kFloats) {
      expect_agrees(one_op(op, {{t, {3, 1, 5}}, {t, {4, 1}}}), {random_tensor(dt(t), {3, 1, 5}, rng), random_tensor(dt(t), {4, 1}, rng)},
                    std::string(op) + " " + t);
    }
  }
  // An integer to a negative power is an error: the reference's words.
  expect_agrees(one_op("pow", {{"i32", {3}}, {"i32", {3}}}),
                {from_values(DType::kI32, {3}, std::vector<int>{2, 3, 4}), from_values(DType::kI32, {3}, std::vector<int>{1, -1, 2})}, "pow error");
  // Division by zero and by -1 at the extremes.
  expect_agrees(one_op("div", {{"i64", {5}}, {"i64", {5}}}),
                {from_values(DType::kI64, {5}, std::vector<int64_t>{7, -7, std::numeric_limits<int64_t>::min(), 5, -9}),
                 from_values(DType::kI64, {5}, std::vector<int64_t>{0, 2, -1, -3, 4})},
                "div extremes");
  std::mt19937 r2(3);
  for (const char* op : {"and", "or"}) {
    expect_agrees(one_op(op, {{"bool", {2, 7}}, {"bool", {7}}}), {random_tensor(DType::kBool, {2, 7}, r2), random_tensor(DType::kBool, {7}, r2)}, op);
  }
  for (const char* t : kAll) {
    expect_agrees(one_op("where", {{"bool", {4, 1}}, {t, {5}}, {t, {4, 5}}}),
                  {random_tensor(DType::kBool, {4, 1}, r2), random_tensor(dt(t), {5}, r2), random_tensor(dt(t), {4, 5}, r2)},
                  std::string("where ") + t);
  }
}

TEST(Llvm, FusedChainOnEdgeShapes) {
  // Ten pointwise ops, two inputs that broadcast.
  auto graph = [](const std::vector<int64_t>& xs, const std::vector<int64_t>& ys) {
    return R"({"inputs": [{"name": "x", "dtype": "f32", "shape": )" + shape_str(xs) + R"(}, {"name": "y", "dtype": "f32", "shape": )" +
           shape_str(ys) + R"(}],
      "nodes": [{"op": "mul", "in": ["x", 1.5], "out": "a"}, {"op": "add", "in": ["a", "y"], "out": "b"},
                {"op": "relu", "in": ["b"], "out": "c"}, {"op": "sub", "in": ["c", "x"], "out": "d"},
                {"op": "abs", "in": ["d"], "out": "e"}, {"op": "sqrt", "in": ["e"], "out": "f"},
                {"op": "neg", "in": ["f"], "out": "g"}, {"op": "maximum", "in": ["g", "y"], "out": "h"},
                {"op": "gt", "in": ["h", 0], "out": "i"}, {"op": "where", "in": ["i", "h", "x"], "out": "z"}],
      "outputs": ["z"]})";
  };
  std::mt19937 rng(4);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{0}, {0}}, {{1}, {1}}, {{37}, {37}}, {{37}, {1}}, {{5, 0}, {5, 0}}, {{1, 1}, {1, 1}}, {{3, 4099}, {3, 4099}},
      {{4, 1, 5}, {3, 1}}, {{2, 3, 17}, {17}}, {{8193}, {8193}}, {{1 << 20}, {1 << 20}}};
  for (const auto& [xs, ys] : cases) {
    expect_agrees(graph(xs, ys), {random_tensor(DType::kF32, xs, rng), random_tensor(DType::kF32, ys, rng)}, "chain " + shape_str(xs) + shape_str(ys));
  }
  // Non-contiguous inputs: a transposed view and a sliced one.
  Tensor base = random_tensor(DType::kF32, {40, 9}, rng);
  Tensor t = base.view({9, 40}, {1, 9});
  Tensor other = random_tensor(DType::kF32, {9, 80}, rng).view({9, 40}, {80, 2});
  expect_agrees(graph({9, 40}, {9, 40}), {t, other}, "strided");
}

TEST(Llvm, ReductionsOverAxes) {
  std::mt19937 rng(5);
  const std::vector<std::string> axes = {"[0]", "[1]", "[2]", "[0, 2]", "[-1]"};
  for (const char* op : {"sum", "mean", "max", "min"}) {
    for (const char* t : kNumeric) {
      if (std::string(op) == "mean" && !ir::is_float(dt(t))) continue;
      for (const std::string& a : axes) {
        for (const char* keep : {"true", "false"}) {
          expect_agrees(one_op(op, {{t, {3, 5, 33}}}, "", R"({"axes": )" + a + R"(, "keepdim": )" + keep + "}"), {random_tensor(dt(t), {3, 5, 33}, rng)},
                        std::string(op) + " " + t + " " + a);
        }
      }
      expect_agrees(one_op(op, {{t, {7, 9}}}), {random_tensor(dt(t), {7, 9}, rng)}, std::string(op) + " all");
      expect_agrees(one_op(op, {{t, {4, 0}}}, "", R"({"axes": [1]})"), {random_tensor(dt(t), {4, 0}, rng)}, std::string(op) + " empty axis");
      expect_agrees(one_op(op, {{t, {0, 4}}}, "", R"({"axes": [1]})"), {random_tensor(dt(t), {0, 4}, rng)}, std::string(op) + " empty rows");
      expect_agrees(one_op(op, {{t, {0, 0}}}, "", R"({"axes": [1]})"), {random_tensor(dt(t), {0, 0}, rng)}, std::string(op) + " empty rows and axis");
    }
  }
  Tensor nan = from_values(DType::kF32, {2, 3}, std::vector<double>{1, std::nan(""), 2, 3, 3, -1});
  for (const char* op : {"max", "min", "sum"}) {
    for (const char* a : {"[1]", "[0]"}) expect_agrees(one_op(op, {{"f32", {2, 3}}}, "", R"({"axes": )" + std::string(a) + "}"), {nan}, std::string(op) + " NaN " + a);
  }
  // Keeping the last dim (column_reduce_step): tiles of 256 along it,
  // threads, empty and size-1 dims, infinities, bools, a strided input.
  const std::vector<std::pair<std::vector<int64_t>, std::string>> columns = {
      {{300, 700}, "[0]"}, {{4, 50, 600}, "[1]"}, {{4, 50, 600}, "[0, 1]"}, {{1, 1}, "[0]"}, {{0, 9}, "[0]"}, {{5, 0}, "[0]"}, {{2, 3, 1}, "[0, 1]"}};
  for (const auto& [shape, a] : columns) {
    for (const char* op : {"sum", "mean", "max", "min"}) {
      for (const char* t : kNumeric) {
        if (std::string(op) == "mean" && !ir::is_float(dt(t))) continue;
        expect_agrees(one_op(op, {{t, shape}}, "", R"({"axes": )" + a + R"(, "keepdim": true})"), {random_tensor(dt(t), shape, rng)},
                      std::string(op) + " " + t + " " + shape_str(shape) + " " + a, 1e-5, 1e-5);
      }
    }
  }
  const double inf = std::numeric_limits<double>::infinity();
  Tensor infs = from_values(DType::kF64, {3, 2}, std::vector<double>{-inf, inf, -inf, 1, -inf, -inf});
  for (const char* op : {"max", "min", "sum"}) expect_agrees(one_op(op, {{"f64", {3, 2}}}, "", R"({"axes": [0]})"), {infs}, std::string(op) + " infinities");
  for (const char* op : {"sum", "max", "min"}) {
    expect_agrees(one_op(op, {{"bool", {40, 300}}}, "", R"({"axes": [0]})"), {random_tensor(DType::kBool, {40, 300}, rng)}, std::string(op) + " bool");
  }
  Tensor strided = random_tensor(DType::kF32, {600, 80}, rng).view({40, 600}, {1, 80});
  expect_agrees(one_op("sum", {{"f32", {40, 600}}}, "", R"({"axes": [0]})"), {strided}, "sum of a transposed view", 1e-5, 1e-5);
  for (const char* t : kNumeric) {
    for (int d : {0, 1, -1}) {
      expect_agrees(one_op("argmax", {{t, {6, 7}}}, "", R"({"dim": )" + std::to_string(d) + "}"), {random_tensor(dt(t), {6, 7}, rng)}, std::string("argmax ") + t);
    }
  }
  expect_agrees(one_op("argmax", {{"f32", {2, 3}}}, "", R"({"dim": 1, "keepdim": true})"), {nan}, "argmax NaN");
  expect_agrees(one_op("argmax", {{"f32", {2, 0}}}, "", R"({"dim": 1})"), {random_tensor(DType::kF32, {2, 0}, rng)}, "argmax empty");
}

// prod: as sum, from 1, in f64 (floats, near 1 here so that no order of
// the products overflows) or wrapping in i64; over axes, kept columns,
// and whole (chunks across threads).
TEST(Llvm, ProductsOverAxesColumnsAndWhole) {
  std::mt19937 rng(25);
  auto input = [&](const char* t, const std::vector<int64_t>& shape) {
    return ir::is_float(dt(t)) ? random_tensor(dt(t), shape, rng, 0.8, 1.2) : random_tensor(dt(t), shape, rng, -2, 2);
  };
  for (const char* t : {"f32", "f64", "i32", "i64"}) {
    for (const std::string a : {"[0]", "[1]", "[2]", "[0, 2]", "[-1]"}) {
      expect_agrees(one_op("prod", {{t, {3, 5, 33}}}, "", R"({"axes": )" + a + "}"), {input(t, {3, 5, 33})}, std::string("prod ") + t + " " + a, 1e-5, 1e-5);
    }
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{4, 0}, {0, 4}, {300, 700}, {100000}, {1}, {0}}) {
      expect_agrees(one_op("prod", {{t, shape}}), {input(t, shape)}, std::string("prod ") + t + " " + shape_str(shape), 1e-5, 1e-5);
    }
    expect_agrees(one_op("prod", {{t, {300, 700}}}, "", R"({"axes": [0], "keepdim": true})"), {input(t, {300, 700})}, std::string("prod columns ") + t,
                  1e-5, 1e-5);
  }
}

// A reduction over every axis splits into chunks of 16384 elements across
// threads, then reduces the chunks' partials (full_reduce_step): chunk
// edges, a dense input merged to one loop and a transposed one that is
// not, empty and size-1 inputs, NaN in a late chunk, keepdim.
TEST(Llvm, FullReductionsSplitAcrossThreads) {
  std::mt19937 rng(15);
  const std::vector<std::vector<int64_t>> shapes = {{100000}, {3, 50000}, {16384}, {16385}, {1}, {0}, {2, 0, 3}, {7, 3, 1}};
  for (const auto& shape : shapes) {
    for (const char* op : {"sum", "mean", "max", "min"}) {
      for (const char* t : kNumeric) {
        if (std::string(op) == "mean" && !ir::is_float(dt(t))) continue;
        for (const char* keep : {"true", "false"}) {
          expect_agrees(one_op(op, {{t, shape}}, "", std::string(R"({"keepdim": )") + keep + "}"), {random_tensor(dt(t), shape, rng)},
                        std::string(op) + " " + t + " " + shape_str(shape), 1e-5, 1e-5);
        }
      }
    }
  }
  Tensor transposed = random_tensor(DType::kF32, {300, 200}, rng).view({200, 300}, {1, 200});
  for (const char* op : {"sum", "max"}) {
    expect_agrees(one_op(op, {{"f32", {200, 300}}}), {transposed}, std::string(op) + " of a transposed view", 1e-5, 1e-5);
  }
  std::vector<double> late(70000, 1.0);
  late[60001] = std::nan("");
  for (const char* op : {"sum", "max", "min"}) {
    expect_agrees(one_op(op, {{"f32", {70000}}}), {from_values(DType::kF32, {70000}, late)}, std::string(op) + " NaN in the last chunk");
  }
  // Two steps: the chunks' partials (outer loop: the chunks), then theirs.
  const backends::loops::LoopProgram p =
      std::move(backends::loops::lower(*bench::specialize(one_op("sum", {{"f32", {3, 50000}}}), {{3, 50000}}, true).graph)).value();
  ASSERT_EQ(p.steps.size(), 2u) << p.dump();
  EXPECT_EQ(p.steps[0].loops.outer_vars.size(), 1u) << p.dump();
  EXPECT_TRUE(p.steps[1].loops.outer_vars.empty()) << p.dump();
}

TEST(Llvm, NormalizationsInOnePass) {
  std::mt19937 rng(6);
  for (const char* t : kFloats) {
    for (const char* op : {"softmax", "log_softmax"}) {
      for (int d : {0, 1, -1}) {
        expect_agrees(one_op(op, {{t, {4, 5, 33}}}, "", R"({"dim": )" + std::to_string(d) + "}"), {random_tensor(dt(t), {4, 5, 33}, rng, -30, 30)},
                      std::string(op) + " " + t);
      }
    }
    expect_agrees(one_op("layer_norm", {{t, {4, 5, 33}}}), {random_tensor(dt(t), {4, 5, 33}, rng)}, "layer_norm");
    expect_agrees(one_op("layer_norm", {{t, {4, 5, 33}}, {t, {33}}, {t, {33}}}),
                  {random_tensor(dt(t), {4, 5, 33}, rng), random_tensor(dt(t), {33}, rng), random_tensor(dt(t), {33}, rng)}, "layer_norm affine");
    expect_agrees(one_op("layer_norm", {{t, {4, 5, 33}}, {t, {5, 33}}}, "", R"({"axes": [-2, -1], "eps": 0.001})"),
                  {random_tensor(dt(t), {4, 5, 33}, rng), random_tensor(dt(t), {5, 33}, rng)}, "layer_norm two axes");
    expect_agrees(one_op("rms_norm", {{t, {6, 65}}, {t, {65}}}), {random_tensor(dt(t), {6, 65}, rng), random_tensor(dt(t), {65}, rng)}, "rms_norm");
    expect_agrees(one_op("rms_norm", {{t, {0, 8}}}), {random_tensor(dt(t), {0, 8}, rng)}, "rms_norm empty");
    // Rows far from 0 for their spread: the store's x - mean, in float for
    // float input, takes the mean's rounding error (3e-5 here, against a
    // spread of 6e-3) unless the mean is subtracted in two parts. Rows of a
    // vector loop with a remainder, and of one element.
    for (int64_t m : {300, 5003, 1}) {
      expect_agrees(one_op("layer_norm", {{t, {3, m}}, {t, {m}}, {t, {m}}}),
                    {random_tensor(dt(t), {3, m}, rng, 999.99, 1000.01), random_tensor(dt(t), {m}, rng), random_tensor(dt(t), {m}, rng)},
                    "layer_norm far from 0, rows of " + std::to_string(m));
    }
  }
}


TEST(Llvm, CreationOps) {
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "sym_size", "in": ["x"], "out": "n", "attrs": {"dim": 0}},
              {"op": "full", "in": [2, "n"], "out": "f", "attrs": {"value": 7.9, "dtype": "i32"}},
              {"op": "arange", "in": ["n", 0, -2], "out": "r"},
              {"op": "arange", "in": [1, "n", 1], "out": "rf", "attrs": {"dtype": "f64"}},
              {"op": "full", "in": ["n"], "out": "b", "attrs": {"value": 1, "dtype": "bool"}}],
    "outputs": ["f", "r", "rf", "b"]})";
  expect_agrees(g, {Tensor::empty(DType::kF32, {5})}, "creation");
}

// Sizes at int64's ends: exact where NumPy and Python are, an error that
// names the node where the size itself does not fit.
TEST(Llvm, SizeArithmeticAtInt64sEndsIsExactOrAnError) {
  const std::string arange = R"({"inputs": [], "nodes": [{"op": "arange", "in": [-9223372036854775808, 9223372036854775807, 4611686018427387904], "out": "r"}], "outputs": ["r"]})";
  expect_agrees(arange, {}, "arange(-2**63, 2**63-1, 2**62)");
  Outcome four = run_with(arange, {}, R"({"compile": {"backend": "llvm"}})");
  ASSERT_TRUE(four.status.is_ok()) << four.status.to_string();
  EXPECT_EQ(testing::values_of<int64_t>(four.out[0]), (std::vector<int64_t>{INT64_MIN, -(int64_t{1} << 62), 0, int64_t{1} << 62}));
  Outcome huge = run_with(R"({"inputs": [], "nodes": [{"op": "arange", "in": [-9223372036854775808, 9223372036854775807, 1], "out": "r"}], "outputs": ["r"]})",
                          {}, R"({"compile": {"backend": "llvm"}})");
  EXPECT_EQ(huge.status.code(), Code::kInvalidArgument);
  EXPECT_NE(huge.status.message().find("node 0 (arange -> 'r'): it would have more than 2^63 - 1 values"), std::string::npos) << huge.status.message();

  // Python's x[-2**63:2], x[0:3:2**63-1] and x[-2**63:2**63-1] on 3 rows.
  const std::vector<std::pair<std::string, int64_t>> slices = {
      {"-9223372036854775808, 2, 1", 2}, {"0, 3, 9223372036854775807", 1}, {"-9223372036854775808, 9223372036854775807, 1", 3}};
  std::mt19937 rng(7);
  for (const auto& [bounds, rows] : slices) {
    const std::string g = one_op("slice", {{"f32", {3, 2}}}, bounds, R"({"dim": 0})");
    expect_agrees(g, {random_tensor(DType::kF32, {3, 2}, rng)}, "slice " + bounds);
    Outcome r = run_with(g, {random_tensor(DType::kF32, {3, 2}, rng)}, R"({"compile": {"backend": "llvm"}})");
    ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
    EXPECT_EQ(r.out[0].shape()[0], rows) << bounds;
  }
}

// An empty tensor's other dims may be as large as int64 allows. A step with
// nothing to do must finish at once, whichever of its loops holds the 0: an
// outer one, the innermost one tiled (y, a symbolic 0) or untiled (w, a
// constant 0 beside 2^63 - 1 rows), or a transposed one (z). The backend
// skips such steps; it does not count on LLVM deleting an empty row loop.
TEST(Llvm, EmptyTensorsWithHugeDimsFinishAtOnce) {
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["a", "b"]}],
    "nodes": [{"op": "mul", "in": ["x", 2.0], "out": "y"},
              {"op": "transpose", "in": ["x"], "attrs": {"dim0": 0, "dim1": 1}, "out": "xt"},
              {"op": "add", "in": ["xt", 1.0], "out": "z"},
              {"op": "slice", "in": ["x", 0, 0, 1], "attrs": {"dim": 1}, "out": "x0"},
              {"op": "exp", "in": ["x0"], "out": "w"}],
    "outputs": ["y", "z", "w"]})";
  const int64_t huge = int64_t{1} << 40;
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{huge, 0}, {0, huge}, {INT64_MAX, 0}, {0, INT64_MAX}}) {
    expect_agrees(g, {Tensor::empty(DType::kF32, shape)}, "shape [" + std::to_string(shape[0]) + ", " + std::to_string(shape[1]) + "]");
  }
  // Reductions whose reduced axes hold more than int64 elements between them
  // when the kept axis is 0.
  const std::string r = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["a", "b", "c"]}],
    "nodes": [{"op": "mean", "in": ["x"], "attrs": {"axes": [1, 2]}, "out": "m"},
              {"op": "max", "in": ["x"], "attrs": {"axes": [1, 2]}, "out": "x1"},
              {"op": "sum", "in": ["x"], "attrs": {"axes": [0, 2]}, "out": "s"}],
    "outputs": ["m", "x1", "s"]})";
  expect_agrees(r, {Tensor::empty(DType::kF32, {0, 5, INT64_MAX})}, "reductions over [0, 5, 2^63 - 1]");
  // Lines of nothing: 2^40 of them along the empty dim, or one of 2^40 beside a 0 (the reference looped over them).
  for (const char* op : {"cumsum", "cummax", "sort", "argsort"}) {
    for (int dim : {0, 1}) {
      expect_agrees(one_op(op, {{"f32", {huge, 0}}}, "", R"({"dim": )" + std::to_string(dim) + "}"), {Tensor::empty(DType::kF32, {huge, 0})},
                    std::string(op) + " of [2^40, 0] along " + std::to_string(dim));
    }
  }
}

TEST(Llvm, AChainOfSevenThousandOpsCompilesAndAgrees) {
  std::string nodes;
  std::string prev = "x";
  for (int i = 0; i < 7000; ++i) {
    const std::string out = "v" + std::to_string(i);
    nodes += std::string(i ? ", " : "") + R"({"op": ")" + (i % 2 ? "mul" : "add") + R"(", "in": [")" + prev + R"(", )" + (i % 2 ? "0.999" : "0.001") + R"(], "out": ")" + out + R"("})";
    prev = out;
  }
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}], "nodes": [)" + nodes + R"(], "outputs": [")" + prev + R"("]})";
  std::mt19937 rng(3);
  expect_agrees(g, {random_tensor(DType::kF32, {37}, rng)}, "7000 pointwise ops", 1e-4, 1e-5);
}

TEST(Llvm, WhatItCannotCompileRunsOnTheReferenceAndSaysWhy) {
  // One fused value of 2^14 products summed pairwise: a loop body of 32767
  // instructions, past the lowering's bound.
  std::string nodes;
  std::vector<std::string> level;
  for (int i = 0; i < (1 << 14); ++i) {
    level.push_back("p" + std::to_string(i));
    nodes += std::string(i ? ", " : "") + R"({"op": "mul", "in": ["x", )" + std::to_string(1 + i % 7) + R"(], "out": ")" + level.back() + R"("})";
  }
  for (int k = 0; level.size() > 1; ++k) {
    std::vector<std::string> next;
    for (size_t i = 0; i < level.size(); i += 2) {
      next.push_back("s" + std::to_string(k) + "_" + std::to_string(i / 2));
      nodes += R"(, {"op": "add", "in": [")" + level[i] + R"(", ")" + level[i + 1] + R"("], "out": ")" + next.back() + R"("})";
    }
    level = std::move(next);
  }
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "i64", "shape": [3]}], "nodes": [)" + nodes + R"(], "outputs": [")" + level[0] + R"("]})";
  Tensor x = from_values(DType::kI64, {3}, std::vector<int64_t>{1, 0, -2});
  Outcome r = run_with(g, {x}, R"({"compile": {"backend": "llvm"}})");
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(r.fallbacks, 1u);
  ASSERT_EQ(r.log.size(), 1u);
  EXPECT_NE(r.log[0].find("grew past 20000 instructions"), std::string::npos) << r.log[0];
  int64_t per_one = 0;
  for (int i = 0; i < (1 << 14); ++i) per_one += 1 + i % 7;
  EXPECT_EQ(testing::values_of<int64_t>(r.out[0]), (std::vector<int64_t>{per_one, 0, -2 * per_one}));
}

TEST(Llvm, TargetNamesTheHostAndCompiler) {
  auto llvm = backends::make_llvm_backend(2);
  ASSERT_TRUE(llvm.is_ok()) << llvm.status().to_string();
  std::string t = (*llvm)->target();
  EXPECT_NE(t.find("x86_64"), std::string::npos) << t;
  EXPECT_NE(t.find("llvm-16"), std::string::npos) << t;
  EXPECT_NE(t.find("+sse2"), std::string::npos) << t;  // the feature string
  auto o3 = backends::make_llvm_backend(3);
  EXPECT_NE((*o3)->target(), t);  // the opt level is part of it too
}

// Resident set size in bytes.
size_t rss() {
  std::ifstream f("/proc/self/statm");
  size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * 4096;
}

// The cache's key is a graph's dataflow to its outputs: blind to dead
// nodes and to the order of independent ones. A dead node is not lowered
// (a kernel with its steps and one without shared a key, and the graph
// fuzzer ran one's object with the other's buffers); an image records its
// loop program, and one of another order is refused, not linked.
TEST(Llvm, ImagesServeOnlyTheirOwnLoopProgram) {
  auto backend = backends::make_llvm_backend(2);
  ASSERT_TRUE(backend.is_ok());
  const std::string inputs = R"({"inputs": [{"name": "x", "dtype": "i32", "shape": ["a", "b"]}], )";
  const std::string live = inputs + R"("nodes": [{"op": "le", "in": [4611686018427387904, "x"], "out": "y"}], "outputs": ["y"]})";
  const std::string dead = inputs + R"("nodes": [{"op": "min", "in": ["x"], "out": "m", "attrs": {"axes": []}},
      {"op": "le", "in": [4611686018427387904, "x"], "out": "y"}], "outputs": ["y"]})";
  const bench::Specialized a = bench::specialize(live, {{2, 8}}, true), b = bench::specialize(dead, {{2, 8}}, true);
  EXPECT_EQ(a.graph->graph->canonical_hash(), b.graph->graph->canonical_hash());
  const std::string program = std::move(backends::loops::lower(*a.graph)).value().dump(false);
  EXPECT_EQ(std::move(backends::loops::lower(*b.graph)).value().dump(false), program) << "the dead min was lowered";
  std::string image;
  ASSERT_TRUE((*backend)->compile(a.graph, {.image = &image, .context = {}}).is_ok());
  EXPECT_TRUE((*backend)->load(b.graph, image, {}).is_ok());

  const std::string sum_max = inputs + R"("nodes": [{"op": "sum", "in": ["x"], "out": "s", "attrs": {"axes": [1]}},
      {"op": "max", "in": ["x"], "out": "m", "attrs": {"axes": [1]}}], "outputs": ["s", "m"]})";
  const std::string max_sum = inputs + R"("nodes": [{"op": "max", "in": ["x"], "out": "m", "attrs": {"axes": [1]}},
      {"op": "sum", "in": ["x"], "out": "s", "attrs": {"axes": [1]}}], "outputs": ["s", "m"]})";
  const bench::Specialized c = bench::specialize(sum_max, {{2, 8}}, true), d = bench::specialize(max_sum, {{2, 8}}, true);
  EXPECT_EQ(c.graph->graph->canonical_hash(), d.graph->graph->canonical_hash());
  ASSERT_TRUE((*backend)->compile(c.graph, {.image = &image, .context = {}}).is_ok());
  EXPECT_TRUE((*backend)->load(c.graph, image, {}).is_ok());
  auto other = (*backend)->load(d.graph, image, {});
  ASSERT_FALSE(other.is_ok());
  EXPECT_NE(other.status().message().find("another loop program"), std::string::npos) << other.status().to_string();
}

// A kernel's image is its own object, whichever thread ORC links it on:
// compiles on several threads at once each keep one object that loads, and
// an image of two objects (what a thread-local "current object" once let a
// concurrent compile write, and a later process then ran as the first
// object's code) is refused.
TEST(Llvm, AnImageIsItsOwnObjectAloneEvenWhenCompiledBesideOthers) {
  if (!backends::llvm::jit_available().is_ok()) GTEST_SKIP() << "no LLVM JIT on this host";
  std::vector<backends::loops::LoopProgram> programs;
  for (int i = 0; i < 16; ++i) {
    const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}], "nodes": [{"op": "mul", "in": ["x", )" +
                          std::to_string(i + 2) + R"(], "out": "m"}, {"op": ")" + (i % 2 ? "exp" : "tanh") +
                          R"(", "in": ["m"], "out": "y"}], "outputs": ["y"]})";
    programs.push_back(std::move(backends::loops::lower(*bench::specialize(g, {{64}}, i % 3 == 0).graph)).value());
  }
  std::vector<std::string> images(programs.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < programs.size(); i += 4) ASSERT_TRUE(backends::llvm::jit_compile(programs[i], 2, &images[i]).is_ok());
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < programs.size(); ++i) {
    EXPECT_TRUE(backends::llvm::jit_load(programs[i], images[i]).is_ok()) << "program " << i;
    const auto two = backends::llvm::jit_load(programs[i], images[i] + images[(i + 1) % images.size()]);
    ASSERT_FALSE(two.is_ok()) << "program " << i;
    EXPECT_NE(two.status().message().find("its object"), std::string::npos) << two.status().to_string();
  }
  EXPECT_FALSE(backends::llvm::jit_load(programs[0], "not an object").is_ok());
}

TEST(Llvm, EvictedKernelsReturnTheirCodeMemory) {
#if SHAPEJIT_TEST_ASAN
  GTEST_SKIP() << "AddressSanitizer's quarantine holds freed memory; RSS says nothing here (the normal build runs this)";
#endif
  auto backend = backends::make_llvm_backend(2);
  ASSERT_TRUE(backend.is_ok());
  ir::Graph g = testing::graph_from(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "exp", "in": ["x"], "out": "a"}, {"op": "mul", "in": ["a", 3], "out": "y"}], "outputs": ["y"]})");
  sym::ShapeEnv env;
  ir::ShapeHints hints = {{100}};
  ASSERT_TRUE(ir::infer(g, env, &hints).is_ok());
  env.set_layouts({sym::Layout::dense()});
  auto specialized = ir::specialize(g, env.specialization());
  ASSERT_TRUE(specialized.is_ok()) << specialized.status().to_string();
  auto cycles = [&](int n) {
    for (int i = 0; i < n; ++i) {
      auto k = (*backend)->compile(*specialized, {});
      ASSERT_TRUE(k.is_ok()) << k.status().to_string();
      ASSERT_GT((*k)->code_bytes(), 0u);
    }
  };
  cycles(200);  // warm: LLVM's own pools and caches reach their size
  const size_t before = rss();
  cycles(1000);
  const size_t after = rss();
  // Kept code would be several KiB per kernel (over 6 MiB here).
  EXPECT_LT(after, before + (4u << 20)) << "RSS grew from " << before << " to " << after;
}

// The vector width generated loops prefer: LLVM's own tuning for a CPU it
// names; for one it does not (a VM that hides its model), what the probe
// measured (backends/cpu/tile_choice.h).
TEST(Llvm, AnUnnamedHostCpuPrefersTheVectorWidthTheProbeMeasured) {
  const backends::cpu::TileProbe full{.avx512 = true, .measured = true, .fma256 = 67, .fma512 = 135, .tile256 = 59, .tile512 = 118};
  const backends::cpu::TileProbe halves{.avx512 = true, .measured = true, .fma256 = 59, .fma512 = 59, .tile256 = 57, .tile512 = 57};
  const backends::cpu::TileProbe avx2{.avx512 = false, .measured = true, .fma256 = 60};
  const backends::cpu::TileProbe unmeasured{.avx512 = true};
  EXPECT_EQ(backends::llvm::preferred_vector_width("generic", full), "512");
  EXPECT_EQ(backends::llvm::preferred_vector_width("", full), "512");
  EXPECT_EQ(backends::llvm::preferred_vector_width("generic", halves), "256");
  EXPECT_EQ(backends::llvm::preferred_vector_width("generic", avx2), "");
  EXPECT_EQ(backends::llvm::preferred_vector_width("generic", unmeasured), "");
  EXPECT_EQ(backends::llvm::preferred_vector_width("znver4", halves), "");
  EXPECT_EQ(backends::llvm::preferred_vector_width("sapphirerapids", full), "");
}

}  // namespace
}  // namespace shapejit

#endif  // SHAPEJIT_HAVE_LLVM
