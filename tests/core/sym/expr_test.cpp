#include "core/sym/expr.h"

#include <gtest/gtest.h>

#include <limits>

#include <memory>
#include <random>
#include <utility>

#include "core/sym/program.h"
#include "core/sym/shape_env.h"

namespace shapejit::sym {
namespace {

Expr s(int i) { return Expr::symbol(i); }

TEST(SymExpr, HashConsingMakesEqualExpressionsIdentical) {
  Expr a = s(0) * s(1) + Expr(3);
  Expr b = Expr(3) + s(1) * s(0);
  EXPECT_EQ(a.node(), b.node());
  EXPECT_EQ(a.hash(), b.hash());
}

TEST(SymExpr, SumsOfProductsAreCanonical) {
  EXPECT_EQ(s(0) + s(0), Expr(2) * s(0));
  EXPECT_EQ(s(0) - s(0), Expr(0));
  EXPECT_EQ((s(0) + Expr(1)) * (s(0) - Expr(1)), s(0) * s(0) - Expr(1));
  EXPECT_EQ((s(0) + s(1)) * Expr(2) - s(1), Expr(2) * s(0) + s(1));
  EXPECT_TRUE((s(0) * Expr(0)).is_const());
}

TEST(SymExpr, FloorDivAndModFollowPython) {
  EXPECT_EQ(floordiv_i64(-7, 2), -4);
  EXPECT_EQ(mod_i64(-7, 2), 1);
  EXPECT_EQ(floordiv_i64(7, -2), -4);
  EXPECT_EQ(mod_i64(7, -2), -1);
  EXPECT_EQ(floordiv(Expr(-7), Expr(2)), Expr(-4));
  EXPECT_EQ(floordiv_i64(5, 0), 0);
  EXPECT_EQ(floordiv_i64(INT64_MIN, -1), INT64_MIN);  // wraps, no UB
}

TEST(SymExpr, DivisionSplitsMultiples) {
  EXPECT_EQ(floordiv(Expr(4) * s(0) + Expr(8), Expr(4)), s(0) + Expr(2));
  EXPECT_EQ(mod(Expr(4) * s(0) + Expr(9), Expr(4)), Expr(1));
  EXPECT_EQ(floordiv(floordiv(s(0), Expr(2)), Expr(3)), floordiv(s(0), Expr(6)));
}

TEST(SymExpr, MinMaxFoldConstantDifferences) {
  EXPECT_EQ(min(s(0) + Expr(1), s(0)), s(0));
  EXPECT_EQ(max(s(0) + Expr(1), s(0)), s(0) + Expr(1));
  EXPECT_EQ(min(s(1), s(0)), min(s(0), s(1)));
}

TEST(SymExpr, PrintsReadably) {
  std::vector<std::string> names = {"b", "t"};
  EXPECT_EQ((Expr(2) * s(0) * s(1) - Expr(3)).str(&names), "2*b*t - 3");
  EXPECT_EQ(floordiv(s(1), Expr(2)).str(&names), "(t // 2)");
  // int64's least, as a constant and as a coefficient (no negation of it).
  const int64_t least = std::numeric_limits<int64_t>::min();
  EXPECT_EQ((s(0) + Expr(least)).str(&names), "b - 9223372036854775808");
  EXPECT_EQ((Expr(least) * s(1) + Expr(1)).str(&names), "-9223372036854775808*t + 1");
}

// A plain expression tree, evaluated directly: the property test's oracle.
struct Ast {
  enum Op { kConst, kSym, kAdd, kSub, kMul, kDiv, kMod, kMin, kMax } op;
  int64_t value = 0;
  std::unique_ptr<Ast> a, b;

