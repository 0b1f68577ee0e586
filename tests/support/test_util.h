// Helpers for tests: host tensors as DLTensor arguments, random fills, and
// comparisons against the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

#include "backends/frozen.h"
#include "core/ir/graph_json.h"
#include "core/ir/tensor.h"
#include "jit/runtime/jit.h"

// Built with AddressSanitizer (gcc says so with a macro, clang with a feature).
#if defined(__SANITIZE_ADDRESS__)
#define SHAPEJIT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHAPEJIT_TEST_ASAN 1
#endif
#endif
#ifndef SHAPEJIT_TEST_ASAN
#define SHAPEJIT_TEST_ASAN 0
#endif

namespace shapejit::testing {

// Owns tensors and exposes them as the DLTensor* span a call takes.
struct ArgPack {
  std::vector<ir::Tensor> tensors;
  std::vector<DLTensor> dl;
  std::vector<const DLTensor*> ptrs;

  void add(ir::Tensor t) { tensors.push_back(std::move(t)); }
  runtime::Args args() {
    dl.clear();
    ptrs.clear();
    for (const ir::Tensor& t : tensors) dl.push_back(t.dl());
    for (const DLTensor& d : dl) ptrs.push_back(&d);
    return runtime::Args(ptrs.data(), ptrs.size());
  }
};

// Freezes a call's inputs with elements (backends/frozen.h) while it lives:
// kernels then run the paths that keep what they derive from them. An
// input that overlaps one frozen before it (a view of the same buffer) is
// refused by the registry and left as it is, as a view of a frozen weight
// would be.
class FrozenInputs {
 public:
  explicit FrozenInputs(runtime::Args args) {
    for (const DLTensor* t : args) {
      if (!std::all_of(t->shape, t->shape + t->ndim, [](int64_t d) { return d > 0; })) continue;
      const Status s = backends::FrozenMemory::process().freeze({&t, 1});
      if (s.is_ok()) tensors_.push_back(t);
      else EXPECT_NE(s.message().find("overlaps frozen memory"), std::string::npos) << s.to_string();
    }
  }
  ~FrozenInputs() {
    const Status s = backends::FrozenMemory::process().thaw(tensors_);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  FrozenInputs(const FrozenInputs&) = delete;
  FrozenInputs& operator=(const FrozenInputs&) = delete;

 private:
  std::vector<const DLTensor*> tensors_;
};

inline ir::Tensor random_tensor(ir::DType dt, std::vector<int64_t> shape, std::mt19937& rng, double lo = -2, double hi = 2) {
  ir::Tensor t = ir::Tensor::empty(dt, std::move(shape));
  std::uniform_real_distribution<double> u(lo, hi);
  ir::visit_dtype(dt, [&]<typename T>() {
    T* p = t.ptr<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>) p[i] = u(rng) > 0;
      else if constexpr (std::is_integral_v<T>) p[i] = static_cast<T>(std::floor(u(rng) * 4));
      else p[i] = static_cast<T>(u(rng));
    }
  });
  return t;
}

inline ir::Tensor zeros(ir::DType dt, std::vector<int64_t> shape) { return ir::Tensor::empty(dt, std::move(shape)); }

template <typename T>
ir::Tensor from_values(ir::DType dt, std::vector<int64_t> shape, const std::vector<T>& values) {
  ir::Tensor t = ir::Tensor::empty(dt, std::move(shape));
  ir::visit_dtype(dt, [&]<typename U>() {
    for (size_t i = 0; i < values.size(); ++i) t.ptr<U>()[i] = static_cast<U>(values[i]);
  });
  return t;
}

template <typename T>
std::vector<T> values_of(const ir::Tensor& t) {
  ir::Tensor c = t.contiguous();
  std::vector<T> out;
  ir::visit_dtype(c.dtype(), [&]<typename U>() {
    for (int64_t i = 0; i < c.numel(); ++i) out.push_back(static_cast<T>(c.ptr<U>()[i]));
  });
  return out;
}

