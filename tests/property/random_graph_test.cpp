// Random graphs of 1-20 ops on random shapes (0, 1 and broadcasts included):
// compiled fully dynamic and fully static, they must give identical results.
// The interpreter also checks every node's result against its inferred
// shape, so shape inference and kernels are tested against each other.
#include <gtest/gtest.h>

#include "tests/support/random_graph.h"
#include "tests/test_util.h"

namespace shapejit {
namespace {

TEST(RandomGraphs, DynamicAndStaticSpecializationsAgree) {
  std::mt19937 rng(20261122);
  int ops = 0;
  for (int trial = 0; trial < 300; ++trial) {
    testing::RandomGraph g = testing::random_graph(rng, 20);
    ops += g.num_ops;
    auto dyn = testing::run_graph(g.json, g.inputs, R"({"policy": {"mode": "always_dynamic"}})");
    auto sta = testing::run_graph(g.json, g.inputs, R"({"policy": {"mode": "always_static"}})");
    ASSERT_TRUE(dyn.is_ok()) << dyn.status().to_string() << "\n" << g.json;
    ASSERT_TRUE(sta.is_ok()) << sta.status().to_string() << "\n" << g.json;
    ASSERT_EQ(dyn->size(), sta->size());
    for (size_t i = 0; i < dyn->size(); ++i) ASSERT_TRUE(testing::tensors_close((*dyn)[i], (*sta)[i], 0, 0)) << g.json;
  }
  EXPECT_GT(ops, 1500);  // the generator really builds graphs of many ops
}

}  // namespace
}  // namespace shapejit