  int64_t eval(const std::vector<int64_t>& v) const {
    switch (op) {
      case kConst: return value;
      case kSym: return v[value];
      case kAdd: return a->eval(v) + b->eval(v);
      case kSub: return a->eval(v) - b->eval(v);
      case kMul: return a->eval(v) * b->eval(v);
      case kDiv: return floordiv_i64(a->eval(v), b->eval(v));
      case kMod: return mod_i64(a->eval(v), b->eval(v));
      case kMin: return std::min(a->eval(v), b->eval(v));
      case kMax: return std::max(a->eval(v), b->eval(v));
    }
    return 0;
  }
  Expr build() const {
    switch (op) {
      case kConst: return Expr(value);
      case kSym: return Expr::symbol(static_cast<int>(value));
      case kAdd: return a->build() + b->build();
      case kSub: return a->build() - b->build();
      case kMul: return a->build() * b->build();
      case kDiv: return floordiv(a->build(), b->build());
      case kMod: return mod(a->build(), b->build());
      case kMin: return min(a->build(), b->build());
      case kMax: return max(a->build(), b->build());
    }
    return Expr(0);
  }
};

std::unique_ptr<Ast> random_ast(std::mt19937& rng, int depth) {
  auto ast = std::make_unique<Ast>();
  std::uniform_int_distribution<int> pick(0, depth <= 0 ? 1 : 8);
  int op = pick(rng);
  if (op <= 1) {
    ast->op = op == 0 ? Ast::kConst : Ast::kSym;
    ast->value = op == 0 ? std::uniform_int_distribution<int64_t>(-6, 6)(rng) : std::uniform_int_distribution<int64_t>(0, 3)(rng);
    return ast;
  }
  ast->op = static_cast<Ast::Op>(op);
  ast->a = random_ast(rng, depth - 1);
  if (op == Ast::kDiv || op == Ast::kMod) {  // divisors: non-zero constants, as shapes use them
    ast->b = std::make_unique<Ast>();
    ast->b->op = Ast::kConst;
    int64_t d = std::uniform_int_distribution<int64_t>(1, 5)(rng);
    ast->b->value = std::bernoulli_distribution(0.2)(rng) ? -d : d;
  } else {
    ast->b = random_ast(rng, depth - 1);
  }
  return ast;
}

TEST(SymExpr, PropertySimplifiedAgreesWithUnsimplifiedAtRandomPoints) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 2000; ++trial) {
    auto ast = random_ast(rng, 4);
    Expr e = ast->build();
    Program p = Program::compile(e, [](int id) { return std::make_pair(int32_t{id}, int32_t{0}); });
    for (int point = 0; point < 8; ++point) {
      std::vector<int64_t> v(4);
      for (auto& x : v) x = std::uniform_int_distribution<int64_t>(-20, 20)(rng);
      const int64_t expect = ast->eval(v);
      ASSERT_EQ(evaluate(e, v), expect) << e.str() << " at trial " << trial;
      ASSERT_EQ(p.run([&](int32_t id, int32_t) { return v[id]; }), std::optional<int64_t>(expect)) << e.str();
    }
  }
}

TEST(SymExpr, PropertyRangeSimplificationIsSoundWithinRanges) {
  // Symbols in [2, 40]: ShapeEnv's range-aware simplification must agree
  // with direct evaluation at every point inside the ranges.
  std::mt19937 rng(99);
  ShapeEnv env(true);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(env.input_dim("s" + std::to_string(i), 0, i, std::nullopt).is_ok());
  for (int i = 0; i < 4; ++i) env.set_range(i, {2, 40}, Origin::kBucket);
  for (int trial = 0; trial < 1000; ++trial) {
    auto ast = random_ast(rng, 4);
    Expr e = ast->build();
    Expr r = env.resolve(e);
    Range range = env.range(e);
    for (int point = 0; point < 8; ++point) {
      std::vector<int64_t> v(4);
      for (auto& x : v) x = std::uniform_int_distribution<int64_t>(2, 40)(rng);
      const int64_t expect = ast->eval(v);
      ASSERT_EQ(evaluate(r, v), expect) << e.str() << " simplified to " << r.str();
      ASSERT_TRUE(range.contains(expect)) << e.str() << " = " << expect << " outside [" << range.lo << ", " << range.hi << "]";
    }
  }
}

TEST(SymExpr, AQuotientAndItsRemainderMakeTheWhole) {
  const Expr d = Expr::symbol(0);
  EXPECT_EQ(Expr(3) * floordiv(d, 3) + mod(d, 3), d);
  EXPECT_EQ(Expr(2) * floordiv(d, 3) + mod(d, 3), d - floordiv(d, 3));
  EXPECT_EQ(mod(d, 4) + Expr(4) * floordiv(d, 4) + 1, d + 1);
  // A remainder alone stays one.
  EXPECT_EQ((mod(d, 4) + d).kind(), Kind::kAdd);
}

