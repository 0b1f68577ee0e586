// The LLVM backend's data-dependent shapes (nonzero, masked_select, and the
// steps after them): each agrees with the reference interpreter, compiled
// fully dynamic, fully static and with frozen inputs, on every density of
// mask (none set, all set, between), sizes 0 and 1, several blocks, every
// dtype, broadcast masks and strided inputs; with no fallback.
#include <cmath>
#include <limits>

#include "tests/support/llvm_agreement.h"

namespace shapejit::llvm_test {
namespace {

// A tensor whose elements are nonzero with probability `density`: random
// values of `dt` away from 0, else 0.
Tensor with_density(DType dt, std::vector<int64_t> shape, double density, std::mt19937& rng) {
  Tensor t = random_tensor(dt, std::move(shape), rng, 1, 3);
  std::uniform_real_distribution<double> u(0, 1);
  ir::visit_dtype(dt, [&]<typename T>() {
    T* p = t.ptr<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>) p[i] = u(rng) < density;
      else if (u(rng) >= density) p[i] = T(0);
    }
  });
  return t;
}

std::string graph(const std::string& inputs, const std::string& nodes, const std::string& outputs) {
  return R"({"inputs": [)" + inputs + R"(], "nodes": [)" + nodes + R"(], "outputs": [)" + outputs + "]}";
}

std::string input(const char* name, const char* dtype, const std::vector<int64_t>& shape) {
  std::string dims;
  for (size_t d = 0; d < shape.size(); ++d) dims += (d ? ", \"" : "\"") + std::string(name) + std::to_string(d) + "\"";
  return R"({"name": ")" + std::string(name) + R"(", "dtype": ")" + dtype + R"(", "shape": [)" + dims + "]}";
}

TEST(LlvmCompact, NonzeroAgreesOnEveryDensityDtypeAndSize) {
  std::mt19937 rng(35);
  const std::vector<std::vector<int64_t>> shapes = {{0}, {1}, {7}, {3, 0, 2}, {1, 1}, {5, 7}, {2, 3, 4}, {70001}, {3, 40000}};
  for (const char* t : kAll) {
    for (const auto& shape : shapes) {
      for (double density : {0.0, 0.05, 0.5, 1.0}) {
        const Tensor x = with_density(dt(t), shape, density, rng);
        const std::string what = std::string("nonzero ") + t + " " + shape_str(shape) + " density " + std::to_string(density);
        expect_agrees(graph(input("x", t, shape), R"({"op": "nonzero", "in": ["x"], "out": "y"})", R"("y")"), {x}, what);
      }
    }
  }
}

TEST(LlvmCompact, FloatMasksSetNaNAndNotNegativeZero) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const char* t : kFloats) {
    const Tensor x = from_values(dt(t), {6}, std::vector<double>{0.0, -0.0, nan, 1e-300, -2, 0});
    expect_agrees(graph(input("x", t, {6}), R"({"op": "nonzero", "in": ["x"], "out": "y"})", R"("y")"), {x}, std::string("NaN and -0 ") + t);
  }
}

TEST(LlvmCompact, AComputedMaskIsFusedAndAStridedInputReadInPlace) {
  std::mt19937 rng(36);
  const Tensor base = random_tensor(DType::kF32, {40, 30}, rng);
  const Tensor transposed = base.view({30, 40}, {1, 30});
  const Tensor every_other = base.view({40, 15}, {30, 2});
  for (const Tensor& x : {transposed, every_other, transposed.contiguous()}) {
    const std::vector<int64_t> shape(x.shape().begin(), x.shape().end());
    const std::string in = input("x", "f32", shape);
    expect_agrees(graph(in, R"({"op": "gt", "in": ["x", 0.5], "out": "m"}, {"op": "nonzero", "in": ["m"], "out": "y"})", R"("y")"), {x},
                  "nonzero(x > 0.5) " + shape_str(shape));
    expect_agrees(graph(in, R"({"op": "nonzero", "in": ["x"], "out": "y"})", R"("y")"), {x}, "nonzero(x) strided " + shape_str(shape));
    expect_agrees(graph(in, R"({"op": "gt", "in": ["x", 0.0], "out": "m"}, {"op": "masked_select", "in": ["x", "m"], "out": "y"})", R"("y")"),
                  {x}, "x[x > 0] strided " + shape_str(shape));
  }
}

TEST(LlvmCompact, MaskedSelectBroadcastsEitherOperand) {
  std::mt19937 rng(37);
  struct Case {
    std::vector<int64_t> x, mask;
  };
  for (const Case& c : std::vector<Case>{{{5, 7}, {5, 7}}, {{5, 7}, {7}}, {{5, 7}, {5, 1}}, {{7}, {5, 7}}, {{1, 7}, {5, 1}}, {{0, 7}, {7}},
                                         {{1}, {1}}, {{3, 50000}, {50000}}}) {
    for (const char* t : kAll) {
      for (double density : {0.0, 0.3, 1.0}) {
        const Tensor x = random_tensor(dt(t), c.x, rng), m = with_density(DType::kBool, c.mask, density, rng);
        expect_agrees(graph(input("x", t, c.x) + ", " + input("m", "bool", c.mask), R"({"op": "masked_select", "in": ["x", "m"], "out": "y"})",
                            R"("y")"),
                      {x, m}, std::string("masked_select ") + t + " " + shape_str(c.x) + " by " + shape_str(c.mask) + " density " + std::to_string(density));
      }
    }
  }
}

