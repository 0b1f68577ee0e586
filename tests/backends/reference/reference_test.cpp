// The reference interpreter is the oracle, so its own tests check it
// against values worked out by hand with NumPy's semantics. Every compiled
// backend built in runs the same checks (the suite is instantiated once per
// backend), within rtol 1e-5 where the check compares floats: compiled
// float sums reassociate, and BLAS matmuls accumulate in the operand's type.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/support/test_util.h"

namespace shapejit {
namespace {

using ir::DType;
using ir::Tensor;
using testing::from_values;
using testing::one_op;
using testing::run_graph;
using testing::values_of;

// The backend under test, as a config fragment; `policy` adds a policy.
const char* g_backend = "";
std::string cfg(const std::string& policy = "") {
  return std::string(R"({"compile": {"backend": ")") + g_backend + "\"}" + (policy.empty() ? "" : ", " + policy) + "}";
}

class HandChecked : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { g_backend = GetParam(); }
};

Tensor run1(const std::string& graph, std::vector<Tensor> inputs) {
  auto out = run_graph(graph, std::move(inputs), cfg());
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  return out.is_ok() ? out->at(0) : Tensor();
}

Status run_status(const std::string& graph, std::vector<Tensor> inputs) { return run_graph(graph, std::move(inputs), cfg()).status(); }

const double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST_P(HandChecked, UnaryFloatOpsMatchLibm) {
  std::vector<double> xs = {-2.5, -1, -0.25, 0, 0.5, 1, 3};
  struct Case {
    const char* op;
    double (*f)(double);
  } cases[] = {
      {"neg", [](double x) { return -x; }},     {"abs", [](double x) { return std::fabs(x); }},
      {"exp", [](double x) { return std::exp(x); }}, {"tanh", [](double x) { return std::tanh(x); }},
      {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }}, {"relu", [](double x) { return x < 0 ? 0 : x; }},
      {"silu", [](double x) { return x / (1 + std::exp(-x)); }}, {"sin", [](double x) { return std::sin(x); }},
      {"cos", [](double x) { return std::cos(x); }}, {"erf", [](double x) { return std::erf(x); }},
      {"gelu", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"tan", [](double x) { return std::tan(x); }},     {"atan", [](double x) { return std::atan(x); }},
      {"sinh", [](double x) { return std::sinh(x); }},   {"cosh", [](double x) { return std::cosh(x); }},
      {"asinh", [](double x) { return std::asinh(x); }}, {"expm1", [](double x) { return std::expm1(x); }},
      {"exp2", [](double x) { return std::exp2(x); }},   {"cbrt", [](double x) { return std::cbrt(x); }},
      {"floor", [](double x) { return std::floor(x); }}, {"ceil", [](double x) { return std::ceil(x); }},
      {"trunc", [](double x) { return std::trunc(x); }}, {"rint", [](double x) { return std::nearbyint(x); }},
  };
  for (DType dt : {DType::kF32, DType::kF64}) {
    for (const Case& c : cases) {
      Tensor y = run1(one_op(c.op, {{ir::dtype_name(dt), {7}}}), {from_values(dt, {7}, xs)});
      std::vector<double> expect;
      for (double x : xs) expect.push_back(c.f(dt == DType::kF32 ? double(float(x)) : x));
      EXPECT_TRUE(testing::tensors_close(y, from_values(dt, {7}, expect), 1e-6, 1e-6)) << c.op << " " << ir::dtype_name(dt);
    }
  }
  Tensor g = run1(one_op("gelu", {{"f64", {1}}}, "", R"({"approximate": "tanh"})"), {from_values(DType::kF64, {1}, std::vector<double>{1.0})});
  EXPECT_NEAR(values_of<double>(g)[0], 0.8411919906082768, 1e-12);
  // gelu's far tail is x times a tiny Phi(x), not -0: 1 + erf(z) taken as erfc(-z).
  const double x = -14.10142, tail = 0.5 * x * std::erfc(-x * 0.7071067811865476);  // about -2.8e-44
  const double f64 = values_of<double>(run1(one_op("gelu", {{"f64", {1}}}), {from_values(DType::kF64, {1}, std::vector<double>{x})}))[0];
  EXPECT_NEAR(f64 / tail, 1.0, 1e-12) << f64;
  const double f32 = values_of<double>(run1(one_op("gelu", {{"f32", {1}}}), {from_values(DType::kF32, {1}, std::vector<float>{float(x)})}))[0];
  EXPECT_LT(f32, 0.0);  // a subnormal, within a few of its steps (1.4e-45) of the true value (llvm_fast_math_test's tail bound)
  EXPECT_NEAR(f32, 0.5 * double(float(x)) * std::erfc(-double(float(x)) * 0.7071067811865476), 8 * 1.4e-45);
  // Functions with a domain, inside it; rint rounds half to even.
  const std::vector<double> unit = {-1, -0.5, 0, 0.25, 1}, big = {1, 1.5, 2, 10, 100}, halves = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5};
  struct Domain {
    const char* op;
    double (*f)(double);
    const std::vector<double>* xs;
  } domains[] = {{"asin", [](double x) { return std::asin(x); }, &unit},   {"acos", [](double x) { return std::acos(x); }, &unit},
                 {"atanh", [](double x) { return std::atanh(x); }, &unit}, {"log1p", [](double x) { return std::log1p(x); }, &unit},
                 {"acosh", [](double x) { return std::acosh(x); }, &big},  {"log2", [](double x) { return std::log2(x); }, &big},
                 {"log10", [](double x) { return std::log10(x); }, &big},  {"rint", [](double x) { return std::nearbyint(x); }, &halves}};
  for (const Domain& d : domains) {
    const int64_t n = static_cast<int64_t>(d.xs->size());
    Tensor y = run1(one_op(d.op, {{"f64", {n}}}), {from_values(DType::kF64, {n}, *d.xs)});
    std::vector<double> expect;
    for (double x : *d.xs) expect.push_back(d.f(x));
    EXPECT_TRUE(testing::tensors_close(y, from_values(DType::kF64, {n}, expect), 1e-12, 0)) << d.op;
  }
  EXPECT_EQ(values_of<double>(run1(one_op("rint", {{"f64", {3}}}), {from_values(DType::kF64, {3}, std::vector<double>{0.5, 1.5, -2.5})})),
            (std::vector<double>{0, 2, -2}));
  Tensor l = run1(one_op("log", {{"f64", {3}}}), {from_values(DType::kF64, {3}, std::vector<double>{1, 0, -1})});
  auto lv = values_of<double>(l);
  EXPECT_EQ(lv[0], 0);
  EXPECT_TRUE(std::isinf(lv[1]) && lv[1] < 0);
  EXPECT_TRUE(std::isnan(lv[2]));
}

