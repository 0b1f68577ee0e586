// BlockPool: reuse by size class, the retention bound, blocks that outlive
// the pool's owner.
#include "backends/pool/block_pool.h"

#include <gtest/gtest.h>

#include <cstring>

namespace shapejit::backends::pool {
namespace {

TEST(BlockPool, SizeClassesAreAtMostAQuarterOverTheRequest) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{64}, size_t{65}, size_t{4096}, size_t{4097}, size_t{5000}, size_t{1} << 20,
                       (size_t{1} << 20) + 1, size_t{3} << 28}) {
    const size_t c = BlockPool::size_class(bytes);
    EXPECT_GE(c, std::max<size_t>(bytes, 1)) << bytes;
    EXPECT_EQ(c % 64, 0u) << bytes;
    if (bytes > 4096) {
      EXPECT_LE(c, bytes + bytes / 4) << bytes;
    }
  }
  // A buffer that grows by a little stays in its class.
  EXPECT_EQ(BlockPool::size_class(300000), BlockPool::size_class(300256));
}

TEST(BlockPool, FreedBlocksAreReused) {
  auto pool = BlockPool::host(size_t{1} << 20);
  void* first;
  {
    std::shared_ptr<void> a = pool->take(100000);
    first = a.get();
    std::memset(a.get(), 1, 100000);
  }
  EXPECT_EQ(pool->stats().retained_bytes, BlockPool::size_class(100000));
  std::shared_ptr<void> b = pool->take(100100);  // same class
  EXPECT_EQ(b.get(), first);
  std::shared_ptr<void> c = pool->take(100000);  // the block is taken: a new one
  EXPECT_NE(c.get(), first);
  EXPECT_EQ(pool->stats().hits, 1u);
  EXPECT_EQ(pool->stats().misses, 2u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c.get()) % 64, 0u);
}

TEST(BlockPool, RetainsAtMostItsBound) {
  auto pool = BlockPool::host(size_t{1} << 20);
  {
    std::vector<std::shared_ptr<void>> blocks;
    for (int i = 0; i < 8; ++i) blocks.push_back(pool->take(size_t{256} << 10));
  }
  EXPECT_LE(pool->stats().retained_bytes, size_t{1} << 20);
  EXPECT_GT(pool->stats().retained_bytes, 0u);
  { auto huge = pool->take(size_t{4} << 20); }  // larger than the bound: freed at once
  EXPECT_LE(pool->stats().retained_bytes, size_t{1} << 20);
}

TEST(BlockPool, BlocksOutliveTheOwnersHandle) {
  std::shared_ptr<void> block;
  {
    auto pool = BlockPool::host(size_t{1} << 20);
    block = pool->take(1000);
  }
  std::memset(block.get(), 7, 1000);  // still valid; returning it frees the pool
  block.reset();
}

TEST(BlockPool, AnAllocationFailureIsBadAlloc) {
  auto pool = BlockPool::create(1 << 20, [](size_t) -> void* { return nullptr; }, [](void*) {});
  EXPECT_THROW(pool->take(64), std::bad_alloc);
}

}  // namespace
}  // namespace shapejit::backends::pool