TEST(ShapeEnv, SimplificationKnowsSizesAreNotNegative) {
  ShapeEnv env(true);
  ASSERT_TRUE(env.input_dim("d", 0, 0, std::nullopt).is_ok());
  const Expr d = Expr::symbol(0);
  EXPECT_EQ(env.resolve(min(d, floordiv(d, 3))), floordiv(d, 3));
  EXPECT_EQ(env.resolve(max(Expr(0), d - floordiv(d, 3))), d - floordiv(d, 3));
  // NumPy's split of d into 3: the last section's end is d itself.
  EXPECT_EQ(env.resolve(min(d, Expr(3) * floordiv(d, 3) + min(Expr(3), mod(d, 3)))), d);
  // A section of a section, as np.split of a head of np.split makes: its
  // end never passes the whole.
  const Expr y = floordiv(d, 3);
  EXPECT_EQ(env.resolve(min(Expr(5) * floordiv(y, 12) + min(Expr(5), mod(y, 12)), y)), Expr(5) * floordiv(y, 12) + min(Expr(5), mod(y, 12)));
  // What is not known stays a min.
  EXPECT_EQ(env.resolve(min(d, Expr(7))).kind(), Kind::kMin);
}

// A block written at `pos` of a dim of n, as Python's bounds clamp it:
// before = [0, min(pos, n)), the block = [min(pos, n), min(pos + 1, n)). The
// block's length is never negative, so the block ends where a read up to
// pos + 1 does; the proof splits on the min added (min(n, pos + 1)).
TEST(ShapeEnv, ABlockBetweenClampedBoundsEndsWhereItsReadEnds) {
  ShapeEnv env(false);
  ASSERT_TRUE(env.input_dim("n", 0, 0, std::nullopt).is_ok());
  ASSERT_TRUE(env.input_dim("pos", 1, 0, std::nullopt).is_ok());
  const Expr n = Expr::symbol(0), pos = Expr::symbol(1);
  const Expr lo = min(pos, n), hi = min(pos + 1, n);
  const Expr length = max(Expr(0), hi - lo);
  EXPECT_EQ(env.resolve(length), hi - lo);
  EXPECT_EQ(env.resolve(min(n, lo + length)), hi);
  EXPECT_TRUE(env.proves_nonneg(hi - lo));
  EXPECT_TRUE(env.proves_nonneg(lo + Expr(1) - hi));
  // What does not hold is not proved: pos + 2 may pass n, or not.
  EXPECT_FALSE(env.proves_nonneg(min(pos + 2, n) - hi - Expr(1)));
  EXPECT_FALSE(env.proves_nonneg(hi - lo - Expr(1)));  // an empty block where pos >= n
  EXPECT_EQ(env.resolve(max(Expr(0), min(pos + 2, n) - lo - Expr(1))).kind(), Kind::kMax);
  EXPECT_EQ(env.resolve(max(Expr(0), hi - min(pos + 2, n))), Expr(0));
}

// A non-const env remembers what it resolved; a binding or a range that
// changes later is seen all the same, and a const env agrees with it.
TEST(ShapeEnv, RememberedAnswersFollowLaterBindingsAndRanges) {
  ShapeEnv env(true);
  const Expr a = env.input_dim("a", 0, 0, 9).value();
  const Expr b = env.input_dim("b", 0, 1, 9).value();
  const Expr capped = min(a, Expr(5)) + b;
  EXPECT_EQ(env.resolve(capped), capped);
  env.set_range(a.symbol_id(), {2, 4}, Origin::kBucket);
  EXPECT_EQ(env.resolve(capped), a + b);
  EXPECT_EQ(std::as_const(env).resolve(capped), a + b);
  ASSERT_TRUE(env.bind(b.symbol_id(), Expr(7), Origin::kShapeCheck).is_ok());
  EXPECT_EQ(env.resolve(capped), a + Expr(7));
  EXPECT_EQ(std::as_const(env).resolve(capped), a + Expr(7));
  // A copy starts without them and answers alike.
  ShapeEnv copy = env;
  EXPECT_EQ(copy.resolve(capped), a + Expr(7));
}

