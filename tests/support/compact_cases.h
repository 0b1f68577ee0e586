// The data-dependent shapes' cases (nonzero, masked_select and the steps
// after them), shared by the backends' tests (tests/backends/*/..._compact
// tests), which check each against the reference interpreter: masks with
// nothing set, everything set, and between; sizes 0 and 1 and several
// blocks of CompactStep::kBlock; every dtype; broadcast masks; the count
// read by pointwise steps, reductions (mean divides by it; max over none is
// NumPy's error), a gather by the indices found and a matmul of the rows
// gathered (a mixture of experts' routing).
#pragma once

#include <random>
#include <string>
#include <vector>

#include "tests/support/test_util.h"

namespace shapejit::testing {

struct CompactCase {
  std::string graph, what;
  std::vector<ir::Tensor> inputs;
  double rtol = 1e-5, atol = 1e-6;
};

// A tensor whose elements are nonzero with probability `density`: random
// values of `dt` away from 0, else 0.
inline ir::Tensor with_density(ir::DType dt, std::vector<int64_t> shape, double density, std::mt19937& rng) {
  ir::Tensor t = random_tensor(dt, std::move(shape), rng, 1, 3);
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

inline std::string compact_graph(const std::string& inputs, const std::string& nodes, const std::string& outputs) {
  return R"({"inputs": [)" + inputs + R"(], "nodes": [)" + nodes + R"(], "outputs": [)" + outputs + "]}";
}

// An input of `shape` whose dims are each a symbol of its own.
inline std::string compact_input(const char* name, const char* dtype, const std::vector<int64_t>& shape) {
  std::string dims;
  for (size_t d = 0; d < shape.size(); ++d) dims += (d ? ", \"" : "\"") + std::string(name) + std::to_string(d) + "\"";
  return R"({"name": ")" + std::string(name) + R"(", "dtype": ")" + dtype + R"(", "shape": [)" + dims + "]}";
}

inline std::string shape_text(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

inline const std::vector<const char*> kEveryDtype = {"f32", "f64", "i32", "i64", "bool"};

// nonzero of each dtype, size and density.
inline std::vector<CompactCase> nonzero_cases(const std::vector<std::vector<int64_t>>& shapes, const std::vector<const char*>& dtypes,
                                              std::mt19937& rng) {
  std::vector<CompactCase> cases;
  for (const char* t : dtypes) {
    for (const auto& shape : shapes) {
      for (double density : {0.0, 0.05, 0.5, 1.0}) {
        cases.push_back({compact_graph(compact_input("x", t, shape), R"({"op": "nonzero", "in": ["x"], "out": "y"})", R"("y")"),
                         std::string("nonzero ") + t + " " + shape_text(shape) + " density " + std::to_string(density),
                         {with_density(*ir::parse_dtype(t), shape, density, rng)}});
      }
    }
  }
  return cases;
}

// masked_select with the mask or the values broadcast.
inline std::vector<CompactCase> masked_select_cases(bool large, const std::vector<const char*>& dtypes, std::mt19937& rng) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {{{5, 7}, {5, 7}}, {{5, 7}, {7}}, {{5, 7}, {5, 1}}, {{7}, {5, 7}},
                                                                               {{1, 7}, {5, 1}}, {{0, 7}, {7}}, {{1}, {1}}};
  if (large) shapes.push_back({{3, 50000}, {50000}});
  std::vector<CompactCase> cases;
  for (const auto& [xs, ms] : shapes) {
    for (const char* t : dtypes) {
      for (double density : {0.0, 0.3, 1.0}) {
        cases.push_back({compact_graph(compact_input("x", t, xs) + ", " + compact_input("m", "bool", ms),
                                       R"({"op": "masked_select", "in": ["x", "m"], "out": "y"})", R"("y")"),
                         std::string("masked_select ") + t + " " + shape_text(xs) + " by " + shape_text(ms) + " density " + std::to_string(density),
                         {random_tensor(*ir::parse_dtype(t), xs, rng), with_density(ir::DType::kBool, ms, density, rng)}});
      }
    }
  }
  return cases;
}

// Steps that read the count, over `sizes` of x and `tokens` of routing.
inline std::vector<CompactCase> after_the_count_cases(const std::vector<int64_t>& sizes, const std::vector<int64_t>& tokens, std::mt19937& rng) {
  std::vector<CompactCase> cases;
  const std::string select = R"({"op": "gt", "in": ["x", 0.0], "out": "m"}, {"op": "masked_select", "in": ["x", "m"], "out": "s"})";
  for (double density : {0.0, 0.5, 1.0}) {
    for (int64_t n : sizes) {
      const ir::Tensor x = with_density(ir::DType::kF32, {n}, density, rng);
      const std::string in = compact_input("x", "f32", {n}), d = " density " + std::to_string(density) + " n " + std::to_string(n);
      cases.push_back({compact_graph(in, select + R"(, {"op": "mul", "in": ["s", 2.0], "out": "a"}, {"op": "add", "in": ["a", 1.0], "out": "b"},
                                                     {"op": "sum", "in": ["b"], "out": "y"})",
                                     R"("y")"),
                       "(x[x > 0] * 2 + 1).sum()" + d, {x}, 1e-4, 1e-4});
      cases.push_back({compact_graph(in, select + R"(, {"op": "mean", "in": ["s"], "out": "y"}, {"op": "max", "in": ["s"], "out": "z"},
                                                     {"op": "exp", "in": ["s"], "out": "e"})",
                                     R"("y", "z", "e", "s")"),
                       "mean, max, exp of x[x > 0]" + d, {x}, 1e-4, 1e-5});
      cases.push_back({compact_graph(in, R"({"op": "gt", "in": ["x", 0.5], "out": "m"}, {"op": "nonzero", "in": ["m"], "out": "nz"},
                                           {"op": "reshape", "in": ["nz", -1], "out": "i"}, {"op": "add", "in": ["i", 1], "out": "y"})",
                                     R"("y")"),
                       "np.nonzero(x > 0.5)[0] + 1" + d, {x}});
    }
  }
  for (int64_t t : tokens) {
    cases.push_back({compact_graph(compact_input("r", "i64", {t}) + ", " + compact_input("h", "f32", {t, 16}) +
                                       R"(, {"name": "w", "dtype": "f32", "shape": [16, 24]})",
                                   R"({"op": "eq", "in": ["r", 2], "out": "m"}, {"op": "nonzero", "in": ["m"], "out": "nz"},
                                      {"op": "reshape", "in": ["nz", -1], "out": "i"}, {"op": "index_select", "in": ["h", "i"], "out": "g", "attrs": {"dim": 0}},
                                      {"op": "matmul", "in": ["g", "w"], "out": "o"}, {"op": "relu", "in": ["o"], "out": "y"})",
                                   R"("y", "i")"),
                     "the tokens routed to expert 2, times its weights: " + std::to_string(t) + " tokens",
                     {random_tensor(ir::DType::kI64, {t}, rng, 0, 1), random_tensor(ir::DType::kF32, {t, 16}, rng), random_tensor(ir::DType::kF32, {16, 24}, rng)},
                     1e-4, 1e-5});
  }
  return cases;
}

