#include "guards/guard_tree.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>

#include "tests/support/test_util.h"

// Counts allocations while armed, to check that lookups allocate nothing.
// The whole non-aligned new/delete family is replaced, so every pair matches
// (malloc and free); GCC cannot see that pairing through inlining.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
static std::atomic<bool> g_counting{false};
static std::atomic<long> g_allocations{0};
static void* counted_malloc(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  return std::malloc(n ? n : 1);
}
void* operator new(size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace shapejit::guards {
namespace {

using sym::Origin;

DLTensor meta(std::vector<int64_t>& shape, DLDataType dt = {kDLFloat, 32, 1}) {
  DLTensor t{};
  t.data = &shape;  // never read
  t.device = {kDLCPU, 0};
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = dt;
  t.shape = shape.data();
  return t;
}

Guard dim_eq(int input, int dim, int64_t v, Origin o = Origin::kPolicy) { return {Kind::kDimEq, o, input, dim, -1, -1, v}; }
Guard rank(int input, int64_t r) { return {Kind::kRank, Origin::kStructural, input, -1, -1, -1, r}; }
Guard dtype(int input, DLDataType t) { return {Kind::kDType, Origin::kStructural, input, -1, -1, -1, ir::dl_word(t)}; }

TEST(GuardSet, ExplainNamesInputDimExpectedActualAndOrigin) {
  std::vector<int64_t> s = {8, 96};
  DLTensor t = meta(s);
  const DLTensor* args[] = {&t};
  Guard g = dim_eq(0, 1, 128);
  GuardSet set(1, {rank(0, 2), g});
  EXPECT_FALSE(set.check(args));
  auto failures = set.explain(args);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].describe(), "input 0 dim 1 == 128 failed (got 96), origin: policy static");
}

TEST(GuardSet, ExplainSkipsDimGuardsOfAnInputWhoseRankFailed) {
  std::vector<int64_t> s = {8};
  DLTensor t = meta(s);
  const DLTensor* args[] = {&t};
  GuardSet set(1, {rank(0, 2), dim_eq(0, 1, 128)});  // dim 1 does not exist: must not be read
  auto failures = set.explain(args);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].guard->kind, Kind::kRank);
  EXPECT_EQ(failures[0].actual, "rank 1");
}

TEST(GuardSet, ExpressionGuardsEvaluateOverInputDims) {
  sym::ShapeEnv env(true);
  auto a = env.input_dim("a", 0, 0, 12).value();
  auto b = env.input_dim("b", 0, 1, 5).value();
  ASSERT_TRUE(env.decide(sym::mod(a * b, sym::Expr(4)), sym::Rel::kEq, Origin::kShapeCheck).value());
  ir::Graph g;
  g.inputs.push_back({"x", ir::DType::kF32, {ir::DimSpec::symbol("a"), ir::DimSpec::symbol("b")}});
  g.value_names = {"x"};
  GuardSet set = derive_guards(g, env);
  std::vector<int64_t> ok = {8, 3}, bad = {6, 3};
  DLTensor t1 = meta(ok), t2 = meta(bad);
  const DLTensor* a1[] = {&t1};
  const DLTensor* a2[] = {&t2};
  EXPECT_TRUE(set.check(a1));
  EXPECT_FALSE(set.check(a2));
  auto f = set.explain(a2);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].describe().find("% 4) == 0 failed (got 2), origin: shape check"), std::string::npos) << f[0].describe();
}