// Steps that read the count: pointwise, reductions (mean divides by it,
// max over none is NumPy's error), a slice of nonzero's columns, a gather by
// the indices it found, and a matmul of the rows gathered (a mixture of
// experts' routing).
TEST(LlvmCompact, StepsAfterTheCountRunCompiledOnItsValue) {
  std::mt19937 rng(38);
  const std::string select = R"({"op": "gt", "in": ["x", 0.0], "out": "m"}, {"op": "masked_select", "in": ["x", "m"], "out": "s"})";
  for (double density : {0.0, 0.5, 1.0}) {
    for (int64_t n : {1, 9, 100000}) {
      const Tensor x = with_density(DType::kF32, {n}, density, rng);
      const std::string in = input("x", "f32", {n}), d = " density " + std::to_string(density) + " n " + std::to_string(n);
      expect_agrees(graph(in, select + R"(, {"op": "mul", "in": ["s", 2.0], "out": "a"}, {"op": "add", "in": ["a", 1.0], "out": "b"},
                                          {"op": "sum", "in": ["b"], "out": "y"})",
                          R"("y")"),
                    {x}, "(x[x > 0] * 2 + 1).sum()" + d, 1e-4, 1e-4);
      expect_agrees(graph(in, select + R"(, {"op": "mean", "in": ["s"], "out": "y"}, {"op": "max", "in": ["s"], "out": "z"},
                                          {"op": "exp", "in": ["s"], "out": "e"})",
                          R"("y", "z", "e", "s")"),
                    {x}, "mean, max, exp of x[x > 0]" + d, 1e-4, 1e-5);
      expect_agrees(graph(in, R"({"op": "gt", "in": ["x", 0.5], "out": "m"}, {"op": "nonzero", "in": ["m"], "out": "nz"},
                                {"op": "reshape", "in": ["nz", -1], "out": "i"}, {"op": "add", "in": ["i", 1], "out": "y"})",
                          R"("y")"),
                    {x}, "np.nonzero(x > 0.5)[0] + 1" + d);
    }
  }
  for (int64_t tokens : {0, 1, 13, 300}) {
    const Tensor route = random_tensor(DType::kI64, {tokens}, rng, 0, 1), h = random_tensor(DType::kF32, {tokens, 16}, rng),
                 w = random_tensor(DType::kF32, {16, 24}, rng);
    expect_agrees(graph(input("r", "i64", {tokens}) + ", " + input("h", "f32", {tokens, 16}) + R"(, {"name": "w", "dtype": "f32", "shape": [16, 24]})",
                        R"({"op": "eq", "in": ["r", 2], "out": "m"}, {"op": "nonzero", "in": ["m"], "out": "nz"},
                           {"op": "reshape", "in": ["nz", -1], "out": "i"}, {"op": "index_select", "in": ["h", "i"], "out": "g", "attrs": {"dim": 0}},
                           {"op": "matmul", "in": ["g", "w"], "out": "o"}, {"op": "relu", "in": ["o"], "out": "y"})",
                        R"("y", "i")"),
                  {route, h, w}, "the tokens routed to expert 2, times its weights: " + std::to_string(tokens) + " tokens", 1e-4, 1e-5);
  }
}

// The count is never specialized: one entry serves every count, under
// always_static too (it is no input's size), and the call's symbols carry
// it out to the runtime.
TEST(LlvmCompact, OneCompileServesEveryCount) {
  for (const char* mode : {"always_dynamic", "always_static", "start_dynamic"}) {
    auto jit = runtime::Jit::create(std::string(R"({"compile": {"backend": "llvm"}, "policy": {"mode": ")") + mode + "\"}}");
    ASSERT_TRUE(jit.is_ok()) << jit.status().to_string();
    const ir::Graph g = testing::graph_from(graph(input("x", "i32", {8}), R"({"op": "gt", "in": ["x", 0], "out": "m"},
        {"op": "masked_select", "in": ["x", "m"], "out": "s"}, {"op": "mul", "in": ["s", 3], "out": "y"})",
                                                  R"("y")"));
    for (int set = 0; set <= 8; ++set) {
      std::vector<int32_t> v(8, -1);
      for (int i = 0; i < set; ++i) v[static_cast<size_t>(i * 3 % 8)] = i + 1;
      testing::ArgPack p;
      p.add(from_values(DType::kI32, {8}, v));
      std::vector<Tensor> out;
      ASSERT_TRUE((*jit)->call_graph("t", g, {}, p.args(), out).is_ok());
      std::vector<int32_t> want;
      for (int32_t x : v) {
        if (x > 0) want.push_back(3 * x);
      }
      EXPECT_EQ(testing::values_of<int32_t>(out[0]), want) << mode << ", " << set << " set";
    }
    const nlohmann::json site = (*jit)->stats_json()["sites"]["t"];
    EXPECT_EQ(site["compiles"], 1u) << mode << ": " << site.dump();
    EXPECT_EQ(site["fallbacks"], 0u) << mode;
  }
}

}  // namespace
}  // namespace shapejit::llvm_test
