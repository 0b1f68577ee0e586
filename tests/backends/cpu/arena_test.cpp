// ArenaPlanner: temporaries live at once never share bytes; a temporary
// whose last step has run leaves its bytes to later ones.
#include "backends/cpu/arena.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace shapejit::backends::cpu {
namespace {

size_t rounded(size_t b) { return (b + 63) / 64 * 64; }

TEST(Arena, LiveTemporariesNeverShareBytes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 40), steps = 1 + static_cast<int>(rng() % 20);
    std::vector<std::pair<int, int>> life(n);
    std::vector<size_t> bytes(n);
    for (int i = 0; i < n; ++i) {
      if (rng() % 5 == 0) {
        life[i] = {-1, -1};  // an input, an output: not placed
      } else {
        const int a = static_cast<int>(rng() % steps), b = static_cast<int>(rng() % steps);
        life[i] = {std::min(a, b), std::max(a, b)};
      }
      bytes[i] = rng() % 8 == 0 ? 0 : rng() % 100000;
    }
    const ArenaPlanner::Placement l = ArenaPlanner(life).place(bytes);
    size_t sum = 0, widest = 0;
    for (int s = 0; s < steps; ++s) {
      size_t live = 0;
      for (int i = 0; i < n; ++i) live += life[i].first >= 0 && life[i].first <= s && s <= life[i].second ? rounded(bytes[i]) : 0;
      widest = std::max(widest, live);
    }
    for (int i = 0; i < n; ++i) {
      if (life[i].first < 0 || bytes[i] == 0) continue;
      sum += rounded(bytes[i]);
      EXPECT_EQ(l.at[i] % 64, 0u);
      EXPECT_LE(l.at[i] + bytes[i], l.bytes);
      for (int j = 0; j < i; ++j) {
        if (life[j].first < 0 || bytes[j] == 0) continue;
        const bool live_together = life[i].first <= life[j].second && life[j].first <= life[i].second;
        const bool apart = l.at[i] + bytes[i] <= l.at[j] || l.at[j] + bytes[j] <= l.at[i];
        EXPECT_TRUE(!live_together || apart) << "trial " << trial << ": temporaries " << j << " and " << i << " overlap";
      }
    }
    EXPECT_LE(l.bytes, sum);
    EXPECT_GE(l.bytes, widest);
  }
}

TEST(Arena, ALayerStackTakesItsWidestStepNotItsSum) {
  // Six layers, each step reading the last layer's activation and writing
  // the next: two are live at a time.
  std::vector<std::pair<int, int>> life;
  for (int i = 0; i < 6; ++i) life.push_back({i, i + 1});
  const ArenaPlanner::Placement l = ArenaPlanner(life).place(std::vector<size_t>(6, 1000));
  EXPECT_EQ(l.bytes, 2 * rounded(1000));
  EXPECT_EQ(l.at[0], l.at[2]);  // the first layer's bytes go to the third
  EXPECT_NE(l.at[0], l.at[1]);
  // What one step reads and writes never share bytes, even when the read
  // is its last.
  const ArenaPlanner::Placement two = ArenaPlanner({{0, 1}, {1, 2}}).place({64, 64});
  EXPECT_NE(two.at[0], two.at[1]);
}

}  // namespace
}  // namespace shapejit::backends::cpu
