// HugePageHeap: blocks cut from 2 MiB-aligned chunks, a chunk unmapped
// when its last block goes, big blocks in chunks of their own, and blocks
// given back from many threads at once. (Frozen panels in the process's
// heap: tests/backends/llvm/llvm_matmul_test.cpp.)
#include "backends/pool/huge_pages.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

namespace shapejit::backends::pool {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

uintptr_t at(const std::shared_ptr<void>& p) { return reinterpret_cast<uintptr_t>(p.get()); }

TEST(HugePageHeap, BlocksAreAlignedApartAndWritable) {
  auto heap = HugePageHeap::create(4 * kMiB);
  std::vector<std::pair<std::shared_ptr<void>, size_t>> blocks;
  for (size_t bytes : {size_t{1}, size_t{63}, size_t{64}, size_t{590} << 10, size_t{100}, kMiB, size_t{3000}}) {
    blocks.emplace_back(heap->allocate(bytes), bytes);
    ASSERT_NE(blocks.back().first, nullptr) << bytes;
    EXPECT_EQ(at(blocks.back().first) % 64, 0u) << bytes;
    std::memset(blocks.back().first.get(), static_cast<int>(blocks.size()), bytes);
  }
  // Each block's bytes are its own: none overlaps another.
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto* p = static_cast<const unsigned char*>(blocks[i].first.get());
    EXPECT_TRUE(std::all_of(p, p + blocks[i].second, [&](unsigned char c) { return c == i + 1; })) << i;
  }
  // The first chunk is 2 MiB-aligned, and blocks are cut one after another.
  EXPECT_EQ(at(blocks[0].first) % HugePageHeap::kHugePage, 0u);
  EXPECT_EQ(at(blocks[1].first), at(blocks[0].first) + 64);
  const HugePageHeap::Stats s = heap->stats();
  EXPECT_EQ(s.blocks, blocks.size());
  EXPECT_EQ(s.chunks, 1u);  // 1.7 MiB in all fits the 4 MiB chunk
  EXPECT_EQ(s.mapped_bytes, 4 * kMiB);
}

TEST(HugePageHeap, AChunkGoesWithItsLastBlock) {
  auto heap = HugePageHeap::create(2 * kMiB);
  std::shared_ptr<void> a = heap->allocate(kMiB), b = heap->allocate(kMiB);
  std::shared_ptr<void> c = heap->allocate(kMiB);  // past the first chunk: a second one
  EXPECT_EQ(heap->stats().chunks, 2u);
  EXPECT_EQ(at(c) % HugePageHeap::kHugePage, 0u);
  a.reset();
  EXPECT_EQ(heap->stats().chunks, 2u);  // b still lives in the first
  b.reset();
  EXPECT_EQ(heap->stats().chunks, 1u);
  EXPECT_EQ(heap->stats().mapped_bytes, 2 * kMiB);
  // The current chunk, emptied, is cut again from its start.
  const uintptr_t first = at(c);
  c.reset();
  EXPECT_EQ(heap->stats().chunks, 1u);
  EXPECT_EQ(heap->stats().blocks, 0u);
  EXPECT_EQ(heap->stats().block_bytes, 0u);
  EXPECT_EQ(at(heap->allocate(100)), first);
}

TEST(HugePageHeap, ABigBlockHasAChunkOfItsOwn) {
  auto heap = HugePageHeap::create(4 * kMiB);
  std::shared_ptr<void> small = heap->allocate(1000);
  std::shared_ptr<void> big = heap->allocate(3 * kMiB);  // over half a chunk
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(at(big) % HugePageHeap::kHugePage, 0u);
  std::memset(big.get(), 5, 3 * kMiB);
  EXPECT_EQ(heap->stats().chunks, 2u);
  EXPECT_EQ(heap->stats().mapped_bytes, 8 * kMiB);  // 4 for the chunk, 3 rounded up to 4
  // The current chunk kept its free space: the next small block follows.
  EXPECT_EQ(at(heap->allocate(64)), at(small) + 1024);
  big.reset();
  EXPECT_EQ(heap->stats().chunks, 1u);
}

TEST(HugePageHeap, ABlockTooBigToMapIsNull) {
  auto heap = HugePageHeap::create();
  EXPECT_EQ(heap->allocate(~size_t{0}), nullptr);
  EXPECT_EQ(heap->allocate((size_t{1} << 62) + 1), nullptr);
  EXPECT_EQ(heap->stats().chunks, 0u);
}

TEST(HugePageHeap, BlocksOutliveTheHeapsHandle) {
  std::shared_ptr<void> block;
  {
    auto heap = HugePageHeap::create();
    block = heap->allocate(5000);
  }
  std::memset(block.get(), 3, 5000);  // still mapped; giving it back frees the heap
  block.reset();
}

TEST(HugePageHeap, ManyThreadsAllocateAndGiveBack) {
  auto heap = HugePageHeap::create(2 * kMiB);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&heap, t] {
      std::vector<std::shared_ptr<void>> mine;
      for (int i = 0; i < 200; ++i) {
        const size_t bytes = 1000 + static_cast<size_t>((i * 7919 + t) % 300000);
        mine.push_back(heap->allocate(bytes));
        ASSERT_NE(mine.back(), nullptr);
        std::memset(mine.back().get(), t, bytes);
        if (i % 3 == 0) mine.erase(mine.begin());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const HugePageHeap::Stats s = heap->stats();
  EXPECT_EQ(s.blocks, 0u);
  EXPECT_EQ(s.block_bytes, 0u);
  EXPECT_LE(s.chunks, 1u);  // at most the current chunk, empty
}

}  // namespace
}  // namespace shapejit::backends::pool
