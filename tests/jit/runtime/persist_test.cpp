// Kernels that outlive their Jit: the disk tier across Jits (as across
// processes), the Redis tier across a fleet, an outage in the middle of a
// multi-threaded run, and compile.async under shape churn. Every output is
// checked against the reference interpreter.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "tests/support/redis_server.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

namespace shapejit {
namespace {

using testing::ArgPack;
namespace fs = std::filesystem;

const char* kMlp = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["b", "t", 16]}, {"name": "w", "dtype": "f32", "shape": [16, 32]}],
  "nodes": [{"op": "matmul", "in": ["x", "w"], "out": "h"}, {"op": "gelu", "in": ["h"], "out": "g"},
            {"op": "softmax", "in": ["g"], "out": "p", "attrs": {"dim": -1}},
            {"op": "sum", "in": ["p"], "out": "y", "attrs": {"axes": [-1]}}],
  "outputs": ["y", "g"]})";

using testing::TempDir;

std::string config(const std::string& disk, const std::string& redis = "", const std::string& extra = "") {
  std::string c = R"({"log": {"recompiles": false}, "cache": {"disk": {"path": ")" + disk + R"("}, "remote": {"redis": ")" + redis +
                  R"(", "cooldown_ms": 100}})" + extra + "}";
  return c;
}

ArgPack mlp_args(int seed, std::vector<int64_t> x_shape) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  ArgPack p;
  p.add(testing::random_tensor(ir::DType::kF32, std::move(x_shape), rng));
  p.add(testing::random_tensor(ir::DType::kF32, {16, 32}, rng));
  return p;
}

// The reference interpreter's answer.
std::vector<ir::Tensor> expected(ArgPack& p) {
  auto out = testing::run_graph(kMlp, p.tensors, R"({"compile": {"backend": "reference"}, "cache": {"disk": {"max_mb": 0}}})");
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  return out.is_ok() ? *out : std::vector<ir::Tensor>{};
}

::testing::AssertionResult right(runtime::Jit& jit, const ir::Graph& g, ArgPack& p) {
  std::vector<ir::Tensor> out;
  Status s = jit.call_graph("mlp", g, {}, p.args(), out);
  if (!s.is_ok()) return ::testing::AssertionFailure() << s.to_string();
  const std::vector<ir::Tensor> want = expected(p);
  for (size_t i = 0; i < want.size(); ++i) {
    auto close = testing::tensors_close(out[i], want[i], 1e-5, 1e-5);
    if (!close) return close << " (output " << i << ")";
  }
  return ::testing::AssertionSuccess();
}

bool have_llvm() { return runtime::Jit::create(R"({"compile": {"backend": "llvm"}})").is_ok(); }

TEST(Persist, ASecondJitLoadsEveryKernelFromDiskAndCompilesNone) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  TempDir dir;
  const ir::Graph g = testing::graph_from(kMlp);
  const std::vector<std::vector<int64_t>> shapes = {{2, 3, 16}, {1, 5, 16}, {0, 4, 16}, {4, 1, 16}};
  {
    auto first = testing::make_jit(config(dir.path()));
    for (size_t i = 0; i < shapes.size(); ++i) {
      ArgPack p = mlp_args(static_cast<int>(i), shapes[i]);
      EXPECT_TRUE(right(*first, g, p));
    }
    const auto s = first->stats_json();
    EXPECT_EQ(s["backend_compiles"], s["compiles"]);
    EXPECT_EQ(s["cache"]["disk"]["writes"], s["compiles"]);
  }
  std::vector<std::string> log;
  auto second = testing::make_jit(config(dir.path()), &log);
  for (size_t i = 0; i < shapes.size(); ++i) {
    ArgPack p = mlp_args(static_cast<int>(i) + 10, shapes[i]);
    EXPECT_TRUE(right(*second, g, p));
  }
  const auto s = second->stats_json();
  EXPECT_EQ(s["backend_compiles"], 0u);
  EXPECT_EQ(s["disk_loads"], s["compiles"]);
  EXPECT_GT(s["compiles"].get<uint64_t>(), 1u);
  EXPECT_TRUE(log.empty()) << log[0];
}

