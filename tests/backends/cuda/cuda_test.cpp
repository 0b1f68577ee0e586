// The CUDA backend against the reference interpreter: every op and dtype
// (op_cases.h), each graph fully dynamic and fully static; edge shapes (0,
// 1, broadcast, non-contiguous, a vector tail, long rows that take the
// split reduction, many short rows); errors, fallbacks, streams, threads,
// the disk tier; random graphs. On a GPU where the machine has one, else on
// the mock driver (tests/backends/cuda/mock_driver, chosen by
// tests/backends/cuda/cuda_env.cpp), which runs the same kernels on the CPU: CI
// runs every test here.
//
// Tolerance: as the LLVM backend's (floats rtol 1e-5, atol 1e-6; matmuls
// in cuBLAS 1e-4); the GPU's expf/erff are within 2 ulp and reductions
// combine in another order.
#include <gtest/gtest.h>

#ifdef SHAPEJIT_HAVE_CUDA

#include <filesystem>
#include <thread>

#include "backends/cuda/driver.h"
#include "tests/support/cuda_agreement.h"
#include "tests/support/decode_cases.h"
#include "tests/support/op_cases.h"
#include "tests/support/random_graph.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

namespace shapejit {
namespace {

using ir::DType;
using ir::Tensor;
using namespace cuda_test;

std::vector<Tensor> inputs_for(const testing::Case& c, std::mt19937& rng) {
  ir::Graph g = testing::graph_from(c.graph);
  std::vector<Tensor> in;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const DType dt = g.inputs[i].dtype;
    in.push_back(ir::is_float(dt) ? testing::random_tensor(dt, c.hints[i], rng) : testing::random_tensor(dt, c.hints[i], rng, 0, 2));
  }
  return in;
}

// The reasons a machine has no device, from drivers that cannot give one.
TEST(Cuda, WithoutADriverTheBackendSaysWhy) {
  auto none = cuda::open_device("/nonexistent/libcuda.so.1");
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), Code::kUnsupported);
  EXPECT_NE(none.status().message().find("cuda: no CUDA driver on this machine (dlopen /nonexistent/libcuda.so.1: "), std::string::npos)
      << none.status().message();
  // The toolkit's stub, where this build found it (a GPU machine's image may
  // keep its toolkit elsewhere).
  if (!std::filesystem::exists(SHAPEJIT_CUDA_STUB)) return;
  auto stub = cuda::open_device(SHAPEJIT_CUDA_STUB);
  ASSERT_FALSE(stub.is_ok());
  EXPECT_NE(stub.status().message().find("is the toolkit's stub, not a driver: no GPU here"), std::string::npos) << stub.status().message();
}

TEST(Cuda, TargetNamesArchitectureCompilerAndDriver) {
  SKIP_WITHOUT_GPU();
  auto b = backends::make_cuda_backend();
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  const std::string t = (*b)->target();
  EXPECT_NE(t.find(std::to_string(dev().arch)), std::string::npos) << t;
  EXPECT_NE(t.find("nvrtc "), std::string::npos) << t;
  EXPECT_NE(t.find("driver " + std::to_string(dev().driver_version)), std::string::npos) << t;
}

// In kShards tests (the op cases dealt out in turn), which CTest runs side
// by side: each case compiles twice (NVRTC, and the host on the mock).
constexpr int kShards = 3;

class CudaEveryOp : public ::testing::TestWithParam<int> {};

TEST_P(CudaEveryOp, AgreesWithTheReference) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(5 + static_cast<unsigned>(GetParam()));
  const std::vector<testing::Case> cases = testing::every_op();
  for (size_t i = static_cast<size_t>(GetParam()); i < cases.size(); i += kShards) {
    const testing::Case& c = cases[i];
    const bool matmul = c.what.rfind("matmul", 0) == 0;
    expect_agrees(c.graph, inputs_for(c, rng), c.what, matmul ? 1e-4 : 1e-5, matmul ? 1e-5 : 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, CudaEveryOp, ::testing::Range(0, kShards));

const char* kChain = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n", "m"]}, {"name": "y", "dtype": "f32", "shape": ["m"]}],
  "nodes": [{"op": "mul", "in": ["x", 1.5], "out": "a"}, {"op": "add", "in": ["a", "y"], "out": "b"},
            {"op": "relu", "in": ["b"], "out": "c"}, {"op": "sub", "in": ["c", "x"], "out": "d"},
            {"op": "exp", "in": ["d"], "out": "z"}], "outputs": ["z"]})";

