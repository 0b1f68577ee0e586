// compile.async's stand-in, chosen by cost: a call whose work the
// reference interpreter would take far longer over than the compile waits
// for a compile, the quick one (LLVM at O0) where the backend has it; a
// small one runs at once on the reference. Outputs are checked against the
// reference interpreter either way.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <random>

#include "jit/runtime/stand_in.h"
#include "tests/support/test_util.h"

namespace shapejit {
namespace {

using testing::ArgPack;

const char* kProduct = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["m", "k"]}, {"name": "w", "dtype": "f32", "shape": ["k", "n"]}],
  "nodes": [{"op": "matmul", "in": ["x", "w"], "out": "p"}, {"op": "tanh", "in": ["p"], "out": "y"}], "outputs": ["y"]})";

// compile.async under a kernel per shape (always_static, JAX's policy).
const char* kAsyncKernelPerShape = R"({"compile": {"backend": "llvm", "async": true}, "cache": {"disk": {"max_mb": 0}},
  "policy": {"mode": "always_static", "cache_size_limit": 100}, "log": {"recompiles": false}})";

bool have_llvm() { return runtime::Jit::create(R"({"compile": {"backend": "llvm"}})").is_ok(); }

ArgPack product_args(int64_t m, int64_t k, int64_t n) {
  std::mt19937 rng(static_cast<unsigned>(m * 31 + k * 7 + n));
  ArgPack p;
  p.add(testing::random_tensor(ir::DType::kF32, {m, k}, rng));
  p.add(testing::random_tensor(ir::DType::kF32, {k, n}, rng));
  return p;
}

::testing::AssertionResult agrees(runtime::Jit& jit, const ir::Graph& g, ArgPack& p) {
  std::vector<ir::Tensor> out;
  Status s = jit.call_graph("product", g, {}, p.args(), out);
  if (!s.is_ok()) return ::testing::AssertionFailure() << s.to_string();
  auto want = testing::run_graph(kProduct, p.tensors, R"({"compile": {"backend": "reference"}, "cache": {"disk": {"max_mb": 0}}})");
  if (!want.is_ok()) return ::testing::AssertionFailure() << want.status().to_string();
  return testing::tensors_close(out[0], (*want)[0], 1e-4, 1e-4);
}

TEST(StandIn, ALargeCallWaitsForItsCompileAndASmallOneRunsAtOnce) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  auto jit = testing::make_jit(kAsyncKernelPerShape);
  const ir::Graph g = testing::graph_from(kProduct);
  // 384^3 multiply-adds: the reference's naive product takes far longer
  // than compiling two nodes.
  ArgPack big = product_args(384, 384, 384);
  EXPECT_TRUE(agrees(*jit, g, big));
  auto s = jit->stats_json();
  EXPECT_EQ(s["stand_in_calls"], 1u);
  EXPECT_EQ(s["stand_in_waits"], 1u) << "the large call waited for a compile";
  EXPECT_EQ(s["stand_in_quick"], 1u) << "the quick one: it ran on a kernel compiled at O0";
  // 2 x 3 x 2: the reference is done long before a compile.
  ArgPack small = product_args(2, 3, 2);
  EXPECT_TRUE(agrees(*jit, g, small));
  s = jit->stats_json();
  EXPECT_EQ(s["stand_in_waits"], 1u) << "the small call did not wait";
  EXPECT_EQ(s["stand_in_quick"], 1u) << "a new shape is a new entry, whose quick kernel no call has made";
  jit->wait_compiles();
  EXPECT_EQ(jit->stats_json()["backend_compiles"], 2u) << "each kernel compiled once, waited for or not; quick ones are not counted";
}

// The calls of an entry after the one that made its quick kernel run on it
// until the entry's own kernel lands; a backend at O0 has no quicker tier,
// and a call that waits gets the kernel itself.
TEST(StandIn, TheCallsAfterAQuickCompileRunOnItAndAtO0TheyWaitForTheKernel) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  // Under a dynamic policy one entry takes every shape below.
  auto jit = testing::make_jit(R"({"compile": {"backend": "llvm", "async": true}, "cache": {"disk": {"max_mb": 0}},
    "log": {"recompiles": false}})");
  const ir::Graph g = testing::graph_from(kProduct);
  ArgPack big = product_args(384, 384, 384);
  EXPECT_TRUE(agrees(*jit, g, big));
  for (int64_t m : {7, 300, 2}) {
    ArgPack p = product_args(m, 384, 384);
    EXPECT_TRUE(agrees(*jit, g, p)) << m;
  }
  auto s = jit->stats_json();
  // The 300-row call, which would have waited, ran on the quick kernel (or
  // on the entry's own, had it landed by then).
  EXPECT_EQ(s["stand_in_waits"], 1u) << s.dump();
  EXPECT_GE(s["stand_in_quick"], 1u) << s.dump();
  jit->wait_compiles();
  EXPECT_EQ(jit->stats_json()["backend_compiles"], 1u);

  auto o0 = testing::make_jit(R"({"compile": {"backend": "llvm", "async": true, "opt_level": 0}, "cache": {"disk": {"max_mb": 0}},
    "log": {"recompiles": false}})");
  EXPECT_TRUE(agrees(*o0, g, big));
  s = o0->stats_json();
  EXPECT_EQ(s["stand_in_waits"], 1u);
  EXPECT_EQ(s["stand_in_quick"], 0u);
  o0->wait_compiles();
}