TEST(Persist, ACorruptKernelFileIsRecompiledNeverRun) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  TempDir dir;
  const ir::Graph g = testing::graph_from(kMlp);
  {
    auto first = testing::make_jit(config(dir.path()));
    ArgPack p = mlp_args(1, {2, 3, 16});
    ASSERT_TRUE(right(*first, g, p));
  }
  // Flip one byte in the middle of every object.
  for (const auto& e : fs::directory_iterator(dir.path())) {
    if (e.path().extension() != ".sjk") continue;  // not the usage file
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(e.file_size() / 2));
    const char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(e.file_size() / 2));
    f.put(static_cast<char>(c ^ 0x5a));
  }
  std::vector<std::string> log;
  auto second = testing::make_jit(config(dir.path()), &log);
  ArgPack p = mlp_args(2, {2, 3, 16});
  EXPECT_TRUE(right(*second, g, p));
  const auto s = second->stats_json();
  EXPECT_EQ(s["backend_compiles"], 1u);
  // The kernel's record and each of its steps': each rejected (the flipped
  // byte lands in a payload, or in the short kernel record's header),
  // said once, and compiled again.
  const uint64_t steps = s["cache"]["steps"]["compiles"];
  EXPECT_GE(steps, 1u);
  ASSERT_EQ(log.size(), 1 + steps);
  int mismatches = 0;
  for (const std::string& line : log) {
    EXPECT_NE(line.find("removed, the kernel is compiled again"), std::string::npos) << line;
    mismatches += line.find("checksum mismatch") != std::string::npos;
  }
  EXPECT_GE(mismatches, 1) << "a step's object is corrupt in its payload";
}

TEST(Persist, TwoJitsWithOneRedisAndTheirOwnDisksCompileEachKernelOnce) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  testing::RedisServer server;
  ASSERT_TRUE(server.start()) << "redis-server did not start (scripts/setup.sh installs it)";
  TempDir a, b;
  const ir::Graph g = testing::graph_from(kMlp);
  const std::vector<std::vector<int64_t>> shapes = {{2, 3, 16}, {1, 5, 16}, {3, 1, 16}};
  {
    auto first = testing::make_jit(config(a.path(), server.url()));
    for (size_t i = 0; i < shapes.size(); ++i) {
      ArgPack p = mlp_args(static_cast<int>(i), shapes[i]);
      EXPECT_TRUE(right(*first, g, p));
    }
    first->kernel_cache().remote()->flush();
    const auto s = first->stats_json();
    EXPECT_EQ(s["cache"]["remote"]["writes"], s["backend_compiles"].get<uint64_t>() + s["cache"]["steps"]["compiles"].get<uint64_t>());
  }
  auto second = testing::make_jit(config(b.path(), server.url()));
  for (size_t i = 0; i < shapes.size(); ++i) {
    ArgPack p = mlp_args(static_cast<int>(i) + 5, shapes[i]);
    EXPECT_TRUE(right(*second, g, p));
  }
  const auto s = second->stats_json();
  EXPECT_EQ(s["backend_compiles"], 0u);
  EXPECT_EQ(s["cache"]["steps"]["compiles"], 0u);
  EXPECT_EQ(s["remote_loads"], s["compiles"]);
  EXPECT_EQ(s["cache"]["disk"]["writes"], s["compiles"]) << "Redis hits fill the disk";
  EXPECT_EQ(s["cache"]["steps"]["disk_writes"], s["cache"]["steps"]["remote_loads"]) << "and so do the steps'";
}

