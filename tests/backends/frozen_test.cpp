// FrozenMemory: ranges frozen and thawed by count, overlaps refused, all or
// none for a list of tensors, and what is derived from frozen bytes made
// once, shared, and dropped with the freeze that held it.
#include "backends/frozen.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace shapejit::backends {
namespace {

FrozenMemory::Derived bytes_of(size_t n, int* made) {
  ++*made;
  return {std::make_shared<std::vector<char>>(n), n};
}

TEST(FrozenMemory, RangesFreezeAndThawByCount) {
  FrozenMemory m;
  std::vector<char> buf(100);
  EXPECT_FALSE(m.any());
  ASSERT_TRUE(m.freeze(buf.data(), 100).is_ok());
  ASSERT_TRUE(m.freeze(buf.data(), 100).is_ok());
  EXPECT_TRUE(m.any());
  EXPECT_TRUE(m.frozen(buf.data() + 10, 90));
  EXPECT_FALSE(m.frozen(buf.data() + 10, 91));  // past the range's end
  EXPECT_FALSE(m.frozen(buf.data() - 1, 2));
  ASSERT_TRUE(m.thaw(buf.data(), 100).is_ok());
  EXPECT_TRUE(m.frozen(buf.data(), 100));  // frozen twice, thawed once
  EXPECT_EQ(m.thaw(buf.data(), 99).code(), Code::kInvalidArgument);  // not the range frozen
  ASSERT_TRUE(m.thaw(buf.data(), 100).is_ok());
  EXPECT_FALSE(m.frozen(buf.data(), 100));
  EXPECT_FALSE(m.any());

  const Status again = m.thaw(buf.data(), 100);
  EXPECT_EQ(again.code(), Code::kInvalidArgument);
  EXPECT_NE(again.message().find("thaw: memory [0x"), std::string::npos) << again.message();
  EXPECT_NE(again.message().find(") is not frozen"), std::string::npos) << again.message();
  EXPECT_EQ(m.freeze(buf.data(), 0).code(), Code::kInvalidArgument);
  EXPECT_EQ(m.freeze(nullptr, 8).code(), Code::kInvalidArgument);
}

TEST(FrozenMemory, OverlapsAreRefusedAndNeighboursAreNot) {
  FrozenMemory m;
  std::vector<char> buf(300);
  ASSERT_TRUE(m.freeze(buf.data() + 100, 100).is_ok());
  for (auto [at, n] : std::vector<std::pair<int, int>>{{50, 51}, {199, 10}, {120, 10}, {50, 200}, {100, 99}}) {
    const Status s = m.freeze(buf.data() + at, n);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << at << " " << n;
    EXPECT_NE(s.message().find("overlaps frozen memory"), std::string::npos) << s.message();
  }
  EXPECT_TRUE(m.freeze(buf.data() + 50, 50).is_ok());   // ends where it starts
  EXPECT_TRUE(m.freeze(buf.data() + 200, 50).is_ok());  // starts where it ends
  EXPECT_EQ(m.stats().ranges, 3u);
  EXPECT_EQ(m.stats().frozen_bytes, 200u);
}

TEST(FrozenMemory, TensorsFreezeAllOrNone) {
  FrozenMemory m;
  std::vector<float> a(12), b(12), c(12);
  int64_t shape[] = {3, 4}, reversed[] = {-4, 1};
  DLTensor ta{a.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, nullptr, 0};
  DLTensor tb{b.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, nullptr, 0};
  // c's rows reversed: its first element is its last row, and its bytes
  // are c's whole buffer all the same.
  DLTensor tc{c.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, reversed, 8 * sizeof(float)};
  DLTensor on_gpu = ta;
  on_gpu.device = {kDLCUDA, 0};
  int64_t empty_shape[] = {0, 4};
  DLTensor empty = ta;
  empty.shape = empty_shape;

  const DLTensor* good[] = {&ta, &tb, &tc};
  ASSERT_TRUE(m.freeze(good).is_ok());
  EXPECT_TRUE(m.frozen(c.data(), 12 * sizeof(float)));
  EXPECT_EQ(m.stats().frozen_bytes, 3 * 12 * sizeof(float));

  // b again (counts), then the GPU tensor: nothing of the list is frozen.
  const DLTensor* bad[] = {&tb, &on_gpu};
  const std::string names[] = {"w", "gpu"};
  const Status s = m.freeze(bad, names);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("freeze: gpu: in device memory"), std::string::npos) << s.message();
  const DLTensor* with_empty[] = {&tb, &empty};
  EXPECT_NE(m.freeze(with_empty).message().find("freeze: tensor 1: no elements"), std::string::npos);
  DLTensor overlapping{a.data() + 2, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, nullptr, 0};
  const DLTensor* overlap[] = {&tb, &overlapping};
  const Status o = m.freeze(overlap);
  EXPECT_NE(o.message().find("freeze: tensor 1: memory"), std::string::npos) << o.message();