TEST_P(HandChecked, ProductsAreOneOverNothingAndWrapForIntegers) {
  EXPECT_EQ(values_of<double>(run1(one_op("prod", {{"f64", {2, 3}}}, "", R"({"axes": [1]})"),
                                   {from_values(DType::kF64, {2, 3}, std::vector<double>{1, 2, 3, -1, 0.5, 4})})),
            (std::vector<double>{6, -2}));
  EXPECT_EQ(values_of<double>(run1(one_op("prod", {{"f32", {0}}}), {from_values(DType::kF32, {0}, std::vector<double>{})})), (std::vector<double>{1}));
  EXPECT_EQ(values_of<int64_t>(run1(one_op("prod", {{"i64", {2}}}), {from_values(DType::kI64, {2}, std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 30})})),
            (std::vector<int64_t>{0}));  // 2^70 wraps to 0
}

TEST_P(HandChecked, ScansRunInOrderAlongTheirDim) {
  const Tensor x = from_values(DType::kI64, {2, 3}, std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  EXPECT_EQ(values_of<int64_t>(run1(one_op("cumsum", {{"i64", {2, 3}}}, "", R"({"dim": 1})"), {x})), (std::vector<int64_t>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(values_of<int64_t>(run1(one_op("cumsum", {{"i64", {2, 3}}}, "", R"({"dim": 0})"), {x})), (std::vector<int64_t>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(values_of<int64_t>(run1(one_op("cumprod", {{"i64", {2, 3}}}, "", R"({"dim": -1})"), {x})), (std::vector<int64_t>{1, 2, 6, 4, 20, 120}));
  EXPECT_EQ(run_status(one_op("cumsum", {{"bool", {2}}}, "", R"({"dim": 0})"), {from_values(DType::kBool, {2}, std::vector<int>{1, 0})}).code(),
            Code::kInvalidArgument);
}

TEST_P(HandChecked, SortsPutNaNsLastAndKeepTiesInOrder) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = from_values(DType::kF64, {2, 4}, std::vector<double>{3, nan, -1, 3, 0.5, 0.5, -2, nan});
  const std::vector<double> sorted = values_of<double>(run1(one_op("sort", {{"f64", {2, 4}}}, "", R"({"dim": 1})"), {x}));
  ASSERT_EQ(sorted.size(), 8u);
  EXPECT_EQ((std::vector<double>(sorted.begin(), sorted.begin() + 3)), (std::vector<double>{-1, 3, 3}));
  EXPECT_TRUE(std::isnan(sorted[3]) && std::isnan(sorted[7]));
  EXPECT_EQ((std::vector<double>(sorted.begin() + 4, sorted.begin() + 7)), (std::vector<double>{-2, 0.5, 0.5}));
  EXPECT_EQ(values_of<int64_t>(run1(one_op("argsort", {{"f64", {2, 4}}}, "", R"({"dim": -1})"), {x})),
            (std::vector<int64_t>{2, 0, 3, 1, 2, 0, 1, 3}));  // ties (3, 3) and (0.5, 0.5) in their order
  const Tensor i = from_values(DType::kI32, {3, 2}, std::vector<int>{5, 1, -4, 1, 0, 0});
  EXPECT_EQ(values_of<int64_t>(run1(one_op("argsort", {{"i32", {3, 2}}}, "", R"({"dim": 0})"), {i})), (std::vector<int64_t>{1, 2, 2, 0, 0, 1}));
  EXPECT_EQ(values_of<int64_t>(run1(one_op("sort", {{"bool", {3}}}, "", R"({"dim": 0})"), {from_values(DType::kBool, {3}, std::vector<int>{1, 0, 1})})),
            (std::vector<int64_t>{0, 1, 1}));
}

TEST_P(HandChecked, ShiftsPastTheWidthAreNumPys) {
  const std::string shl = one_op("left_shift", {{"i64", {3}}, {"i64", {3}}}), shr = one_op("right_shift", {{"i64", {3}}, {"i64", {3}}});
  const Tensor x = from_values(DType::kI64, {3}, std::vector<int64_t>{1, -8, 5});
  EXPECT_EQ(values_of<int64_t>(run1(shl, {x, from_values(DType::kI64, {3}, std::vector<int64_t>{100, 2, -1})})), (std::vector<int64_t>{0, -32, 0}));
  EXPECT_EQ(values_of<int64_t>(run1(shr, {x, from_values(DType::kI64, {3}, std::vector<int64_t>{100, 100, -1})})), (std::vector<int64_t>{0, -1, 0}));
  EXPECT_EQ(values_of<int32_t>(run1(one_op("invert", {{"i32", {2}}}), {from_values(DType::kI32, {2}, std::vector<int32_t>{5, -1})})),
            (std::vector<int32_t>{-6, 0}));
  EXPECT_EQ(run_status(one_op("bitwise_and", {{"f32", {2}}, {"f32", {2}}}), {from_values(DType::kF32, {2}, std::vector<float>{1, 2}),
                                                                             from_values(DType::kF32, {2}, std::vector<float>{1, 2})}).code(),
            Code::kInvalidArgument);
}

TEST_P(HandChecked, IntegerOpsWrapAndFloorDivide) {
  const int32_t mn = std::numeric_limits<int32_t>::min();
  Tensor a = from_values(DType::kI32, {5}, std::vector<int64_t>{-7, 7, -7, 5, mn});
  Tensor b = from_values(DType::kI32, {5}, std::vector<int64_t>{2, -2, -2, 0, -1});
  EXPECT_EQ(values_of<int64_t>(run1(one_op("div", {{"i32", {5}}, {"i32", {5}}}), {a, b})), (std::vector<int64_t>{-4, -4, 3, 0, mn}));
  EXPECT_EQ(values_of<int64_t>(run1(one_op("neg", {{"i32", {5}}}), {a})), (std::vector<int64_t>{7, -7, 7, -5, mn}));
  EXPECT_EQ(values_of<int64_t>(run1(one_op("abs", {{"i32", {5}}}), {a})), (std::vector<int64_t>{7, 7, 7, 5, mn}));
  Tensor big = from_values(DType::kI64, {1}, std::vector<int64_t>{std::numeric_limits<int64_t>::max()});
  EXPECT_EQ(values_of<int64_t>(run1(one_op("add", {{"i64", {1}}}, "1"), {big}))[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(values_of<int64_t>(run1(one_op("pow", {{"i64", {3}}}, "3"), {from_values(DType::kI64, {3}, std::vector<int64_t>{-2, 3, 0})})),
            (std::vector<int64_t>{-8, 27, 0}));
  Status s = run_status(one_op("pow", {{"i64", {2}}}, "-1"), {from_values(DType::kI64, {2}, std::vector<int64_t>{2, 3})});
  EXPECT_EQ(s.code(), Code::kRuntime);
  EXPECT_NE(s.message().find("negative integer powers"), std::string::npos);
}

// A node no output depends on has no effect, its runtime error included: the
// compiled backends never emit it, and the oracle agrees with them.
TEST_P(HandChecked, ADeadNodeHasNoEffectNotEvenItsError) {
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "i64", "shape": [2]}],
    "nodes": [{"op": "pow", "in": ["x", -1], "out": "dead"}, {"op": "sum", "in": ["dead"], "attrs": {"axes": [0]}, "out": "dead_too"},
              {"op": "add", "in": ["x", 1], "out": "y"}],
    "outputs": ["y"]})";
  EXPECT_EQ(values_of<int64_t>(run1(g, {from_values(DType::kI64, {2}, std::vector<int64_t>{2, 3})})), (std::vector<int64_t>{3, 4}));
}

TEST_P(HandChecked, CastSaturatesAndMapsNaNToZero) {
  Tensor x = from_values(DType::kF64, {5}, std::vector<double>{1.9, -1.9, 1e30, kNaN, -1e30});
  EXPECT_EQ(values_of<int64_t>(run1(one_op("cast", {{"f64", {5}}}, "", R"({"dtype": "i32"})"), {x})),
            (std::vector<int64_t>{1, -1, std::numeric_limits<int32_t>::max(), 0, std::numeric_limits<int32_t>::min()}));
  EXPECT_EQ(values_of<int64_t>(run1(one_op("cast", {{"f64", {5}}}, "", R"({"dtype": "bool"})"), {x})), (std::vector<int64_t>{1, 1, 1, 1, 1}));
  Tensor b = from_values(DType::kBool, {2}, std::vector<int>{1, 0});
  EXPECT_EQ(values_of<double>(run1(one_op("cast", {{"bool", {2}}}, "", R"({"dtype": "f32"})"), {b})), (std::vector<double>{1, 0}));
}

TEST_P(HandChecked, BinaryOpsBroadcastLikeNumPy) {
  Tensor a = from_values(DType::kF32, {3, 1}, std::vector<double>{1, 2, 3});
  Tensor b = from_values(DType::kF32, {4}, std::vector<double>{10, 20, 30, 40});
  Tensor y = run1(one_op("add", {{"f32", {3, 1}}, {"f32", {4}}}), {a, b});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(values_of<double>(y), (std::vector<double>{11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43}));
}

TEST_P(HandChecked, LiteralsOnEitherSide) {
  auto g = R"({"inputs": [{"name": "x", "dtype": "f64", "shape": [3]}],
    "nodes": [{"op": "sub", "in": [1.5, "x"], "out": "y"}, {"op": "div", "in": ["y", 2], "out": "z"}], "outputs": ["z"]})";
  Tensor z = run1(g, {from_values(DType::kF64, {3}, std::vector<double>{0.5, 1.5, 3.5})});
  EXPECT_EQ(values_of<double>(z), (std::vector<double>{0.5, 0, -1}));
}

