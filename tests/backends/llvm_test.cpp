// The LLVM backend against the reference interpreter: every op and dtype,
// each graph compiled fully dynamic and fully static, on edge shapes (0, 1,
// broadcast, non-contiguous, odd sizes that leave vector tails, tiles, large).
//
// Tolerance: integers and bools agree exactly; floats within rtol 1e-5,
// atol 1e-6 (float sums reassociate to vectorize; float matmuls run in BLAS
// in the operand's precision, so they get rtol 1e-4). Errors must be the
// reference's, word for word: the kernel asks the interpreter for them.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "backends/backend.h"
#include "backends/loops/lower.h"
#include "bench/bench_util.h"
#include "jit/ir/infer.h"
#include "tests/test_util.h"

#ifdef SHAPEJIT_HAVE_LLVM

namespace shapejit {
namespace {

using ir::DType;
using ir::Tensor;
using testing::from_values;
using testing::one_op;
using testing::random_tensor;

struct Outcome {
  Status status;
  std::vector<Tensor> out;
  uint64_t fallbacks = 0;
  std::vector<std::string> log;
};

Outcome run_with(const std::string& graph, const std::vector<Tensor>& inputs, const std::string& config) {
  Outcome r;
  ir::Graph g = testing::graph_from(graph);
  auto jit = Jit::create(config);
  EXPECT_TRUE(jit.is_ok()) << jit.status().to_string();
  (*jit)->set_log([&r](const std::string& line) { r.log.push_back(line); });
  testing::ArgPack p;
  for (const Tensor& t : inputs) p.add(t);
  r.status = (*jit)->call_graph("t", g, {}, p.args(), r.out);
  r.fallbacks = (*jit)->stats_json()["sites"]["t"]["fallbacks"].get<uint64_t>();
  return r;
}

void expect_agrees(const std::string& graph, const std::vector<Tensor>& inputs, const std::string& what, double rtol = 1e-5,
                   double atol = 1e-6) {
  Outcome ref = run_with(graph, inputs, R"({"compile": {"backend": "reference"}})");
  for (const char* mode : {"always_dynamic", "always_static"}) {
    Outcome got = run_with(graph, inputs, std::string(R"({"compile": {"backend": "llvm"}, "policy": {"mode": ")") + mode + "\"}}");
    SCOPED_TRACE(what + " (" + mode + ")");
    EXPECT_EQ(got.fallbacks, 0u) << (got.log.empty() ? "" : got.log[0]);
    ASSERT_EQ(got.status.code(), ref.status.code()) << got.status.to_string() << " vs " << ref.status.to_string();
    if (!ref.status.is_ok()) {
      EXPECT_EQ(got.status.message(), ref.status.message());
      continue;
    }
    ASSERT_EQ(got.out.size(), ref.out.size());
    for (size_t i = 0; i < ref.out.size(); ++i) EXPECT_TRUE(testing::tensors_close(got.out[i], ref.out[i], rtol, atol)) << "output " << i;
  }
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

const char* kFloats[] = {"f32", "f64"};
const char* kNumeric[] = {"f32", "f64", "i32", "i64"};
const char* kAll[] = {"f32", "f64", "i32", "i64", "bool"};

DType dt(const char* name) { return *ir::parse_dtype(name); }

TEST(Llvm, UnaryOpsEveryDtype) {
  std::mt19937 rng(1);
  for (const char* op : {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "silu", "sin", "cos", "erf", "gelu"}) {
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

// exp is inline arithmetic (backends/llvm/fast_math.h), not libm: within
// 2 ulp over the whole range, subnormal results, overflow, NaN and the
// masked positions of a softmax.
TEST(Llvm, ExpIsWithinTwoUlpEverywhere) {
  auto check = [&]<typename T>(const char* name, double lo, double hi) {
    std::vector<double> xs = {0.0, -0.0, 1.0, -1.0, 1e-30, -1e30, 1e30, std::numeric_limits<double>::infinity(),
                              -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()};
    for (int i = 0; i <= 20000; ++i) xs.push_back(lo + (hi - lo) * i / 20000.0);
    const int64_t n = static_cast<int64_t>(xs.size());
    Outcome got = run_with(one_op("exp", {{name, {n}}}), {from_values(dt(name), {n}, xs)}, R"({"compile": {"backend": "llvm"}})");
    ASSERT_TRUE(got.status.is_ok()) << got.status.to_string();
    EXPECT_EQ(got.fallbacks, 0u);
    const T* y = got.out[0].ptr<T>();
    for (int64_t i = 0; i < n; ++i) {
      const T x = static_cast<T>(xs[i]), want = std::exp(x);
      SCOPED_TRACE(std::string(name) + " exp(" + std::to_string(x) + ")");
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(y[i]));
      } else if (std::isinf(want) || want == 0) {
        EXPECT_EQ(y[i], want);
      } else if (want < std::numeric_limits<T>::min()) {  // subnormal: the spacing is fixed
        EXPECT_NEAR(y[i], want, 2 * std::numeric_limits<T>::denorm_min());
      } else {
        EXPECT_LE(std::fabs(y[i] - want), 2 * std::numeric_limits<T>::epsilon() * want);
      }
    }
  };
  check.operator()<float>("f32", -104.5, 89.5);
  check.operator()<double>("f64", -746, 710);
  // A row masked but for one position, and a row masked everywhere.
  std::vector<float> logits = {-1e30f, 2.0f, -1e30f, -1e30f, -1e30f, -1e30f, -1e30f, -1e30f};
  expect_agrees(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [2, 4]}],
                   "nodes": [{"op": "softmax", "in": ["x"], "out": "y"}], "outputs": ["y"]})",
                {from_values(DType::kF32, {2, 4}, logits)}, "masked softmax");
}

