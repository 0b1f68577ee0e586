// What the LLVM backend's tests (tests/backends/llvm_*_test.cpp) share: a
// graph run through a Jit on one backend, and the check that the LLVM
// backend, compiled fully dynamic and fully static, and fully dynamic with
// its inputs frozen (backends/frozen.h: weights packed once, kept across
// calls), agrees with the reference interpreter.
//
// Tolerance: integers and bools agree exactly; floats within rtol 1e-5,
// atol 1e-6 (float sums reassociate to vectorize; float matmuls run in BLAS
// in the operand's precision, so they get rtol 1e-4). Errors must be the
// reference's, word for word: the kernel asks the interpreter for them.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/test_util.h"

namespace shapejit::llvm_test {

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

inline Outcome run_with(const std::string& graph, const std::vector<Tensor>& inputs, const std::string& config, bool freeze = false) {
  Outcome r;
  ir::Graph g = testing::graph_from(graph);
  auto jit = runtime::Jit::create(config);
  EXPECT_TRUE(jit.is_ok()) << jit.status().to_string();
  (*jit)->set_log([&r](const std::string& line) { r.log.push_back(line); });
  testing::ArgPack p;
  for (const Tensor& t : inputs) p.add(t);
  std::optional<testing::FrozenInputs> frozen;
  if (freeze) frozen.emplace(p.args());
  r.status = (*jit)->call_graph("t", g, {}, p.args(), r.out);
  r.fallbacks = (*jit)->stats_json()["sites"]["t"]["fallbacks"].get<uint64_t>();
  return r;
}

inline void expect_agrees(const std::string& graph, const std::vector<Tensor>& inputs, const std::string& what, double rtol = 1e-5,
                   double atol = 1e-6) {
  Outcome ref = run_with(graph, inputs, R"({"compile": {"backend": "reference"}})");
  for (const char* mode : {"always_dynamic", "always_static", "always_dynamic, inputs frozen"}) {
    const std::string_view m(mode);
    const bool freeze = m.ends_with("frozen");
    Outcome got = run_with(graph, inputs, std::string(R"({"compile": {"backend": "llvm"}, "policy": {"mode": ")") + std::string(m.substr(0, m.find(','))) + "\"}}",
                           freeze);
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

inline std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

inline constexpr const char* kFloats[] = {"f32", "f64"};
inline constexpr const char* kNumeric[] = {"f32", "f64", "i32", "i64"};
inline constexpr const char* kAll[] = {"f32", "f64", "i32", "i64", "bool"};

inline DType dt(const char* name) { return *ir::parse_dtype(name); }

}  // namespace shapejit::llvm_test