// Entries with random static dims; the tree must return what a linear scan
// over the same guard sets returns (the first matching entry, or a miss),
// given that the tree prefers the most specialized group.
// After every add: entries placed incrementally (common guards kept) and
// full rebuilds (a common guard dropped: early entries all pin input 0 dim
// 0 to 2, later ones may not) answer as a linear scan does.
TEST(GuardTree, PropertyAgreesWithALinearScan) {
  std::mt19937 rng(42);
  auto pinned = [](const GuardSet& gs) {
    int k = 0;
    for (const Guard& g : gs.guards()) k += g.kind == Kind::kDimEq;
    return k;
  };
  for (int trial = 0; trial < 50; ++trial) {
    GuardTree tree;
    std::vector<GuardSet> sets;
    const int n = std::uniform_int_distribution<int>(1, 40)(rng);
    const int shared_until = std::uniform_int_distribution<int>(0, n)(rng);
    for (int e = 0; e < n; ++e) {
      std::vector<Guard> gs = {rank(0, 2), rank(1, 2)};
      // Each entry pins a random subset of the 4 dims to small values.
      for (int input = 0; input < 2; ++input) {
        for (int dim = 0; dim < 2; ++dim) {
          if (input == 0 && dim == 0 && e < shared_until) gs.push_back(dim_eq(0, 0, 2));
          else if (std::bernoulli_distribution(0.6)(rng)) gs.push_back(dim_eq(input, dim, std::uniform_int_distribution<int>(1, 4)(rng)));
        }
      }
      sets.emplace_back(2, gs);
      tree.add(e, sets.back());
      for (int probe = 0; probe < 40; ++probe) {
        std::vector<int64_t> s0 = {std::uniform_int_distribution<int64_t>(1, 4)(rng), std::uniform_int_distribution<int64_t>(1, 4)(rng)};
        std::vector<int64_t> s1 = {std::uniform_int_distribution<int64_t>(1, 4)(rng), std::uniform_int_distribution<int64_t>(1, 4)(rng)};
        DLTensor t0 = meta(s0), t1 = meta(s1);
        const DLTensor* args[] = {&t0, &t1};
        int got = tree.lookup(args);
        if (got == GuardTree::kMiss) {
          for (const GuardSet& gs : sets) ASSERT_FALSE(gs.check(args));
        } else {
          ASSERT_TRUE(sets[got].check(args));
          // No matching entry pins more dims than the one returned.
          for (const GuardSet& gs : sets) {
            if (gs.check(args)) {
              ASSERT_LE(pinned(gs), pinned(sets[got]));
            }
          }
        }
      }
    }
  }
}

TEST(GuardTree, LookupAllocatesNothing) {
  GuardTree tree;
  for (int e = 0; e < 64; ++e) tree.add(e, GuardSet(1, {dtype(0, {kDLFloat, 32, 1}), rank(0, 3), dim_eq(0, 0, 2 + e)}));
  EXPECT_EQ(tree.num_groups(), 1u);
  std::vector<int64_t> s = {40, 4, 8};
  DLTensor t = meta(s);
  const DLTensor* args[] = {&t};
  std::vector<int64_t> s2 = {40, 4};
  DLTensor t2 = meta(s2);
  const DLTensor* args2[] = {&t2};
  g_allocations = 0;
  g_counting = true;
  int hit = tree.lookup(args);
  int miss_rank = tree.lookup(args2);
  g_counting = false;
  EXPECT_EQ(hit, 38);
  EXPECT_EQ(miss_rank, GuardTree::kMiss);
  EXPECT_EQ(g_allocations.load(), 0);
}

