// The specialized graph's size checks (core/ir/specialize.h): what could
// leave int64 at some call is checked, what the symbols' ranges keep within
// it is not, and a check that stays still fails where the size overflows.
#include "core/ir/specialize.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "backends/backend.h"
#include "core/ir/graph_json.h"
#include "core/ir/infer.h"

namespace shapejit::ir {
namespace {

SpecializedGraphPtr specialized(const std::string& json, const ShapeHints& hints) {
  Graph g = std::move(parse_graph(json)).value();
  sym::ShapeEnv env;
  EXPECT_TRUE(infer(g, env, &hints).is_ok());
  Expected<SpecializedGraphPtr> sg = specialize(g, env.specialization());
  EXPECT_TRUE(sg.is_ok()) << sg.status().to_string();
  return std::move(sg).value();
}

std::vector<std::string> checked(const SpecializedGraph& g) {
  std::vector<std::string> out;
  for (const SizeCheck& c : g.size_checks) out.push_back(c.what);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

TEST(Specialize, ChecksOnlyTheSizesTheRangesCannotKeepWithinInt64) {
  // x[1:, :-1] * 2 of an [n, m] input (symbols s0, s1): the slices'
  // lengths (s0 - 1, s1 - 1) are within 2^62, their element counts are not
  // proved to be.
  const SpecializedGraphPtr g = specialized(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n", "m"]}],
    "nodes": [{"op": "slice", "in": ["x", 1, 4611686018427387904, 1], "out": "a", "attrs": {"dim": 0}},
              {"op": "slice", "in": ["a", 0, -1, 1], "out": "b", "attrs": {"dim": 1}},
              {"op": "mul", "in": ["b", 2.0], "out": "y"}],
    "outputs": ["y"]})", {{6, 5}});
  const std::vector<std::string> c = checked(*g);
  EXPECT_FALSE(has(c, "s0 - 1")) << ::testing::PrintToString(c);
  EXPECT_FALSE(has(c, "s1 - 1")) << ::testing::PrintToString(c);
  EXPECT_TRUE(has(c, "s0*s1")) << ::testing::PrintToString(c);
  // The product that stays is checked: past int64 it is an overflow error.
  const std::vector<int64_t> symbols = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_TRUE(backends::check_sizes(*g, std::vector<int64_t>{6, 5}, false).is_ok());
  const Status s = backends::check_sizes(*g, symbols, false);
  EXPECT_EQ(s.detail(), Detail::kOverflow) << s.to_string();
}

}  // namespace
}  // namespace shapejit::ir
