// The CUDA backend's kernels, each against its baseline in the same run,
// alternating, timed with CUDA events on one stream:
//   - a fused chain of 10 pointwise ops over 1 GiB of f32 vs a 1 GiB
//     device-to-device copy (both read and write 1 GiB; target: the chain's
//     bandwidth >= 80% of the copy's);
//   - dynamic vs static kernels of one graph on the same shapes, for
//     pointwise, softmax and layer_norm (target <= 1.15);
//   - NVRTC compile latency of the 10-op kernel (no GPU needed) and the
//     load time of its cached cubin (cuModuleLoadData).
// Without a GPU the GPU benchmarks stop with the reason; the compile
// latency still runs.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "backends/cuda/codegen.h"
#include "backends/cuda/driver.h"
#include "backends/cuda/nvrtc.h"
#include "backends/loops/lower.h"
#include "bench/bench_util.h"

namespace shapejit {
namespace {

namespace cuda = backends::cuda;
using Clock = std::chrono::steady_clock;

using bench::chain10;
using bench::Specialized;
using bench::specialize;

// The GPU, or why not (benchmarks then stop with it).
const cuda::Device* device_or_skip(benchmark::State& state) {
  auto d = cuda::device();
  if (!d.is_ok()) {
    state.SkipWithError(d.status().message().c_str());
    return nullptr;
  }
  return d.value();
}

backends::Backend& cuda_backend() {
  static std::unique_ptr<backends::Backend> b = [] {
    auto r = backends::make_cuda_backend();
    if (!r.is_ok()) std::abort();
    return std::move(r).value();
  }();
  return *b;
}

// A compiled kernel on device inputs of uniform(-2, 2) floats.
struct Compiled {
  std::unique_ptr<backends::Kernel> kernel;
  std::vector<std::shared_ptr<void>> memory;
  std::vector<DLTensor> dl;
  std::vector<const DLTensor*> args;
  std::vector<int64_t> symbols;
  std::vector<ir::Tensor> outputs;
  std::vector<std::vector<int64_t>> shapes;

  void run() {
    if (!kernel->run({}, args, symbols, outputs).is_ok()) std::abort();
  }
};

Compiled compile(const cuda::Device& d, const std::string& json, const std::vector<std::vector<int64_t>>& shapes, bool dynamic) {
  Compiled c;
  Specialized s = specialize(json, shapes, dynamic);
  c.kernel = std::move(cuda_backend().compile(s.graph, {})).value();
  c.symbols = s.symbols;
  c.shapes = shapes;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-2, 2);
  for (const auto& shape : c.shapes) {
    int64_t n = 1;
    for (int64_t x : shape) n *= x;
    std::vector<float> host(static_cast<size_t>(n));
    for (float& v : host) v = u(rng);
    CUdeviceptr p = 0;
    if (d.cu->cuMemAlloc(&p, host.size() * 4) != CUDA_SUCCESS) std::abort();
    d.cu->cuMemcpyHtoDAsync(p, host.data(), host.size() * 4, nullptr);
    d.cu->cuStreamSynchronize(nullptr);
    c.memory.emplace_back(reinterpret_cast<void*>(p), [&d](void* q) { d.cu->cuMemFree(reinterpret_cast<CUdeviceptr>(q)); });
  }
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    DLTensor t{};
    t.data = c.memory[i].get();
    t.device = {kDLCUDA, 0};
    t.ndim = static_cast<int32_t>(c.shapes[i].size());
    t.dtype = {kDLFloat, 32, 1};
    t.shape = c.shapes[i].data();
    c.dl.push_back(t);
  }
  for (const DLTensor& t : c.dl) c.args.push_back(&t);
  bench::allocate_outputs(cuda_backend(), *s.graph, c.args, c.symbols, c.outputs);
  c.run();
  return c;
}