TEST(Cuda, PointwiseOnEdgeShapes) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(6);
  // Rows flattened (short), rows on grid y (long), vector tails (odd m).
  for (auto [n, m] : std::vector<std::pair<int64_t, int64_t>>{{0, 5}, {3, 0}, {1, 1}, {1, 3}, {7, 4097}, {1000, 3}, {2, (1 << 20) + 3}}) {
    expect_agrees(kChain, {testing::random_tensor(DType::kF32, {n, m}, rng), testing::random_tensor(DType::kF32, {m}, rng)},
                  "chain " + std::to_string(n) + "x" + std::to_string(m));
  }
}

TEST(Cuda, NonContiguousInputs) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(7);
  // x is passed as the transpose of a [m, n] buffer; the kernel reads its strides.
  std::vector<int64_t> shape = {37, 29}, strides = {1, 37};
  auto view = [&](const Tensor& t, size_t i) {
    DLTensor d = t.dl();
    if (i == 0) {
      d.shape = shape.data();
      d.strides = strides.data();
    }
    return d;
  };
  Tensor xt = testing::random_tensor(DType::kF32, {29, 37}, rng);
  Tensor x = xt.view({37, 29}, {1, 37});  // what the reference sees
  Tensor y = testing::random_tensor(DType::kF32, {29}, rng);
  auto ref = testing::run_graph(kChain, {x, y}, R"({"compile": {"backend": "reference"}})");
  ASSERT_TRUE(ref.is_ok());
  for (const char* mode : {"always_dynamic", "always_static"}) {
    Outcome got = run_cuda(kChain, {xt, y}, mode, view);
    ASSERT_TRUE(got.status.is_ok()) << got.status.to_string();
    EXPECT_TRUE(testing::tensors_close(got.out[0], (*ref)[0])) << mode;
  }
}

TEST(Cuda, ReductionsShortLongAndSplitRows) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(8);
  // Warp rows (<= 256), block rows, and few long rows (the split reduction).
  for (auto [n, m] : std::vector<std::pair<int64_t, int64_t>>{{5000, 7}, {300, 1000}, {2, 1 << 18}, {1, (1 << 20) + 5}}) {
    const std::string what = std::to_string(n) + "x" + std::to_string(m);
    Tensor x = testing::random_tensor(DType::kF32, {n, m}, rng, -20, 20);
    for (const char* op : {"sum", "max", "min", "mean"}) {
      expect_agrees(testing::op_case(op, {{"f32", {"n", "m"}}}, {{n, m}}, "", R"({"axes": [1]})").graph, {x}, std::string(op) + " " + what, 1e-4);
    }
    expect_agrees(testing::op_case("argmax", {{"f32", {"n", "m"}}}, {{n, m}}, "", R"({"dim": 1})").graph, {x}, "argmax " + what);
    expect_agrees(testing::op_case("softmax", {{"f32", {"n", "m"}}}, {{n, m}}, "", R"({"dim": 1})").graph, {x}, "softmax " + what);
    expect_agrees(testing::op_case("layer_norm", {{"f32", {"n", "m"}}}, {{n, m}}).graph, {x}, "layer_norm " + what, 1e-4, 1e-5);
  }
  // Ties and NaN: the first maximal index, NaN maximal, across parts.
  Tensor ties = testing::zeros(DType::kF32, {1, 1 << 18});
  ties.ptr<float>()[200000] = 1;
  ties.ptr<float>()[100000] = 1;
  expect_agrees(testing::op_case("argmax", {{"f32", {"n", "m"}}}, {{1, 1 << 18}}, "", R"({"dim": 1})").graph, {ties}, "argmax ties");
  ties.ptr<float>()[150000] = std::nanf("");
  expect_agrees(testing::op_case("argmax", {{"f32", {"n", "m"}}}, {{1, 1 << 18}}, "", R"({"dim": 1})").graph, {ties}, "argmax NaN");
  expect_agrees(testing::op_case("max", {{"f32", {"n", "m"}}}, {{1, 1 << 18}}, "", R"({"axes": [1]})").graph, {ties}, "max NaN");
}