TEST_P(HandChecked, MaximumMinimumPropagateNaN) {
  Tensor a = from_values(DType::kF64, {3}, std::vector<double>{1, kNaN, 3});
  Tensor b = from_values(DType::kF64, {3}, std::vector<double>{2, 0, kNaN});
  auto mx = values_of<double>(run1(one_op("maximum", {{"f64", {3}}, {"f64", {3}}}), {a, b}));
  EXPECT_EQ(mx[0], 2);
  EXPECT_TRUE(std::isnan(mx[1]) && std::isnan(mx[2]));
}

TEST_P(HandChecked, ComparisonsLogicAndWhere) {
  Tensor a = from_values(DType::kI64, {4}, std::vector<int64_t>{1, 2, 3, 4});
  EXPECT_EQ(values_of<int64_t>(run1(one_op("ge", {{"i64", {4}}}, "3"), {a})), (std::vector<int64_t>{0, 0, 1, 1}));
  auto g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [4]}],
    "nodes": [{"op": "gt", "in": ["x", 0], "out": "p"}, {"op": "lt", "in": ["x", 3], "out": "q"},
              {"op": "and", "in": ["p", "q"], "out": "r"}, {"op": "not", "in": ["r"], "out": "s"},
              {"op": "where", "in": ["s", -1.0, "x"], "out": "y"}], "outputs": ["y"]})";
  Tensor y = run1(g, {from_values(DType::kF32, {4}, std::vector<double>{-1, 1, 2, 5})});
  EXPECT_EQ(values_of<double>(y), (std::vector<double>{-1, 1, 2, -1}));
  Tensor nan = from_values(DType::kF32, {1}, std::vector<double>{kNaN});
  EXPECT_EQ(values_of<int64_t>(run1(one_op("eq", {{"f32", {1}}, {"f32", {1}}}), {nan, nan}))[0], 0);
  EXPECT_EQ(values_of<int64_t>(run1(one_op("ne", {{"f32", {1}}, {"f32", {1}}}), {nan, nan}))[0], 1);
}

