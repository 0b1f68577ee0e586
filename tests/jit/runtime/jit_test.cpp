// The runtime end to end: results against the interpreter run directly,
// output buffer reuse, bad calls, recording, concurrency.
#include "jit/runtime/jit.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "jit/trace/trace_file.h"
#include "tests/support/test_util.h"
#include "tools/shapejit/replay.h"

namespace shapejit {
namespace {

using testing::ArgPack;
using testing::make_jit;

const char* kMlp = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["b", "t", 16]}, {"name": "w", "dtype": "f32", "shape": [16, 32]}],
  "nodes": [{"op": "matmul", "in": ["x", "w"], "out": "h"}, {"op": "gelu", "in": ["h"], "out": "g"},
            {"op": "sum", "in": ["g"], "out": "y", "attrs": {"axes": [-1]}}],
  "outputs": ["y"]})";

ArgPack mlp_args(std::mt19937& rng, std::vector<int64_t> x_shape) {
  ArgPack p;
  p.add(testing::random_tensor(ir::DType::kF32, std::move(x_shape), rng));
  p.add(testing::random_tensor(ir::DType::kF32, {16, 32}, rng));
  return p;
}

// exp over a 2-D input, and the same 6x4 data as a dense copy, as a
// transposed view (dense in dim order (1, 0)) and as every other column of
// a wider array (strided).
struct LayoutCase {
  ir::Graph graph = testing::graph_from(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["a", "b"]}],
    "nodes": [{"op": "exp", "in": ["x"], "out": "y"}], "outputs": ["y"]})");
  ArgPack dense, transposed, strided;
  explicit LayoutCase(int seed) {
    std::mt19937 rng(seed);
    ir::Tensor base = testing::random_tensor(ir::DType::kF32, {4, 6}, rng);
    dense.add(base.view({6, 4}, {1, 6}).contiguous());
    transposed.add(base.view({6, 4}, {1, 6}));
    ir::Tensor every_other = testing::random_tensor(ir::DType::kF32, {6, 8}, rng).view({6, 4}, {8, 2});
    every_other.copy_from(dense.tensors[0]);
    strided.add(every_other);
  }
};

TEST(Jit, ResultsMatchAFreshInterpreterRunAcrossShapes) {
  auto jit = make_jit("{}");
  ir::Graph g = testing::graph_from(kMlp);
  std::mt19937 rng(1);
  for (auto shape : std::vector<std::vector<int64_t>>{{2, 3, 16}, {4, 9, 16}, {1, 5, 16}, {2, 3, 16}, {0, 4, 16}}) {
    ArgPack p = mlp_args(rng, shape);
    std::vector<ir::Tensor> out;
    ASSERT_TRUE(jit->call_graph("mlp", g, {}, p.args(), out).is_ok());
    auto expect = testing::run_graph(kMlp, p.tensors);  // a new Jit: compiled for exactly this call
    ASSERT_TRUE(expect.is_ok());
    EXPECT_TRUE(testing::tensors_close(out[0], (*expect)[0], 0, 0));
    EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{shape[0], shape[1]}));
  }
  auto stats = jit->stats_json()["sites"]["mlp"];
  EXPECT_EQ(stats["compiles"], 3u);  // b,t >= 2; b == 1; b == 0
  EXPECT_EQ(stats["hits"], 2u);
}

TEST(Jit, StridedInputsShareTheReferenceBackendsEntries) {
  // The reference interpreter takes any strides, so its entries guard no
  // layout: a transposed view hits the entry a dense input created.
  auto jit = make_jit(R"({"compile": {"backend": "reference"}})");
  LayoutCase c(9);
  std::vector<ir::Tensor> a, b;
  ASSERT_TRUE(jit->call_graph("exp", c.graph, {}, c.dense.args(), a).is_ok());
  ASSERT_TRUE(jit->call_graph("exp", c.graph, {}, c.transposed.args(), b).is_ok());
  EXPECT_EQ(jit->stats_json()["sites"]["exp"]["compiles"], 1u);
  EXPECT_TRUE(testing::tensors_close(a[0], b[0], 0, 0));
  EXPECT_FALSE(jit->stats_json().contains("cpu")) << "the reference runs no GEMM";
}