// tanh, float erf and gelu are inline arithmetic too (fast_math.h), held to
// their ulp bounds against the C library in double: every 4093rd float bit
// pattern (all signs, subnormals, infinities and NaNs among them), and for
// double a log-spaced sweep of both signs.
template <typename T>
double ulps(T got, double want) {
  const T w = static_cast<T>(want);
  if (std::isnan(want)) return std::isnan(got) ? 0 : 1e9;
  if (std::isinf(w)) return got == w ? 0 : 1e9;
  const double spacing = std::fabs(w) < std::numeric_limits<T>::min()
                             ? std::numeric_limits<T>::denorm_min()
                             : std::fabs(double(std::nextafter(w, std::numeric_limits<T>::infinity())) - double(w));
  return std::fabs(double(got) - want) / spacing;
}

std::vector<double> float_sweep() {
  std::vector<double> xs;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4093) {
    const uint32_t u = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &u, sizeof f);
    xs.push_back(f);
  }
  for (float f : {0.0f, -0.0f, 0.875f, -0.875f, 2.0f, 4.0f, 10.0f, -10.0f, 9.5f, 1e-45f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity()}) {
    xs.push_back(f);
    xs.push_back(std::nextafter(f, 0.0f));
  }
  return xs;
}

std::vector<double> double_sweep() {
  std::vector<double> xs = {0.0, -0.0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN(), 4.9e-324, 1e308};
  for (int i = 0; i <= 200000; ++i) {
    const double m = std::pow(10.0, -320.0 + 323.0 * i / 200000.0);
    xs.push_back(m);
    xs.push_back(-m);
  }
  return xs;
}

// Runs `op` (attrs `attrs`) over `xs` and checks each result against
// `want` within `bound` ulps; from |x| >= `tail` on, within 1e-4 relative
// or a few steps of the smallest subnormal instead (gelu's negative tail,
// values below 0.004 that the differential tests' atol 1e-6 would pass
// whole: rounding the float argument moves erfc(z) by 2 z^2 ulps there,
// and the last values are subnormal).
template <typename T>
void expect_within_ulps(const char* op, const char* attrs, const std::vector<double>& xs, double (*want)(double), double bound,
                        double tail = std::numeric_limits<double>::infinity()) {
  const char* name = std::is_same_v<T, float> ? "f32" : "f64";
  const int64_t n = static_cast<int64_t>(xs.size());
  Outcome got = run_with(one_op(op, {{name, {n}}}, "", attrs), {from_values(dt(name), {n}, xs)}, R"({"compile": {"backend": "llvm"}})");
  ASSERT_TRUE(got.status.is_ok()) << got.status.to_string();
  EXPECT_EQ(got.fallbacks, 0u);
  const T* y = got.out[0].ptr<T>();
  double worst = 0;
  int failures = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T x = static_cast<T>(xs[i]);
    const double w = want(double(x)), e = ulps<T>(y[i], w);
    const double diff = std::fabs(double(y[i]) - w);
    if (std::fabs(double(x)) >= tail && (diff <= 1e-4 * std::fabs(w) || diff <= 16 * std::numeric_limits<T>::denorm_min())) continue;
    worst = std::max(worst, e);
    if (e > bound && failures++ < 5) ADD_FAILURE() << op << " " << name << "(" << x << ") = " << y[i] << ", want " << want(double(x)) << ": " << e << " ulp";
  }
  EXPECT_EQ(failures, 0) << op << " " << name << ": " << failures << " of " << n << " past " << bound << " ulp";
  ::testing::Test::RecordProperty(std::string(op) + "_" + name + (*attrs ? "_tanh" : "") + "_worst_ulp", std::to_string(worst));
}

double gelu_erf(double x) { return 0.5 * x * std::erfc(-x * 0.7071067811865476); }
double gelu_tanh(double x) {
  const double y = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  return 0.5 * x * (y < 0 ? 2 * std::exp(2 * y) / (1 + std::exp(2 * y)) : 1 + std::tanh(y));  // 1 + tanh(y) without cancellation
}

TEST(Llvm, TanhErfAndGeluAreWithinTheirUlpBoundsEverywhere) {
  const std::vector<double> fs = float_sweep(), ds = double_sweep();
  expect_within_ulps<float>("tanh", "", fs, [](double x) { return std::tanh(x); }, 3);
  expect_within_ulps<double>("tanh", "", ds, [](double x) { return std::tanh(x); }, 4);
  expect_within_ulps<float>("erf", "", fs, [](double x) { return std::erf(x); }, 3);
  // gelu in float: its argument's rounding moves the result by a few ulps
  // more; the tanh form's by the most (y = k (x + c x^3) rounded, then
  // exp(-2|y|) multiplies y's error by 2|y|: 14 ulp seen near x = -3 in a
  // sweep 10 times this dense, 1e-6 relative).
  expect_within_ulps<float>("gelu", "", fs, gelu_erf, 8, 3);
  expect_within_ulps<float>("gelu", R"({"approximate": "tanh"})", fs, gelu_tanh, 16, 3);
  expect_within_ulps<double>("gelu", R"({"approximate": "tanh"})", ds, gelu_tanh, 6, 3);
}

