// sym::Layout: which layout a tensor's strides make, the check a guard
// runs, and the words that keep the kernels' keys where they were.
#include "core/sym/layout.h"

#include <gtest/gtest.h>

#include <vector>

namespace shapejit::sym {
namespace {

Layout of(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  return Layout::of(static_cast<int>(shape.size()), shape.data(), strides.data());
}

bool holds(Layout l, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  return l.holds(static_cast<int>(shape.size()), shape.data(), strides.data());
}

TEST(Layout, StridedAndDenseAreTheWordsOfTheBoolsTheyReplaced) {
  EXPECT_EQ(Layout().word(), 0u);  // hashed as `false` was: keys unchanged
  EXPECT_EQ(Layout::dense().word(), 1u);
  EXPECT_EQ(Layout::permuted(std::vector<int>{0, 1, 2}), Layout::dense());
  EXPECT_TRUE(Layout::permuted(std::vector<int>{1, 0}).is_permuted());
  EXPECT_EQ(Layout::from_word(Layout::permuted(std::vector<int>{2, 0, 1}).word()).order(3), (std::vector<int>{2, 0, 1}));
}

TEST(Layout, EachTensorGetsTheMostSpecificLayoutItHas) {
  EXPECT_TRUE(of({4, 6}, {6, 1}).is_dense());
  EXPECT_EQ(of({6, 4}, {1, 6}).order(2), (std::vector<int>{1, 0}));                // W.T
  EXPECT_EQ(of({2, 3, 4}, {1, 2, 6}).order(3), (std::vector<int>{2, 1, 0}));       // Fortran order
  EXPECT_EQ(of({5, 2, 8}, {8, 40, 1}).order(3), (std::vector<int>{1, 0, 2}));      // heads before positions
  EXPECT_EQ(of({3, 4, 5}, {20, 1, 4}).order(3), (std::vector<int>{0, 2, 1}));      // a batch of transposes
  EXPECT_TRUE(of({6, 4}, {8, 2}).is_strided());                                    // every other column
  EXPECT_TRUE(of({6, 4}, {0, 1}).is_strided());                                    // a broadcast
  EXPECT_TRUE(of({6, 4}, {-4, 1}).is_strided());                                   // reversed rows
  EXPECT_TRUE(of({6}, {2}).is_strided());
  EXPECT_TRUE(of({0, 4}, {1, 0}).is_dense());                                      // addresses nothing
  EXPECT_TRUE(of({4, 1}, {1, 77}).is_dense());                                     // a size-1 dim strides anyhow
  EXPECT_TRUE(Layout::of(2, std::vector<int64_t>{3, 4}.data(), nullptr).is_dense());  // DLPack's compact
}

TEST(Layout, AGuardHoldsForEveryTensorLaidOutSoAndNoOther) {
  const Layout t = Layout::permuted(std::vector<int>{1, 0});
  EXPECT_TRUE(holds(t, {6, 4}, {1, 6}));
  EXPECT_TRUE(holds(t, {9, 2}, {1, 9}));     // any sizes
  EXPECT_TRUE(holds(t, {1, 5}, {3, 1}));     // a size-1 dim
  EXPECT_FALSE(holds(t, {6, 4}, {4, 1}));    // dense
  EXPECT_FALSE(holds(t, {6, 4}, {1, 8}));    // a slice of a transpose
  EXPECT_FALSE(holds(t, {6, 4, 1}, {1, 6, 1}));  // another rank
  EXPECT_TRUE(holds(Layout(), {6, 4}, {0, 3}));  // strided takes anything
  EXPECT_FALSE(holds(Layout::dense(), {6, 4}, {1, 6}));
}

TEST(Layout, SaysWhatItIs) {
  EXPECT_EQ(Layout().str(), "strided");
  EXPECT_EQ(Layout::dense().str(), "contiguous");
  EXPECT_EQ(Layout::permuted(std::vector<int>{1, 0}).str(), "contiguous in dim order (1, 0)");
}

TEST(Layout, ARankPastWhatAWordHoldsIsNeverPermuted) {
  std::vector<int64_t> shape(16, 2), strides(16);
  int64_t s = 1;
  for (int d = 0; d < 16; ++d, s *= 2) strides[static_cast<size_t>(d)] = s;  // reversed: Fortran order
  EXPECT_TRUE(of(shape, strides).is_strided());
  std::vector<int> order(16);
  for (int d = 0; d < 16; ++d) order[static_cast<size_t>(d)] = 15 - d;
  EXPECT_TRUE(Layout::permuted(order).is_strided());
}

}  // namespace
}  // namespace shapejit::sym
