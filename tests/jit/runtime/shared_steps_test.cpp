// Equal fused steps compile once (backends/llvm/steps.h): within a graph,
// across a Jit's sites and entries, and across processes through the disk
// tier; a compile slow enough to notice logs a line when it starts and
// when it ends. Every result is checked against the reference interpreter.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

namespace shapejit {
namespace {

using testing::ArgPack;

bool have_llvm() { return runtime::Jit::create(R"({"compile": {"backend": "llvm"}})").is_ok(); }

// `layers` times: x = x + gelu(layer_norm-free mix of x and w_i), a residual
// stream whose layers are equal but for their weights.
std::string layered(int layers) {
  std::string inputs = R"({"name": "x", "dtype": "f32", "shape": ["t", "d"]})", nodes;
  std::string x = "x";
  for (int i = 0; i < layers; ++i) {
    const std::string n = std::to_string(i), w = "w" + n;
    inputs += R"(, {"name": ")" + w + R"(", "dtype": "f32", "shape": ["d"]})";
    nodes += std::string(nodes.empty() ? "" : ", ") + R"({"op": "mul", "in": [")" + x + R"(", ")" + w + R"("], "out": "m)" + n + R"("},
      {"op": "gelu", "in": ["m)" + n + R"("], "out": "g)" + n + R"("}, {"op": "sum", "in": ["g)" + n + R"("], "out": "s)" + n +
             R"(", "attrs": {"axes": [-1], "keepdim": true}}, {"op": "sub", "in": ["g)" + n + R"(", "s)" + n + R"("], "out": "c)" + n + R"("},
      {"op": "add", "in": [")" + x + R"(", "c)" + n + R"("], "out": "x)" + n + R"("})";
    x = "x" + n;
  }
  return R"({"inputs": [)" + inputs + R"(], "nodes": [)" + nodes + R"(], "outputs": [")" + x + R"("]})";
}

ArgPack args(int layers, int64_t t, int64_t d, unsigned seed) {
  std::mt19937 rng(seed);
  ArgPack p;
  p.add(testing::random_tensor(ir::DType::kF32, {t, d}, rng));
  for (int i = 0; i < layers; ++i) p.add(testing::random_tensor(ir::DType::kF32, {d}, rng, -0.5, 0.5));
  return p;
}

::testing::AssertionResult agrees(runtime::Jit& jit, const std::string& site, const std::string& graph, ArgPack& p) {
  std::vector<ir::Tensor> out;
  const Status s = jit.call_graph(site, testing::graph_from(graph), {}, p.args(), out);
  if (!s.is_ok()) return ::testing::AssertionFailure() << s.to_string();
  auto want = testing::run_graph(graph, p.tensors, R"({"compile": {"backend": "reference"}, "cache": {"disk": {"max_mb": 0}}})");
  if (!want.is_ok()) return ::testing::AssertionFailure() << want.status().to_string();
  return testing::tensors_close(out[0], (*want)[0], 1e-4, 1e-4);
}

const char* kMemoryOnly = R"({"compile": {"backend": "llvm"}, "cache": {"disk": {"max_mb": 0}}, "log": {"recompiles": false}})";

TEST(SharedSteps, EqualLayersOfOneGraphCompileOnce) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  auto jit = testing::make_jit(kMemoryOnly);
  ArgPack p = args(8, 5, 33, 1);
  ASSERT_TRUE(agrees(*jit, "f", layered(8), p));
  const auto s = jit->stats_json();
  EXPECT_GE(s["steps"]["steps"].get<int>(), 8);
  // The first layer reads x from its input, the later ones from the
  // previous layer's buffer: both the same step, whatever the count.
  EXPECT_LE(s["steps"]["distinct"].get<int>(), 3) << s.dump();
  EXPECT_EQ(s["steps"]["compiled"], s["steps"]["distinct"]);
  EXPECT_EQ(s["cache"]["steps"]["compiles"], s["steps"]["distinct"]);
}