TEST(ShapeEnv, ZeroAndOneAreSpecializedOthersGetRangeTwoUp) {
  ShapeEnv env(true);
  Expr a = env.input_dim("a", 0, 0, 1).value();
  Expr b = env.input_dim("b", 0, 1, 7).value();
  EXPECT_EQ(a, Expr(1));
  EXPECT_TRUE(b.is_symbol());
  EXPECT_EQ(env.range(b).lo, 2);
}

TEST(ShapeEnv, DecisionsByHintAreRecordedAsFacts) {
  ShapeEnv env(true);
  Expr a = env.input_dim("a", 0, 0, 12).value();
  EXPECT_TRUE(env.decide(mod(a, Expr(4)), Rel::kEq, Origin::kShapeCheck).value());
  ASSERT_EQ(env.facts().size(), 1u);
  // The same question again is answered by the fact, not recorded twice.
  EXPECT_TRUE(env.decide(mod(a, Expr(4)), Rel::kEq, Origin::kShapeCheck).value());
  EXPECT_EQ(env.facts().size(), 1u);
  // Provable questions record nothing.
  EXPECT_TRUE(env.decide(a - Expr(1), Rel::kGe, Origin::kShapeCheck).value());
  EXPECT_EQ(env.facts().size(), 1u);
}

TEST(ShapeEnv, UnifyBindsTheNewerSymbol) {
  ShapeEnv env(true);
  Expr a = env.input_dim("a", 0, 0, 5).value();
  Expr b = env.input_dim("b", 1, 0, 5).value();
  EXPECT_TRUE(env.unify(a, b, Origin::kBroadcast).value());
  EXPECT_EQ(env.resolve(b), a);
  Expr c = env.input_dim("c", 2, 0, 6).value();
  EXPECT_FALSE(env.unify(a, c, Origin::kBroadcast).value());
}

TEST(ShapeEnv, UnifyWithAnExpressionOfTheSymbolItselfRecordsAFact) {
  // A write's block min(n, p + k) - p against the value's k: k cannot be
  // bound to an expression of k; the equality is a fact the guards keep.
  ShapeEnv env(true);
  Expr n = env.input_dim("n", 0, 0, 8).value();
  Expr k = env.input_dim("k", 1, 0, 3).value();
  Expr p = env.input_dim("p", 2, 0, 4).value();
  Expr block = min(n, p + k) - p;
  EXPECT_TRUE(env.unify(k, block, Origin::kBroadcast).value());
  EXPECT_TRUE(env.resolve(k).is_symbol());
  ASSERT_EQ(env.facts().size(), 1u);
  EXPECT_EQ(env.facts()[0].rel, Rel::kEq);
  EXPECT_TRUE(env.unify(block, k, Origin::kBroadcast).value());  // answered by the fact
  EXPECT_EQ(env.facts().size(), 1u);
}

TEST(ShapeEnv, DataDependentDecisionIsAGraphBreak) {
  ShapeEnv env(true);
  Expr a = env.input_dim("a", 0, 0, 5).value();
  Expr u = env.new_unbacked(a * Expr(3));
  EXPECT_EQ(env.range(u).lo, 0);
  auto d = env.decide(u - Expr(4), Rel::kGe, Origin::kShapeCheck);
  ASSERT_FALSE(d.is_ok());
  EXPECT_EQ(d.status().code(), Code::kGraphBreak);
}

TEST(ShapeEnv, SpecializationRoundTripsAndHashesStably) {
  ShapeEnv env(true);
  Expr a = env.input_dim("a", 0, 0, 5).value();
  ASSERT_TRUE(env.decide(mod(a, Expr(5)), Rel::kEq, Origin::kShapeCheck).is_ok());
  Specialization spec = env.specialization();
  ShapeEnv again = ShapeEnv::from_specialization(spec);
  EXPECT_EQ(again.specialization().hash(), spec.hash());
  // Without hints, the recorded fact still answers the question.
  EXPECT_TRUE(again.decide(mod(a, Expr(5)), Rel::kEq, Origin::kShapeCheck).value());
  ShapeEnv other(true);
  ASSERT_TRUE(other.input_dim("a", 0, 0, 5).is_ok());
  EXPECT_NE(other.specialization().hash(), spec.hash());
}

}  // namespace
}  // namespace shapejit::sym

