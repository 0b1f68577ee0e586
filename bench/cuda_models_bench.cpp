// A traced model on the GPU, call after call, for the peers' script
// (bench/peers/gpu_transformer_peers.py), which runs PyTorch on the same
// inputs and compares. Reads a spec on stdin:
//
//   {"trace": "bench/traces/gpu_decoder.jsonl", "graph": 0,
//    "inputs": [{"scale": 1, "offset": 0} | {"mod": 512} | {"value": 1}, ...],
//    "cases": [{"label": "decode 128", "shapes": [[1, 1, 64], ...],
//               "calls": 20, "rounds": 7, "dump": "/tmp/out.bin"}, ...]}
//
// The graph and what its trace observed come from the trace's `graph`-th
// graph record. Input i's element j is, by its entry: a float
// offset + scale * (2u - 1), u = ((j * 2654435761 + (i + 1) * 40503) mod
// 2^32) / 2^32; an integer (j * 7919 + i) mod `mod`; or `value`. The Python
// side makes the same inputs. Per case: one call (the compile) timed, then
// `rounds` rounds of `calls` calls on the default stream, synchronized at
// each round's end; prints a JSON line per case with the compile time and
// the minimum and median milliseconds per call, and writes the first output
// (as float32, dense) to `dump`. With a "config" whose backend is not
// "cuda", the same runs on the CPU (host inputs), which is how it is tested
// without a GPU.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backends/cuda/driver.h"
#include "jit/runtime/jit.h"
#include "jit/trace/trace_file.h"

namespace shapejit {
namespace {

namespace cuda = backends::cuda;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "cuda_models_bench: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T value_or_fail(Expected<T> e, const std::string& what) {
  if (!e.is_ok()) fail(what + ": " + e.status().to_string());
  return std::move(e).value();
}

const cuda::Device* g_gpu = nullptr;  // null: the CPU

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) fail(std::string(what) + ": " + g_gpu->cu->error(r));
}

void sync(const char* what) {
  if (g_gpu) check(g_gpu->cu->cuStreamSynchronize(nullptr), what);
}

// Input i's host values, as the spec's formula says.
ir::Tensor fill(size_t i, ir::DType dt, const std::vector<int64_t>& shape, const json& how) {
  ir::Tensor t = ir::Tensor::empty(dt, shape);
  const int64_t n = t.numel();
  for (int64_t j = 0; j < n; ++j) {
    if (how.contains("value")) {
      const double v = how["value"].get<double>();
      if (dt == ir::DType::kF32) t.ptr<float>()[j] = static_cast<float>(v);
      else if (dt == ir::DType::kI64) t.ptr<int64_t>()[j] = static_cast<int64_t>(v);
      else fail("input " + std::to_string(i) + ": a constant of this dtype");
    } else if (how.contains("mod")) {
      const uint64_t v = (static_cast<uint64_t>(j) * 7919 + i) % how["mod"].get<uint64_t>();
      if (dt != ir::DType::kI64) fail("input " + std::to_string(i) + ": integers fill i64 inputs");
      t.ptr<int64_t>()[j] = static_cast<int64_t>(v);
    } else {
      const uint64_t h = (static_cast<uint64_t>(j) * 2654435761ull + (i + 1) * 40503ull) % (uint64_t{1} << 32);
      const double u = static_cast<double>(h) / 4294967296.0;
      if (dt != ir::DType::kF32) fail("input " + std::to_string(i) + ": floats fill f32 inputs");
      t.ptr<float>()[j] = static_cast<float>(how.value("offset", 0.0) + how.value("scale", 1.0) * (2 * u - 1));
    }
  }
  return t;
}

ir::Tensor to_device(const ir::Tensor& h) {
  if (!g_gpu) return h;
  const cuda::Device& d = *g_gpu;
  const size_t bytes = std::max<size_t>(1, static_cast<size_t>(h.numel()) * ir::dtype_size(h.dtype()));
  CUdeviceptr p = 0;
  check(d.cu->cuMemAlloc(&p, bytes), "allocating an input");
  if (h.numel()) check(d.cu->cuMemcpyHtoDAsync(p, h.data(), bytes, nullptr), "copying an input");
  check(d.cu->cuStreamSynchronize(nullptr), "copying an input");
  const cuda::Device* dp = &d;
  std::shared_ptr<void> mem(reinterpret_cast<void*>(p), [dp](void* q) { dp->cu->cuMemFree(reinterpret_cast<CUdeviceptr>(q)); });
  return ir::Tensor::over(h.dtype(), h.shape(), std::move(mem), {kDLCUDA, 0});
}

