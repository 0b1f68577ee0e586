// The LLVM backend's data-dependent shapes (nonzero, masked_select, and the
// steps after them; the cases of tests/support/compact_cases.h, and strided
// inputs read in place): each agrees with the reference interpreter,
// compiled fully dynamic, fully static and with frozen inputs, with no
// fallback.
#include <cmath>
#include <limits>

#include "tests/support/compact_cases.h"
#include "tests/support/llvm_agreement.h"

namespace shapejit::llvm_test {
namespace {

using testing::compact_graph;
using testing::compact_input;

void expect_cases_agree(const std::vector<testing::CompactCase>& cases) {
  for (const testing::CompactCase& c : cases) expect_agrees(c.graph, c.inputs, c.what, c.rtol, c.atol);
}

TEST(LlvmCompact, NonzeroAgreesOnEveryDensityDtypeAndSize) {
  std::mt19937 rng(35);
  expect_cases_agree(testing::nonzero_cases({{0}, {1}, {7}, {3, 0, 2}, {1, 1}, {5, 7}, {2, 3, 4}, {70001}, {3, 40000}}, testing::kEveryDtype, rng));
}

TEST(LlvmCompact, FloatMasksSetNaNAndNotNegativeZero) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const char* t : kFloats) {
    const Tensor x = from_values(dt(t), {6}, std::vector<double>{0.0, -0.0, nan, 1e-300, -2, 0});
    expect_agrees(compact_graph(compact_input("x", t, {6}), R"({"op": "nonzero", "in": ["x"], "out": "y"})", R"("y")"), {x},
                  std::string("NaN and -0 ") + t);
  }
}

TEST(LlvmCompact, AComputedMaskIsFusedAndAStridedInputReadInPlace) {
  std::mt19937 rng(36);
  const Tensor base = random_tensor(DType::kF32, {40, 30}, rng);
  const Tensor transposed = base.view({30, 40}, {1, 30});
  const Tensor every_other = base.view({40, 15}, {30, 2});
  for (const Tensor& x : {transposed, every_other, transposed.contiguous()}) {
    const std::vector<int64_t> shape(x.shape().begin(), x.shape().end());
    const std::string in = compact_input("x", "f32", shape);
    expect_agrees(compact_graph(in, R"({"op": "gt", "in": ["x", 0.5], "out": "m"}, {"op": "nonzero", "in": ["m"], "out": "y"})", R"("y")"), {x},
                  "nonzero(x > 0.5) " + shape_str(shape));
    expect_agrees(compact_graph(in, R"({"op": "nonzero", "in": ["x"], "out": "y"})", R"("y")"), {x}, "nonzero(x) strided " + shape_str(shape));
    expect_agrees(compact_graph(in, R"({"op": "gt", "in": ["x", 0.0], "out": "m"}, {"op": "masked_select", "in": ["x", "m"], "out": "y"})", R"("y")"),
                  {x}, "x[x > 0] strided " + shape_str(shape));
  }
}

TEST(LlvmCompact, MaskedSelectBroadcastsEitherOperand) {
  std::mt19937 rng(37);
  expect_cases_agree(testing::masked_select_cases(true, testing::kEveryDtype, rng));
}

TEST(LlvmCompact, StepsAfterTheCountRunCompiledOnItsValue) {
  std::mt19937 rng(38);
  expect_cases_agree(testing::after_the_count_cases({1, 9, 100000}, {0, 1, 13, 300}, rng));
}

TEST(LlvmCompact, ASelectionOnlySummedIsOneMaskedPass) {
  std::mt19937 rng(40);
  expect_cases_agree(testing::summed_selection_cases({0, 1, 7, 50000}, rng));
}

// The count is never specialized: one entry serves every count, under
// always_static too (it is no input's size), and the call's symbols carry
// it out to the runtime.
TEST(LlvmCompact, OneCompileServesEveryCount) {
  for (const char* mode : {"always_dynamic", "always_static", "start_dynamic"}) {
    auto jit = runtime::Jit::create(std::string(R"({"compile": {"backend": "llvm"}, "policy": {"mode": ")") + mode + "\"}}");
    ASSERT_TRUE(jit.is_ok()) << jit.status().to_string();
    const ir::Graph g = testing::graph_from(compact_graph(compact_input("x", "i32", {8}), R"({"op": "gt", "in": ["x", 0], "out": "m"},
        {"op": "masked_select", "in": ["x", "m"], "out": "s"}, {"op": "mul", "in": ["s", 3], "out": "y"})",
                                                  R"("y")"));
    for (int set = 0; set <= 8; ++set) {
      std::vector<int32_t> v(8, -1);
      for (int i = 0; i < set; ++i) v[static_cast<size_t>(i * 3 % 8)] = i + 1;
      testing::ArgPack p;
      p.add(from_values(DType::kI32, {8}, v));
      std::vector<Tensor> out;
      ASSERT_TRUE((*jit)->call_graph("t", g, {}, p.args(), out).is_ok());
      std::vector<int32_t> want;
      for (int32_t x : v) {
        if (x > 0) want.push_back(3 * x);
      }
      EXPECT_EQ(testing::values_of<int32_t>(out[0]), want) << mode << ", " << set << " set";
    }
    const nlohmann::json site = (*jit)->stats_json()["sites"]["t"];
    EXPECT_EQ(site["compiles"], 1u) << mode << ": " << site.dump();
    EXPECT_EQ(site["fallbacks"], 0u) << mode;
  }
}

}  // namespace
}  // namespace shapejit::llvm_test