namespace shapejit::sym {
namespace {

TEST(SymExpr, OverflowIsCountedNotSilentlyWrapped) {
  {
    OverflowWatch w;
    Expr e = Expr(INT64_MAX) + Expr(1);
    (void)e;
    EXPECT_TRUE(w.overflowed());
  }
  {
    OverflowWatch w;
    Expr s = Expr::symbol(0);
    Expr e = (s + Expr(INT64_MAX)) + Expr(INT64_MAX);  // the constant term overflows
    (void)e;
    EXPECT_TRUE(w.overflowed());
  }
  OverflowWatch quiet;
  EXPECT_EQ(min(Expr(INT64_MAX), Expr(-5)), Expr(-5));  // no difference needed: nothing overflows
  EXPECT_EQ(difference(Expr(INT64_MIN), Expr(1)), std::nullopt);
  EXPECT_FALSE(quiet.overflowed());
}

TEST(SymExpr, ProgramsReportOverflowInsteadOfWrapping) {
  Expr e = Expr::symbol(0) * Expr::symbol(1) + Expr(1);
  Program p = Program::compile(e, [](int id) { return std::make_pair(int32_t{id}, int32_t{0}); });
  std::vector<int64_t> ok = {3, 4}, big = {int64_t{1} << 62, 4};
  EXPECT_EQ(p.run([&](int32_t id, int32_t) { return ok[id]; }), std::optional<int64_t>(13));
  EXPECT_EQ(p.run([&](int32_t id, int32_t) { return big[id]; }), std::nullopt);
}

// ceil(n / step) for a huge step, as a slice's length is written: moving
// the constant into [0, step) would overflow at run time where the
// expression itself does not (x[0:3:2**63-1]).
TEST(SymExpr, AHugeDivisorKeepsTheConstantWhereItIs) {
  const Expr n = Expr::symbol(0);
  for (const int64_t step : {INT64_MAX, (int64_t{1} << 31) + 1, int64_t{1} << 40}) {
    const Expr len = floordiv(n - Expr(1), Expr(step)) + Expr(1);
    Program p = Program::compile(len, [](int id) { return std::make_pair(int32_t{id}, int32_t{0}); });
    for (const int64_t v : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{1} << 40}) {
      EXPECT_EQ(p.run([&](int32_t, int32_t) { return v; }), std::optional<int64_t>(v == 0 ? 0 : (v - 1) / step + 1)) << step << " " << v;
    }
  }
  // A small divisor still moves it, as before: floordiv(n + 3, 4) - 1 + 1.
  EXPECT_EQ(floordiv(n - Expr(1), Expr(4)) + Expr(1), floordiv(n + Expr(3), Expr(4)));
}

// A symbol divides a sum of its multiples (reshape(n, -1) of an n x n x 1
// array asks whether n * n % n is 0): 0 with no hint, as it is when n is 0
// (x % 0 is 0). The quotient is not simplified: 2 * n // n is 0 at n = 0.
TEST(SymExpr, ASymbolDividesItsMultiples) {
  const Expr n = Expr::symbol(0), m = Expr::symbol(1);
  EXPECT_EQ(mod(n * n, n), Expr(0));
  EXPECT_EQ(mod(Expr(2) * n + n * m, n), Expr(0));
  EXPECT_NE(mod(n * n + Expr(1), n), Expr(0));
  EXPECT_NE(mod(m, n), Expr(0));
  for (const int64_t v : {int64_t{0}, int64_t{1}, int64_t{7}}) {
    EXPECT_EQ(evaluate(floordiv(Expr(2) * n, n), std::vector<int64_t>{v, 0}), v == 0 ? 0 : 2) << v;
  }
}

}  // namespace
}  // namespace shapejit::sym