// Batch dims that one cuBLAS call covers (dense, broadcast), and those it
// loops over (a broadcast that breaks the layout).
TEST(Cuda, BatchedMatmulsOverSeveralBatchDims) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(11);
  using Dims = std::vector<std::string>;
  auto mm = [&](const Dims& a, std::vector<int64_t> as, const Dims& b, std::vector<int64_t> bs, const std::string& what) {
    const std::string graph = testing::op_case("matmul", {{"f32", a}, {"f32", b}}, {as, bs}).graph;
    expect_agrees(graph, {testing::random_tensor(DType::kF32, as, rng), testing::random_tensor(DType::kF32, bs, rng)}, what, 1e-4, 1e-5);
  };
  mm({"b", "h", "m", "k"}, {2, 3, 5, 7}, {"b", "h", "k", "n"}, {2, 3, 7, 4}, "dense [2, 3] batch");
  mm({"b", "h", "m", "k"}, {2, 3, 5, 7}, {"k", "n"}, {7, 4}, "b broadcast over the batch");
  mm({"b", "1", "m", "k"}, {2, 1, 5, 7}, {"h", "k", "n"}, {3, 7, 4}, "a and b broadcast along different dims");
  mm({"g", "b", "h", "m", "k"}, {4, 2, 3, 5, 7}, {"1", "b", "h", "k", "n"}, {1, 2, 3, 7, 4}, "three batch dims, b broadcast along the first");
}

// A decode step's key/value cache (tests/support/decode_cases.h): grouped
// heads whose products split their head dim (a cuBLAS batch over the
// trailing dims, a loop over the rest) and block updates written in one pass.
TEST(Cuda, DecodeCasesAgree) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(29);
  for (const testing::DecodeCase& c : testing::decode_cases(rng)) expect_agrees(c.graph, c.inputs, c.what, 1e-4, 1e-5);
}

TEST(Cuda, ErrorsAreTheReferencesAndEmptyAxesToo) {
  SKIP_WITHOUT_GPU();
  Tensor table = testing::from_values<float>(DType::kF32, {3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor bad = testing::from_values<int64_t>(DType::kI64, {2}, {1, 3});
  expect_agrees(testing::op_case("embedding", {{"f32", {"v", "d"}}, {"i64", {"k"}}}, {{3, 2}, {2}}).graph, {table, bad}, "index out of range");
  expect_agrees(testing::op_case("max", {{"f32", {"n", "m"}}}, {{4, 0}}, "", R"({"axes": [1]})").graph,
                {testing::zeros(DType::kF32, {4, 0})}, "max over an empty axis");
}

TEST(Cuda, OutputsStayOnTheDeviceAndReuseTheirBlocks) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(9);
  auto jit = testing::make_jit(R"({"compile": {"backend": "cuda"}})");
  ir::Graph g = testing::graph_from(kChain);
  Tensor x = to_device(testing::random_tensor(DType::kF32, {64, 100}, rng)), y = to_device(testing::random_tensor(DType::kF32, {100}, rng));
  DLTensor dl[] = {x.dl(), y.dl()};
  const DLTensor* args[] = {&dl[0], &dl[1]};
  std::vector<Tensor> out;
  ASSERT_TRUE(jit->call_graph("t", g, {}, runtime::Args(args, 2), out).is_ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].device().device_type, kDLCUDA);
  EXPECT_EQ(out[0].dl().device.device_type, kDLCUDA);
  const void* first = out[0].data();
  ASSERT_TRUE(jit->call_graph("t", g, {}, runtime::Args(args, 2), out).is_ok());
  EXPECT_EQ(out[0].data(), first) << "an output nobody else holds is written in place";
}