// The hit path's straight-line contiguity check (ranks up to 4) and the
// loop (higher ranks) say what ir::is_dense says, on edge shapes: dims of 1
// with any stride, tensors with no elements (dense whatever their strides,
// their other dims up to 2^63 - 1), and products past int64.
TEST(GuardTree, ContiguityAgreesWithIrOnEdgeShapes) {
  const int64_t big = INT64_MAX, half = int64_t{1} << 62;
  struct Case {
    std::vector<int64_t> shape, strides;
    bool dense;
  } cases[] = {
      {{5}, {1}, true},
      {{5}, {2}, false},
      {{1}, {7}, true},
      {{0}, {3}, true},
      {{3, 4}, {4, 1}, true},
      {{3, 4}, {1, 3}, false},
      {{1, 4}, {99, 1}, true},
      {{3, 0}, {1, 1}, true},  // PyTorch's strides for an empty tensor
      {{3, 0}, {0, 1}, true},  // NumPy's
      {{big, 0}, {5, 5}, true},
      {{0, big, big}, {1, 1, 1}, true},
      {{half, 7}, {7, 1}, true},
      {{7, half, 2}, {5, 2, 1}, false},  // the products run past int64
      {{2, 3, 4, 5}, {60, 20, 5, 1}, true},
      {{2, 3, 4, 5}, {60, 20, 1, 4}, false},
      {{2, 3, 0, big}, {-1, -1, -1, -1}, true},
      {{2, 1, 3, 1, 2}, {6, 0, 2, 0, 1}, true},
      {{2, 2, 3, 1, 2}, {6, 6, 2, 0, 1}, false},
      {{2, 2, 3, 0, big, big}, {1, 2, 3, 4, 5, 6}, true},
  };
  for (Case& c : cases) {
    DLTensor t = meta(c.shape);
    t.strides = c.strides.data();
    const DLTensor* args[] = {&t};
    const int r = static_cast<int>(c.shape.size());
    GuardSet set(1, {rank(0, r), {Kind::kContiguous, Origin::kStructural, 0, -1, -1, -1, 0}});
    GuardTree tree;
    tree.add(0, set);
    std::string what = "rank " + std::to_string(r) + ", dims";
    for (int64_t d : c.shape) what += " " + std::to_string(d);
    EXPECT_EQ(ir::is_dense(t.ndim, t.shape, t.strides), c.dense) << what;
    EXPECT_EQ(set.check(args), c.dense) << what;
    EXPECT_EQ(tree.lookup(args) == 0, c.dense) << what;
  }
}

// A weight passed transposed and its dense twin: one entry each, told apart
// by their layout guards, and a strided view (every other column) by
// neither; explain says which layout the call had.
TEST(GuardTree, LayoutGuardsTellATransposeFromItsDenseTwin) {
  const sym::Layout transposed = sym::Layout::permuted(std::vector<int>{1, 0});
  GuardTree tree;
  tree.add(0, GuardSet(1, {rank(0, 2), {Kind::kContiguous, Origin::kLayout, 0}}));
  const GuardSet permuted(1, {rank(0, 2), {Kind::kPermuted, Origin::kLayout, 0, -1, -1, -1, static_cast<int64_t>(transposed.word())}});
  tree.add(1, permuted);
  std::vector<int64_t> shape = {6, 4};
  std::vector<int64_t> dense = {4, 1}, transpose = {1, 6}, every_other = {8, 2};
  DLTensor t = meta(shape);
  const DLTensor* args[] = {&t};
  t.strides = dense.data();
  EXPECT_EQ(tree.lookup(args), 0);
  t.strides = transpose.data();
  EXPECT_EQ(tree.lookup(args), 1);
  t.strides = every_other.data();
  EXPECT_EQ(tree.lookup(args), GuardTree::kMiss);
  const std::vector<Failure> f = permuted.explain(args);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].describe(), "input 0 is contiguous in dim order (1, 0) failed (got strided), origin: layout");
}

TEST(GuardTree, EntriesWithDifferentRanksNeverReadMissingDims) {
  GuardTree tree;
  tree.add(0, GuardSet(1, {rank(0, 1), dim_eq(0, 0, 5)}));
  tree.add(1, GuardSet(1, {rank(0, 3), dim_eq(0, 2, 7)}));
  std::vector<int64_t> one = {5}, three = {1, 1, 7};
  DLTensor a = meta(one), b = meta(three);
  const DLTensor* args_a[] = {&a};
  const DLTensor* args_b[] = {&b};
  EXPECT_EQ(tree.lookup(args_a), 0);
  EXPECT_EQ(tree.lookup(args_b), 1);
}

}  // namespace
}  // namespace shapejit::guards