// Milliseconds of f() on the default stream, by events.
double gpu_ms(const cuda::Device& d, const std::function<void()>& f) {
  CUevent a, b;
  d.cu->cuEventCreate(&a, CU_EVENT_DEFAULT);
  d.cu->cuEventCreate(&b, CU_EVENT_DEFAULT);
  d.cu->cuEventRecord(a, nullptr);
  f();
  d.cu->cuEventRecord(b, nullptr);
  d.cu->cuEventSynchronize(b);
  float ms = 0;
  d.cu->cuEventElapsedTime(&ms, a, b);
  d.cu->cuEventDestroy(a);
  d.cu->cuEventDestroy(b);
  return ms;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Alternates a and b each iteration; reports both times and b's over a's.
void compare(benchmark::State& state, const cuda::Device& d, const std::function<void()>& a, const std::function<void()>& b,
             const char* a_name, const char* b_name) {
  gpu_ms(d, a);
  gpu_ms(d, b);
  std::vector<double> ta, tb;
  for (auto _ : state) {
    ta.push_back(gpu_ms(d, a));
    tb.push_back(gpu_ms(d, b));
  }
  state.counters[std::string(a_name) + "_ms"] = median(ta);
  state.counters[std::string(b_name) + "_ms"] = median(tb);
  state.counters[std::string(b_name) + "/" + a_name] = median(tb) / median(ta);
}

void BM_Chain10VsDeviceCopy1GiB(benchmark::State& state) {
  const cuda::Device* d = device_or_skip(state);
  if (!d) return;
  const int64_t bytes = int64_t{1} << 30, n = bytes / 4;
  Compiled c = compile(*d, chain10("n"), {{n}}, /*dynamic=*/true);
  CUdeviceptr dst = 0;
  if (d->cu->cuMemAlloc(&dst, bytes) != CUDA_SUCCESS) return state.SkipWithError("cannot allocate 1 GiB for the copy");
  const CUdeviceptr src = reinterpret_cast<CUdeviceptr>(c.memory[0].get());
  compare(state, *d, [&] { d->cu->cuMemcpyDtoDAsync(dst, src, bytes, nullptr); }, [&] { c.run(); }, "copy", "chain");
  d->cu->cuMemFree(dst);
  const double copy_ms = state.counters["copy_ms"], chain_ms = state.counters["chain_ms"];
  state.counters["copy_GBps"] = 2.0 * bytes / (copy_ms * 1e6);
  state.counters["chain_GBps"] = 2.0 * bytes / (chain_ms * 1e6);
  state.counters["chain_bw/copy_bw"] = copy_ms / chain_ms;
}
BENCHMARK(BM_Chain10VsDeviceCopy1GiB)->Iterations(20)->Unit(benchmark::kMillisecond);

void dynamic_vs_static(benchmark::State& state, const std::string& json, const std::vector<std::vector<int64_t>>& shapes) {
  const cuda::Device* d = device_or_skip(state);
  if (!d) return;
  Compiled s = compile(*d, json, shapes, false), dyn = compile(*d, json, shapes, true);
  compare(state, *d, [&] { s.run(); }, [&] { dyn.run(); }, "static", "dynamic");
}

void BM_DynamicVsStaticPointwise(benchmark::State& state) {
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n", "m"]}, {"name": "b", "dtype": "f32", "shape": ["m"]}],
    "nodes": [{"op": "add", "in": ["x", "b"], "out": "a"}, {"op": "gelu", "in": ["a"], "out": "y"}], "outputs": ["y"]})";
  dynamic_vs_static(state, g, {{8192, 4096}, {4096}});
}
BENCHMARK(BM_DynamicVsStaticPointwise)->Iterations(50)->Unit(benchmark::kMillisecond);

void BM_DynamicVsStaticSoftmax(benchmark::State& state) {
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n", "m"]}],
    "nodes": [{"op": "softmax", "in": ["x"], "out": "y", "attrs": {"dim": -1}}], "outputs": ["y"]})";
  dynamic_vs_static(state, g, {{16384, 1024}});
}
BENCHMARK(BM_DynamicVsStaticSoftmax)->Iterations(50)->Unit(benchmark::kMillisecond);

void BM_DynamicVsStaticLayerNorm(benchmark::State& state) {
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n", "m"]}, {"name": "w", "dtype": "f32", "shape": ["m"]},
    {"name": "b", "dtype": "f32", "shape": ["m"]}],
    "nodes": [{"op": "layer_norm", "in": ["x", "w", "b"], "out": "y"}], "outputs": ["y"]})";
  dynamic_vs_static(state, g, {{16384, 1024}, {1024}, {1024}});
}
BENCHMARK(BM_DynamicVsStaticLayerNorm)->Iterations(50)->Unit(benchmark::kMillisecond);

// The source of the 10-op kernel, fully dynamic.
std::string chain10_source() {
  Specialized s = specialize(chain10("n"), {{1000}}, true);
  backends::loops::LowerOptions o;
  o.tile = 0;
  return std::move(cuda::emit_cuda(std::move(backends::loops::lower(*s.graph, o)).value())).value().code;
}

void BM_NvrtcCompile10Op(benchmark::State& state) {
  const std::string src = chain10_source();
  auto d = cuda::device();
  const int arch = d.is_ok() ? d.value()->arch : 90;
  if (!cuda::nvrtc_compile(src, arch, false).is_ok()) return state.SkipWithError("nvrtc failed");  // and NVRTC's first-use costs
  std::vector<double> t;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    benchmark::DoNotOptimize(cuda::nvrtc_compile(src, arch, false));
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  state.counters["median_ms"] = t[t.size() / 2];
  state.counters["p90_ms"] = t[t.size() * 9 / 10];
  state.counters["sm"] = arch;
}
BENCHMARK(BM_NvrtcCompile10Op)->Iterations(30)->Unit(benchmark::kMillisecond);

void BM_CubinLoad(benchmark::State& state) {
  const cuda::Device* d = device_or_skip(state);
  if (!d) return;
  const std::string cubin = std::move(cuda::nvrtc_compile(chain10_source(), d->arch, false)).value();
  if (!d->bind().is_ok()) return state.SkipWithError("no context");
  std::vector<double> t;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    CUmodule m = nullptr;
    if (d->cu->cuModuleLoadData(&m, cubin.data()) != CUDA_SUCCESS) return state.SkipWithError("cuModuleLoadData failed");
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    d->cu->cuModuleUnload(m);
  }
  std::sort(t.begin(), t.end());
  state.counters["median_ms"] = t[t.size() / 2];
  state.counters["cubin_KiB"] = static_cast<double>(cubin.size()) / 1024;
}
BENCHMARK(BM_CubinLoad)->Iterations(50)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shapejit

BENCHMARK_MAIN();
