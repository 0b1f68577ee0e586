// What the CUDA backend's tests share: device copies of host tensors, a
// graph run through a Jit on the cuda backend (on the GPU where the machine
// has one, else on the mock driver, tests/backends/cuda/cuda_env.cpp), and
// the check that it agrees with the reference interpreter, fully dynamic
// and fully static, with no fallback.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "backends/cuda/driver.h"
#include "tests/support/test_util.h"

namespace shapejit::cuda_test {

using ir::DType;
using ir::Tensor;
namespace cuda = backends::cuda;

#define SKIP_WITHOUT_GPU()                                                 \
  do {                                                                     \
    auto device_ = cuda::device();                                          \
    if (!device_.is_ok()) GTEST_SKIP() << device_.status().message();      \
  } while (0)

inline const cuda::Device& dev() { return *cuda::device().value(); }

// A device copy of a host tensor (dense), freed with the tensor.
inline Tensor to_device(const Tensor& host) {
  const Tensor c = host.contiguous();
  const size_t bytes = std::max<size_t>(1, static_cast<size_t>(c.numel()) * ir::dtype_size(c.dtype()));
  EXPECT_TRUE(dev().bind().is_ok());
  CUdeviceptr p = 0;
  EXPECT_EQ(dev().cu->cuMemAlloc(&p, bytes), CUDA_SUCCESS);
  if (c.numel()) {
    EXPECT_EQ(dev().cu->cuMemcpyHtoDAsync(p, c.data(), bytes, nullptr), CUDA_SUCCESS);
  }
  EXPECT_EQ(dev().cu->cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  std::shared_ptr<void> mem(reinterpret_cast<void*>(p), [](void* q) { dev().cu->cuMemFree(reinterpret_cast<CUdeviceptr>(q)); });
  return Tensor::over(c.dtype(), c.shape(), std::move(mem), {kDLCUDA, 0});
}

inline Tensor to_host(const Tensor& d, CUstream s = nullptr) {
  EXPECT_EQ(d.device().device_type, kDLCUDA);
  EXPECT_TRUE(d.is_contiguous());
  Tensor h = Tensor::empty(d.dtype(), d.shape());
  const size_t bytes = static_cast<size_t>(h.numel()) * ir::dtype_size(h.dtype());
  if (bytes) {
    EXPECT_EQ(dev().cu->cuMemcpyDtoHAsync(h.data(), reinterpret_cast<CUdeviceptr>(d.data()), bytes, s), CUDA_SUCCESS);
  }
  EXPECT_EQ(dev().cu->cuStreamSynchronize(s), CUDA_SUCCESS);
  return h;
}

struct Outcome {
  Status status;
  std::vector<Tensor> out;  // on the host
  uint64_t fallbacks = 0;
  std::vector<std::string> log;
};

// Runs `graph` on device copies of `inputs` (views of them when `view`
// gives one, for non-contiguous inputs).
inline Outcome run_cuda(const std::string& graph, const std::vector<Tensor>& inputs, const std::string& mode,
                 const std::function<DLTensor(const Tensor&, size_t)>& view = nullptr) {
  Outcome r;
  ir::Graph g = testing::graph_from(graph);
  auto jit = runtime::Jit::create(R"({"compile": {"backend": "cuda"}, "policy": {"mode": ")" + mode + "\"}}");
  EXPECT_TRUE(jit.is_ok()) << jit.status().to_string();
  if (!jit.is_ok()) return r;
  (*jit)->set_log([&r](const std::string& line) { r.log.push_back(line); });
  std::vector<Tensor> on_device;
  std::vector<DLTensor> dl;
  for (size_t i = 0; i < inputs.size(); ++i) {
    on_device.push_back(to_device(inputs[i]));
    dl.push_back(view ? view(on_device.back(), i) : on_device.back().dl());
  }
  std::vector<const DLTensor*> ptrs;
  for (const DLTensor& d : dl) ptrs.push_back(&d);
  std::vector<Tensor> out;
  // The site's name is the reference's (testing::run_graph): errors name it.
  r.status = (*jit)->call_graph("test", g, {}, runtime::Args(ptrs.data(), ptrs.size()), out);
  for (const Tensor& t : out) r.out.push_back(to_host(t));
  r.fallbacks = (*jit)->stats_json()["sites"]["test"]["fallbacks"].get<uint64_t>();
  return r;
}

inline void expect_agrees(const std::string& graph, const std::vector<Tensor>& inputs, const std::string& what, double rtol = 1e-5,
                   double atol = 1e-6, const std::function<DLTensor(const Tensor&, size_t)>& view = nullptr) {
  ir::Graph g = testing::graph_from(graph);
  auto ref = testing::run_graph(graph, inputs, R"({"compile": {"backend": "reference"}})");
  for (const char* mode : {"always_dynamic", "always_static"}) {
    SCOPED_TRACE(what + " (" + mode + ")");
    Outcome got = run_cuda(graph, inputs, mode, view);
    EXPECT_EQ(got.fallbacks, 0u) << (got.log.empty() ? "" : got.log[0]);
    ASSERT_EQ(got.status.code(), ref.status().code()) << got.status.to_string() << " vs " << ref.status().to_string();
    if (!ref.is_ok()) {
      EXPECT_EQ(got.status.message(), ref.status().message());
      continue;
    }
    ASSERT_EQ(got.out.size(), ref->size());
    for (size_t i = 0; i < ref->size(); ++i) EXPECT_TRUE(testing::tensors_close(got.out[i], (*ref)[i], rtol, atol)) << "output " << i;
  }
}

}  // namespace shapejit::cuda_test