// The CPU device's choice of GEMM tiles is in the stats, with its reason
// and the probe's figures (backends/cpu/tile_choice.h).
TEST(Jit, StatsSayWhichGemmTilesTheCpuRuns) {
  auto jit = make_jit("{}");
  if (std::string(jit->backend().name()) != "llvm") GTEST_SKIP() << "no LLVM in this build: no CPU kernels";
  const nlohmann::json cpu = jit->stats_json()["cpu"];
  const std::string tiles = cpu["tiles"];
  EXPECT_TRUE(tiles == "avx2" || tiles == "avx512") << cpu.dump();
  EXPECT_FALSE(cpu["why"].get<std::string>().empty());
  for (const char* key : {"fma256_g", "fma512_g", "tile256_g", "tile512_g", "probe_ms"}) EXPECT_TRUE(cpu[key].is_number()) << key;
}

// The reference backend, claiming to specialize on layout, as a compiled
// backend would.
class LayoutSensitive final : public backends::Backend {
 public:
  const char* name() const override { return "layout-sensitive"; }
  std::string target() const override { return "test"; }
  Expected<std::unique_ptr<backends::Kernel>> compile(const ir::SpecializedGraphPtr& g, const backends::CompileRequest& r) override {
    return inner_->compile(g, r);
  }

 private:
  std::unique_ptr<backends::Backend> inner_ = backends::make_reference_backend();
};

TEST(Jit, LayoutSpecializedEntriesGuardContiguity) {
  policy::Config config;
  auto jit = std::move(runtime::Jit::create(config, std::make_unique<LayoutSensitive>())).value();
  std::vector<std::string> log;
  jit->set_log([&](const std::string& line) { log.push_back(line); });
  LayoutCase c(10);
  std::vector<ir::Tensor> out;
  std::vector<ir::Tensor> first;
  for (int i = 0; i < 2; ++i) {
    for (ArgPack* p : {&c.dense, &c.transposed, &c.strided}) {
      ASSERT_TRUE(jit->call_graph("exp", c.graph, {}, p->args(), out).is_ok());
      if (first.empty()) first = out;
      EXPECT_TRUE(testing::tensors_close(out[0], first[0], 0, 0));
    }
  }
  auto stats = jit->stats_json()["sites"]["exp"];
  EXPECT_EQ(stats["compiles"], 3u);  // one per layout, then hits
  EXPECT_EQ(stats["traces"], 1u);    // a layout miss re-specializes without tracing
  EXPECT_EQ(stats["recompile_reasons"]["layout"], 2u);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_NE(log[0].find("input 0 is contiguous failed (got contiguous in dim order (1, 0)), origin: layout"), std::string::npos) << log[0];
  EXPECT_NE(log[1].find("input 0 is contiguous in dim order (1, 0) failed (got strided), origin: layout"), std::string::npos) << log[1];
}

TEST(Jit, ReusesUnsharedOutputBuffers) {
  auto jit = make_jit("{}");
  ir::Graph g = testing::graph_from(kMlp);
  std::mt19937 rng(2);
  ArgPack p = mlp_args(rng, {2, 3, 16});
  std::vector<ir::Tensor> out;
  ASSERT_TRUE(jit->call_graph("mlp", g, {}, p.args(), out).is_ok());
  const void* first = out[0].data();
  ASSERT_TRUE(jit->call_graph("mlp", g, {}, p.args(), out).is_ok());
  EXPECT_EQ(out[0].data(), first);  // reused
  ir::Tensor kept = out[0];         // the caller keeps a reference: no reuse
  ASSERT_TRUE(jit->call_graph("mlp", g, {}, p.args(), out).is_ok());
  EXPECT_NE(out[0].data(), first);
  EXPECT_TRUE(testing::tensors_close(kept, out[0], 0, 0));
}

