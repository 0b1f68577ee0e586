// Guarded memory (SHAPEJIT_GUARD_PAGES): every byte of a block is the
// caller's, and a write outside it is caught, by the page after it or by
// the pattern the free checks.
#include "core/support/guarded_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace shapejit::support {
namespace {

TEST(GuardedMemory, EveryByteOfABlockIsWritableAndTheFreeIsQuiet) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{4095}, size_t{4096}, size_t{5000}}) {
    char* p = static_cast<char*>(guarded_alloc(bytes));
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    std::memset(p, 0x5a, bytes);
    guarded_free(p, bytes);
  }
}

TEST(GuardedMemory, AWritePastTheRequestInsideItsLastLineAbortsAtTheFree) {
  EXPECT_DEATH(
      {
        char* p = static_cast<char*>(guarded_alloc(10));
        p[10] = 1;
        guarded_free(p, 10);
      },
      "a write at offset 10 of a 10-byte block");
}

TEST(GuardedMemory, AWriteBeforeTheBlockAbortsAtTheFree) {
  EXPECT_DEATH(
      {
        char* p = static_cast<char*>(guarded_alloc(100));
        p[-1] = 1;
        guarded_free(p, 100);
      },
      "a write at offset -1 of a 100-byte block");
}

TEST(GuardedMemory, AWritePastTheLastLineFaultsWhereItIsMade) {
  EXPECT_DEATH(
      {
        volatile char* p = static_cast<char*>(guarded_alloc(64));
        p[64] = 1;
      },
      "");
}

}  // namespace
}  // namespace shapejit::support