// tvm.json turns the 0/1 rule off: a dim that broadcasts is then a traced
// decision, guarded, so one Jit taking 1s and non-1s in turn never reuses an
// entry built for the other case.
TEST(Llvm, WithoutTheZeroOneRuleBroadcastsAreGuarded) {
  const std::string g = R"({"inputs": [{"name": "a", "dtype": "f32", "shape": ["n", "m"]}, {"name": "b", "dtype": "f32", "shape": ["k"]}],
    "nodes": [{"op": "add", "in": ["a", "b"], "out": "y"}], "outputs": ["y"]})";
  auto jit = Jit::create(R"({"compile": {"backend": "llvm"}, "policy": {"mode": "always_dynamic", "specialize_zero_one": false},
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
  }
}

TEST(Llvm, MatmulLikeNumPy) {
  std::mt19937 rng(7);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{5}, {5}},       {{3, 5}, {5}},          {{5}, {5, 4}},       {{3, 5}, {5, 4}}, {{2, 3, 5}, {5, 4}},
      {{2, 1, 3, 5}, {4, 5, 6}}, {{3, 0}, {0, 4}}, {{0, 5}, {5, 4}}, {{1, 1}, {1, 1}},  {{33, 65}, {65, 17}}};
  for (const char* t : kNumeric) {
    for (const auto& [a, b] : cases) {
      expect_agrees(one_op("matmul", {{t, a}, {t, b}}), {random_tensor(dt(t), a, rng), random_tensor(dt(t), b, rng)},
                    std::string("matmul ") + t + shape_str(a) + shape_str(b), 1e-4, 1e-5);
    }
  }
  // A transposed operand and a fused epilogue.
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n", 16]}, {"name": "w", "dtype": "f32", "shape": [24, 16]},
      {"name": "b", "dtype": "f32", "shape": [24]}],
    "nodes": [{"op": "transpose", "in": ["w"], "out": "wt", "attrs": {"dim0": 0, "dim1": 1}},
              {"op": "matmul", "in": ["x", "wt"], "out": "h"}, {"op": "add", "in": ["h", "b"], "out": "hb"},
              {"op": "gelu", "in": ["hb"], "out": "y"}], "outputs": ["y"]})";
  expect_agrees(g, {random_tensor(DType::kF32, {9, 16}, rng), random_tensor(DType::kF32, {24, 16}, rng), random_tensor(DType::kF32, {24}, rng)},
                "matmul epilogue", 1e-4, 1e-5);
}

// A pointwise step right after a matmul over the product's shape runs on
// each block of rows as BLAS finishes it (MatmulStep::epilogue): sizes 0
// and 1, batches (broadcast too), many row blocks across threads, the
// product read twice, kept as an output, read at another index (not an
// epilogue then), and an epilogue whose gather fails its bounds check.
TEST(Llvm, MatmulEpiloguesRunOnTheirRowBlocks) {
  std::mt19937 rng(17);
  const std::string mlp = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["b", "m", "k"]}, {"name": "w", "dtype": "f32", "shape": ["k", "n"]},
      {"name": "c", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "matmul", "in": ["x", "w"], "out": "h"}, {"op": "add", "in": ["h", "c"], "out": "hb"},
              {"op": "gelu", "in": ["hb"], "out": "y"}], "outputs": ["y"]})";
  for (const auto& [b, m, k, n] : std::vector<std::array<int64_t, 4>>{
           {1, 1, 1, 1}, {2, 3, 5, 7}, {0, 3, 4, 5}, {2, 0, 4, 5}, {2, 3, 0, 5}, {2, 3, 4, 0}, {3, 300, 40, 70}, {1, 257, 64, 33},
           {1, 20, 128, 300}, {1, 20, 0, 300}, {1, 600, 16, 300}}) {  // few rows, many columns: blocks of columns on 2+ threads; then blocks past the cache
    expect_agrees(mlp, {random_tensor(DType::kF32, {b, m, k}, rng), random_tensor(DType::kF32, {k, n}, rng), random_tensor(DType::kF32, {n}, rng)},
                  "mlp " + shape_str({b, m, k, n}), 1e-4, 1e-5);
  }
  const bench::Specialized sg = bench::specialize(mlp, {{3, 300, 40}, {40, 70}, {70}}, true);
  const std::string dump = std::move(backends::loops::lower(*sg.graph)).value().dump();
  EXPECT_NE(dump.find("epilogue next"), std::string::npos) << dump;

  // Broadcast batches, the product read twice and kept, a residual.
  const std::string twice = R"({"inputs": [{"name": "a", "dtype": "f32", "shape": [2, 1, "m", 6]}, {"name": "w", "dtype": "f32", "shape": [3, 6, 5]},
      {"name": "r", "dtype": "f32", "shape": [2, 3, "m", 5]}],
    "nodes": [{"op": "matmul", "in": ["a", "w"], "out": "h"}, {"op": "mul", "in": ["h", "h"], "out": "hh"},
              {"op": "add", "in": ["hh", "r"], "out": "y"}], "outputs": ["y", "h"]})";
  for (int64_t m : {1, 4, 150}) {
    expect_agrees(twice, {random_tensor(DType::kF32, {2, 1, m, 6}, rng), random_tensor(DType::kF32, {3, 6, 5}, rng), random_tensor(DType::kF32, {2, 3, m, 5}, rng)},
                  "broadcast batch m=" + std::to_string(m), 1e-4, 1e-5);
  }
  // The product at its transposed index: a plain step after the matmul.
  const std::string transposed = R"({"inputs": [{"name": "a", "dtype": "f32", "shape": ["n", "n"]}],
    "nodes": [{"op": "matmul", "in": ["a", "a"], "out": "h"}, {"op": "transpose", "in": ["h"], "out": "ht", "attrs": {"dim0": 0, "dim1": 1}},
              {"op": "sub", "in": ["h", "ht"], "out": "y"}], "outputs": ["y"]})";
  for (int64_t n : {1, 9, 130}) expect_agrees(transposed, {random_tensor(DType::kF32, {n, n}, rng)}, "h - h^T n=" + std::to_string(n), 1e-4, 1e-5);
  const std::string lowered = std::move(backends::loops::lower(*bench::specialize(transposed, {{9, 9}}, true).graph)).value().dump();
  EXPECT_EQ(lowered.find("epilogue next"), std::string::npos) << lowered;
  // An epilogue with a gather: an index out of range is the reference's error.
  const std::string gather = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["t", 8]}, {"name": "w", "dtype": "f32", "shape": [8, 4]},
      {"name": "table", "dtype": "f32", "shape": [10, 4]}, {"name": "ids", "dtype": "i64", "shape": ["t"]}],
    "nodes": [{"op": "matmul", "in": ["x", "w"], "out": "h"}, {"op": "embedding", "in": ["table", "ids"], "out": "e"},
              {"op": "add", "in": ["h", "e"], "out": "y"}], "outputs": ["y"]})";
  for (int64_t bad : {3, 10}) {
    std::vector<double> ids(200, 1.0);
    ids[150] = static_cast<double>(bad);
    expect_agrees(gather, {random_tensor(DType::kF32, {200, 8}, rng), random_tensor(DType::kF32, {8, 4}, rng), random_tensor(DType::kF32, {10, 4}, rng),
                           from_values(DType::kI64, {200}, ids)},
                  "gather epilogue, id " + std::to_string(bad), 1e-4, 1e-5);
  }
}

