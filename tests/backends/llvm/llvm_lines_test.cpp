// The LLVM backend's line routines (backends/cpu/lines.cpp) against the
// reference: scans and sorts along each dim. Its scatters are in
// llvm_index_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/support/llvm_agreement.h"

#ifdef SHAPEJIT_HAVE_LLVM

namespace shapejit {
namespace {

using namespace llvm_test;

// cumsum, cumprod, cummax and cummin: along each dim, every dtype, with 0
// and 1, a strided input and a fused producer (computed into the scan's
// dense operand); a NaN carried on by the running maximum and minimum.
TEST(Llvm, ScansAlongEveryDim) {
  std::mt19937 rng(26);
  for (const char* op : {"cumsum", "cumprod", "cummax", "cummin"}) {
    for (const char* t : {"f32", "f64", "i32", "i64"}) {
      auto input = [&](const std::vector<int64_t>& shape) {
        return std::string(op) == "cumprod" && ir::is_float(dt(t)) ? random_tensor(dt(t), shape, rng, 0.8, 1.2) : random_tensor(dt(t), shape, rng);
      };
      for (int d : {0, 1, 2, -1}) {
        expect_agrees(one_op(op, {{t, {3, 5, 33}}}, "", R"({"dim": )" + std::to_string(d) + "}"), {input({3, 5, 33})},
                      std::string(op) + " " + t + " dim " + std::to_string(d), 1e-5, 1e-5);
      }
      for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{0, 4}, {4, 0}, {1, 1}, {100000}}) {
        expect_agrees(one_op(op, {{t, shape}}, "", R"({"dim": 0})"), {input(shape)}, std::string(op) + " " + t + " " + shape_str(shape), 1e-5, 1e-5);
      }
    }
  }
  for (const char* op : {"cummax", "cummin"}) {
    expect_agrees(one_op(op, {{"f64", {2, 4}}}, "", R"({"dim": 1})"),
                  {from_values(DType::kF64, {2, 4}, std::vector<double>{1, NAN, 3, -1, -0.5, 2, NAN, 5})}, std::string(op) + " through a NaN");
  }
  Tensor strided = random_tensor(DType::kF32, {60, 8}, rng).view({8, 60}, {1, 8});
  expect_agrees(one_op("cumsum", {{"f32", {8, 60}}}, "", R"({"dim": 1})"), {strided}, "cumsum of a transposed view", 1e-5, 1e-5);
  expect_agrees(R"({"inputs": [{"name": "x", "dtype": "f64", "shape": ["n", "m"]}],
    "nodes": [{"op": "mul", "in": ["x", 2.0], "out": "d"}, {"op": "cumsum", "in": ["d"], "out": "y", "attrs": {"dim": 1}},
              {"op": "exp", "in": ["y"], "out": "z"}], "outputs": ["z"]})",
                {random_tensor(DType::kF64, {5, 9}, rng)}, "cumsum between pointwise ops");
}

// sort and argsort: along each dim, every dtype (NaNs and ties among the
// floats), with 0 and 1, long lines across threads, a strided input and a
// fused producer.
TEST(Llvm, SortsAlongEveryDim) {
  std::mt19937 rng(27);
  auto with_ties = [&](DType t, const std::vector<int64_t>& shape) {
    Tensor x = random_tensor(t, shape, rng);
    if (ir::is_float(t)) {  // a few NaNs, and values repeated
      ir::visit_dtype(t, [&]<typename T>() {
        if constexpr (std::is_floating_point_v<T>) {
          T* p = x.ptr<T>();
          for (int64_t k = 0; k < x.numel(); ++k) {
            if (k % 7 == 3) p[k] = std::numeric_limits<T>::quiet_NaN();
            else if (k % 5 == 1) p[k] = T(0.25);
          }
        }
      });
    }
    return x;
  };
  for (const char* op : {"sort", "argsort"}) {
    for (const char* t : {"f32", "f64", "i32", "i64", "bool"}) {
      for (int d : {0, 1, 2, -1}) {
        expect_agrees(one_op(op, {{t, {3, 5, 33}}}, "", R"({"dim": )" + std::to_string(d) + "}"), {with_ties(dt(t), {3, 5, 33})},
                      std::string(op) + " " + t + " dim " + std::to_string(d), 0, 0);
      }
      for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{0, 4}, {4, 0}, {1, 1}, {100000}, {300, 700}}) {
        expect_agrees(one_op(op, {{t, shape}}, "", R"({"dim": -1})"), {with_ties(dt(t), shape)}, std::string(op) + " " + t + " " + shape_str(shape),
                      0, 0);
      }
    }
  }
  for (const char* op : {"cummax", "cummin"}) {
    expect_agrees(one_op(op, {{"f64", {2, 4}}}, "", R"({"dim": 1})"),
                  {from_values(DType::kF64, {2, 4}, std::vector<double>{1, NAN, 3, -1, -0.5, 2, NAN, 5})}, std::string(op) + " through a NaN");
  }
  Tensor strided = random_tensor(DType::kF32, {60, 8}, rng).view({8, 60}, {1, 8});
  expect_agrees(one_op("argsort", {{"f32", {8, 60}}}, "", R"({"dim": 1})"), {strided}, "argsort of a transposed view", 0, 0);
  expect_agrees(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n", "m"]}],
    "nodes": [{"op": "mul", "in": ["x", -2.0], "out": "d"}, {"op": "sort", "in": ["d"], "out": "y", "attrs": {"dim": 0}},
              {"op": "exp", "in": ["y"], "out": "z"}], "outputs": ["z"]})",
                {random_tensor(DType::kF32, {9, 5}, rng)}, "sort between pointwise ops");
}

}  // namespace
}  // namespace shapejit

#endif  // SHAPEJIT_HAVE_LLVM