TEST(SharedSteps, TheLayerCountDoesNotChangeWhatCompiles) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  auto small = testing::make_jit(kMemoryOnly), large = testing::make_jit(kMemoryOnly);
  ArgPack a = args(2, 4, 16, 2), b = args(12, 4, 16, 3);
  ASSERT_TRUE(agrees(*small, "f", layered(2), a));
  ASSERT_TRUE(agrees(*large, "f", layered(12), b));
  EXPECT_EQ(small->stats_json()["steps"]["distinct"], large->stats_json()["steps"]["distinct"]);
}

TEST(SharedSteps, AnotherSiteAndAnotherEntryReuseTheSteps) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  auto jit = testing::make_jit(kMemoryOnly);
  ArgPack p = args(3, 5, 33, 4), q = args(5, 2, 33, 5);
  ASSERT_TRUE(agrees(*jit, "three", layered(3), p));
  const uint64_t compiled = jit->stats_json()["cache"]["steps"]["compiles"];
  ASSERT_TRUE(agrees(*jit, "five", layered(5), q));  // another graph, another site: the same steps
  const auto s = jit->stats_json();
  EXPECT_EQ(s["backend_compiles"], 2u);
  EXPECT_EQ(s["cache"]["steps"]["compiles"], compiled);
  EXPECT_EQ(s["sites"]["five"]["steps"]["compiled"], 0);
}

TEST(SharedSteps, ThreadsCompilingTheSameStepsCompileEachOnce) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  auto jit = testing::make_jit(kMemoryOnly);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      ArgPack p = args(2 + i, 3, 17, static_cast<unsigned>(10 + i));
      ok[i] = agrees(*jit, "site" + std::to_string(i), layered(2 + i), p) ? 1 : 0;
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ok[i], 1) << "thread " << i;
  const auto s = jit->stats_json();
  EXPECT_EQ(s["cache"]["steps"]["compiles"], s["sites"]["site0"]["steps"]["distinct"]);
}

TEST(SharedSteps, ASecondProcessFindsTheStepsOnDisk) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  testing::TempDir dir;
  const std::string config = R"({"compile": {"backend": "llvm"}, "cache": {"disk": {"path": ")" + dir.path() + R"("}}, "log": {"recompiles": false}})";
  {
    auto first = testing::make_jit(config);
    ArgPack p = args(4, 5, 9, 6);
    ASSERT_TRUE(agrees(*first, "f", layered(4), p));
  }
  auto second = testing::make_jit(config);
  ArgPack p = args(6, 5, 9, 7);  // another graph: its kernel compiles, its steps come from disk
  ASSERT_TRUE(agrees(*second, "f", layered(6), p));
  const auto s = second->stats_json();
  EXPECT_EQ(s["backend_compiles"], 1u);
  EXPECT_EQ(s["cache"]["steps"]["compiles"], 0u);
  EXPECT_EQ(s["cache"]["steps"]["disk_hits"], s["steps"]["distinct"]);
}

TEST(SharedSteps, ASlowCompileSaysWhenItStartsAndEnds) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  std::vector<std::string> log;
  auto jit = testing::make_jit(R"({"compile": {"backend": "llvm"}, "cache": {"disk": {"max_mb": 0}}, "log": {"slow_compile_ms": 0}})", &log);
  ArgPack p = args(3, 4, 8, 8);
  ASSERT_TRUE(agrees(*jit, "model", layered(3), p));
  ASSERT_EQ(log.size(), 2u);
  EXPECT_NE(log[0].find("site model: compiling a large graph: 15 nodes"), std::string::npos) << log[0];
  EXPECT_NE(log[0].find("distinct"), std::string::npos) << log[0];
  EXPECT_NE(log[1].find("site model: compiled the large graph in"), std::string::npos) << log[1];
  // Its steps are in memory now: another entry has nothing slow to say.
  log.clear();
  ArgPack q = args(3, 4, 8, 9);
  ASSERT_TRUE(agrees(*jit, "other", layered(3), q));
  EXPECT_TRUE(log.empty()) << log[0];
}

TEST(SharedSteps, AnOrdinaryCompileSaysNothing) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  std::vector<std::string> log;
  auto jit = testing::make_jit(kMemoryOnly, &log);
  ArgPack p = args(3, 4, 8, 10);
  ASSERT_TRUE(agrees(*jit, "model", layered(3), p));
  EXPECT_TRUE(log.empty()) << log[0];
}

}  // namespace
}  // namespace shapejit
