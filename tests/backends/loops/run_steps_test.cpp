// The rule every device's kernel runs its steps by (loops/run_steps.h),
// seen through a runner that records what it is asked, in order: the
// devices' own tests check what their runners compute.
#include "backends/loops/run_steps.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/loops/lower.h"
#include "bench/bench_util.h"

namespace shapejit::backends::loops {
namespace {

class Recorder final : public StepRunner {
 public:
  explicit Recorder(int64_t count = 3) : count_(count) {}
  std::vector<std::string> calls;
  Status fail_at;  // returned by the step named in `fail_step`
  std::string fail_step;

  Status place(std::span<const int64_t>) override { return note("place"); }
  Status allocate(int buffer, std::span<const int64_t>) override { return note("allocate " + std::to_string(buffer)); }
  Expected<int64_t> count(size_t s, std::span<const int64_t>) override {
    SJ_TRY(note("count " + std::to_string(s)));
    return count_;
  }
  void recount(std::span<const int64_t> values) override { calls.push_back("recount"); }
  Status fill(size_t s, int epilogue, std::span<const int64_t> values) override { return note("fill " + std::to_string(s) + with(epilogue)); }
  Status loops(size_t s, std::span<const int64_t>) override { return note("loops " + std::to_string(s)); }
  Status matmul(size_t s, int epilogue, std::span<const int64_t>) override { return note("matmul " + std::to_string(s) + with(epilogue)); }
  Status scan(size_t s, std::span<const int64_t>) override { return note("scan " + std::to_string(s)); }
  Status scatter(size_t s, std::span<const int64_t>) override { return note("scatter " + std::to_string(s)); }
  Status attention(size_t s, std::span<const int64_t>) override { return note("attention " + std::to_string(s)); }
  Status finish() override { return note("finish"); }

 private:
  static std::string with(int epilogue) { return epilogue < 0 ? "" : " with " + std::to_string(epilogue); }
  Status note(std::string what) {
    calls.push_back(what);
    return what == fail_step ? fail_at : Status::ok();
  }
  int64_t count_;
};

struct Program {
  bench::Specialized sg;
  LoopProgram p;
};

Program lowered(const std::string& graph, std::vector<std::vector<int64_t>> shapes) {
  Program out{bench::specialize(graph, shapes, true), {}};
  Expected<LoopProgram> p = lower(*out.sg.graph);
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  if (p.is_ok()) out.p = std::move(p).value();
  return out;
}

Status run(const LoopProgram& p, Recorder& r, std::vector<int64_t>& values) {
  std::vector<int64_t> symbols(values.size(), 0);
  return run_steps(p, RunPlan(p), r, values, symbols);
}

// nonzero(x > 0.5) + 1: the mask's step, the compaction, its epilogue (the
// add, in the count's rows), and the result sized by the count.
const char* kSelection = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
  "nodes": [{"op": "gt", "in": ["x", 0.5], "out": "m"}, {"op": "nonzero", "in": ["m"], "out": "nz"},
            {"op": "reshape", "in": ["nz", -1], "out": "i"}, {"op": "add", "in": ["i", 1], "out": "y"}], "outputs": ["y"]})";

TEST(RunSteps, ACompactionCountsThenAllocatesWhatItsCountSizesThenFillsWithItsEpilogue) {
  const Program g = lowered(kSelection, {{50}});
  const LoopProgram& p = g.p;
  ASSERT_EQ(p.steps.size(), 3u) << p.dump();
  ASSERT_TRUE(p.steps[1].compact.epilogue) << p.dump();
  const RunPlan plan(p);
  ASSERT_FALSE(plan.sized_later().empty()) << p.dump();
  std::vector<std::string> expected = {"place", "loops 0", "count 1", "recount"};
  for (const auto& [buffer, first] : plan.sized_later()) {
    EXPECT_EQ(first, 1) << "buffer " << buffer << " is first used by the compaction (its epilogue's buffers are)";
    expected.push_back("allocate " + std::to_string(buffer));
  }
  expected.insert(expected.end(), {"fill 1 with 2", "finish"});
  Recorder r(7);
  std::vector<int64_t> values(static_cast<size_t>(p.num_read_symbols()), 50);  // n = 50
  ASSERT_TRUE(run(p, r, values).is_ok());
  EXPECT_EQ(r.calls, expected);  // the epilogue (step 2) is not run as a step of its own
  EXPECT_EQ(values[p.steps[1].compact.count], 7);
}

TEST(RunSteps, AMatmulHandsItsEpilogueTheStepAfterIt) {
  const Program g = lowered(R"({"inputs": [{"name": "a", "dtype": "f32", "shape": ["m", 8]}, {"name": "b", "dtype": "f32", "shape": [8, 8]}],
    "nodes": [{"op": "matmul", "in": ["a", "b"], "out": "c"}, {"op": "relu", "in": ["c"], "out": "y"}], "outputs": ["y"]})",
                            {{4, 8}, {8, 8}});
  const LoopProgram& p = g.p;
  ASSERT_EQ(p.steps.size(), 2u) << p.dump();
  ASSERT_TRUE(p.steps[0].matmul.epilogue) << p.dump();
  Recorder r;
  std::vector<int64_t> values(static_cast<size_t>(p.num_read_symbols()), 4);  // m = 4
  ASSERT_TRUE(run(p, r, values).is_ok());
  EXPECT_EQ(r.calls, (std::vector<std::string>{"place", "matmul 0 with 1", "finish"}));
}

TEST(RunSteps, AStepsFailureStopsTheCallAndIsReturnedAsItIs) {
  const Program g = lowered(kSelection, {{50}});
  for (const Status& why : {use_reference(), runtime_error("a device failed")}) {
    Recorder r;
    r.fail_step = "loops 0";
    r.fail_at = why;
    std::vector<int64_t> values(static_cast<size_t>(g.p.num_read_symbols()), 50);
    const Status st = run(g.p, r, values);
    EXPECT_EQ(st.code(), why.code());
    EXPECT_EQ(r.calls, (std::vector<std::string>{"place", "loops 0"}));
  }
}

}  // namespace
}  // namespace shapejit::backends::loops