// A matmul operand that is a view of a buffer goes to BLAS by its strides
// (transposed when its rows are contiguous), with no copy: attention's
// heads split from a biased projection, heads sliced from a fused qkv,
// sizes 0 and 1, and the layouts BLAS cannot take (a broadcast row, a
// non-contiguous input), which are copied dense first.
TEST(Llvm, MatmulOperandsAreReadInPlaceByStrides) {
  std::mt19937 rng(23);
  // Products of products in f32 against the reference's f64: values in
  // [-0.5, 0.5] keep the rounding of their sums under the tolerance.
  auto random = [&](DType dt, std::vector<int64_t> shape) { return random_tensor(dt, std::move(shape), rng, -0.5, 0.5); };
  auto steps = [](const std::string& g, const std::vector<std::vector<int64_t>>& shapes) {
    const std::string dump = std::move(backends::loops::lower(*bench::specialize(g, shapes, true).graph)).value().dump();
    size_t n = 0;
    for (size_t at = dump.find("\nstep "); at != std::string::npos; at = dump.find("\nstep ", at + 1)) ++n;
    return std::make_pair(n + (dump.rfind("step ", 0) == 0), dump);
  };
  const std::string heads = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["b", "t", 32]}, {"name": "wq", "dtype": "f32", "shape": [32, 32]},
      {"name": "bq", "dtype": "f32", "shape": [32]}, {"name": "wk", "dtype": "f32", "shape": [32, 32]}, {"name": "bk", "dtype": "f32", "shape": [32]}],
    "nodes": [{"op": "sym_size", "in": ["x"], "out": "b", "attrs": {"dim": 0}}, {"op": "sym_size", "in": ["x"], "out": "t", "attrs": {"dim": 1}},
              {"op": "matmul", "in": ["x", "wq"], "out": "q0"}, {"op": "add", "in": ["q0", "bq"], "out": "q1"},
              {"op": "reshape", "in": ["q1", "b", "t", 4, 8], "out": "q2"}, {"op": "transpose", "in": ["q2"], "out": "q", "attrs": {"dim0": 1, "dim1": 2}},
              {"op": "matmul", "in": ["x", "wk"], "out": "k0"}, {"op": "add", "in": ["k0", "bk"], "out": "k1"},
              {"op": "reshape", "in": ["k1", "b", "t", 4, 8], "out": "k2"}, {"op": "transpose", "in": ["k2"], "out": "k", "attrs": {"dim0": 1, "dim1": 2}},
              {"op": "transpose", "in": ["k"], "out": "kt", "attrs": {"dim0": -1, "dim1": -2}},
              {"op": "matmul", "in": ["q", "kt"], "out": "s"}], "outputs": ["s"]})";
  for (const auto& [b, t] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 5}, {1, 0}, {0, 3}, {3, 70}}) {
    expect_agrees(heads, {random(DType::kF32, {b, t, 32}), random(DType::kF32, {32, 32}), random(DType::kF32, {32}),
                          random(DType::kF32, {32, 32}), random(DType::kF32, {32})},
                  "heads b=" + std::to_string(b) + " t=" + std::to_string(t), 1e-4, 1e-5);
  }
  // Two projections, each with its bias as its epilogue, and the scores: no copies.
  auto [n_heads, dump_heads] = steps(heads, {{2, 5, 32}, {32, 32}, {32}, {32, 32}, {32}});
  EXPECT_EQ(n_heads, 5u) << dump_heads;
  EXPECT_NE(dump_heads.find("rows:1 cols:32]"), std::string::npos) << "k^T transposed for BLAS\n" << dump_heads;

  // Heads sliced from one fused projection, then the values' product.
  const std::string qkv = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["t", 16]}, {"name": "w", "dtype": "f32", "shape": [16, 48]}],
    "nodes": [{"op": "sym_size", "in": ["x"], "out": "t", "attrs": {"dim": 0}}, {"op": "matmul", "in": ["x", "w"], "out": "p"},
              {"op": "slice", "in": ["p", 0, 16, 1], "out": "qf", "attrs": {"dim": -1}}, {"op": "reshape", "in": ["qf", "t", 2, 8], "out": "qs"},
              {"op": "transpose", "in": ["qs"], "out": "q", "attrs": {"dim0": 0, "dim1": 1}},
              {"op": "slice", "in": ["p", 16, 32, 1], "out": "kf", "attrs": {"dim": -1}}, {"op": "reshape", "in": ["kf", "t", 2, 8], "out": "ks"},
              {"op": "permute", "in": ["ks"], "out": "kt", "attrs": {"perm": [1, 2, 0]}},
              {"op": "slice", "in": ["p", 32, 48, 1], "out": "vf", "attrs": {"dim": -1}}, {"op": "reshape", "in": ["vf", "t", 2, 8], "out": "vs"},
              {"op": "transpose", "in": ["vs"], "out": "v", "attrs": {"dim0": 0, "dim1": 1}},
              {"op": "matmul", "in": ["q", "kt"], "out": "s"}, {"op": "matmul", "in": ["s", "v"], "out": "y"}], "outputs": ["y"]})";
  for (int64_t t : {1, 2, 9, 100}) {
    expect_agrees(qkv, {random(DType::kF32, {t, 16}), random(DType::kF32, {16, 48})}, "qkv t=" + std::to_string(t), 1e-4, 1e-5);
  }
  auto [n_qkv, dump_qkv] = steps(qkv, {{9, 16}, {16, 48}});
  EXPECT_EQ(n_qkv, 3u) << dump_qkv;

  // Size-1 dims, static: strides that never matter.
  const std::string ones = R"({"inputs": [{"name": "a", "dtype": "f32", "shape": [1, 3]}, {"name": "b", "dtype": "f32", "shape": [1, 1]},
      {"name": "c", "dtype": "f32", "shape": [3, 1]}],
    "nodes": [{"op": "transpose", "in": ["a"], "out": "at", "attrs": {"dim0": 0, "dim1": 1}}, {"op": "matmul", "in": ["at", "b"], "out": "p"},
              {"op": "transpose", "in": ["c"], "out": "ct", "attrs": {"dim0": 0, "dim1": 1}}, {"op": "matmul", "in": ["ct", "p"], "out": "y"},
              {"op": "matmul", "in": ["p", "ct"], "out": "z"}], "outputs": ["y", "z"]})";
  expect_agrees(ones, {random(DType::kF32, {1, 3}), random(DType::kF32, {1, 1}), random(DType::kF32, {3, 1})},
                "size-1 dims", 1e-4, 1e-5);

  // Layouts BLAS cannot take: a broadcast row, and a non-contiguous input
  // (its strides arrive per call); f64 transposed on both sides too.
  const std::string bcast = R"({"inputs": [{"name": "v", "dtype": "f32", "shape": ["k"]}, {"name": "x", "dtype": "f32", "shape": ["m", "k"]}],
    "nodes": [{"op": "sym_size", "in": ["v"], "out": "k", "attrs": {"dim": 0}}, {"op": "unsqueeze", "in": ["v"], "out": "v1", "attrs": {"dim": 0}},
              {"op": "expand", "in": ["v1", "k", "k"], "out": "w"}, {"op": "matmul", "in": ["x", "w"], "out": "y"}], "outputs": ["y"]})";
  expect_agrees(bcast, {random(DType::kF32, {6}), random(DType::kF32, {4, 6})}, "broadcast operand", 1e-4, 1e-5);
  const std::string tt = R"({"inputs": [{"name": "a", "dtype": "f64", "shape": ["k", "m"]}, {"name": "b", "dtype": "f64", "shape": ["n", "k"]}],
    "nodes": [{"op": "transpose", "in": ["a"], "out": "at", "attrs": {"dim0": 0, "dim1": 1}},
              {"op": "transpose", "in": ["b"], "out": "bt", "attrs": {"dim0": 0, "dim1": 1}}, {"op": "matmul", "in": ["at", "bt"], "out": "y"}],
    "outputs": ["y"]})";
  expect_agrees(tt, {random(DType::kF64, {7, 5}), random(DType::kF64, {3, 7})}, "both transposed", 1e-4, 1e-5);
  expect_agrees(tt, {random(DType::kF64, {128, 20}), random(DType::kF64, {300, 128})}, "both transposed, blocks of columns", 1e-4, 1e-5);
  Tensor strided_a = random(DType::kF64, {5, 14}).view({7, 5}, {2, 14});
  expect_agrees(tt, {strided_a, random(DType::kF64, {3, 7})}, "non-contiguous input", 1e-4, 1e-5);
}