TEST_P(HandChecked, ReductionsOverAxes) {
  Tensor x = from_values(DType::kF32, {2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6});
  EXPECT_EQ(values_of<double>(run1(one_op("sum", {{"f32", {2, 3}}}), {x})), (std::vector<double>{21}));
  Tensor s = run1(one_op("sum", {{"f32", {2, 3}}}, "", R"({"axes": [0], "keepdim": true})"), {x});
  EXPECT_EQ(s.shape(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(values_of<double>(s), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(values_of<double>(run1(one_op("mean", {{"f32", {2, 3}}}, "", R"({"axes": [-1]})"), {x})), (std::vector<double>{2, 5}));
  EXPECT_EQ(values_of<double>(run1(one_op("max", {{"f32", {2, 3}}}, "", R"({"axes": [1]})"), {x})), (std::vector<double>{3, 6}));
  EXPECT_EQ(values_of<double>(run1(one_op("min", {{"f32", {2, 3}}}, "", R"({"axes": [0, 1]})"), {x})), (std::vector<double>{1}));
  Tensor i = from_values(DType::kI32, {3}, std::vector<int64_t>{5, -2, 7});
  EXPECT_EQ(values_of<int64_t>(run1(one_op("sum", {{"i32", {3}}}), {i})), (std::vector<int64_t>{10}));
  EXPECT_EQ(run1(one_op("sum", {{"i32", {3}}}), {i}).dtype(), DType::kI32);
  Tensor withnan = from_values(DType::kF64, {3}, std::vector<double>{1, kNaN, 3});
  EXPECT_TRUE(std::isnan(values_of<double>(run1(one_op("max", {{"f64", {3}}}), {withnan}))[0]));
}

TEST_P(HandChecked, EmptyReductions) {
  Tensor e = Tensor::empty(DType::kF32, {0, 3});
  EXPECT_EQ(values_of<double>(run1(one_op("sum", {{"f32", {0, 3}}}, "", R"({"axes": [0]})"), {e})), (std::vector<double>{0, 0, 0}));
  auto mean = values_of<double>(run1(one_op("mean", {{"f32", {0, 3}}}, "", R"({"axes": [0]})"), {e}));
  EXPECT_TRUE(std::isnan(mean[0]));
  Status s = run_status(one_op("max", {{"f32", {0, 3}}}, "", R"({"axes": [0]})"), {e});
  EXPECT_EQ(s.code(), Code::kRuntime);
  EXPECT_NE(s.message().find("empty"), std::string::npos);
  // Reducing the non-empty axis of an empty tensor is fine: an empty result.
  Tensor r = run1(one_op("max", {{"f32", {0, 3}}}, "", R"({"axes": [1]})"), {e});
  EXPECT_EQ(r.shape(), std::vector<int64_t>{0});
  // As in NumPy, an empty axis is an error even where the result is empty
  // too, and it is NumPy's ValueError (Detail::kValue), not a failure.
  Tensor z = Tensor::empty(DType::kF32, {0, 0});
  for (const char* op : {"max", "min"}) {
    Status empty = run_status(one_op(op, {{"f32", {0, 0}}}, "", R"({"axes": [0]})"), {z});
    EXPECT_EQ(empty.code(), Code::kRuntime) << op;
    EXPECT_EQ(empty.detail(), Detail::kValue) << op;
  }
  EXPECT_EQ(run_status(one_op("argmax", {{"f32", {0, 0}}}, "", R"({"dim": 1})"), {z}).detail(), Detail::kValue);
}

TEST_P(HandChecked, ArgmaxReturnsFirstMaximumAndTreatsNaNAsMaximal) {
  Tensor x = from_values(DType::kF32, {2, 4}, std::vector<double>{1, 5, 5, 2, 1, kNaN, 9, kNaN});
  Tensor y = run1(one_op("argmax", {{"f32", {2, 4}}}, "", R"({"dim": 1})"), {x});
  EXPECT_EQ(y.dtype(), DType::kI64);
  EXPECT_EQ(values_of<int64_t>(y), (std::vector<int64_t>{1, 1}));
  Tensor k = run1(one_op("argmax", {{"f32", {2, 4}}}, "", R"({"dim": 0, "keepdim": true})"), {x});
  EXPECT_EQ(k.shape(), (std::vector<int64_t>{1, 4}));
}

TEST_P(HandChecked, SoftmaxAndNormsAreStableAndNormalized) {
  Tensor x = from_values(DType::kF32, {2, 3}, std::vector<double>{1000, 1001, 1002, -5, 0, 5});
  auto p = values_of<double>(run1(one_op("softmax", {{"f32", {2, 3}}}), {x}));
  EXPECT_NEAR(p[0] + p[1] + p[2], 1, 1e-6);
  EXPECT_NEAR(p[2], 0.6652409557748219, 1e-6);  // max-subtracted: no overflow at 1000
  auto lp = values_of<double>(run1(one_op("log_softmax", {{"f32", {2, 3}}}, "", R"({"dim": 1})"), {x}));
  EXPECT_NEAR(lp[2], std::log(0.6652409557748219), 1e-5);
  Tensor w = from_values(DType::kF32, {3}, std::vector<double>{1, 2, 3});
  Tensor b = from_values(DType::kF32, {3}, std::vector<double>{0, 0, 1});
  auto ln = values_of<double>(run1(one_op("layer_norm", {{"f32", {2, 3}}, {"f32", {3}}, {"f32", {3}}}, "", R"({"eps": 0})"), {x, w, b}));
  const double r = std::sqrt(1.5);  // (1000,1001,1002): mean 1001, var 2/3
  EXPECT_NEAR(ln[0], -r * 1, 1e-4);
  EXPECT_NEAR(ln[1], 0, 1e-4);
  EXPECT_NEAR(ln[2], r * 3 + 1, 1e-4);
  auto rms = values_of<double>(run1(one_op("rms_norm", {{"f32", {2, 3}}}, "", R"({"eps": 0})"), {x}));
  EXPECT_NEAR(rms[3], -5 / std::sqrt(50.0 / 3), 1e-5);
  // Normalizing over several axes, with weight of those dims' shape.
  std::mt19937 rng(7);
  Tensor x3 = testing::random_tensor(DType::kF64, {2, 3, 4}, rng);
  Tensor w2 = from_values(DType::kF64, {3, 4}, std::vector<double>(12, 1.0));
  Tensor y3 = run1(one_op("layer_norm", {{"f64", {2, 3, 4}}, {"f64", {3, 4}}}, "", R"({"axes": [1, 2], "eps": 0})"), {x3, w2});
  auto v = values_of<double>(y3);
  double mean = 0, sq = 0;
  for (int i = 0; i < 12; ++i) mean += v[i];
  for (int i = 0; i < 12; ++i) sq += v[i] * v[i];
  EXPECT_NEAR(mean / 12, 0, 1e-12);
  EXPECT_NEAR(sq / 12, 1, 1e-9);
}

TEST_P(HandChecked, MatmulFollowsNumPy) {
  Tensor a = from_values(DType::kF32, {2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6});
  Tensor b = from_values(DType::kF32, {3, 2}, std::vector<double>{7, 8, 9, 10, 11, 12});
  EXPECT_EQ(values_of<double>(run1(one_op("matmul", {{"f32", {2, 3}}, {"f32", {3, 2}}}), {a, b})), (std::vector<double>{58, 64, 139, 154}));
  Tensor v = from_values(DType::kF32, {3}, std::vector<double>{1, 0, -1});
  Tensor mv = run1(one_op("matmul", {{"f32", {2, 3}}, {"f32", {3}}}), {a, v});
  EXPECT_EQ(mv.shape(), std::vector<int64_t>{2});
  EXPECT_EQ(values_of<double>(mv), (std::vector<double>{-2, -2}));
  Tensor dot = run1(one_op("matmul", {{"f32", {3}}, {"f32", {3}}}), {v, v});
  EXPECT_EQ(dot.shape(), std::vector<int64_t>{});
  EXPECT_EQ(values_of<double>(dot)[0], 2);
  // Batch broadcast: [2,1,2,3] @ [4,3,2] -> [2,4,2,2]
  std::mt19937 rng(3);
  Tensor ba = testing::random_tensor(DType::kI64, {2, 1, 2, 3}, rng);
  Tensor bb = testing::random_tensor(DType::kI64, {4, 3, 2}, rng);
  Tensor bc = run1(one_op("matmul", {{"i64", {2, 1, 2, 3}}, {"i64", {4, 3, 2}}}), {ba, bb});
  ASSERT_EQ(bc.shape(), (std::vector<int64_t>{2, 4, 2, 2}));
  auto av = values_of<int64_t>(ba), bv = values_of<int64_t>(bb), cv = values_of<int64_t>(bc);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int m = 0; m < 2; ++m)
        for (int n = 0; n < 2; ++n) {
          int64_t acc = 0;
          for (int k = 0; k < 3; ++k) acc += av[i * 6 + m * 3 + k] * bv[j * 6 + k * 2 + n];
          EXPECT_EQ(cv[((i * 4 + j) * 2 + m) * 2 + n], acc);
        }
}

TEST_P(HandChecked, ViewOps) {
  Tensor x = from_values(DType::kI32, {2, 3}, std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  EXPECT_EQ(values_of<int64_t>(run1(one_op("transpose", {{"i32", {2, 3}}}, "", R"({"dim0": 0, "dim1": 1})"), {x})),
            (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(values_of<int64_t>(run1(one_op("permute", {{"i32", {2, 3}}}, "", R"({"perm": [1, 0]})"), {x})),
            (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  Tensor r = run1(one_op("reshape", {{"i32", {2, 3}}}, "3, -1"), {x});
  EXPECT_EQ(r.shape(), (std::vector<int64_t>{3, 2}));
  Tensor e = run1(one_op("expand", {{"i32", {2, 3}}}, "2, -1, 3"), {x});
  EXPECT_EQ(e.shape(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(values_of<int64_t>(e), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(values_of<int64_t>(run1(one_op("slice", {{"i32", {2, 3}}}, "-2, 9223372036854775807, 2", R"({"dim": 1})"), {x})),
            (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(run1(one_op("slice", {{"i32", {2, 3}}}, "5, 9, 1", R"({"dim": 1})"), {x}).shape(), (std::vector<int64_t>{2, 0}));
  Tensor c = run1(one_op("concat", {{"i32", {2, 3}}, {"i32", {2, 1}}}, "", R"({"dim": 1})"),
                  {x, from_values(DType::kI32, {2, 1}, std::vector<int64_t>{9, 8})});
  EXPECT_EQ(values_of<int64_t>(c), (std::vector<int64_t>{0, 1, 2, 9, 3, 4, 5, 8}));
  Tensor u = run1(one_op("unsqueeze", {{"i32", {2, 3}}}, "", R"({"dim": -1})"), {x});
  EXPECT_EQ(u.shape(), (std::vector<int64_t>{2, 3, 1}));
  Tensor one = from_values(DType::kI32, {1, 3, 1}, std::vector<int64_t>{7, 8, 9});
  Tensor sq = run1(one_op("squeeze", {{"i32", {1, 3, 1}}}, "", R"({"dims": [0, 2]})"), {one});
  EXPECT_EQ(sq.shape(), std::vector<int64_t>{3});
  EXPECT_EQ(values_of<int64_t>(sq), (std::vector<int64_t>{7, 8, 9}));
}

TEST_P(HandChecked, GathersAndTheirRangeErrors) {
  Tensor x = from_values(DType::kF32, {3, 2}, std::vector<double>{0, 1, 2, 3, 4, 5});
  Tensor idx = from_values(DType::kI64, {4}, std::vector<int64_t>{2, 0, 2, 1});
  EXPECT_EQ(values_of<double>(run1(one_op("index_select", {{"f32", {3, 2}}, {"i64", {4}}}, "", R"({"dim": 0})"), {x, idx})),
            (std::vector<double>{4, 5, 0, 1, 4, 5, 2, 3}));
  Tensor idx1 = from_values(DType::kI32, {3}, std::vector<int64_t>{1, 1, 0});
  EXPECT_EQ(values_of<double>(run1(one_op("index_select", {{"f32", {3, 2}}, {"i32", {3}}}, "", R"({"dim": 1})"), {x, idx1})),
            (std::vector<double>{1, 1, 0, 3, 3, 2, 5, 5, 4}));
  Tensor ids = from_values(DType::kI32, {2, 2}, std::vector<int64_t>{2, 0, 1, 1});
  Tensor emb = run1(one_op("embedding", {{"f32", {3, 2}}, {"i32", {2, 2}}}), {x, ids});
  EXPECT_EQ(emb.shape(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(values_of<double>(emb), (std::vector<double>{4, 5, 0, 1, 2, 3, 2, 3}));
  Status s = run_status(one_op("embedding", {{"f32", {3, 2}}, {"i32", {2}}}), {x, from_values(DType::kI32, {2}, std::vector<int64_t>{0, 3})});
  EXPECT_EQ(s.code(), Code::kRuntime);
  EXPECT_NE(s.message().find("index 3 at position 1 is out of range [0, 3)"), std::string::npos) << s.message();
  s = run_status(one_op("index_select", {{"f32", {3, 2}}, {"i64", {1}}}, "", R"({"dim": 0})"), {x, from_values(DType::kI64, {1}, std::vector<int64_t>{-1})});
  EXPECT_EQ(s.code(), Code::kRuntime);
}

TEST_P(HandChecked, CreationOps) {
  auto g2 = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "sym_size", "in": ["x"], "out": "n", "attrs": {"dim": 0}},
              {"op": "full", "in": [2, "n"], "out": "f", "attrs": {"value": 7, "dtype": "i32"}},
              {"op": "arange", "in": ["n", 0, -2], "out": "r"},
              {"op": "arange", "in": [1, "n", 1], "out": "rf", "attrs": {"dtype": "f64"}}],
    "outputs": ["f", "r", "rf"]})";
  auto out = run_graph(g2, {Tensor::empty(DType::kF32, {5})}, cfg());
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(values_of<int64_t>((*out)[0]), std::vector<int64_t>(10, 7));
  EXPECT_EQ(values_of<int64_t>((*out)[1]), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(values_of<double>((*out)[2]), (std::vector<double>{1, 2, 3, 4}));
}

TEST_P(HandChecked, DataDependentOps) {
  Tensor x = from_values(DType::kF32, {2, 3}, std::vector<double>{0, 1, 0, 2, 0, 3});
  Tensor nz = run1(one_op("nonzero", {{"f32", {2, 3}}}), {x});
  EXPECT_EQ(nz.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values_of<int64_t>(nz), (std::vector<int64_t>{0, 1, 1, 0, 1, 2}));
  Tensor m = from_values(DType::kBool, {3}, std::vector<int>{1, 0, 1});
  Tensor ms = run1(one_op("masked_select", {{"f32", {2, 3}}, {"bool", {3}}}), {x, m});
  EXPECT_EQ(values_of<double>(ms), (std::vector<double>{0, 0, 2, 3}));
  Tensor none = run1(one_op("nonzero", {{"f32", {2, 3}}}), {Tensor::empty(DType::kF32, {2, 3})});
  EXPECT_EQ(none.shape(), (std::vector<int64_t>{0, 2}));
}

TEST_P(HandChecked, NonContiguousInputsGiveTheSameResults) {
  std::mt19937 rng(11);
  Tensor base = testing::random_tensor(DType::kF32, {4, 6}, rng);
  Tensor strided = base.view({6, 4}, {1, 6});  // a transposed view
  Tensor dense = strided.contiguous();
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["a", "b"]}],
    "nodes": [{"op": "exp", "in": ["x"], "out": "e"}, {"op": "sum", "in": ["e"], "out": "s", "attrs": {"axes": [1], "keepdim": true}},
              {"op": "div", "in": ["e", "s"], "out": "y"}], "outputs": ["y"]})";
  Tensor y1 = run1(g, {strided});
  Tensor y2 = run1(g, {dense});
  EXPECT_TRUE(testing::tensors_close(y1, y2, 1e-6, 1e-7));
}

TEST_P(HandChecked, StaticAndDynamicSpecializationsAgree) {
  std::mt19937 rng(5);
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["b", "t", 8]}, {"name": "w", "dtype": "f32", "shape": [8, 8]}],
    "nodes": [{"op": "matmul", "in": ["x", "w"], "out": "h"}, {"op": "gelu", "in": ["h"], "out": "g"},
              {"op": "sym_size", "in": ["x"], "out": "t", "attrs": {"dim": 1}},
              {"op": "slice", "in": ["g", 1, "t", 1], "out": "s", "attrs": {"dim": 1}},
              {"op": "layer_norm", "in": ["s"], "out": "y"}], "outputs": ["y"]})";
  for (auto shape : std::vector<std::vector<int64_t>>{{1, 5, 8}, {3, 2, 8}, {2, 17, 8}}) {
    Tensor x = testing::random_tensor(DType::kF32, shape, rng);
    Tensor w = testing::random_tensor(DType::kF32, {8, 8}, rng);
    auto dyn = run_graph(g, {x, w}, cfg(R"("policy": {"mode": "always_dynamic"})"));
    auto sta = run_graph(g, {x, w}, cfg(R"("policy": {"mode": "always_static"})"));
    ASSERT_TRUE(dyn.is_ok() && sta.is_ok()) << dyn.status().to_string() << sta.status().to_string();
    EXPECT_TRUE(testing::tensors_close((*dyn)[0], (*sta)[0], 1e-5, 1e-6));
  }
}

#ifdef SHAPEJIT_HAVE_LLVM
INSTANTIATE_TEST_SUITE_P(Backends, HandChecked, ::testing::Values("reference", "llvm"));
#else
INSTANTIATE_TEST_SUITE_P(Backends, HandChecked, ::testing::Values("reference"));
#endif

}  // namespace
}  // namespace shapejit
