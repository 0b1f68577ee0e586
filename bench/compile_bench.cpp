// Compile latency through the whole miss path (trace replay, specialize,
// lower, LLVM, install, one run on small inputs): each iteration calls a
// site with a shape it has not seen under always_static, so every call is a
// miss and a compile. Two graphs: the 10-op fused pointwise chain and the
// decoder block of bench/workloads/decoder.py (read from the bundled trace).
// Public API only (Jit::create, call_graph, parse_graph), so the same source
// measures an earlier build too.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/ir/graph_json.h"
#include "jit/runtime/jit.h"

namespace {

using namespace shapejit;
using Clock = std::chrono::steady_clock;

const char* kChain10 = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "mul", "in": ["x", 1.5], "out": "a"}, {"op": "add", "in": ["a", 0.25], "out": "b"},
              {"op": "relu", "in": ["b"], "out": "c"}, {"op": "sub", "in": ["c", "x"], "out": "d"},
              {"op": "abs", "in": ["d"], "out": "e"}, {"op": "sqrt", "in": ["e"], "out": "f"},
              {"op": "neg", "in": ["f"], "out": "g"}, {"op": "maximum", "in": ["g", "x"], "out": "h"},
              {"op": "mul", "in": ["h", "h"], "out": "i"}, {"op": "minimum", "in": ["i", 4.0], "out": "z"}],
    "outputs": ["z"]})";

ir::Graph block_graph() {
  std::ifstream f(std::string(SHAPEJIT_SOURCE_DIR) + "/bench/traces/decoder_conv8.jsonl");
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto j = nlohmann::json::parse(line);
    if (j.value("kind", "") == "graph" && j.value("site", "") == "block") return std::move(ir::parse_graph(j["graph"].dump())).value();
  }
  std::abort();
}

// Shapes of the block's inputs for a prefill of t positions (batch 1, cache 0).
std::vector<std::vector<int64_t>> block_shapes(int64_t t) {
  return {{1, t, 64}, {1, 4, 0, 16}, {1, 4, 0, 16}, {64}, {64, 192}, {64, 64}, {64}, {64, 256}, {256, 64}};
}

void miss_latency(benchmark::State& state, const ir::Graph& g, const std::function<std::vector<std::vector<int64_t>>(int64_t)>& shapes) {
  auto jit = std::move(runtime::Jit::create(R"({"policy": {"mode": "always_static", "cache_size_limit": 1000000}, "log": {"recompiles": false}})")).value();
  std::vector<double> t;
  int64_t i = 2;
  for (auto _ : state) {
    std::vector<ir::Tensor> in;
    for (const auto& s : shapes(i)) in.push_back(ir::Tensor::empty(g.inputs[in.size()].dtype, s));
    std::vector<DLTensor> dl;
    std::vector<const DLTensor*> args;
    for (const ir::Tensor& x : in) dl.push_back(x.dl());
    for (const DLTensor& d : dl) args.push_back(&d);
    std::vector<ir::Tensor> out;
    const auto t0 = Clock::now();
    if (!jit->call_graph("s", g, {}, runtime::Args(args.data(), args.size()), out).is_ok()) std::abort();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    ++i;
  }
  std::sort(t.begin(), t.end());
  state.counters["median_ms"] = t[t.size() / 2];
  state.counters["p90_ms"] = t[t.size() * 9 / 10];
  state.counters["compiles"] = jit->stats_json()["compiles"].get<double>();
}

void BM_MissCompile10Op(benchmark::State& state) {
  const ir::Graph g = std::move(ir::parse_graph(kChain10)).value();
  miss_latency(state, g, [](int64_t i) { return std::vector<std::vector<int64_t>>{{1000 + i}}; });
}
BENCHMARK(BM_MissCompile10Op)->Iterations(40)->Unit(benchmark::kMillisecond);

void BM_MissCompileDecoderBlock(benchmark::State& state) {
  const ir::Graph g = block_graph();
  miss_latency(state, g, block_shapes);
}
BENCHMARK(BM_MissCompileDecoderBlock)->Iterations(20)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
