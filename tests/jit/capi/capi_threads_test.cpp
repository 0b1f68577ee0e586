// Eight interpreter threads on shared sites through the C API, the shapes
// churning so that calls hit, miss, trace, compile and install at once. Every
// output is checked, and the counts must come out as if the calls had been
// made one by one. `scripts/test.sh --tsan` runs this under ThreadSanitizer.
#include "jit/capi/shapejit.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/host_tensor.h"

namespace {

using shapejit::testing::Host;

// y = sum(x * w, axes=[-1]) + 1, for x [m, n] and w [n].
sj_status trace_fn(sj_tracer* t, void* user) {
  static_cast<std::atomic<int>*>(user)->fetch_add(1);
  sj_value xw, s, y;
  sj_operand ops[2] = {{SJ_OPERAND_VALUE, sj_tracer_input(t, 0), 0, 0}, {SJ_OPERAND_VALUE, sj_tracer_input(t, 1), 0, 0}};
  sj_status rc;
  if ((rc = sj_tracer_op(t, "mul", ops, 2, nullptr, &xw)) != SJ_OK) return rc;
  sj_operand one[1] = {{SJ_OPERAND_VALUE, xw, 0, 0}};
  if ((rc = sj_tracer_op(t, "sum", one, 1, "{\"axes\": [-1]}", &s)) != SJ_OK) return rc;
  sj_operand add[2] = {{SJ_OPERAND_VALUE, s, 0, 0}, {SJ_OPERAND_FLOAT, 0, 0, 1.0}};
  if ((rc = sj_tracer_op(t, "add", add, 2, nullptr, &y)) != SJ_OK) return rc;
  return sj_tracer_output(t, y);
}

nlohmann::json site_stats(sj_jit* jit, const char* site) {
  char* text = nullptr;
  EXPECT_EQ(sj_stats_json(jit, &text), SJ_OK);
  nlohmann::json stats = nlohmann::json::parse(text);
  sj_free_string(text);
  return stats["sites"][site];
}

struct Jit {
  sj_jit* jit = nullptr;
  sj_site* site = nullptr;
  std::atomic<int> traces{0};
  explicit Jit(const char* config) {
    EXPECT_EQ(sj_create(config, &jit), SJ_OK) << sj_last_error();
    EXPECT_EQ(sj_site_get(jit, "f", &site), SJ_OK) << sj_last_error();
  }
  ~Jit() { sj_destroy(jit); }
};

TEST(CApiThreads, EightThreadsWithShapeChurnGetEveryAnswerRight) {
  constexpr int kThreads = 8, kCalls = 150;
  // start_dynamic: an entry per class of shapes (a dim of 1 is specialized,
  // any other size is not). always_static: an entry per shape. Either way
  // each is compiled once, however many threads miss on it together.
  Jit dynamic("{\"log\": {\"recompiles\": false}}");
  Jit statics(R"({"policy": {"mode": "always_static", "cache_size_limit": 1000}, "log": {"recompiles": false}})");
  std::mutex mu;
  std::set<std::pair<int64_t, int64_t>> shapes, classes;
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        // Now and then a call large enough that its kernel runs on TBB's
        // workers too.
        const bool big = (i + t) % 25 == 0;
        const int64_t m = big ? 512 : 1 + (i / 5 + t) % 3, n = big ? 128 : 1 + (i * 7 + t * 13) % 24;
        const float a = static_cast<float>(t + 1), b = 0.5f + static_cast<float>(i % 5);
        {
          std::lock_guard<std::mutex> lock(mu);
          shapes.insert({m, n});
          classes.insert({m == 1, n == 1});
        }
        Host x({m, n}, a), w({n}, b);
        const DLTensor* args[] = {&x.dl, &w.dl};
        for (Jit* j : {&dynamic, &statics}) {
          DLManagedTensor** outs = nullptr;
          int32_t num = 0;
          if (sj_call(j->site, args, 2, trace_fn, &j->traces, &outs, &num) != SJ_OK) {
            ++failed;
            continue;
          }
          const DLTensor& y = outs[0]->dl_tensor;
          const float want = a * b * static_cast<float>(n) + 1.0f;  // exact: halves times small integers
          bool right = num == 1 && y.ndim == 1 && y.shape[0] == m;
          for (int64_t r = 0; right && r < m; ++r) right = static_cast<const float*>(y.data)[r] == want;
          if (!right) ++wrong;
          sj_free_outputs(outs, num);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  for (Jit* j : {&dynamic, &statics}) {
    const nlohmann::json s = site_stats(j->jit, "f");
    EXPECT_EQ(s["calls"], kThreads * kCalls) << s.dump();
  }
  EXPECT_EQ(site_stats(dynamic.jit, "f")["compiles"], classes.size());
  EXPECT_EQ(site_stats(statics.jit, "f")["compiles"], shapes.size());
}

}  // namespace