// softmax(f(q @ k^T)) @ v as one tiled step (AttentionStep): an encoder's
// padding bias, a decoder's causal `where` over a cache (finite and -inf
// fills, rows masked whole), sizes 0 and 1 and across the tiles' edges
// (64 queries, 256 keys), f64, a mask whose gather fails, and the graphs
// that must not fuse (the probabilities kept, the scores read elsewhere,
// softmax over another axis).
TEST(Llvm, AttentionFusesIntoOneTiledStep) {
  std::mt19937 rng(31);
  auto random = [&](DType dt, std::vector<int64_t> shape, double lo = -1, double hi = 1) { return random_tensor(dt, std::move(shape), rng, lo, hi); };
  auto lowered = [](const std::string& g, const std::vector<std::vector<int64_t>>& shapes) {
    return std::move(backends::loops::lower(*bench::specialize(g, shapes, true).graph)).value().dump();
  };
  // Encoder: q, k, v [b, h, t, 8], a [b, 1, 1, t] bias from the padding mask.
  const std::string encoder = R"({"inputs": [{"name": "q", "dtype": "f32", "shape": ["b", 2, "t", 8]}, {"name": "k", "dtype": "f32", "shape": ["b", 2, "t", 8]},
      {"name": "v", "dtype": "f32", "shape": ["b", 2, "t", 8]}, {"name": "mask", "dtype": "f32", "shape": ["b", 1, 1, "t"]}],
    "nodes": [{"op": "transpose", "in": ["k"], "out": "kt", "attrs": {"dim0": -1, "dim1": -2}}, {"op": "matmul", "in": ["q", "kt"], "out": "s"},
              {"op": "mul", "in": ["s", 0.35355339059327373], "out": "s1"}, {"op": "sub", "in": ["mask", 1.0], "out": "m1"},
              {"op": "mul", "in": ["m1", 1e9], "out": "bias"}, {"op": "add", "in": ["s1", "bias"], "out": "s2"},
              {"op": "softmax", "in": ["s2"], "out": "p", "attrs": {"dim": -1}}, {"op": "matmul", "in": ["p", "v"], "out": "y"}], "outputs": ["y"]})";
  for (const auto& [b, t] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 5}, {1, 0}, {0, 4}, {2, 63}, {1, 64}, {1, 65}, {1, 257}, {2, 300}}) {
    std::vector<double> mask(static_cast<size_t>(b * t), 1.0);
    for (int64_t r = 0; r < b; ++r) {
      for (int64_t x = t - r * t / 3; x < t; ++x) mask[static_cast<size_t>(r * t + x)] = 0;  // padding at the end
    }
    expect_agrees(encoder, {random(DType::kF32, {b, 2, t, 8}), random(DType::kF32, {b, 2, t, 8}), random(DType::kF32, {b, 2, t, 8}),
                            from_values(DType::kF32, {b, 1, 1, t}, mask)},
                  "encoder b=" + std::to_string(b) + " t=" + std::to_string(t), 1e-4, 1e-5);
  }
  EXPECT_NE(lowered(encoder, {{2, 2, 70, 8}, {2, 2, 70, 8}, {2, 2, 70, 8}, {2, 1, 1, 70}}).find("attention into"), std::string::npos);

  // Decoder: new positions t over a cache of p, causal by `where`.
  // The fill is an input: JSON has no -inf.
  auto decoder = [](const std::string& dt) {
    return R"({"inputs": [{"name": "q", "dtype": ")" + dt + R"(", "shape": [1, 2, "t", 4]}, {"name": "kc", "dtype": ")" + dt + R"(", "shape": [1, 2, "p", 4]},
        {"name": "kn", "dtype": ")" + dt + R"(", "shape": [1, 2, "t", 4]}, {"name": "v", "dtype": ")" + dt + R"(", "shape": [1, 2, "s", 4]},
        {"name": "fill", "dtype": ")" + dt + R"(", "shape": [1]}],
      "nodes": [{"op": "sym_size", "in": ["q"], "out": "t", "attrs": {"dim": 2}}, {"op": "sym_size", "in": ["kc"], "out": "p", "attrs": {"dim": 2}},
                {"op": "concat", "in": ["kc", "kn"], "out": "k", "attrs": {"dim": 2}}, {"op": "transpose", "in": ["k"], "out": "kt", "attrs": {"dim0": -1, "dim1": -2}},
                {"op": "matmul", "in": ["q", "kt"], "out": "sc"}, {"op": "mul", "in": ["sc", 0.5], "out": "scaled"},
                {"op": "sym_add", "in": ["p", "t"], "out": "n"}, {"op": "arange", "in": ["p", "n", 1], "out": "qp"},
                {"op": "unsqueeze", "in": ["qp"], "out": "qc", "attrs": {"dim": 1}}, {"op": "arange", "in": [0, "n", 1], "out": "kp"},
                {"op": "le", "in": ["kp", "qc"], "out": "visible"}, {"op": "where", "in": ["visible", "scaled", "fill"], "out": "masked"},
                {"op": "softmax", "in": ["masked"], "out": "pr", "attrs": {"dim": -1}}, {"op": "matmul", "in": ["pr", "v"], "out": "y"}],
      "outputs": ["y"]})";
  };
  for (const auto& [t, p] : std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {1, 7}, {1, 300}, {1, 16400}, {3, 0}, {70, 0}, {64, 200}, {130, 260}}) {
    for (double fill : {-1e30, -std::numeric_limits<double>::infinity()}) {
      for (const char* dt : {"f32", "f64"}) {
        const DType d = *ir::parse_dtype(dt);
        expect_agrees(decoder(dt), {random(d, {1, 2, t, 4}), random(d, {1, 2, p, 4}), random(d, {1, 2, t, 4}), random(d, {1, 2, p + t, 4}), from_values(d, {1}, std::vector<double>{fill})},
                      std::string("decoder ") + dt + " fill " + std::to_string(fill) + " t=" + std::to_string(t) + " p=" + std::to_string(p), 1e-4, 1e-5);
      }
    }
  }
  EXPECT_NE(lowered(decoder("f32"), {{1, 2, 70, 4}, {1, 2, 9, 4}, {1, 2, 70, 4}, {1, 2, 79, 4}, {1}}).find("attention into"), std::string::npos);

  // Rows masked whole by -inf: NaN, as the softmax gives; by -1e30: uniform.
  const std::string masked = R"({"inputs": [{"name": "q", "dtype": "f32", "shape": ["t", 4]}, {"name": "k", "dtype": "f32", "shape": ["t", 4]},
      {"name": "v", "dtype": "f32", "shape": ["t", 3]}, {"name": "keep", "dtype": "bool", "shape": ["t", "t"]}, {"name": "fill", "dtype": "f32", "shape": []}],
    "nodes": [{"op": "transpose", "in": ["k"], "out": "kt", "attrs": {"dim0": 0, "dim1": 1}}, {"op": "matmul", "in": ["q", "kt"], "out": "s"},
              {"op": "where", "in": ["keep", "s", "fill"], "out": "m"}, {"op": "softmax", "in": ["m"], "out": "p", "attrs": {"dim": -1}},
              {"op": "matmul", "in": ["p", "v"], "out": "y"}], "outputs": ["y"]})";
  for (int64_t t : {3, 300}) {
    std::vector<double> keep(static_cast<size_t>(t * t));
    for (int64_t r = 0; r < t; ++r) {
      for (int64_t c = 0; c < t; ++c) keep[static_cast<size_t>(r * t + c)] = r % 2 == 0 ? 0.0 : double(c >= r || c > 260);  // even rows: all masked
    }
    expect_agrees(masked, {random(DType::kF32, {t, 4}), random(DType::kF32, {t, 4}), random(DType::kF32, {t, 3}), from_values(DType::kBool, {t, t}, keep),
                           from_values(DType::kF32, {}, std::vector<double>{-std::numeric_limits<double>::infinity()})},
                  "rows masked whole t=" + std::to_string(t), 1e-4, 1e-5);
  }

  // A gathered bias whose index is out of range: the reference's error.
  const std::string gathered = R"({"inputs": [{"name": "q", "dtype": "f32", "shape": ["t", 4]}, {"name": "k", "dtype": "f32", "shape": ["t", 4]},
      {"name": "v", "dtype": "f32", "shape": ["t", 4]}, {"name": "table", "dtype": "f32", "shape": [5, 1]}, {"name": "ids", "dtype": "i64", "shape": ["t"]}],
    "nodes": [{"op": "transpose", "in": ["k"], "out": "kt", "attrs": {"dim0": 0, "dim1": 1}}, {"op": "matmul", "in": ["q", "kt"], "out": "s"},
              {"op": "embedding", "in": ["table", "ids"], "out": "e"}, {"op": "add", "in": ["s", "e"], "out": "b"},
              {"op": "softmax", "in": ["b"], "out": "p", "attrs": {"dim": -1}}, {"op": "matmul", "in": ["p", "v"], "out": "y"}], "outputs": ["y"]})";
  for (int64_t bad : {2, 5}) {
    std::vector<double> ids(70, 1.0);
    ids[65] = static_cast<double>(bad);
    expect_agrees(gathered, {random(DType::kF32, {70, 4}), random(DType::kF32, {70, 4}), random(DType::kF32, {70, 4}), random(DType::kF32, {5, 1}),
                             from_values(DType::kI64, {70}, ids)},
                  "gathered bias id " + std::to_string(bad), 1e-4, 1e-5);
  }

  // Not attention: the probabilities kept, the scores read twice, softmax
  // over the queries.
  auto variant = [](const std::string& softmax_dim, const std::string& outputs, const std::string& extra) {
    return R"({"inputs": [{"name": "q", "dtype": "f32", "shape": ["t", 4]}, {"name": "k", "dtype": "f32", "shape": ["t", 4]}, {"name": "v", "dtype": "f32", "shape": ["t", 4]}],
      "nodes": [{"op": "transpose", "in": ["k"], "out": "kt", "attrs": {"dim0": 0, "dim1": 1}}, {"op": "matmul", "in": ["q", "kt"], "out": "s"},
                {"op": "softmax", "in": ["s"], "out": "p", "attrs": {"dim": )" + softmax_dim + R"(}}, {"op": "matmul", "in": ["p", "v"], "out": "y"})" + extra +
           R"(], "outputs": )" + outputs + "}";
  };
  const std::vector<std::string> plain = {variant("-1", R"(["y", "p"])", ""), variant("-1", R"(["y", "z"])", R"(, {"op": "exp", "in": ["s"], "out": "z"})"),
                                          variant("0", R"(["y"])", "")};
  for (const std::string& g : plain) {
    expect_agrees(g, {random(DType::kF32, {70, 4}), random(DType::kF32, {70, 4}), random(DType::kF32, {70, 4})}, "not fused", 1e-4, 1e-5);
    EXPECT_EQ(lowered(g, {{70, 4}, {70, 4}, {70, 4}}).find("attention into"), std::string::npos) << g;
  }
}