TEST(Jit, BadCallsAreClearErrorsAndLeaveTheSiteWorking) {
  auto jit = make_jit("{}");
  ir::Graph g = testing::graph_from(kMlp);
  std::mt19937 rng(3);
  ArgPack good = mlp_args(rng, {2, 3, 16});
  std::vector<ir::Tensor> out;
  ASSERT_TRUE(jit->call_graph("mlp", g, {}, good.args(), out).is_ok());

  ArgPack wrong_dtype;
  wrong_dtype.add(testing::zeros(ir::DType::kF64, {2, 3, 16}));
  wrong_dtype.add(testing::zeros(ir::DType::kF32, {16, 32}));
  Status s = jit->call_graph("mlp", g, {}, wrong_dtype.args(), out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("input 0 ('x'): the graph says f32, the call passes f64"), std::string::npos) << s.message();

  ArgPack wrong_rank;
  wrong_rank.add(testing::zeros(ir::DType::kF32, {2, 16}));
  wrong_rank.add(testing::zeros(ir::DType::kF32, {16, 32}));
  s = jit->call_graph("mlp", g, {}, wrong_rank.args(), out);
  EXPECT_NE(s.message().find("input 0 ('x'): expected rank 3, got rank 2"), std::string::npos) << s.message();

  ArgPack wrong_pinned;
  wrong_pinned.add(testing::zeros(ir::DType::kF32, {2, 3, 15}));
  wrong_pinned.add(testing::zeros(ir::DType::kF32, {16, 32}));
  s = jit->call_graph("mlp", g, {}, wrong_pinned.args(), out);
  EXPECT_NE(s.message().find("the graph pins it to 16, got 15"), std::string::npos) << s.message();

  ArgPack too_few;
  too_few.add(testing::zeros(ir::DType::kF32, {2, 3, 16}));
  s = jit->call_graph("mlp", g, {}, too_few.args(), out);
  EXPECT_NE(s.message().find("the graph has 2 inputs, the call passes 1"), std::string::npos) << s.message();

  const DLTensor* nulls[] = {nullptr, nullptr};
  s = jit->call_graph("mlp", g, {}, runtime::Args(nulls, 2), out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);

  // The site still serves good calls from its entry.
  const uint64_t hits = jit->stats_json()["sites"]["mlp"]["hits"];
  ASSERT_TRUE(jit->call_graph("mlp", g, {}, good.args(), out).is_ok());
  EXPECT_EQ(jit->stats_json()["sites"]["mlp"]["hits"], hits + 1);
}

TEST(Jit, NegativeDimsAreRejectedEvenWithoutZeroOneSpecialization) {
  auto jit = make_jit(R"({"policy": {"specialize_zero_one": false}})");
  ir::Graph g = testing::graph_from(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "neg", "in": ["x"], "out": "y"}], "outputs": ["y"]})");
  ArgPack p;
  p.add(testing::zeros(ir::DType::kF32, {3}));
  std::vector<ir::Tensor> out;
  ASSERT_TRUE(jit->call_graph("neg", g, {}, p.args(), out).is_ok());
  runtime::Args args = p.args();
  DLTensor bad = *args[0];
  int64_t shape[1] = {-3};
  bad.shape = shape;
  const DLTensor* bad_args[] = {&bad};
  Status s = jit->call_graph("neg", g, {}, runtime::Args(bad_args, 1), out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("input 0 dim 0 is negative"), std::string::npos) << s.message();
}

