// HugePageHeap: blocks cut from 2 MiB-aligned chunks, a chunk unmapped
// when its last block goes, big blocks in chunks of their own, and blocks
// given back from many threads at once. HugePageBacking: the caller's
// extents asked for once each, where the ranges cover half of one, 16 a
// call, the bytes kept, and no more asking after failures. (Frozen panels in the
// process's heap, and weights backed as they recur:
// tests/backends/llvm/llvm_matmul_test.cpp.)
#include "backends/cpu/huge_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace shapejit::backends::cpu {
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

// `extents` 2 MiB extents of fresh anonymous memory, 2 MiB-aligned, every
// byte written (a pattern of its offset); unmapped when it goes.
class Extents {
 public:
  explicit Extents(size_t extents) : bytes_(extents * HugePageHeap::kHugePage), base_(map_huge_aligned(bytes_)) {
    EXPECT_NE(base_, nullptr);
    for (size_t i = 0; base_ && i < bytes_; ++i) base_[i] = static_cast<char>(i * 131 >> 12);
  }
  ~Extents() { ::munmap(base_, bytes_); }
  char* at(size_t offset) const { return base_ + offset; }
  bool intact() const {
    for (size_t i = 0; i < bytes_; ++i) {
      if (base_[i] != static_cast<char>(i * 131 >> 12)) return false;
    }
    return true;
  }

 private:
  size_t bytes_;
  char* base_;
};

// AnonHugePages of the mapping that holds `p`, in kB, from /proc/self/smaps.
int64_t anon_huge_kb(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = lo <= at && at < hi;
      continue;
    }
    int64_t kb = 0;
    if (inside && std::sscanf(line.c_str(), "AnonHugePages: %" SCNd64, &kb) == 1) return kb;
  }
  return -1;
}

TEST(HugePageBacking, AsksOnceForEachExtentTheRangesCoverHalfOf) {
  constexpr size_t kExtent = HugePageHeap::kHugePage, kKiB = 1024;
  const Extents mem(4);
  HugePageBacking backing(true);
  using Range = HugePageBacking::Range;
  const std::vector<Range> ranges = {
      {mem.at(0), 1536 * kKiB},                               // 3/4 of extent 0
      {mem.at(kExtent), 512 * kKiB},                          // 1/4 of extent 1
      {mem.at(2 * kExtent), 700 * kKiB},                      // extent 2: one range of 700 KiB, twice
      {mem.at(2 * kExtent), 700 * kKiB},
      {mem.at(3 * kExtent + 400 * kKiB), 600 * kKiB},         // extent 3: two ranges that meet, 1200 KiB
      {mem.at(3 * kExtent + 1000 * kKiB), 600 * kKiB},
      {nullptr, 0},                                           // an empty tensor
  };
  backing.request(ranges);
  HugePageBacking::Stats s = backing.stats();
  EXPECT_EQ(s.asked, 2u);
  EXPECT_LE(s.collapsed, s.asked);
  EXPECT_TRUE(mem.intact());
  // Where the kernel collapsed them, the mapping shows the huge pages.
  if (s.collapsed == 2) {
    EXPECT_GE(anon_huge_kb(mem.at(0)), 4096);
  }
  // Each extent once: the same ranges again ask for nothing.
  backing.request(ranges);
  EXPECT_EQ(backing.stats().asked, 2u);
  // A range over both halves of extents 1 and 2 covers each of them whole.
  const Range whole[] = {{mem.at(kExtent), 2 * kExtent}};
  backing.request(whole);
  EXPECT_EQ(backing.stats().asked, 4u);
  EXPECT_TRUE(mem.intact());
}

TEST(HugePageBacking, AsksForSixteenExtentsACallAndTheRestLater) {
  constexpr size_t kExtents = HugePageBacking::kExtentsPerCall + 4;
  const Extents mem(kExtents);
  HugePageBacking backing(true);
  const HugePageBacking::Range r[] = {{mem.at(0), kExtents * HugePageHeap::kHugePage}};
  backing.request(r);
  EXPECT_EQ(backing.stats().asked, HugePageBacking::kExtentsPerCall);
  // Without MADV_COLLAPSE those 16 failed, and the rest were dropped.
  if (!backing.stats().asking) GTEST_SKIP() << "no huge pages here: MADV_COLLAPSE failed 16 times";
  EXPECT_EQ(backing.stats().waiting, 4u);
  backing.work();
  EXPECT_EQ(backing.stats().asked, kExtents);
  EXPECT_EQ(backing.stats().waiting, 0u);
  backing.work();
  backing.request(r);
  EXPECT_EQ(backing.stats().asked, kExtents);
  EXPECT_TRUE(mem.intact());
}

TEST(HugePageBacking, OffAsksForNothing) {
  const Extents mem(1);
  HugePageBacking backing(false);
  const HugePageBacking::Range r[] = {{mem.at(0), HugePageHeap::kHugePage}};
  backing.request(r);
  EXPECT_EQ(backing.stats().asked, 0u);
  EXPECT_FALSE(backing.stats().asking);
}

TEST(HugePageBacking, StopsAskingAfterFailuresInARow) {
  constexpr int kExtents = HugePageBacking::kMaxFailuresInARow + 4;
  char* gone = nullptr;
  {
    const Extents mem(kExtents);
    gone = mem.at(0);
  }  // unmapped: madvise fails there
  HugePageBacking backing(true);
  const HugePageBacking::Range r[] = {{gone, kExtents * HugePageHeap::kHugePage}};
  backing.request(r);
  EXPECT_EQ(backing.stats().asked, static_cast<size_t>(HugePageBacking::kMaxFailuresInARow));
  EXPECT_EQ(backing.stats().collapsed, 0u);
  EXPECT_FALSE(backing.stats().asking);
  const Extents mem(1);
  const HugePageBacking::Range more[] = {{mem.at(0), HugePageHeap::kHugePage}};
  backing.request(more);
  EXPECT_EQ(backing.stats().asked, static_cast<size_t>(HugePageBacking::kMaxFailuresInARow));
}

// A DLTensor of `bytes` bytes at p.
struct Bytes {
  explicit Bytes(void* p, int64_t bytes) : shape{bytes} {
    t.data = p;
    t.device = {kDLCPU, 0};
    t.ndim = 1;
    t.dtype = {kDLUInt, 8, 1};
    t.shape = shape;
  }
  int64_t shape[1];
  DLTensor t{};
};

TEST(RecurringInputs, NamesAnAddressSeenOnAnEarlierCallOnce) {
  constexpr size_t kExtent = HugePageHeap::kHugePage;
  const Extents mem(3);
  Bytes a(mem.at(0), kExtent), b(mem.at(kExtent), kExtent), c(mem.at(2 * kExtent), kExtent);
  HugePageBacking backing(true);
  RecurringInputs weights({0, 2});  // args 0 and 2; arg 1 is not watched
  auto call = [&](const Bytes& x, const Bytes& y, const Bytes& z) {
    const DLTensor* args[] = {&x.t, &y.t, &z.t};
    backing.request(weights.observe(args));
    return backing.stats().asked;
  };
  EXPECT_EQ(call(a, c, b), 0u);  // first sight of a and b
  EXPECT_EQ(call(a, c, b), 2u);  // both again
  EXPECT_EQ(call(b, c, a), 2u);  // in each other's places: named already
  EXPECT_EQ(call(c, a, a), 2u);  // c first (as arg 0; arg 1 is not watched)
  EXPECT_EQ(call(c, b, a), 3u);
  EXPECT_TRUE(mem.intact());
}

}  // namespace
}  // namespace shapejit::backends::cpu