// always_static (JAX's policy) compiles a kernel per shape; after a
// graph's first compile, the calls of each new shape run on the trace's
// dynamic kernel while their own compiles, and none waits, however large.
TEST(StandIn, UnderAKernelPerShapeNewShapesRunOnTheTracesDynamicKernel) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  auto jit = testing::make_jit(kAsyncKernelPerShape);
  const ir::Graph g = testing::graph_from(kProduct);
  ArgPack first = product_args(5, 7, 3);
  EXPECT_TRUE(agrees(*jit, g, first));
  jit->wait_compiles();
  auto s = jit->stats_json();
  EXPECT_EQ(s["backend_compiles"], 1u);
  EXPECT_EQ(s["stand_in_kernels"], 1u) << "the dynamic kernel compiled behind the entry's own";
  EXPECT_EQ(s["stand_in_dynamic"], 0u);
  // New shapes, 384^3 among them, which waited above: each misses, and runs
  // on the dynamic kernel.
  const std::vector<std::array<int64_t, 3>> shapes = {{384, 384, 384}, {2, 9, 2}, {17, 5, 33}};
  for (const auto& [m, k, n] : shapes) {
    ArgPack p = product_args(m, k, n);
    EXPECT_TRUE(agrees(*jit, g, p)) << m << " x " << k << " x " << n;
  }
  s = jit->stats_json();
  EXPECT_EQ(s["stand_in_calls"], 1u + shapes.size());
  EXPECT_EQ(s["stand_in_dynamic"], shapes.size());
  EXPECT_EQ(s["stand_in_waits"], 0u);
  jit->wait_compiles();
  s = jit->stats_json();
  EXPECT_EQ(s["backend_compiles"], 1u + shapes.size()) << "each shape still got its own kernel";
  EXPECT_EQ(s["stand_in_kernels"], 1u);
  // A dim of 1 is another trace (the tracer specializes 0 and 1), whose own
  // dynamic kernel is not compiled yet.
  ArgPack one = product_args(1, 7, 3);
  EXPECT_TRUE(agrees(*jit, g, one));
  EXPECT_EQ(jit->stats_json()["stand_in_dynamic"], shapes.size());
  jit->wait_compiles();
  EXPECT_EQ(jit->stats_json()["stand_in_kernels"], 2u);
  // A transposed weight is another layout, which the dynamic kernel was not
  // compiled for: that call does not run on it, and is right.
  ArgPack t = product_args(6, 5, 4);
  t.tensors[1] = testing::random_tensor(ir::DType::kF32, {4, 5}, *std::make_unique<std::mt19937>(3)).view({5, 4}, {1, 5});
  ASSERT_FALSE(t.tensors[1].is_contiguous());
  EXPECT_TRUE(agrees(*jit, g, t));
  EXPECT_EQ(jit->stats_json()["stand_in_dynamic"], shapes.size());
  jit->wait_compiles();
}

// The default policy's first entry is the trace's dynamic kernel already:
// no second kernel is compiled for stand-ins.
TEST(StandIn, ADynamicEntryCompilesNoSecondKernel) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  auto jit = testing::make_jit(R"({"compile": {"backend": "llvm", "async": true}, "cache": {"disk": {"max_mb": 0}},
    "log": {"recompiles": false}})");
  const ir::Graph g = testing::graph_from(kProduct);
  for (int64_t m : {5, 9}) {
    ArgPack p = product_args(m, 7, 3);
    EXPECT_TRUE(agrees(*jit, g, p));
    jit->wait_compiles();
  }
  auto s = jit->stats_json();
  EXPECT_EQ(s["backend_compiles"], 1u);
  EXPECT_EQ(s["stand_in_kernels"], 0u);
  EXPECT_EQ(s["stand_in_dynamic"], 0u);
}

TEST(StandIn, TheWorkOfACallFollowsItsShapes) {
  const ir::Graph g = testing::graph_from(kProduct);
  auto sg = ir::specialize(g, sym::Specialization{});
  ASSERT_TRUE(sg.is_ok()) << sg.status().to_string();
  runtime::StandInCosts costs;
  runtime::StandInCounts counts;
  auto pending = std::make_shared<runtime::PendingKernel>([](bool) { return std::shared_ptr<backends::Kernel>(); });
  struct Nothing final : backends::Kernel {
    Status run(const backends::RunContext&, std::span<const DLTensor* const>, std::span<int64_t>, std::span<ir::Tensor>) override {
      return Status::ok();
    }
    size_t code_bytes() const override { return 0; }
  };
  runtime::StandInKernel k(std::make_unique<Nothing>(), **sg, pending, costs, counts);
  // Symbols m, k, n: the product's m * n * k and tanh's m * n.
  const std::vector<int64_t> symbols = {8, 16, 4};
  EXPECT_EQ(k.work(symbols), 8.0 * 4 * 16 + 8 * 4);
  EXPECT_EQ(k.work(std::vector<int64_t>{0, 16, 4}), 0.0);
  // The reference's rate is learned from what it is seen to take.
  const double before = costs.reference_ms(1e6);
  for (int i = 0; i < 20; ++i) costs.saw_reference(1e6, 50.0);
  EXPECT_GT(costs.reference_ms(1e6), before);
  EXPECT_NEAR(costs.reference_ms(1e6), 50.0, 1.0);
}

}  // namespace
}  // namespace shapejit