TEST(Llvm, LayoutOpsFoldIntoIndexing) {
  std::mt19937 rng(8);
  auto g = [](const std::string& node, const std::string& shape) {
    return R"({"inputs": [{"name": "x", "dtype": "f32", "shape": )" + shape + R"(}],
      "nodes": [{"op": "exp", "in": ["x"], "out": "e"}, )" + node + R"(, {"op": "mul", "in": ["v", 2], "out": "y"}],
      "outputs": ["y", "v"]})";
  };
  const std::vector<std::string> nodes = {
      R"({"op": "reshape", "in": ["e", 6, -1], "out": "v"})",
      R"({"op": "reshape", "in": ["e", 2, 3, 4, 5], "out": "v"})",
      R"({"op": "permute", "in": ["e"], "out": "v", "attrs": {"perm": [2, 0, 1]}})",
      R"({"op": "transpose", "in": ["e"], "out": "v", "attrs": {"dim0": 0, "dim1": 2}})",
      R"({"op": "expand", "in": ["e", 3, -1, -1, -1], "out": "v"})",
      R"({"op": "slice", "in": ["e", 1, 20, 3], "out": "v", "attrs": {"dim": 2}})",
      R"({"op": "slice", "in": ["e", -2, 100, 1], "out": "v", "attrs": {"dim": 1}})",
      R"({"op": "concat", "in": ["e", "x", "e"], "out": "v", "attrs": {"dim": 1}})",
      R"({"op": "unsqueeze", "in": ["e"], "out": "v", "attrs": {"dim": 1}})",
      R"({"op": "squeeze", "in": ["e"], "out": "v", "attrs": {"dims": [0]}})",
  };
  for (const std::string& n : nodes) {
    bool squeeze = n.find("squeeze\"") != std::string::npos && n.find("unsqueeze") == std::string::npos;
    std::vector<int64_t> s = squeeze ? std::vector<int64_t>{1, 4, 5} : std::vector<int64_t>{6, 4, 5};
    expect_agrees(g(n, shape_str(s)), {random_tensor(DType::kF32, s, rng)}, n);
    Tensor strided = random_tensor(DType::kF32, {s[2], s[1], s[0]}, rng).view(s, {1, s[0], s[0] * s[1]});
    expect_agrees(g(n, shape_str(s)), {strided}, n + " strided");
  }
  // Squeezing a dim that a slice cut to one: its size is an expression the
  // env proves 1, not the literal 1 (numpy's x[-1] from Python).
  expect_agrees(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n", 4, 5]}],
      "nodes": [{"op": "exp", "in": ["x"], "out": "e"},
                {"op": "slice", "in": ["e", -1, 4611686018427387904, 1], "out": "s", "attrs": {"dim": 0}},
                {"op": "slice", "in": ["s", 0, 4611686018427387904, 2], "out": "t", "attrs": {"dim": 1}},
                {"op": "squeeze", "in": ["t"], "out": "y", "attrs": {"dims": [0]}}], "outputs": ["y"]})",
                {random_tensor(DType::kF32, {3, 4, 5}, rng)}, "squeeze of a slice to one");
  // Reshape of a reshape of a computed value: the index unravels.
  expect_agrees(R"({"inputs": [{"name": "x", "dtype": "i64", "shape": [4, 6]}],
      "nodes": [{"op": "neg", "in": ["x"], "out": "n"}, {"op": "reshape", "in": ["n", 3, 8], "out": "r"},
                {"op": "transpose", "in": ["r"], "out": "t", "attrs": {"dim0": 0, "dim1": 1}},
                {"op": "reshape", "in": ["t", 2, 12], "out": "y"}], "outputs": ["y"]})",
                {random_tensor(DType::kI64, {4, 6}, rng)}, "reshape chain");
}