// Selections only summed (the CPU runs them as one masked pass over the
// mask's domain, no compaction): sum, prod, mean (divided by the mask's
// count), of a chain on the selection, with a broadcast mask, keepdim, ints,
// an empty selection (mean NaN, sum 0, prod 1), and two reductions of it.
inline std::vector<CompactCase> summed_selection_cases(const std::vector<int64_t>& sizes, std::mt19937& rng) {
  std::vector<CompactCase> cases;
  for (int64_t n : sizes) {
    for (double density : {0.0, 0.4, 1.0}) {
      const std::string d = " n " + std::to_string(n) + " density " + std::to_string(density);
      const ir::Tensor x = with_density(ir::DType::kF32, {n}, density, rng);
      const std::string in = compact_input("x", "f32", {n});
      const std::string sel = R"({"op": "ne", "in": ["x", 0.0], "out": "m"}, {"op": "masked_select", "in": ["x", "m"], "out": "s"}, )";
      cases.push_back({compact_graph(in, sel + R"({"op": "mul", "in": ["s", "s"], "out": "q"}, {"op": "sum", "in": ["q"], "out": "y"},
                                                  {"op": "mean", "in": ["s"], "out": "z", "attrs": {"keepdim": true}},
                                                  {"op": "exp", "in": ["q"], "out": "e"}, {"op": "prod", "in": ["e"], "out": "p", "attrs": {"axes": [0]}})",
                                     R"("y", "z", "p")"),
                       "sum(s * s), mean(s) keepdim, prod(exp(s * s)) of x[x != 0]" + d, {x}, 1e-4, 1e-5});
      const ir::Tensor xi = with_density(ir::DType::kI32, {3, n}, density, rng), mi = with_density(ir::DType::kBool, {n}, 0.5, rng);
      cases.push_back({compact_graph(compact_input("x", "i32", {3, n}) + ", " + compact_input("m", "bool", {n}),
                                     R"({"op": "masked_select", "in": ["x", "m"], "out": "s"}, {"op": "add", "in": ["s", 3], "out": "a"},
                                        {"op": "sum", "in": ["a"], "out": "y"})",
                                     R"("y")"),
                       "sum(x[:, m] + 3) of ints, the mask broadcast" + d, {xi, mi}});
    }
  }
  return cases;
}

}  // namespace shapejit::testing