void dump(const ir::Tensor& out, const std::string& path) {
  if (out.dtype() != ir::DType::kF32 || !out.is_contiguous()) fail("the first output is not a dense f32 tensor");
  std::vector<float> host(static_cast<size_t>(out.numel()));
  if (!g_gpu) std::copy_n(out.ptr<float>(), host.size(), host.data());
  else if (!host.empty()) check(g_gpu->cu->cuMemcpyDtoHAsync(host.data(), reinterpret_cast<CUdeviceptr>(out.data()), host.size() * 4, nullptr), "reading an output");
  sync("reading an output");
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(host.data()), static_cast<std::streamsize>(host.size() * 4));
  if (!f) fail("cannot write " + path);
}

int run() {
  const json spec = json::parse(std::cin);
  const json config = spec.value("config", json{{"compile", {{"backend", "cuda"}}}});
  if (config["compile"].value("backend", "") == "cuda") {
    g_gpu = value_or_fail(cuda::device(), "no GPU");
    check(g_gpu->bind().is_ok() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT, "binding the context");
  }
  const trace::TraceContents contents = value_or_fail(trace::read_trace_file(spec["trace"].get<std::string>()), "reading the trace");
  // The trace's `graph`-th graph record (the first by default).
  int skip = spec.value("graph", 0);
  const trace::TraceGraph* traced = nullptr;
  for (const trace::TraceEvent& e : contents.events) {
    if (e.graph && skip-- == 0) {
      traced = &*e.graph;
      break;
    }
  }
  if (!traced) fail("the trace has no graph record " + std::to_string(spec.value("graph", 0)));
  const std::string& site = traced->site;
  const ir::Graph& g = traced->graph;
  auto jit = value_or_fail(runtime::Jit::create(config.dump()), "the config");
  for (const json& c : spec["cases"]) {
    const auto shapes = c["shapes"].get<std::vector<std::vector<int64_t>>>();
    if (shapes.size() != g.inputs.size()) fail("case '" + c["label"].get<std::string>() + "': one shape per graph input");
    std::vector<ir::Tensor> on_device;
    for (size_t i = 0; i < shapes.size(); ++i) on_device.push_back(to_device(fill(i, g.inputs[i].dtype, shapes[i], spec["inputs"][i])));
    std::vector<DLTensor> dl;
    for (const ir::Tensor& t : on_device) dl.push_back(t.dl());
    std::vector<const DLTensor*> args;
    for (const DLTensor& t : dl) args.push_back(&t);
    std::vector<ir::Tensor> out;
    auto call = [&] {
      Status s = jit->call_graph(site, g, traced->observed, runtime::Args(args.data(), args.size()), out);
      if (!s.is_ok()) fail("a call: " + s.to_string());
    };
    const auto t0 = Clock::now();
    call();
    sync("the first call");
    const double first_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    const int calls = c.value("calls", 20), rounds = c.value("rounds", 7);
    for (int i = 0; i < calls; ++i) call();  // warm: pools, caches, clocks
    sync("warming up");
    std::vector<double> per_call;
    for (int r = 0; r < rounds; ++r) {
      const auto r0 = Clock::now();
      for (int i = 0; i < calls; ++i) call();
      sync("a round");
      per_call.push_back(std::chrono::duration<double, std::milli>(Clock::now() - r0).count() / calls);
    }
    std::sort(per_call.begin(), per_call.end());
    if (c.contains("dump")) dump(out.at(0), c["dump"].get<std::string>());
    const json stats = jit->stats_json()["sites"][site];
    json line = {{"label", c["label"]}, {"first_call_ms", first_ms}, {"min_ms", per_call.front()},
                 {"median_ms", per_call[per_call.size() / 2]}, {"compiles", stats.value("compiles", 0)},
                 {"fallbacks", stats.value("fallbacks", 0)}};
    std::printf("%s\n", line.dump().c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace shapejit

int main() { return shapejit::run(); }