TEST(Llvm, GathersAndTheirRangeErrors) {
  std::mt19937 rng(9);
  for (const char* it : {"i32", "i64"}) {
    Tensor table = random_tensor(DType::kF32, {10, 7}, rng);
    Tensor ids = from_values(dt(it), {2, 3}, std::vector<int>{0, 9, 3, 3, 1, 0});
    expect_agrees(one_op("embedding", {{"f32", {10, 7}}, {it, {2, 3}}}), {table, ids}, std::string("embedding ") + it);
    Tensor idx = from_values(dt(it), {4}, std::vector<int>{2, 0, 2, 6});
    expect_agrees(one_op("index_select", {{"f32", {10, 7}}, {it, {4}}}, "", R"({"dim": 1})"), {table, idx}, std::string("index_select ") + it);
    Tensor bad = from_values(dt(it), {2}, std::vector<int>{1, 10});
    expect_agrees(one_op("index_select", {{"f32", {10, 7}}, {it, {2}}}, "", R"({"dim": 0})"), {table, bad}, "index out of range");
    Tensor neg = from_values(dt(it), {1, 1}, std::vector<int>{-1});
    expect_agrees(one_op("embedding", {{"f32", {10, 7}}, {it, {1, 1}}}), {table, neg}, "negative id");
  }
  // A gather folded into a reduction's step (an embedding feeding a
  // layer_norm, as a BERT embedding does): its bounds check still defers.
  const std::string gather_norm = R"({"inputs": [{"name": "t", "dtype": "f32", "shape": [10, 7]}, {"name": "i", "dtype": "i64", "shape": [2, 3]}],
      "nodes": [{"op": "embedding", "in": ["t", "i"], "out": "e"}, {"op": "layer_norm", "in": ["e"], "out": "y"}], "outputs": ["y"]})";
  Tensor table = random_tensor(DType::kF32, {10, 7}, rng);
  expect_agrees(gather_norm, {table, from_values(DType::kI64, {2, 3}, std::vector<int>{0, 9, 3, 3, 1, 0})}, "gather into a norm");
  expect_agrees(gather_norm, {table, from_values(DType::kI64, {2, 3}, std::vector<int>{0, 90, 3, 3, 1, 0})}, "gather into a norm, out of range");
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
  Tensor x = from_values(DType::kF32, {2, 3}, std::vector<double>{0, 1, 0, 2, 0, 3});
  Outcome r = run_with(one_op("nonzero", {{"f32", {2, 3}}}), {x}, R"({"compile": {"backend": "llvm"}})");
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(r.fallbacks, 1u);
  ASSERT_EQ(r.log.size(), 1u);
  EXPECT_NE(r.log[0].find("data-dependent shapes stay on the reference interpreter"), std::string::npos) << r.log[0];
  EXPECT_EQ(testing::values_of<int64_t>(r.out[0]), (std::vector<int64_t>{0, 1, 1, 0, 1, 2}));
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
  env.set_contiguous({true});
  auto specialized = ir::specialize(g, env.specialization());
  ASSERT_TRUE(specialized.is_ok()) << specialized.status().to_string();
  auto cycles = [&](int n) {
    for (int i = 0; i < n; ++i) {
      auto k = (*backend)->compile(*specialized);
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

}  // namespace
}  // namespace shapejit

#endif  // SHAPEJIT_HAVE_LLVM