TEST(Cuda, RunsOnTheCallersStream) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(10);
  // The context first: a stream needs one current on the thread (the mock
  // refused this test alone, as a GPU's driver does; with the others in one
  // process, an earlier test had bound it).
  ASSERT_TRUE(dev().bind().is_ok());
  CUstream stream = nullptr;
  ASSERT_EQ(dev().cu->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  auto jit = testing::make_jit(R"({"compile": {"backend": "cuda"}})");
  ir::Graph g = testing::graph_from(kChain);
  Tensor hx = testing::random_tensor(DType::kF32, {512, 1000}, rng), hy = testing::random_tensor(DType::kF32, {1000}, rng);
  Tensor x = to_device(hx), y = to_device(hy);
  DLTensor dl[] = {x.dl(), y.dl()};
  const DLTensor* args[] = {&dl[0], &dl[1]};
  std::vector<Tensor> out;
  ASSERT_TRUE(jit->call_graph("t", g, {}, runtime::Args(args, 2), out, stream).is_ok());
  Tensor got = to_host(out[0], stream);  // ordered after the kernel on the same stream
  auto ref = testing::run_graph(kChain, {hx, hy}, R"({"compile": {"backend": "reference"}})");
  ASSERT_TRUE(ref.is_ok());
  EXPECT_TRUE(testing::tensors_close(got, (*ref)[0]));
  out.clear();
  EXPECT_EQ(dev().cu->cuStreamDestroy(stream), CUDA_SUCCESS);
}

// A thread with no context current cannot make a stream: the driver's rule
// (the mock's and a GPU's alike), which RunsOnTheCallersStream broke when
// run alone.
TEST(Cuda, AStreamNeedsAContextCurrentOnItsThread) {
  SKIP_WITHOUT_GPU();
  CUresult made = CUDA_SUCCESS, after_bind = CUDA_ERROR_UNKNOWN;
  std::thread([&] {
    CUstream s = nullptr;
    made = dev().cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    if (!dev().bind().is_ok()) return;
    after_bind = dev().cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    if (after_bind == CUDA_SUCCESS) dev().cu->cuStreamDestroy(s);
  }).join();
  EXPECT_EQ(made, CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(after_bind, CUDA_SUCCESS);
}

TEST(Cuda, HostInputsAreRejectedSayingWhereAndWhat) {
  SKIP_WITHOUT_GPU();
  auto jit = testing::make_jit(R"({"compile": {"backend": "cuda"}})");
  Tensor x = testing::zeros(DType::kF32, {4});
  DLTensor d = x.dl();
  const DLTensor* args[] = {&d};
  std::vector<Tensor> out;
  Status s = jit->call_graph("t", testing::graph_from(testing::op_case("exp", {{"f32", {"n"}}}, {{4}}).graph), {}, runtime::Args(args, 1), out);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("input 0 is on kDLCPU 0; the cuda backend runs on kDLCUDA 0"), std::string::npos) << s.message();
}

// 300 random graphs of up to 20 nodes, 100 a test.
class CudaRandomGraphs : public ::testing::TestWithParam<int> {};