TEST(Jit, AnOutputTooLargeToAllocateIsAnError) {
  auto jit = make_jit("{}");
  ir::Graph g = testing::graph_from(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "sym_size", "in": ["x"], "out": "n", "attrs": {"dim": 0}}, {"op": "sym_mul", "in": ["n", "n"], "out": "nn"},
              {"op": "full", "in": ["nn", "n"], "out": "y", "attrs": {"value": 0, "dtype": "f64"}}], "outputs": ["y"]})");
  ArgPack p;
  p.add(testing::zeros(ir::DType::kF32, {100000}));  // 10^15 elements: int64 holds the count, no memory the bytes
  std::vector<ir::Tensor> out;
  Status s = jit->call_graph("big", g, {}, p.args(), out);
  EXPECT_EQ(s.code(), Code::kRuntime);
  EXPECT_EQ(s.detail(), Detail::kMemory);
  EXPECT_NE(s.message().find("out of memory"), std::string::npos) << s.message();
}

TEST(Jit, ASizePastInt64IsAnOverflowNeverAWrappedValue) {
  // n * n of an int argument of 2^40, and a tensor of (n * n)^2 elements:
  // each an overflow error, before any kernel runs; a size that fits runs.
  auto jit = make_jit("{}");
  ir::Graph g = testing::graph_from(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "sym_size", "in": ["x"], "out": "n", "attrs": {"dim": 0}}, {"op": "sym_mul", "in": ["n", "n"], "out": "nn"},
              {"op": "sym_add", "in": ["nn", 1], "out": "nn1"},
              {"op": "arange", "in": ["nn", "nn1", 1], "out": "v", "attrs": {"dtype": "i64"}}],
    "outputs": ["v"]})");
  for (const int64_t n : {int64_t{1} << 40, int64_t{3037000500}}) {  // just past sqrt(2^63) too
    ir::Tensor empty = testing::zeros(ir::DType::kF32, {0});
    DLTensor big = empty.dl();
    int64_t shape[1] = {n};
    big.shape = shape;
    std::vector<ir::Tensor> out;
    const DLTensor* args[] = {&big};
    Status s = jit->call_graph("nn", g, {}, args, out);
    EXPECT_EQ(s.code(), Code::kRuntime) << n << ": " << s.to_string();
    EXPECT_EQ(s.detail(), Detail::kOverflow) << n;
    EXPECT_NE(s.message().find("overflows int64"), std::string::npos) << s.message();
  }
}

TEST(Jit, ADimPastTheLargestATensorHoldsRunsBesideAZero) {
  // Dynamic dims are at most 2^62 (sym::Range::kMaxDim) in what is
  // compiled, and guarded so: an empty tensor through DLPack may still have
  // a larger one, which an entry of its own takes, and later calls still hit.
  // No disk tier: the entries are counted as compiles, not as another run's loads.
  auto jit = make_jit(R"({"cache": {"disk": {"max_mb": 0}}})");
  ir::Graph g = testing::graph_from(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["a", "m"]}],
    "nodes": [{"op": "sum", "in": ["x"], "out": "y", "attrs": {"axes": [1]}}], "outputs": ["y"]})");
  ir::Tensor empty = testing::zeros(ir::DType::kF32, {0, 2});
  for (const int64_t m : {int64_t{7}, (int64_t{1} << 62) + 5, int64_t{9}, (int64_t{1} << 62) + 9}) {
    DLTensor x = empty.dl();
    int64_t shape[2] = {0, m};
    int64_t strides[2] = {m, 1};
    x.shape = shape;
    x.strides = strides;
    const DLTensor* args[] = {&x};
    std::vector<ir::Tensor> out;
    const Status s = jit->call_graph("wide", g, {}, args, out);
    ASSERT_TRUE(s.is_ok()) << m << ": " << s.to_string();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape(), std::vector<int64_t>{0}) << m;
  }
  EXPECT_EQ(jit->stats_json()["backend_compiles"], 2u) << "one entry within the bound, one past it";
}

