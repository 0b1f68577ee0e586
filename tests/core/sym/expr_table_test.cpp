// ExprTable against evaluate(): every expression of a set, each distinct
// subexpression laid out once, on random values (negatives, zeros as
// divisors, products that wrap).
#include "core/sym/expr_table.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace shapejit::sym {
namespace {

Expr s(int i) { return Expr::symbol(i); }

TEST(ExprTable, EvaluatesLikeEvaluateAndSharesSubexpressions) {
  const Expr len = max(Expr(0), min(s(0), s(1) + Expr(1)) - min(s(1), s(0)));  // a slice's length
  const std::vector<Expr> exprs = {
      Expr(7), s(2), len, Expr(48) * len, floordiv(Expr(288) * len, s(3)), mod(s(0) * s(1) + Expr(5), s(3)),
      len * s(2) + Expr(3) * s(0) - Expr(1), min(len, s(2)) * max(s(0), Expr(4)), floordiv(s(0), Expr(3)) + mod(s(1), Expr(-4)),
      s(0) * s(1) * s(2) * s(3) * Expr(1) + Expr(int64_t{1} << 62) * s(2),  // wraps for large values, as evaluate() does
  };
  ExprTable table;
  std::vector<int> slots;
  for (const Expr& e : exprs) slots.push_back(table.add(e));
  EXPECT_EQ(table.add(len), slots[2]) << "one slot per subexpression";
  const size_t size = table.size();
  table.add(Expr(48) * len);
  EXPECT_EQ(table.size(), size) << "an expression added again adds nothing";

  std::mt19937_64 rng(41);
  std::vector<int64_t> out;
  for (int round = 0; round < 2000; ++round) {
    std::vector<int64_t> values(4);
    for (int64_t& v : values) {
      switch (rng() % 4) {
        case 0: v = 0; break;
        case 1: v = static_cast<int64_t>(rng() % 7) - 3; break;
        case 2: v = static_cast<int64_t>(rng() % 100000); break;
        default: v = static_cast<int64_t>(rng()); break;
      }
    }
    table.evaluate(values, out);
    ASSERT_EQ(out.size(), table.size());
    for (size_t i = 0; i < exprs.size(); ++i) {
      ASSERT_EQ(out[slots[i]], evaluate(exprs[i], values)) << exprs[i].str() << " at round " << round;
    }
  }
}

}  // namespace
}  // namespace shapejit::sym