TEST_P(CudaRandomGraphs, AgreeWithTheReference) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(20261122 + static_cast<unsigned>(GetParam()));
  for (int trial = 0; trial < 100; ++trial) {
    testing::RandomGraph g = testing::random_graph(rng, 20);
    auto ref = testing::run_graph(g.json, g.inputs, R"({"compile": {"backend": "reference"}})");
    ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
    for (const char* mode : {"always_dynamic", "always_static"}) {
      Outcome got = run_cuda(g.json, g.inputs, mode);
      ASSERT_TRUE(got.status.is_ok()) << got.status.to_string() << "\n" << g.json;
      ASSERT_EQ(got.out.size(), ref->size());
      for (size_t i = 0; i < ref->size(); ++i) {
        ASSERT_TRUE(testing::tensors_close(got.out[i], (*ref)[i], 1e-4, 1e-5)) << mode << ", output " << i << "\n" << g.json;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, CudaRandomGraphs, ::testing::Range(0, 3));

// A kernel compiled by one Jit is loaded from the disk tier by the next,
// with no NVRTC, and runs right.
TEST(Cuda, KernelsPersistThroughTheDiskTier) {
  SKIP_WITHOUT_GPU();
  testing::TempDir dir;
  const std::string config = R"({"compile": {"backend": "cuda"}, "log": {"recompiles": false}, "cache": {"disk": {"path": ")" + dir.path() + R"("}}})";
  std::mt19937 rng(31);
  const Tensor hx = testing::random_tensor(DType::kF32, {64, 300}, rng), hy = testing::random_tensor(DType::kF32, {300}, rng);
  auto ref = testing::run_graph(kChain, {hx, hy}, R"({"compile": {"backend": "reference"}})");
  ASSERT_TRUE(ref.is_ok());
  for (int round = 0; round < 2; ++round) {
    auto jit = testing::make_jit(config);
    Tensor x = to_device(hx), y = to_device(hy);
    DLTensor dl[] = {x.dl(), y.dl()};
    const DLTensor* args[] = {&dl[0], &dl[1]};
    std::vector<Tensor> out;
    ASSERT_TRUE(jit->call_graph("t", testing::graph_from(kChain), {}, runtime::Args(args, 2), out).is_ok());
    EXPECT_TRUE(testing::tensors_close(to_host(out[0]), (*ref)[0]));
    const auto s = jit->stats_json();
    EXPECT_EQ(s["backend_compiles"].get<uint64_t>(), round == 0 ? 1u : 0u);
    EXPECT_EQ(s["disk_loads"].get<uint64_t>(), round == 0 ? 0u : 1u);
  }
}

// Threads share one Jit, each calling on a stream of its own (the context
// bound on each thread, the pools per stream).
TEST(Cuda, ThreadsShareAJitEachOnItsOwnStream) {
  SKIP_WITHOUT_GPU();
  auto jit = testing::make_jit(R"({"compile": {"backend": "cuda"}})");
  const ir::Graph g = testing::graph_from(kChain);
  std::vector<std::string> failures(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < failures.size(); ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(40 + t));
      if (!dev().bind().is_ok()) return void(failures[t] = "bind");
      CUstream stream = nullptr;
      if (dev().cu->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return void(failures[t] = "cuStreamCreate");
      for (int call = 0; call < 3; ++call) {
        const Tensor hx = testing::random_tensor(DType::kF32, {8 + call, 100 + 10 * static_cast<int64_t>(t)}, rng);
        const Tensor hy = testing::random_tensor(DType::kF32, {100 + 10 * static_cast<int64_t>(t)}, rng);
        Tensor x = to_device(hx), y = to_device(hy);
        DLTensor dl[] = {x.dl(), y.dl()};
        const DLTensor* args[] = {&dl[0], &dl[1]};
        std::vector<Tensor> out;
        Status st = jit->call_graph("t", g, {}, runtime::Args(args, 2), out, stream);
        if (!st.is_ok()) return void(failures[t] = st.to_string());
        auto ref = testing::run_graph(kChain, {hx, hy}, R"({"compile": {"backend": "reference"}})");
        if (!ref.is_ok() || !testing::tensors_close(to_host(out[0], stream), (*ref)[0])) return void(failures[t] = "wrong result");
      }
      dev().cu->cuStreamDestroy(stream);
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t t = 0; t < failures.size(); ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

}  // namespace
}  // namespace shapejit

#endif  // SHAPEJIT_HAVE_CUDA
