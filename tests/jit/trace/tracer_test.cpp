// The Tracer, as an interpreter drives it (DESIGN.md, Observation): sizes
// are SymInts that record nothing, arithmetic on them is traced, and only
// guard_int and guard_bool specialize, each in its own way.
#include "jit/trace/tracer.h"

#include <gtest/gtest.h>

namespace shapejit::trace {
namespace {

using ir::Op;

// A tracer over one f32 input of symbolic dims, with this call's sizes.
std::unique_ptr<Tracer> tracer_for(std::vector<int64_t> sizes, TraceOptions options = {}) {
  ir::InputSpec x{"x", ir::DType::kF32, {}};
  for (size_t d = 0; d < sizes.size(); ++d) x.shape.push_back(ir::DimSpec::symbol("s" + std::to_string(d)));
  auto t = Tracer::create({x}, {sizes}, std::move(options));
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return std::move(t).value();
}

const sym::Symbol& symbol_of(const Tracer& t, int dim) { return t.env().symbols()[dim]; }

TEST(Tracer, ASizeIsASymIntAndRecordsNothing) {
  auto t = tracer_for({4, 96});
  const Tracer::Value n = std::move(t->size(t->input(0), 1)).value();
  EXPECT_FALSE(t->is_tensor(n));
  EXPECT_FALSE(symbol_of(*t, 1).binding.has_value());
  ASSERT_TRUE(t->output(t->input(0)).is_ok());
  const Trace done = std::move(*t).finish();
  EXPECT_TRUE(done.observed.empty());
  EXPECT_TRUE(done.env.facts().empty());
}

TEST(Tracer, ArithmeticOnSizesIsTracedAndTheShapeStaysSymbolic) {
  auto t = tracer_for({4, 96});
  const Tracer::Value n = std::move(t->size(t->input(0), 1)).value();
  const Tracer::Value n2 = std::move(t->op(Op::kSymMul, {n, int64_t{2}})).value();
  // x as [1, s0, s1], expanded to [2 * s1, s0, s1]: a target computed from
  // a size.
  const Tracer::Value e = std::move(t->op(Op::kUnsqueeze, {t->input(0)}, [] {
                                   ir::Attrs a;
                                   a.present = ir::kAttrDim;
                                   a.dim = 0;
                                   return a;
                                 }()))
                              .value();
  const Tracer::Value big = std::move(t->op(Op::kExpand, {e, n2, int64_t{-1}, int64_t{-1}})).value();
  ASSERT_TRUE(t->output(big).is_ok());
  const Trace done = std::move(*t).finish();
  // [2 * s1, s0, s1]: the first dim is an expression, not 192.
  const std::vector<sym::Expr>& shape = done.types[big.id].shape;
  ASSERT_EQ(shape.size(), 3u);
  EXPECT_FALSE(shape[0].as_const().has_value()) << shape[0].str();
  EXPECT_FALSE(done.env.symbols()[1].binding.has_value());
  EXPECT_TRUE(done.observed.empty());
}

TEST(Tracer, GuardIntReturnsTheValueAndPinsTheDim) {
  auto t = tracer_for({4, 96});
  const Tracer::Value n = std::move(t->size(t->input(0), 1)).value();
  Expected<int64_t> v = t->guard_int(n, "x.size(1)");
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(*v, 96);
  const sym::Symbol& s = symbol_of(*t, 1);
  ASSERT_TRUE(s.binding.has_value());
  EXPECT_EQ(s.binding->as_const(), 96);
  EXPECT_EQ(s.binding_origin, sym::Origin::kObservedInt);
  EXPECT_EQ(s.binding_label, "x.size(1)");
  const Trace done = std::move(*t).finish();
  ASSERT_EQ(done.observed.size(), 1u);
  EXPECT_TRUE(done.observed[0].as_int);
  EXPECT_EQ(done.observed[0].input, 0);
  EXPECT_EQ(done.observed[0].dim, 1);
}

TEST(Tracer, GuardBoolGuardsThePredicateNotTheValue) {
  auto t = tracer_for({4, 96});
  const Tracer::Value n = std::move(t->size(t->input(0), 1)).value();
  Expected<bool> longer = t->guard_bool(Cmp::kGt, n, int64_t{512});
  ASSERT_TRUE(longer.is_ok()) << longer.status().to_string();
  EXPECT_FALSE(*longer);
  EXPECT_FALSE(symbol_of(*t, 1).binding.has_value());  // 96 is not pinned
  const Trace done = std::move(*t).finish();
  ASSERT_EQ(done.observed.size(), 1u);
  EXPECT_FALSE(done.observed[0].as_int);
  EXPECT_EQ(done.observed[0].cmp, Cmp::kGt);
  EXPECT_EQ(done.observed[0].value, 512);
  ASSERT_FALSE(done.env.facts().empty());
  EXPECT_EQ(done.env.facts().back().origin, sym::Origin::kObservedBool);
}

TEST(Tracer, GuardIntOnADimThePolicyBackedOffIsAGraphBreak) {
  TraceOptions options;
  options.on_guard_int = [](int input, int dim) {
    return dim == 1 ? IntUse::break_graph("input " + std::to_string(input) + " dim 1 backed off") : IntUse::specialize();
  };
  auto t = tracer_for({4, 96}, std::move(options));
  EXPECT_EQ(std::move(t->guard_int(std::move(t->size(t->input(0), 0)).value())).value(), 4);  // dim 0 may specialize
  Expected<int64_t> v = t->guard_int(std::move(t->size(t->input(0), 1)).value());
  ASSERT_FALSE(v.is_ok());
  EXPECT_EQ(v.status().code(), Code::kGraphBreak);
  EXPECT_NE(v.status().message().find("dim 1 backed off"), std::string::npos) << v.status().message();
  EXPECT_TRUE(t->broke());  // the site caches such a break
  EXPECT_FALSE(symbol_of(*t, 1).binding.has_value());
}

TEST(Tracer, ASizePastInt64IsABreakTheSiteDoesNotCache) {
  // Two literals whose product is past int64: a break naming the node, for
  // the interpreter's own integers to take; not cached. (A product of
  // symbols stays symbolic here, and is checked before a kernel runs.)
  auto t = tracer_for({4});
  const int before = t->graph().num_values();
  Expected<Tracer::Value> v = t->op(Op::kSymMul, {int64_t{7076848157591502291}, int64_t{6568354127924251048}});
  ASSERT_FALSE(v.is_ok());
  EXPECT_EQ(v.status().code(), Code::kGraphBreak) << v.status().to_string();
  EXPECT_EQ(v.status().detail(), Detail::kOverflow);
  EXPECT_NE(v.status().message().find("overflows int64"), std::string::npos) << v.status().message();
  EXPECT_FALSE(t->broke());
  EXPECT_EQ(t->graph().num_values(), before);
}

TEST(Tracer, ABreakTheInterpreterReportsIsMarkedAsFollowingFromTheTrace) {
  auto t = tracer_for({4});
  EXPECT_FALSE(t->broke());
  Status s = t->break_graph("bool(tensor)");
  EXPECT_EQ(s.code(), Code::kGraphBreak);
  EXPECT_TRUE(t->broke());
}

TEST(Tracer, AnOpThatDoesNotCheckNamesItAndLeavesTheTraceAsItWas) {
  auto t = tracer_for({4, 96});
  const int before = t->graph().num_values();
  Expected<Tracer::Value> bad = t->op(Op::kMatmul, {t->input(0), t->input(0)});  // [4, 96] @ [4, 96]
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("matmul"), std::string::npos) << bad.status().message();
  EXPECT_EQ(t->graph().num_values(), before);
  Expected<Tracer::Value> arity = t->op(Op::kExp, {t->input(0), t->input(0)});
  ASSERT_FALSE(arity.is_ok());
  EXPECT_NE(arity.status().message().find("trace: op 'exp': wrong number of operands (2)"), std::string::npos) << arity.status().message();
}

TEST(Tracer, ASymIntIsNotAnOutputAndATensorIsNotASymInt) {
  auto t = tracer_for({4});
  const Tracer::Value n = std::move(t->size(t->input(0), 0)).value();
  EXPECT_NE(t->output(n).message().find("is a SymInt"), std::string::npos);
  Expected<int64_t> v = t->guard_int(t->input(0));
  ASSERT_FALSE(v.is_ok());
  EXPECT_NE(v.status().message().find("is a tensor, not a SymInt"), std::string::npos) << v.status().message();
}

TEST(Tracer, ReplayingAGraphAndItsObservationsGivesTheSameDecisions) {
  auto first = tracer_for({4, 96});
  const Tracer::Value y = std::move(first->op(Op::kExp, {first->input(0)})).value();
  ASSERT_TRUE(first->guard_int(std::move(first->size(first->input(0), 1)).value()).is_ok());
  ASSERT_TRUE(first->output(y).is_ok());
  const Trace recorded = std::move(*first).finish();

  auto again = tracer_for({4, 96});
  for (const ir::Node& node : recorded.graph.nodes) {
    // sym_size nodes too: a replay adds every node the trace had.
    ASSERT_TRUE(again->append(node, recorded.graph.value_names[node.out[0]]).is_ok());
  }
  for (const Observation& o : recorded.observed) ASSERT_TRUE(again->observe(o).is_ok());
  for (int o : recorded.graph.outputs) ASSERT_TRUE(again->output(Tracer::Value{o}).is_ok());
  const Trace replayed = std::move(*again).finish();
  EXPECT_EQ(replayed.graph.canonical_hash(), recorded.graph.canonical_hash());
  EXPECT_EQ(replayed.env.specialization().hash(), recorded.env.specialization().hash());
}

TEST(Tracer, AnObservationOfADimTheInputLacksIsAnError) {
  auto t = tracer_for({4});
  Status s = t->observe({0, 3, true, Cmp::kEq, 0});
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("input 0 dim 3: no such dim"), std::string::npos) << s.message();
}

TEST(Tracer, ComparisonNamesRoundTrip) {
  for (Cmp c : {Cmp::kEq, Cmp::kNe, Cmp::kLt, Cmp::kLe, Cmp::kGt, Cmp::kGe}) EXPECT_EQ(parse_cmp(cmp_name(c)), c);
  EXPECT_FALSE(parse_cmp("approx").has_value());
}

}  // namespace
}  // namespace shapejit::trace