TEST(Jit, RejectsUnavailableBackendsAndBadConfigs) {
  auto a = runtime::Jit::create(R"({"compile": {"backend": "cuda"}})");
#ifdef SHAPEJIT_HAVE_CUDA
  // Built in: it starts where a GPU is, and says why not elsewhere.
  if (!a.is_ok()) {
    EXPECT_EQ(a.status().code(), Code::kUnsupported) << a.status().to_string();
    EXPECT_NE(a.status().message().find("config: /compile/backend: \"cuda\""), std::string::npos) << a.status().message();
    EXPECT_NE(a.status().message().find("cuda: "), std::string::npos) << a.status().message();
  }
#else
  ASSERT_FALSE(a.is_ok());
  EXPECT_NE(a.status().message().find("not built"), std::string::npos);
#endif
#ifdef SHAPEJIT_HAVE_LLVM
  EXPECT_TRUE(runtime::Jit::create(R"({"compile": {"backend": "llvm"}})").is_ok());
#else
  EXPECT_FALSE(runtime::Jit::create(R"({"compile": {"backend": "llvm"}})").is_ok());
#endif
  auto b = runtime::Jit::create(R"({"policy": {"cache_size_limit": -3}})");
  ASSERT_FALSE(b.is_ok());
  EXPECT_NE(b.status().message().find("/policy/cache_size_limit"), std::string::npos);
}

TEST(Jit, RecordsATraceThatReplaysToTheSameDecisions) {
  const std::string path = ::testing::TempDir() + "/recorded.jsonl";
  {
    auto jit = make_jit(R"({"log": {"record": ")" + path + R"("}})");
    int n_traces = 0;
    runtime::TraceFn fn = [&](trace::Tracer& t) -> Status {
      ++n_traces;
      auto x = t.input(0);
      auto n = SJ_TRY(t.size(x, 1));
      SJ_TRY(t.guard_int(n));
      return t.output(SJ_TRY(t.op(ir::Op::kExp, {x})));
    };
    for (int64_t n : {4, 4, 6}) {
      ArgPack p;
      p.add(testing::zeros(ir::DType::kF32, {3, n}));
      std::vector<ir::Tensor> out;
      ASSERT_TRUE(jit->call("exp", p.args(), fn, out).is_ok());
    }
    EXPECT_EQ(n_traces, 2);
  }
  auto trace = trace::read_trace_file(path);
  ASSERT_TRUE(trace.is_ok()) << trace.status().to_string();
  int graphs = 0, calls = 0;
  for (const auto& ev : trace->events) {
    graphs += ev.graph.has_value();
    calls += ev.call.has_value();
    if (ev.graph) {
      ASSERT_EQ(ev.graph->observed.size(), 1u);
      EXPECT_TRUE(ev.graph->observed[0].as_int);
      EXPECT_EQ(ev.graph->observed[0].dim, 1);
    }
  }
  EXPECT_EQ(graphs, 2);
  EXPECT_EQ(calls, 3);
  // Replayed under the same policy, the recorded trace makes the same
  // decisions: two entries, two traces (the second graph line's observation
  // pins the new size), one hit.
  auto replayed = tools::replay(*trace, {{"default", policy::Config()}}, tools::ReplayOptions{});
  ASSERT_TRUE(replayed.is_ok()) << replayed.status().to_string();
  const nlohmann::json& stats = (*replayed)[0].stats;
  EXPECT_EQ(stats["compiles"], 2u);
  EXPECT_EQ(stats["hits"], 1u);
  EXPECT_EQ(stats["recompile_reasons"]["interpreter needs int"], 1u);
  std::remove(path.c_str());
}

