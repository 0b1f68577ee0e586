#include "core/support/faults.h"

#include <gtest/gtest.h>

namespace shapejit::support {
namespace {

TEST(Faults, NothingNamedFailsNothing) {
  const FaultSpec spec = parse_faults("", 0);
  EXPECT_FALSE(spec.any);
  for (int f = 0; f < static_cast<int>(Fault::kCount); ++f) EXPECT_FALSE(spec.fires(static_cast<Fault>(f), 0));
}

TEST(Faults, AStageNamedFailsAtEveryChanceAndTheOthersAtNone) {
  const FaultSpec spec = parse_faults("compile,run", 0);
  EXPECT_TRUE(spec.any);
  for (uint64_t chance = 0; chance < 100; ++chance) {
    EXPECT_TRUE(spec.fires(Fault::kCompile, chance));
    EXPECT_TRUE(spec.fires(Fault::kRun, chance));
    EXPECT_FALSE(spec.fires(Fault::kLower, chance));
    EXPECT_FALSE(spec.fires(Fault::kTrace, chance));
  }
}

TEST(Faults, ARateFailsThatFractionOfChancesTheSameWayForOneSeed) {
  const FaultSpec a = parse_faults("symbolic:0.25", 7), b = parse_faults("symbolic:0.25", 7), c = parse_faults("symbolic:0.25", 8);
  int fired = 0, differ = 0;
  for (uint64_t chance = 0; chance < 4000; ++chance) {
    fired += a.fires(Fault::kSymbolic, chance);
    EXPECT_EQ(a.fires(Fault::kSymbolic, chance), b.fires(Fault::kSymbolic, chance));
    differ += a.fires(Fault::kSymbolic, chance) != c.fires(Fault::kSymbolic, chance);
  }
  EXPECT_GT(fired, 850);
  EXPECT_LT(fired, 1150);
  EXPECT_GT(differ, 0);  // another seed, other chances
}

TEST(Faults, ANameThatIsNoStageIsReportedAndFailsNothing) {
  std::string unknown;
  const FaultSpec spec = parse_faults("compil,load:0,,trace:1", 0, &unknown);
  EXPECT_EQ(unknown, "'compil'");
  EXPECT_TRUE(spec.any);  // trace
  EXPECT_FALSE(spec.fires(Fault::kCompile, 0));
  EXPECT_FALSE(spec.fires(Fault::kLoad, 0));  // a rate of 0 fails nothing
  EXPECT_TRUE(spec.fires(Fault::kTrace, 0));
  EXPECT_STREQ(fault_name(Fault::kFallback), "fallback");
}

}  // namespace
}  // namespace shapejit::support
