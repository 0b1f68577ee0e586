#include "cache/kernel_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace shapejit::cache {
namespace {

class SizedKernel final : public Artifact {
 public:
  explicit SizedKernel(size_t bytes) : bytes_(bytes) {}
  size_t code_bytes() const override { return bytes_; }

 private:
  size_t bytes_;
};

Hash128 key(uint64_t i) { return Hasher().add(i).finish(); }

KernelCache::Compile make(size_t bytes, std::atomic<int>* count = nullptr) {
  return [=]() -> Expected<std::unique_ptr<Artifact>> {
    if (count) ++*count;
    return std::unique_ptr<Artifact>(new SizedKernel(bytes));
  };
}

TEST(KernelCache, HitsReturnTheSameKernel) {
  KernelCache cache(1 << 20);
  auto a = cache.get_or_compile(key(1), make(100));
  auto b = cache.get_or_compile(key(1), make(100));
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(cache.stats().hits, 1u);
  EXPECT_EQ(cache.stats().compiles, 1u);
}

TEST(KernelCache, EvictsTheLeastRecentlyUsedWithinTheByteBound) {
  KernelCache cache(300);
  ASSERT_TRUE(cache.get_or_compile(key(1), make(100)).is_ok());
  ASSERT_TRUE(cache.get_or_compile(key(2), make(100)).is_ok());
  ASSERT_TRUE(cache.get_or_compile(key(3), make(100)).is_ok());
  ASSERT_NE(cache.find(key(1)), nullptr);  // 1 is now the most recent
  auto four = cache.get_or_compile(key(4), make(100));
  ASSERT_TRUE(four.is_ok());
  EXPECT_EQ(cache.find(key(2)), nullptr);  // the coldest went
  EXPECT_NE(cache.find(key(1)), nullptr);
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_LE(cache.stats().bytes, 300u);
  // A kernel still in use outlives its eviction.
  std::shared_ptr<Artifact> held = *four;
  for (uint64_t i = 10; i < 20; ++i) ASSERT_TRUE(cache.get_or_compile(key(i), make(100)).is_ok());
  EXPECT_EQ(cache.find(key(4)), nullptr);
  EXPECT_EQ(held->code_bytes(), 100u);
}

TEST(KernelCache, FailuresAreReportedAndNotCached) {
  KernelCache cache(1 << 20);
  auto bad = cache.get_or_compile(key(1), []() -> Expected<std::unique_ptr<Artifact>> { return unsupported("nope"); });
  EXPECT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(), "nope");
  auto good = cache.get_or_compile(key(1), make(10));
  EXPECT_TRUE(good.is_ok());
}

TEST(KernelCache, ACompileThatThrowsIsAnErrorNotAHang) {
  KernelCache cache(1 << 20);
  auto thrown = cache.get_or_compile(key(3), []() -> Expected<std::unique_ptr<Artifact>> { throw std::bad_alloc(); });
  ASSERT_FALSE(thrown.is_ok());
  EXPECT_NE(thrown.status().message().find("out of memory"), std::string::npos);
  EXPECT_TRUE(cache.get_or_compile(key(3), make(10)).is_ok());  // the key is free again
}

TEST(KernelCache, ConcurrentMissesOnOneKeyCompileOnce) {
  KernelCache cache(1 << 20);
  std::atomic<int> compiles{0};
  auto slow = [&]() -> Expected<std::unique_ptr<Artifact>> {
    ++compiles;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return std::unique_ptr<Artifact>(new SizedKernel(10));
  };
  std::vector<std::thread> threads;
  std::vector<Artifact*> got(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto k = cache.get_or_compile(key(7), slow);
      got[t] = k.is_ok() ? k->get() : nullptr;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(compiles.load(), 1);
  for (auto* k : got) EXPECT_EQ(k, got[0]);
}

}  // namespace
}  // namespace shapejit::cache