  // b was frozen once: thawing it twice in one list thaws nothing.
  const DLTensor* twice[] = {&ta, &tb, &tb};
  const Status t = m.thaw(twice);
  EXPECT_NE(t.message().find("thaw: tensor 2: not frozen"), std::string::npos) << t.message();
  EXPECT_TRUE(m.frozen(a.data(), 12 * sizeof(float)));
  ASSERT_TRUE(m.thaw(good).is_ok());
  EXPECT_FALSE(m.any());
}

TEST(FrozenMemory, DerivedCopiesAreMadeOnceAndDroppedWithTheirFreeze) {
  FrozenMemory m;
  std::vector<char> buf(100);
  int made = 0;
  auto make = [&] { return bytes_of(64, &made); };
  // Not frozen: nothing is made or kept.
  EXPECT_EQ(m.derived(buf.data(), 10, "t", make).data, nullptr);
  EXPECT_EQ(made, 0);

  ASSERT_TRUE(m.freeze(buf.data(), 100).is_ok());
  const FrozenMemory::Derived first = m.derived(buf.data() + 8, 10, "t", make);
  ASSERT_NE(first.data, nullptr);
  EXPECT_EQ(m.derived(buf.data() + 8, 10, "t", make).data, first.data);  // shared
  EXPECT_NE(m.derived(buf.data() + 8, 10, "u", make).data, first.data);  // another tag
  EXPECT_NE(m.derived(buf.data() + 9, 10, "t", make).data, first.data);  // another place
  EXPECT_EQ(m.derived(buf.data() + 95, 10, "t", make).data, nullptr);    // past the range
  EXPECT_EQ(made, 3);
  EXPECT_EQ(m.stats().derived, 3u);
  EXPECT_EQ(m.stats().derived_bytes, 3 * 64u);

  // Thawed: the copies go (a call still using one keeps it alive), and a
  // new freeze of the same bytes derives anew.
  const std::weak_ptr<const void> kept = first.data;
  ASSERT_TRUE(m.thaw(buf.data(), 100).is_ok());
  EXPECT_FALSE(kept.expired());  // `first` still holds it
  EXPECT_EQ(m.stats().derived, 0u);
  ASSERT_TRUE(m.freeze(buf.data(), 100).is_ok());
  EXPECT_NE(m.derived(buf.data() + 8, 10, "t", make).data, nullptr);
  EXPECT_EQ(made, 4);

  // A thaw while a copy is being made: the copy serves its call and is
  // not kept for the new freeze.
  std::vector<char> other(50);
  ASSERT_TRUE(m.freeze(other.data(), 50).is_ok());
  const FrozenMemory::Derived raced = m.derived(other.data(), 50, "t", [&] {
    EXPECT_TRUE(m.thaw(other.data(), 50).is_ok());
    EXPECT_TRUE(m.freeze(other.data(), 50).is_ok());
    return bytes_of(8, &made);
  });
  EXPECT_NE(raced.data, nullptr);
  EXPECT_EQ(m.stats().derived, 1u);  // the first buffer's only
}

// Calls deriving from one range on several threads while another thread
// freezes and thaws a second: one copy per freeze of the first (the racing
// makers' extras are not kept), none kept for the second once thawed.
TEST(FrozenMemory, ThreadsShareOneCopyPerFreeze) {
  FrozenMemory m;
  std::vector<char> shared(256), churned(256);
  ASSERT_TRUE(m.freeze(shared.data(), shared.size()).is_ok());
  std::atomic<int> made{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  std::vector<const void*> seen(4);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 2000; ++k) {
        const FrozenMemory::Derived d = m.derived(shared.data(), 16, "t", [&] {
          ++made;
          return FrozenMemory::Derived{std::make_shared<int>(k), sizeof(int)};
        });
        if (k == 1999) seen[i] = d.data.get();
        (void)m.derived(churned.data(), 16, "t", [&] { return FrozenMemory::Derived{std::make_shared<int>(k), sizeof(int)}; });
      }
    });
  }
  std::thread churn([&] {
    while (!stop) {
      if (m.freeze(churned.data(), churned.size()).is_ok()) {
        EXPECT_TRUE(m.thaw(churned.data(), churned.size()).is_ok());
      }
    }
  });
  for (std::thread& t : threads) t.join();
  stop = true;
  churn.join();
  EXPECT_GE(made.load(), 1);
  EXPECT_LE(made.load(), 4);  // at most one per thread that missed at once
  for (const void* p : seen) EXPECT_EQ(p, seen[0]);
  EXPECT_EQ(m.stats().ranges, 1u);
  EXPECT_EQ(m.stats().derived, 1u);
}

}  // namespace
}  // namespace shapejit::backends
