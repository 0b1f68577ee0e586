// Random graphs of 1-20 ops on random shapes (0, 1 and broadcasts included),
// run by the default backend (LLVM where built) compiled fully dynamic,
// fully dynamic without the 0/1 rule (tvm.json: a dim of 1 is a symbol until
// a broadcast decides it), fully static, fully dynamic with the inputs
// frozen (backends/frozen.h), and fully dynamic at O0 (the quick tier that
// compile.async's stand-ins run on, CompileRequest::quick), and by the
// reference interpreter: all six must agree.
// The interpreter also checks every node's result against its inferred
// shape, so shape inference and kernels are tested against each other.
//
// Tolerance: float sums are reassociated to vectorize, and float matmuls
// go through BLAS in the operand's precision, so floats agree within
// rtol 1e-4, atol 1e-5; integers and bools agree exactly.
#include <gtest/gtest.h>

#include "tests/support/random_graph.h"
#include "tests/support/test_util.h"

namespace shapejit {
namespace {

TEST(RandomGraphs, DynamicAndStaticSpecializationsAgree) {
  std::mt19937 rng(20261122);
  int ops = 0;
  for (int trial = 0; trial < 300; ++trial) {
    testing::RandomGraph g = testing::random_graph(rng, 20);
    ops += g.num_ops;
    auto dyn = testing::run_graph(g.json, g.inputs, R"({"policy": {"mode": "always_dynamic"}})");
    auto any = testing::run_graph(g.json, g.inputs, R"({"policy": {"mode": "always_dynamic", "specialize_zero_one": false}})");
    auto sta = testing::run_graph(g.json, g.inputs, R"({"policy": {"mode": "always_static"}})");
    auto frozen = testing::run_graph(g.json, g.inputs, R"({"policy": {"mode": "always_dynamic"}})", true);
    auto o0 = testing::run_graph(g.json, g.inputs, R"({"compile": {"opt_level": 0}, "policy": {"mode": "always_dynamic"}})");
    auto ref = testing::run_graph(g.json, g.inputs, R"({"compile": {"backend": "reference"}})");
    ASSERT_TRUE(dyn.is_ok()) << dyn.status().to_string() << "\n" << g.json;
    ASSERT_TRUE(any.is_ok()) << any.status().to_string() << "\n" << g.json;
    ASSERT_TRUE(sta.is_ok()) << sta.status().to_string() << "\n" << g.json;
    ASSERT_TRUE(ref.is_ok()) << ref.status().to_string() << "\n" << g.json;
    ASSERT_TRUE(frozen.is_ok()) << frozen.status().to_string() << "\n" << g.json;
    ASSERT_TRUE(o0.is_ok()) << o0.status().to_string() << "\n" << g.json;
    ASSERT_EQ(o0->size(), sta->size());
    ASSERT_EQ(dyn->size(), sta->size());
    ASSERT_EQ(any->size(), sta->size());
    ASSERT_EQ(frozen->size(), sta->size());
    for (size_t i = 0; i < dyn->size(); ++i) {
      ASSERT_TRUE(testing::tensors_close((*dyn)[i], (*sta)[i], 1e-4, 1e-5)) << "dynamic vs static, output " << i << "\n" << g.json;
      ASSERT_TRUE(testing::tensors_close((*dyn)[i], (*ref)[i], 1e-4, 1e-5)) << "dynamic vs reference, output " << i << "\n" << g.json;
      ASSERT_TRUE(testing::tensors_close((*any)[i], (*ref)[i], 1e-4, 1e-5)) << "no 0/1 rule vs reference, output " << i << "\n" << g.json;
      ASSERT_TRUE(testing::tensors_close((*frozen)[i], (*ref)[i], 1e-4, 1e-5)) << "inputs frozen vs reference, output " << i << "\n" << g.json;
      ASSERT_TRUE(testing::tensors_close((*o0)[i], (*ref)[i], 1e-4, 1e-5)) << "O0 vs reference, output " << i << "\n" << g.json;
    }
  }
  EXPECT_GT(ops, 1500);  // the generator really builds graphs of many ops
}

}  // namespace
}  // namespace shapejit
