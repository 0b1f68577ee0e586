// Status: the code, the message with its places, and the detail a front end
// raises by (a type error, an index out of range) survive context and copies.
#include "core/support/status.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"

namespace shapejit {
namespace {

TEST(Status, TheDetailSurvivesContextAndCopies) {
  const Status s = Status(Code::kInvalidArgument, "takes float tensors, got i32", Detail::kType).with_context("site f");
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.detail(), Detail::kType);
  EXPECT_EQ(s.message(), "site f: takes float tensors, got i32");
  const Status copy = s;
  EXPECT_EQ(copy.detail(), Detail::kType);
  EXPECT_EQ(invalid("shape").detail(), Detail::kNone);
}

TEST(Status, DtypeErrorsAreTypeErrorsAndOtherBadGraphsAreNot) {
  const Status dtype = testing::run_graph(testing::one_op("exp", {{"i32", {3}}}), {testing::zeros(ir::DType::kI32, {3})}).status();
  EXPECT_EQ(dtype.code(), Code::kInvalidArgument);
  EXPECT_EQ(dtype.detail(), Detail::kType) << dtype.message();
  const Status shape = testing::run_graph(testing::one_op("add", {{"f32", {3}}, {"f32", {4}}}),
                                          {testing::zeros(ir::DType::kF32, {3}), testing::zeros(ir::DType::kF32, {4})})
                           .status();
  EXPECT_EQ(shape.code(), Code::kInvalidArgument);
  EXPECT_EQ(shape.detail(), Detail::kNone) << shape.message();
}

TEST(Status, AGatherOutOfRangeIsAnIndexErrorOnEveryCpuBackend) {
  for (const char* backend : {"reference", "llvm"}) {
    const Status s = testing::run_graph(testing::one_op("embedding", {{"f32", {4, 2}}, {"i64", {1}}}),
                                        {testing::zeros(ir::DType::kF32, {4, 2}), testing::from_values(ir::DType::kI64, {1}, std::vector<int64_t>{9})},
                                        std::string(R"({"compile": {"backend": ")") + backend + "\"}}")
                         .status();
    EXPECT_EQ(s.code(), Code::kRuntime) << backend;
    EXPECT_EQ(s.detail(), Detail::kIndex) << backend << ": " << s.message();
  }
}

}  // namespace
}  // namespace shapejit