// Eight threads, a compile per shape, Redis killed and restarted while they
// run: no call fails, and every output is right.
TEST(Persist, RedisKilledAndRestartedMidRunFailsNoCall) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  testing::RedisServer server;
  ASSERT_TRUE(server.start());
  TempDir dir;
  const ir::Graph g = testing::graph_from(kMlp);
  std::vector<std::string> log;
  std::mutex log_mu;
  auto jit = testing::make_jit(config(dir.path(), server.url(), R"(, "policy": {"mode": "always_static", "cache_size_limit": 1000})"));
  jit->set_log([&](const std::string& l) {
    std::lock_guard<std::mutex> lock(log_mu);
    log.push_back(l);
  });
  constexpr int kThreads = 8, kCalls = 24;
  std::atomic<int> failed{0}, wrong{0}, done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        ArgPack p = mlp_args(t * 1000 + i, {1 + (t + i) % 5, 1 + (i * 7 + t) % 9, 16});
        std::vector<ir::Tensor> out;
        Status s = jit->call_graph("mlp", g, {}, p.args(), out);
        if (!s.is_ok()) {
          ++failed;
        } else {
          const std::vector<ir::Tensor> want = expected(p);
          for (size_t k = 0; k < want.size(); ++k) wrong += !testing::tensors_close(out[k], want[k], 1e-5, 1e-5);
        }
        ++done;
      }
    });
  }
  while (done < kThreads * kCalls / 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  server.stop();
  while (done < kThreads * kCalls * 2 / 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(server.start());
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  const auto s = jit->stats_json();
  EXPECT_EQ(s["errors"], 0u);
  EXPECT_EQ(s["compiles"], 45u);  // every (b, t) pair of the churn: a compile per shape
  std::lock_guard<std::mutex> lock(log_mu);
  for (const std::string& l : log) EXPECT_NE(l.find("redis at " + server.url()), std::string::npos) << l;
}

// compile.async with eight threads and shape churn: every call is right,
// stand-ins ran, and each key compiled once.
TEST(Persist, AsyncCompilesRunOnStandInsAndCompileEachKeyOnce) {
  if (!have_llvm()) GTEST_SKIP() << "no LLVM backend in this build";
  TempDir dir;
  const ir::Graph g = testing::graph_from(kMlp);
  auto jit = testing::make_jit(config(dir.path(), "",
                                      R"(, "compile": {"async": true, "threads": 2}, "policy": {"mode": "always_static", "cache_size_limit": 1000})"));
  constexpr int kThreads = 8, kCalls = 40;
  auto shape = [](int t, int i) { return std::vector<int64_t>{1 + (t + i) % 4, 1 + (i * 3 + t / 2) % 6, 16}; };
  std::set<std::vector<int64_t>> shapes;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kCalls; ++i) shapes.insert(shape(t, i));
  }
  std::atomic<int> failed{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        ArgPack p = mlp_args(t * 1000 + i, shape(t, i));
        std::vector<ir::Tensor> out;
        Status s = jit->call_graph("mlp", g, {}, p.args(), out);
        if (!s.is_ok()) {
          ++failed;
          continue;
        }
        const std::vector<ir::Tensor> want = expected(p);
        for (size_t k = 0; k < want.size(); ++k) wrong += !testing::tensors_close(out[k], want[k], 1e-5, 1e-5);
      }
    });
  }
  for (auto& th : threads) th.join();
  jit->wait_compiles();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  const auto s = jit->stats_json();
  EXPECT_EQ(s["compiles"], shapes.size());  // an entry per shape
  EXPECT_EQ(s["backend_compiles"], shapes.size()) << "one compile per key";
  EXPECT_GT(s["stand_in_calls"].get<uint64_t>(), 0u);
  EXPECT_EQ(jit->site("mlp").explain().find("compiling"), std::string::npos) << "every stand-in was replaced";
  // After the compiles landed, calls run compiled kernels, not stand-ins.
  const uint64_t stand_ins = s["stand_in_calls"];
  for (const auto& sh : shapes) {
    ArgPack p = mlp_args(7, sh);
    EXPECT_TRUE(right(*jit, g, p));
  }
  EXPECT_EQ(jit->stats_json()["stand_in_calls"], stand_ins);
}

}  // namespace
}  // namespace shapejit