// Elementwise equality, NaN equal to NaN, floats within rtol/atol.
inline ::testing::AssertionResult tensors_close(const ir::Tensor& a, const ir::Tensor& b, double rtol = 1e-5, double atol = 1e-6) {
  if (a.dtype() != b.dtype()) return ::testing::AssertionFailure() << "dtypes differ: " << ir::dtype_name(a.dtype()) << " vs " << ir::dtype_name(b.dtype());
  if (a.shape() != b.shape()) return ::testing::AssertionFailure() << "shapes differ";
  std::vector<double> x = values_of<double>(a), y = values_of<double>(b);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    if (std::isinf(x[i]) || std::isinf(y[i])) {
      if (x[i] == y[i]) continue;
    } else if (std::abs(x[i] - y[i]) <= atol + rtol * std::abs(y[i])) {
      continue;
    }
    return ::testing::AssertionFailure() << "element " << i << ": " << x[i] << " vs " << y[i];
  }
  return ::testing::AssertionSuccess();
}

inline ir::Graph graph_from(const std::string& json) {
  auto g = ir::parse_graph(json);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return std::move(g).value();
}

inline std::unique_ptr<runtime::Jit> make_jit(const std::string& config, std::vector<std::string>* log = nullptr) {
  auto jit = runtime::Jit::create(config);
  EXPECT_TRUE(jit.is_ok()) << jit.status().to_string();
  std::unique_ptr<runtime::Jit> j = std::move(jit).value();
  // The sink is called from the compiling threads too (steps compile in
  // parallel, and each rejected record logs): one at a time here.
  if (log) {
    auto mu = std::make_shared<std::mutex>();
    j->set_log([log, mu](const std::string& line) {
      std::lock_guard<std::mutex> lock(*mu);
      log->push_back(line);
    });
  }
  else j->set_log([](const std::string&) {});
  return j;
}

}  // namespace shapejit::testing

namespace shapejit::testing {

// Runs a graph (JSON) on `inputs` through a fresh Jit with `config`.
// With `freeze`, the inputs are frozen for the call (FrozenInputs).
inline Expected<std::vector<ir::Tensor>> run_graph(const std::string& graph_json, std::vector<ir::Tensor> inputs,
                                                   const std::string& config = "{}", bool freeze = false) {
  ir::Graph g = SJ_TRY(ir::parse_graph(graph_json));
  std::unique_ptr<runtime::Jit> jit = SJ_TRY(runtime::Jit::create(config));
  jit->set_log([](const std::string&) {});
  ArgPack p;
  for (auto& t : inputs) p.add(std::move(t));
  std::vector<ir::Tensor> out;
  std::optional<FrozenInputs> frozen;
  if (freeze) frozen.emplace(p.args());
  SJ_TRY(jit->call_graph("test", g, {}, p.args(), out));
  return out;
}

// A one-node graph over inputs named a, b, c... with the given dtypes and shapes.
inline std::string one_op(const std::string& op, const std::vector<std::pair<std::string, std::vector<int64_t>>>& inputs,
                          const std::string& extra_in = "", const std::string& attrs = "") {
  std::string ins, names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string shape;
    for (size_t d = 0; d < inputs[i].second.size(); ++d) shape += (d ? ", " : "") + std::to_string(inputs[i].second[d]);
    std::string name(1, static_cast<char>('a' + i));
    ins += std::string(i ? ", " : "") + R"({"name": ")" + name + R"(", "dtype": ")" + inputs[i].first + R"(", "shape": [)" + shape + "]}";
    names += std::string(i ? ", " : "") + "\"" + name + "\"";
  }
  if (!extra_in.empty()) names += (names.empty() ? "" : ", ") + extra_in;
  std::string node = R"({"op": ")" + op + R"(", "in": [)" + names + R"(], "out": "y")" + (attrs.empty() ? "" : R"(, "attrs": )" + attrs) + "}";
  return R"({"inputs": [)" + ins + R"(], "nodes": [)" + node + R"(], "outputs": ["y"]})";
}

}  // namespace shapejit::testing