// A crash loses at most the call in progress: every line is on disk (in
// the kernel's buffers, past the process) as soon as its call returns.
TEST(Jit, TheRecordedTraceIsCompleteAfterEveryCall) {
  const std::string path = ::testing::TempDir() + "/recorded_live.jsonl";
  auto jit = make_jit(R"({"log": {"record": ")" + path + R"("}})");
  runtime::TraceFn fn = [&](trace::Tracer& t) -> Status { return t.output(SJ_TRY(t.op(ir::Op::kNeg, {t.input(0)}))); };
  for (int64_t n = 2; n < 7; ++n) {
    ArgPack p;
    p.add(testing::zeros(ir::DType::kF32, {n}));
    std::vector<ir::Tensor> out;
    ASSERT_TRUE(jit->call("neg", p.args(), fn, out).is_ok());
    auto trace = trace::read_trace_file(path);  // read while the Jit is alive
    ASSERT_TRUE(trace.is_ok()) << trace.status().to_string();
    ASSERT_EQ(trace->events.size(), static_cast<size_t>(n));  // the graph line and n - 1 calls
    EXPECT_EQ(trace->events.back().call->inputs[0].shape, std::vector<int64_t>{n});
  }
  std::remove(path.c_str());
}

TEST(Jit, ConcurrentCallsCompileOnceAndAgree) {
  auto jit = make_jit("{}");
  ir::Graph g = testing::graph_from(kMlp);
  std::mt19937 rng(4);
  ArgPack p = mlp_args(rng, {2, 5, 16});
  runtime::Args args = p.args();
  std::vector<std::vector<ir::Tensor>> outs(6);
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) ASSERT_TRUE(jit->call_graph("mlp", g, {}, args, outs[t]).is_ok());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(jit->stats_json()["sites"]["mlp"]["compiles"], 1u);
  EXPECT_EQ(jit->stats_json()["sites"]["mlp"]["calls"], 120u);
  for (auto& o : outs) EXPECT_TRUE(testing::tensors_close(o[0], outs[0][0], 0, 0));
}

// Entries are published while other threads dispatch through the snapshot
// they replace: replaced snapshots are freed only when no reader is inside
// (ASan would see a reader of a freed one).
TEST(Jit, PublishingWhileOthersDispatchIsSafe) {
  auto jit = make_jit(R"({"policy": {"mode": "always_static", "cache_size_limit": 1000}, "log": {"recompiles": false}})");
  runtime::TraceFn fn = [](trace::Tracer& t) -> Status { return t.output(SJ_TRY(t.op(ir::Op::kNeg, {t.input(0)}))); };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        const int64_t n = 2 + (i * 7 + t * 13) % 97;  // new shapes (installs) among repeats (hits)
        ArgPack p;
        p.add(testing::from_values(ir::DType::kF32, {n}, std::vector<float>(static_cast<size_t>(n), 1.5f)));
        std::vector<ir::Tensor> out;
        ASSERT_TRUE(jit->call("neg", p.args(), fn, out).is_ok());
        ASSERT_EQ(out[0].shape(), std::vector<int64_t>{n});
        ASSERT_EQ(out[0].ptr<float>()[n - 1], -1.5f);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(jit->stats_json()["sites"]["neg"]["compiles"], 97u);
}

TEST(Jit, DataDependentOutputsAreSizedAtRunTime) {
  auto jit = make_jit("{}");
  ir::Graph g = testing::graph_from(R"({"inputs": [{"name": "x", "dtype": "i32", "shape": ["n"]}],
    "nodes": [{"op": "gt", "in": ["x", 0], "out": "m"}, {"op": "masked_select", "in": ["x", "m"], "out": "y"},
              {"op": "mul", "in": ["y", 2], "out": "z"}], "outputs": ["z"]})");
  for (auto values : std::vector<std::vector<int64_t>>{{1, -1, 2}, {-5, -1, -2}, {3, 3, 3}}) {
    ArgPack p;
    p.add(testing::from_values(ir::DType::kI32, {3}, values));
    std::vector<ir::Tensor> out;
    ASSERT_TRUE(jit->call_graph("ms", g, {}, p.args(), out).is_ok());
    std::vector<int64_t> expect;
    for (int64_t v : values) {
      if (v > 0) expect.push_back(2 * v);
    }
    EXPECT_EQ(testing::values_of<int64_t>(out[0]), expect);
  }
  EXPECT_EQ(jit->stats_json()["sites"]["ms"]["compiles"], 1u);
}

}  // namespace
}  // namespace shapejit
