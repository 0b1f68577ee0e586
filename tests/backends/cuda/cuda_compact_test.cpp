// The CUDA backend's data-dependent shapes: the cases of
// tests/support/compact_cases.h (nonzero, masked_select, the steps after
// the count), and a strided input, against the reference interpreter, with
// no fallback: a count step per compaction, the counts' prefix on the host,
// a fill kernel. On a GPU where the machine has one, else on the mock driver.
#include <gtest/gtest.h>

#ifdef SHAPEJIT_HAVE_CUDA

#include "tests/support/compact_cases.h"
#include "tests/support/cuda_agreement.h"

namespace shapejit {
namespace {

using namespace cuda_test;

void expect_cases_agree(const std::vector<testing::CompactCase>& cases) {
  for (const testing::CompactCase& c : cases) expect_agrees(c.graph, c.inputs, c.what, c.rtol, c.atol);
}

TEST(CudaCompact, NonzeroAgreesOnEveryDensityDtypeAndSize) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(35);
  // Every dtype on small shapes; several blocks in two (each static shape
  // is a module the mock compiles for the host).
  expect_cases_agree(testing::nonzero_cases({{0}, {1}, {3, 0, 2}, {5, 7}, {2, 3, 4}}, testing::kEveryDtype, rng));
  expect_cases_agree(testing::nonzero_cases({{40001}}, {"f32", "bool"}, rng));
}

TEST(CudaCompact, MaskedSelectBroadcastsEitherOperand) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(37);
  expect_cases_agree(testing::masked_select_cases(false, {"f32", "i64", "bool"}, rng));
}

TEST(CudaCompact, StepsAfterTheCountRunCompiledOnItsValue) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(38);
  expect_cases_agree(testing::after_the_count_cases({1, 9, 20000}, {0, 13, 300}, rng));
}

// The CPU's masked reductions are compactions here.
TEST(CudaCompact, ASelectionOnlySummedAgrees) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(40);
  expect_cases_agree(testing::summed_selection_cases({0, 7, 20000}, rng));
}

// x is passed as the transpose of a buffer: the count step reads it by its
// strides and stores the values dense for the fill.
TEST(CudaCompact, AStridedInputIsReadByItsStrides) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(39);
  std::vector<int64_t> shape = {37, 29}, strides = {1, 37};
  auto view = [&](const Tensor& t, size_t) {
    DLTensor d = t.dl();
    d.shape = shape.data();
    d.strides = strides.data();
    return d;
  };
  const Tensor xt = testing::random_tensor(DType::kF32, {29, 37}, rng);
  const Tensor x = xt.view({37, 29}, {1, 37});  // what the reference sees
  const std::string in = testing::compact_input("x", "f32", {37, 29});
  for (const std::string& nodes : {std::string(R"({"op": "nonzero", "in": ["x"], "out": "y"})"),
                                   std::string(R"({"op": "gt", "in": ["x", 0.0], "out": "m"}, {"op": "masked_select", "in": ["x", "m"], "out": "y"})")}) {
    const std::string g = testing::compact_graph(in, nodes, R"("y")");
    auto ref = testing::run_graph(g, {x}, R"({"compile": {"backend": "reference"}})");
    ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
    for (const char* mode : {"always_dynamic", "always_static"}) {
      Outcome got = run_cuda(g, {xt}, mode, view);
      ASSERT_TRUE(got.status.is_ok()) << got.status.to_string();
      EXPECT_EQ(got.fallbacks, 0u) << (got.log.empty() ? "" : got.log[0]);
      EXPECT_TRUE(testing::tensors_close(got.out[0], (*ref)[0])) << nodes << " " << mode;
    }
  }
}

}  // namespace
}  // namespace shapejit

#endif  // SHAPEJIT_HAVE_CUDA
