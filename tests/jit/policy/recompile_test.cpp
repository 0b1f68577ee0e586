// Recompile behaviour under each policy, written like PyTorch's recompile
// tests: a sequence of call shapes, then the number of compiles and traces
// and the reasons.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "tests/support/test_util.h"

namespace shapejit {
namespace {

using testing::ArgPack;
using testing::make_jit;

// Traces `x * y` for 1-D inputs, counting how often the interpreter traced.
struct MulSite {
  int traces = 0;
  runtime::TraceFn fn = [this](trace::Tracer& t) -> Status {
    ++traces;
    auto z = SJ_TRY(t.op(ir::Op::kMul, {t.input(0), t.input(1)}));
    return t.output(z);
  };
};

Status call_mul(runtime::Jit& jit, MulSite& site, int64_t n) {
  ArgPack p;
  p.add(testing::zeros(ir::DType::kF32, {n}));
  p.add(testing::zeros(ir::DType::kF32, {n}));
  std::vector<ir::Tensor> out;
  Status s = jit.call("mul", p.args(), site.fn, out);
  if (s.is_ok()) {
    EXPECT_EQ(out.at(0).shape(), std::vector<int64_t>{n});
  }
  return s;
}

uint64_t compiles(const runtime::Jit& jit, const std::string& site = "mul") { return jit.stats_json()["sites"][site]["compiles"].get<uint64_t>(); }

std::string config_with(const std::string& policy) { return R"({"policy": )" + policy + "}"; }

const std::vector<int64_t> kSizes = {2, 3, 4, 4, 5, 5, 6};

TEST(Recompile, AlwaysStaticCompilesOncePerShape) {
  auto jit = make_jit(config_with(R"({"mode": "always_static"})"));
  MulSite site;
  for (int64_t n : kSizes) ASSERT_TRUE(call_mul(*jit, site, n).is_ok());
  EXPECT_EQ(compiles(*jit), 5u);
  // Only policy guards failed: the graph was traced once and re-specialized.
  EXPECT_EQ(site.traces, 1);
}

TEST(Recompile, StartStaticBackoffOneGoesDynamicOnFirstRecompile) {
  auto jit = make_jit(config_with(R"({"mode": "start_static", "backoff_after": 1})"));
  MulSite site;
  for (int64_t n : kSizes) ASSERT_TRUE(call_mul(*jit, site, n).is_ok());
  EXPECT_EQ(compiles(*jit), 2u);
  EXPECT_EQ(site.traces, 1);
  EXPECT_EQ(jit->site("mul").dim_state(0, 0), policy::DimState::kBackedOff);
}

TEST(Recompile, StartDynamicCompilesOnce) {
  auto jit = make_jit(config_with(R"({"mode": "start_dynamic"})"));
  MulSite site;
  for (int64_t n : kSizes) ASSERT_TRUE(call_mul(*jit, site, n).is_ok());
  EXPECT_EQ(compiles(*jit), 1u);
}

TEST(Recompile, AlwaysDynamicCompilesOnce) {
  auto jit = make_jit(config_with(R"({"mode": "always_dynamic"})"));
  MulSite site;
  for (int64_t n : kSizes) ASSERT_TRUE(call_mul(*jit, site, n).is_ok());
  EXPECT_EQ(compiles(*jit), 1u);
}

TEST(Recompile, DefaultConfigIsStartDynamic) {
  auto jit = make_jit("{}");
  MulSite site;
  for (int64_t n : kSizes) ASSERT_TRUE(call_mul(*jit, site, n).is_ok());
  EXPECT_EQ(compiles(*jit), 1u);
}

TEST(Recompile, SizesZeroAndOneAreSpecialized) {
  auto jit = make_jit("{}");
  MulSite site;
  for (int64_t n : {5, 1, 7, 0, 1, 9}) ASSERT_TRUE(call_mul(*jit, site, n).is_ok());
  // One entry for n >= 2, one for 1, one for 0; each 0/1 change retraces.
  EXPECT_EQ(compiles(*jit), 3u);
  EXPECT_EQ(site.traces, 3);
}

TEST(Recompile, ZeroOneSpecializationCanBeTurnedOff) {
  auto jit = make_jit(config_with(R"({"specialize_zero_one": false})"));
  MulSite site;
  for (int64_t n : {5, 1, 7, 0, 1, 9}) ASSERT_TRUE(call_mul(*jit, site, n).is_ok());
  EXPECT_EQ(compiles(*jit), 1u);
}

TEST(Recompile, CacheLimitWithEagerRunsTheRestEagerly) {
  std::vector<std::string> log;
  auto jit = make_jit(config_with(R"({"mode": "always_static", "cache_size_limit": 8, "on_limit": "eager"})"), &log);
  MulSite site;
  for (int64_t n = 2; n <= 11; ++n) ASSERT_TRUE(call_mul(*jit, site, n).is_ok());
  auto stats = jit->stats_json()["sites"]["mul"];
  EXPECT_EQ(stats["compiles"], 8u);
  EXPECT_EQ(stats["eager_calls"], 2u);
  int warnings = 0;
  for (const auto& line : log) warnings += line.find("warning") != std::string::npos;
  EXPECT_EQ(warnings, 1);
  // Earlier sizes still hit their entries.
  const uint64_t hits_before = stats["hits"];
  for (int64_t n = 2; n <= 9; ++n) ASSERT_TRUE(call_mul(*jit, site, n).is_ok());
  stats = jit->stats_json()["sites"]["mul"];
  EXPECT_EQ(stats["hits"].get<uint64_t>(), hits_before + 8);
  EXPECT_EQ(stats["compiles"], 8u);
}

TEST(Recompile, CacheLimitWithDynamicAddsOneGenericEntry) {
  auto jit = make_jit(config_with(R"({"mode": "always_static", "cache_size_limit": 3, "on_limit": "dynamic"})"));
  MulSite site;
  for (int64_t n = 2; n <= 10; ++n) ASSERT_TRUE(call_mul(*jit, site, n).is_ok());
  auto stats = jit->stats_json()["sites"]["mul"];
  EXPECT_EQ(stats["compiles"], 4u);  // 3 static + 1 generic
  EXPECT_EQ(stats["eager_calls"], 0u);
  EXPECT_EQ(stats["hits"], 5u);  // sizes 6..10 hit the generic entry
}

// An interpreter that needs x.size(1) as an integer and branches on x.size(0).
struct NeedsInt {
  int traces = 0;
  std::vector<Status> guard_results;
  runtime::TraceFn fn = [this](trace::Tracer& t) -> Status {
    ++traces;
    auto x = t.input(0);
    auto n1 = SJ_TRY(t.size(x, 1));
    auto n0 = SJ_TRY(t.size(x, 0));
    bool is_ten = SJ_TRY(t.guard_bool(trace::Cmp::kEq, n0, int64_t{10}, "batch == 10"));
    auto v = t.guard_int(n1, "x.size(1)");
    guard_results.push_back(v.status());
    if (!v.is_ok()) return v.status();
    auto y = SJ_TRY(t.op(ir::Op::kMul, {x, is_ten ? 2.0 : 3.0}));
    return t.output(y);
  };
};

Status call_x(runtime::Jit& jit, NeedsInt& site, int64_t b, int64_t n) {
  ArgPack p;
  p.add(testing::zeros(ir::DType::kF32, {b, n}));
  std::vector<ir::Tensor> out;
  return jit.call("x", p.args(), site.fn, out);
}

TEST(Recompile, GuardIntSpecializesThenBacksOffToGraphBreak) {
  std::vector<std::string> log;
  auto jit = make_jit("{}", &log);
  NeedsInt site;
  ASSERT_TRUE(call_x(*jit, site, 4, 16).is_ok());
  EXPECT_EQ(jit->site("x").dim_state(0, 1), policy::DimState::kDynamic);
  ASSERT_TRUE(call_x(*jit, site, 4, 16).is_ok());  // a hit
  EXPECT_EQ(site.traces, 1);
  ASSERT_TRUE(call_x(*jit, site, 4, 17).is_ok());  // recompile #1: still static
  EXPECT_EQ(site.traces, 2);
  Status s = call_x(*jit, site, 4, 18);            // recompile #2 reaches backoff_after
  EXPECT_EQ(s.code(), Code::kGraphBreak) << s.to_string();
  EXPECT_NE(s.message().find("backed off"), std::string::npos) << s.message();
  EXPECT_EQ(jit->site("x").dim_state(0, 1), policy::DimState::kBackedOff);
  auto stats = jit->stats_json()["sites"]["x"];
  EXPECT_EQ(stats["compiles"], 2u);
  EXPECT_EQ(stats["graph_breaks"], 1u);
  // Only the recompile that produced an entry is counted; the second one
  // became a GraphBreak.
  EXPECT_EQ(stats["recompile_reasons"]["interpreter needs int"], 1u);
  // The recompile line names the failed guard, expected and actual, and origin.
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log[0].find("site x: recompile #1: input 0 dim 1 == 16 failed (got 17), origin: interpreter needs int 'x.size(1)'"), std::string::npos) << log[0];
}

TEST(Recompile, GuardBoolGuardsOnlyThePredicate) {
  auto jit = make_jit("{}");
  NeedsInt site;
  ASSERT_TRUE(call_x(*jit, site, 4, 16).is_ok());
  // Batch changes but stays != 10: the predicate still holds, no recompile.
  ASSERT_TRUE(call_x(*jit, site, 5, 16).is_ok());
  ASSERT_TRUE(call_x(*jit, site, 300, 16).is_ok());
  EXPECT_EQ(site.traces, 1);
  // Batch == 10 flips the branch: a retrace with a different graph.
  ASSERT_TRUE(call_x(*jit, site, 10, 16).is_ok());
  EXPECT_EQ(site.traces, 2);
  auto stats = jit->stats_json()["sites"]["x"];
  EXPECT_EQ(stats["recompile_reasons"]["interpreter branch"], 1u);
}

// An interpreter that needs the size as an int only for short inputs.
struct ShortNeedsInt {
  int traces = 0;
  runtime::TraceFn fn = [this](trace::Tracer& t) -> Status {
    ++traces;
    auto x = t.input(0);
    auto n = SJ_TRY(t.size(x, 0));
    bool big = SJ_TRY(t.guard_bool(trace::Cmp::kGt, n, int64_t{100}));
    if (!big) SJ_TRY(t.guard_int(n));
    return t.output(SJ_TRY(t.op(big ? ir::Op::kExp : ir::Op::kNeg, {x})));
  };
};

Status call_1d(runtime::Jit& jit, const runtime::TraceFn& fn, int64_t n) {
  ArgPack p;
  p.add(testing::zeros(ir::DType::kF32, {n}));
  std::vector<ir::Tensor> out;
  return jit.call("f", p.args(), fn, out);
}

TEST(Recompile, GuardBoolOnABackedOffDimGuardsThePredicateOnly) {
  auto jit = make_jit(config_with(R"({"backoff_after": 1})"));
  ShortNeedsInt site;
  ASSERT_TRUE(call_1d(*jit, site.fn, 16).is_ok());
  EXPECT_EQ(call_1d(*jit, site.fn, 17).code(), Code::kGraphBreak);  // backoff_after 1: dynamic at once
  ASSERT_EQ(site.traces, 2);
  // Past 100 the interpreter no longer needs the int: one dynamic entry,
  // guarded by the branch's predicate only.
  ASSERT_TRUE(call_1d(*jit, site.fn, 200).is_ok());
  ASSERT_EQ(site.traces, 3);
  ASSERT_TRUE(call_1d(*jit, site.fn, 300).is_ok());
  ASSERT_TRUE(call_1d(*jit, site.fn, 5000).is_ok());
  EXPECT_EQ(site.traces, 3);
}

TEST(Recompile, ACachedGraphBreakNeedsNoRetrace) {
  auto jit = make_jit(config_with(R"({"backoff_after": 1})"));
  ShortNeedsInt site;
  ASSERT_TRUE(call_1d(*jit, site.fn, 16).is_ok());
  EXPECT_EQ(call_1d(*jit, site.fn, 17).code(), Code::kGraphBreak);
  const int traces = site.traces;
  // Short inputs keep breaking, answered from the cached break: no trace.
  for (int64_t n : {18, 50, 99}) {
    Status s = call_1d(*jit, site.fn, n);
    EXPECT_EQ(s.code(), Code::kGraphBreak) << n;
    EXPECT_NE(s.message().find("backed off"), std::string::npos) << s.message();
  }
  EXPECT_EQ(site.traces, traces);
  EXPECT_TRUE(call_1d(*jit, site.fn, 16).is_ok());  // 16 keeps its compiled entry
  auto stats = jit->stats_json()["sites"]["f"];
  EXPECT_EQ(stats["graph_breaks"], 4u);
  EXPECT_EQ(stats["compiles"], 1u);
  EXPECT_EQ(stats["entries"], 1u);
}

// An interpreter whose function raises an error of its own past 8
// elements (as NumPy's IndexError for an index past a size), decided by a
// predicate on the size.
struct RaisesPastEight {
  int traces = 0;
  runtime::TraceFn fn = [this](trace::Tracer& t) -> Status {
    ++traces;
    auto x = t.input(0);
    auto n = SJ_TRY(t.size(x, 0));
    if (SJ_TRY(t.guard_bool(trace::Cmp::kGt, n, int64_t{8}))) return t.raise_error("IndexError#" + std::to_string(traces));
    return t.output(SJ_TRY(t.op(ir::Op::kNeg, {x})));
  };
};

TEST(Recompile, ACachedErrorNeedsNoRetraceUntilItIsForgotten) {
  auto jit = make_jit("{}");
  RaisesPastEight site;
  Status s = call_1d(*jit, site.fn, 9);
  EXPECT_EQ(s.code(), Code::kRaised) << s.to_string();
  EXPECT_EQ(s.message(), "IndexError#1");  // the interpreter's label, as it gave it
  for (int64_t n : {10, 50, 9}) EXPECT_EQ(call_1d(*jit, site.fn, n).message(), "IndexError#1") << n;
  EXPECT_EQ(site.traces, 1);
  EXPECT_TRUE(call_1d(*jit, site.fn, 4).is_ok());  // the other side of the predicate compiles
  EXPECT_EQ(site.traces, 2);
  jit->site("f").forget_raised();  // what the function reads changed: traced again, once
  EXPECT_EQ(call_1d(*jit, site.fn, 12).message(), "IndexError#3");
  EXPECT_EQ(call_1d(*jit, site.fn, 13).message(), "IndexError#3");
  EXPECT_TRUE(call_1d(*jit, site.fn, 5).is_ok());  // the compiled entry stays
  EXPECT_EQ(site.traces, 3);
  auto stats = jit->stats_json()["sites"]["f"];
  EXPECT_EQ(stats["compiles"], 1u);
  EXPECT_EQ(stats["entries"], 1u);
  EXPECT_NE(jit->site("f").explain().find("raises (IndexError#3)"), std::string::npos) << jit->site("f").explain();
}

TEST(Recompile, PolicyOnlyFailureDoesNotRetrace) {
  std::vector<std::string> log;
  auto jit = make_jit(config_with(R"({"mode": "start_static", "backoff_after": 3})"), &log);
  MulSite site;
  ASSERT_TRUE(call_mul(*jit, site, 4).is_ok());
  ASSERT_TRUE(call_mul(*jit, site, 5).is_ok());
  ASSERT_TRUE(call_mul(*jit, site, 6).is_ok());
  EXPECT_EQ(site.traces, 1);
  EXPECT_EQ(compiles(*jit), 3u);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_NE(log[0].find("origin: policy static"), std::string::npos) << log[0];
  EXPECT_NE(log[0].find("reused the trace"), std::string::npos) << log[0];
}

TEST(Recompile, AlwaysDynamicMakesGuardIntAGraphBreak) {
  auto jit = make_jit(config_with(R"({"mode": "always_dynamic"})"));
  NeedsInt site;
  Status s = call_x(*jit, site, 4, 16);
  EXPECT_EQ(s.code(), Code::kGraphBreak);
  EXPECT_NE(s.message().find("always_dynamic"), std::string::npos);
}

TEST(Recompile, BucketedCompilesOncePerBucket) {
  auto jit = make_jit(config_with(R"({"mode": "bucketed", "buckets": {"kind": "pow2", "min": 16, "max": 1024}})"));
  MulSite site;
  for (int64_t n : {3, 9, 16, 17, 20, 32, 33, 64, 100, 1000, 2000, 5000}) ASSERT_TRUE(call_mul(*jit, site, n).is_ok());
  // Buckets: [2,16] [17,32] [33,64] [65,128] [513,1024] [1025,inf)
  EXPECT_EQ(compiles(*jit), 6u);
  EXPECT_EQ(site.traces, 1);
  auto reasons = jit->stats_json()["sites"]["mul"]["recompile_reasons"];
  EXPECT_EQ(reasons["policy bucket"], 5u);
}

// A bucket narrows the range the trace decided under: min(2^62, n), which
// the trace compared on its hint, is plain n in [2, 16], so the entry's
// inference asks a question (is n - min(3, n) a size?) that no recorded
// fact answers. The call's sizes answer it, and the answer is guarded.
TEST(Recompile, ABucketsNarrowerRangeIsDecidedOnTheCallsSizes) {
  auto jit = make_jit(config_with(R"({"mode": "bucketed", "buckets": {"kind": "pow2", "min": 16, "max": 1024}})"));
  int traces = 0;
  runtime::TraceFn fn = [&traces](trace::Tracer& t) -> Status {
    ++traces;
    ir::Attrs dim0;
    dim0.present = ir::kAttrDim;
    dim0.dim = 0;
    auto tail = SJ_TRY(t.op(ir::Op::kSlice, {t.input(0), int64_t{3}, int64_t{1} << 62, int64_t{1}}, dim0));  // x[3:]
    auto n = SJ_TRY(t.size(tail, 0));
    auto total = SJ_TRY(t.op(ir::Op::kSum, {t.input(0)}));
    return t.output(SJ_TRY(t.op(ir::Op::kExpand, {total, n})));  // the sum, once per element of x[3:]
  };
  for (int64_t n : {2, 5, 9, 2, 17}) {
    ArgPack p;
    p.add(testing::from_values(ir::DType::kF32, {n}, std::vector<float>(n, 1.0f)));
    std::vector<ir::Tensor> out;
    ASSERT_TRUE(jit->call("tail", p.args(), fn, out).is_ok()) << "n = " << n;
    ASSERT_EQ(out.at(0).shape(), std::vector<int64_t>{std::max<int64_t>(n - 3, 0)}) << "n = " << n;
    for (float v : testing::values_of<float>(out[0])) EXPECT_EQ(v, static_cast<float>(n));
  }
  // n - min(3, n) >= 0 holds for every n: one entry a bucket.
  EXPECT_EQ(compiles(*jit, "tail"), 2u);
}

TEST(Recompile, SitePinsOverrideTheMode) {
  auto jit = make_jit(config_with(R"({"mode": "start_dynamic", "sites": {"mul": {"static": [[0, 0]]}}})"));
  MulSite site;
  for (int64_t n : {4, 5, 6, 7}) ASSERT_TRUE(call_mul(*jit, site, n).is_ok());
  EXPECT_EQ(compiles(*jit), 4u);  // pinned static never backs off
  auto jit2 = make_jit(config_with(R"({"mode": "always_static", "sites": {"x": {"dynamic": [[0, 1]]}}})"));
  NeedsInt needs;
  EXPECT_EQ(call_x(*jit2, needs, 4, 16).code(), Code::kGraphBreak);
}

TEST(Recompile, DtypeChangeRetraces) {
  auto jit = make_jit("{}");
  MulSite site;
  ASSERT_TRUE(call_mul(*jit, site, 4).is_ok());
  ArgPack p;
  p.add(testing::zeros(ir::DType::kI32, {4}));
  p.add(testing::zeros(ir::DType::kI32, {4}));
  std::vector<ir::Tensor> out;
  ASSERT_TRUE(jit->call("mul", p.args(), site.fn, out).is_ok());
  EXPECT_EQ(out[0].dtype(), ir::DType::kI32);
  EXPECT_EQ(site.traces, 2);
  EXPECT_EQ(jit->stats_json()["sites"]["mul"]["recompile_reasons"]["dtype/rank/device"], 1u);
}

TEST(Recompile, BroadcastEqualityIsGuarded) {
  auto jit = make_jit("{}");
  MulSite site;
  ASSERT_TRUE(call_mul(*jit, site, 4).is_ok());
  // x and y now differ: the entry assumed them equal; the retrace sees they
  // do not broadcast and says so.
  ArgPack p;
  p.add(testing::zeros(ir::DType::kF32, {4}));
  p.add(testing::zeros(ir::DType::kF32, {5}));
  std::vector<ir::Tensor> out;
  Status s = jit->call("mul", p.args(), site.fn, out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("do not broadcast"), std::string::npos) << s.message();
  // y of size 1 broadcasts: a new entry.
  ArgPack q;
  q.add(testing::zeros(ir::DType::kF32, {4}));
  q.add(testing::zeros(ir::DType::kF32, {1}));
  ASSERT_TRUE(jit->call("mul", q.args(), site.fn, out).is_ok());
  EXPECT_EQ(out[0].shape(), std::vector<int64_t>{4});
}


// ---- PyTorch's recompiles, reproduced by bench/policies/dynamo.json ----
// (the counts are real torch.compile 2.15's on the same sequences:
// bench/peers/torch_recompiles.py)

std::string dynamo_config() {
  std::ifstream f(std::string(SHAPEJIT_SOURCE_DIR) + "/bench/policies/dynamo.json");
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// x @ W, W a [3, 2] parameter: the call passes x and W.
struct MatmulWeight {
  runtime::TraceFn fn = [](trace::Tracer& t) -> Status { return t.output(SJ_TRY(t.op(ir::Op::kMatmul, {t.input(0), t.input(1)}))); };
};

TEST(Recompile, DynamoLeavingASizeOneEntryIsAChange) {
  auto jit = make_jit(dynamo_config());
  MatmulWeight site;
  for (int64_t n : {1, 10, 11, 15, 15}) {
    ArgPack p;
    p.add(testing::zeros(ir::DType::kF32, {n, 3}));
    p.add(testing::zeros(ir::DType::kF32, {3, 2}));
    std::vector<ir::Tensor> out;
    ASSERT_TRUE(jit->call("mm", p.args(), site.fn, out).is_ok());
  }
  // size 1 static; 10 marks the dim dynamic at once (torch: 2 compiles).
  EXPECT_EQ(compiles(*jit, "mm"), 2u);
  EXPECT_EQ(jit->site("mm").dim_state(0, 0), policy::DimState::kBackedOff);
}

TEST(Recompile, DynamoSizeOneKeepsItsEntry) {
  auto jit = make_jit(dynamo_config());
  MulSite site;
  for (int64_t n : {1, 5, 6, 1}) ASSERT_TRUE(call_mul(*jit, site, n).is_ok());
  EXPECT_EQ(compiles(*jit), 2u);  // torch: 2
}

// for i in range(x.shape[0]): the interpreter needs the int.
struct RangeLoop {
  runtime::TraceFn fn = [](trace::Tracer& t) -> Status {
    auto x = t.input(0);
    const int64_t n = SJ_TRY(t.guard_int(SJ_TRY(t.size(x, 0)), "range(x.shape[0])"));
    auto y = x;
    for (int64_t i = 0; i < n; ++i) y = SJ_TRY(t.op(ir::Op::kAdd, {y, 1.0}));
    return t.output(y);
  };
};

Status call_range(runtime::Jit& jit, RangeLoop& site, int64_t n) {
  ArgPack p;
  p.add(testing::zeros(ir::DType::kF32, {n, 2}));
  std::vector<ir::Tensor> out;
  return jit.call("loop", p.args(), site.fn, out);
}

TEST(Recompile, DynamoRecompilesPerValueWhereTheIntIsNeeded) {
  auto jit = make_jit(dynamo_config());
  RangeLoop site;
  for (int64_t n : {4, 5, 6, 7, 8}) ASSERT_TRUE(call_range(*jit, site, n).is_ok()) << n;
  EXPECT_EQ(compiles(*jit, "loop"), 5u);  // torch: 5
  auto stats = jit->stats_json()["sites"]["loop"];
  EXPECT_EQ(stats["graph_breaks"], 0u);
}

TEST(Recompile, BackedOffIntGraphBreaksByDefault) {
  auto jit = make_jit(config_with(R"({"mode": "start_static", "backoff_after": 1})"));
  RangeLoop site;
  ASSERT_TRUE(call_range(*jit, site, 4).is_ok());
  for (int64_t n : {5, 6, 7, 8}) EXPECT_EQ(call_range(*jit, site, n).code(), Code::kGraphBreak) << n;
  auto stats = jit->stats_json()["sites"]["loop"];
  EXPECT_EQ(stats["compiles"], 1u);
  EXPECT_EQ(stats["graph_breaks"], 4u);
}

TEST(Recompile, RecompilingIntsStopAtTheLimit) {
  // Past the limit the generic entry cannot take a dim the code needs as an
  // int: those calls break (torch runs the frame eagerly past its limit).
  auto jit = make_jit(config_with(R"({"mode": "start_static", "backoff_after": 1, "cache_size_limit": 3, "backed_off_int": "recompile"})"));
  RangeLoop site;
  for (int64_t n : {4, 5, 6}) ASSERT_TRUE(call_range(*jit, site, n).is_ok()) << n;
  for (int64_t n : {7, 8}) EXPECT_EQ(call_range(*jit, site, n).code(), Code::kGraphBreak) << n;
  EXPECT_EQ(compiles(*jit, "loop"), 3u);
  ASSERT_TRUE(call_range(*jit, site, 5).is_ok());  // earlier entries still hit
}

// ---- a mode of the user's ----

// Compiles the first two shapes of a site, then runs the rest eagerly.
class TwoThenEager final : public policy::RecompilePolicy {
 public:
  policy::Decision decide(const policy::Miss& miss) override {
    policy::Decision d;
    d.action = miss.entries < 2 ? policy::Decision::Action::kCompile : policy::Decision::Action::kEager;
    d.trace = miss.traces.empty() ? -1 : miss.traces.front().id;
    d.why = "two then eager";
    return d;
  }
  trace::IntUse on_guard_int(int, int) const override { return trace::IntUse::specialize(); }
  Status specialize(sym::ShapeEnv& env, bool) const override {
    for (size_t id = 0; id < env.symbols().size(); ++id) {
      const sym::Symbol& s = env.symbols()[id];
      if (!s.unbacked && !s.binding) SJ_TRY(env.bind(static_cast<int>(id), sym::Expr(*s.hint), sym::Origin::kPolicy));
    }
    return Status::ok();
  }
  policy::DimState state(int, int) const override { return policy::DimState::kStatic; }
};

TEST(Recompile, AUserModeIsChosenFromTheConfig) {
  ASSERT_TRUE(policy::register_mode("two_then_eager", [](const policy::PolicyConfig&, const std::string&) {
                return std::make_unique<TwoThenEager>();
              }).is_ok());
  EXPECT_EQ(policy::register_mode("two_then_eager", nullptr).code(), Code::kInvalidArgument);
  auto jit = make_jit(config_with(R"({"mode": "two_then_eager"})"));
  MulSite site;
  for (int64_t n : {4, 5, 6, 7, 4}) ASSERT_TRUE(call_mul(*jit, site, n).is_ok());
  auto stats = jit->stats_json()["sites"]["mul"];
  EXPECT_EQ(stats["compiles"], 2u);
  EXPECT_EQ(stats["eager_calls"], 2u);
  EXPECT_EQ(stats["hits"], 1u);
  EXPECT_EQ(site.traces, 1);  // every miss reused the one trace
}

}  // namespace
}  // namespace shapejit
