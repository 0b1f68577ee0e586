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
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/ir/graph_json.h"
#include "jit/runtime/jit.h"
#include "jit/trace/trace_file.h"

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

// -- Model size: compile time per node -------------------------------------
//
// One cold compile of a whole model traced as one graph (a fresh Jit with
// its memory cache alone, so every step compiles), reported per node: the
// GPT-2 of examples/gpt2_numpy.py traced whole at 1, 2, 4 and 12 layers
// (GPT-2-small's shapes; bench/traces/gpt2_numpy_*.jsonl, recorded by
// bench/python/record_gpt2.py), and the decoder block stacked 1 to 32 times.

struct Model {
  ir::Graph graph;
  std::vector<trace::Observation> observed;
  std::vector<std::pair<ir::DType, std::vector<int64_t>>> inputs;  // the first call's
};

Model gpt2_model(int layers) {
  const std::string path = std::string(SHAPEJIT_SOURCE_DIR) + "/bench/traces/gpt2_numpy_" + std::to_string(layers) + "layers.jsonl";
  auto contents = trace::read_trace_file(path);
  if (!contents.is_ok()) {
    std::fprintf(stderr, "%s\n", contents.status().to_string().c_str());
    std::abort();
  }
  Model m;
  for (const trace::TraceEvent& e : contents->events) {
    if (e.graph && m.graph.nodes.empty()) {
      m.graph = e.graph->graph;
      m.observed = e.graph->observed;
    }
    if (e.call && m.inputs.empty()) {
      for (const trace::TraceInput& in : e.call->inputs) m.inputs.emplace_back(in.dtype, in.shape);
    }
  }
  return m;
}

// The decoder block `n` times: layer i's x is layer i-1's y; each layer has
// its caches and weights; the outputs are the last y and every layer's k, v.
Model stacked_blocks(int n) {
  std::ifstream f(std::string(SHAPEJIT_SOURCE_DIR) + "/bench/traces/decoder_conv8.jsonl");
  nlohmann::json block;
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    auto j = nlohmann::json::parse(line);
    if (j.value("kind", "") == "graph" && j.value("site", "") == "block") {
      block = j["graph"];
      break;
    }
  }
  nlohmann::json g = {{"inputs", nlohmann::json::array()}, {"nodes", nlohmann::json::array()}, {"outputs", nlohmann::json::array()}};
  std::string x = "x";
  for (int i = 0; i < n; ++i) {
    const std::string p = "l" + std::to_string(i) + "_";
    auto name = [&](const std::string& v) { return v == "x" ? x : p + v; };
    for (nlohmann::json in : block["inputs"]) {
      if (in["name"] == "x" && i > 0) continue;
      in["name"] = name(in["name"]);
      g["inputs"].push_back(in);
    }
    for (nlohmann::json node : block["nodes"]) {
      for (auto& operand : node["in"]) {
        if (operand.is_string()) operand = name(operand);
      }
      node["out"] = node["out"].is_array() ? node["out"] : nlohmann::json(name(node["out"]));
      if (node["out"].is_array()) {
        for (auto& o : node["out"]) o = name(o);
      }
      g["nodes"].push_back(node);
    }
    g["outputs"].push_back(p + "k");
    g["outputs"].push_back(p + "v");
    x = p + "y";
  }
  g["outputs"].push_back(x);
  Model m;
  m.graph = std::move(ir::parse_graph(g.dump())).value();
  for (const ir::InputSpec& in : m.graph.inputs) {
    std::vector<int64_t> shape;
    for (size_t d = 0; d < in.shape.size(); ++d) {
      const std::string& s = in.shape[d].name;
      shape.push_back(in.shape[d].is_symbol ? (s == "b" ? 1 : s == "t" ? 16 : 0) : in.shape[d].value);
    }
    m.inputs.emplace_back(in.dtype, shape);
  }
  return m;
}

// `config` for a Jit of the benches; `disk`: the disk tier's folder (none: no disk tier).
std::string bench_config(const std::string& disk) {
  nlohmann::json c = {{"log", {{"recompiles", false}}}};
  c["cache"]["disk"] = disk.empty() ? nlohmann::json{{"max_mb", 0}} : nlohmann::json{{"path", disk}};
  return c.dump();
}

void cold_compile(benchmark::State& state, const Model& m, const std::string& disk = {}) {
  std::vector<ir::Tensor> in;
  for (const auto& [dtype, shape] : m.inputs) in.push_back(ir::Tensor::empty(dtype, shape));
  std::vector<DLTensor> dl;
  std::vector<const DLTensor*> args;
  for (const ir::Tensor& x : in) dl.push_back(x.dl());
  for (const DLTensor& d : dl) args.push_back(&d);
  std::vector<double> t;
  nlohmann::json stats;
  for (auto _ : state) {
    auto jit = std::move(runtime::Jit::create(bench_config(disk))).value();
    std::vector<ir::Tensor> out;
    const auto t0 = Clock::now();
    const Status s = jit->call_graph("model", m.graph, m.observed, runtime::Args(args.data(), args.size()), out);
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!s.is_ok()) {
      state.SkipWithError(s.to_string().c_str());
      return;
    }
    stats = jit->stats_json();
  }
  std::sort(t.begin(), t.end());
  const double nodes = static_cast<double>(m.graph.nodes.size());
  state.counters["nodes"] = nodes;
  state.counters["call_ms"] = t[t.size() / 2];
  state.counters["us_per_node"] = t[t.size() / 2] * 1000 / nodes;
  state.counters["compile_ms"] = stats["compile_ms"].get<double>();
  state.counters["specialize_ms"] = stats["specialize_ms"].get<double>();
  state.counters["lower_ms"] = stats["compile_phases_ms"]["lower"].get<double>();
  state.counters["steps_ms"] = stats["compile_phases_ms"]["steps"].get<double>();
  state.counters["distinct_steps"] = stats["steps"]["distinct"].get<double>();
}

void BM_ColdCompileGpt2(benchmark::State& state) { cold_compile(state, gpt2_model(static_cast<int>(state.range(0)))); }
BENCHMARK(BM_ColdCompileGpt2)->Arg(1)->Arg(2)->Arg(4)->Arg(12)->Iterations(3)->Unit(benchmark::kMillisecond);

// The whole model's kernel from the disk tier: a Jit compiles it into a
// fresh folder, then each iteration's new Jit (its memory tier empty) loads
// it from there. The process's LLVM session is warm, as after any compile.
void BM_DiskLoadGpt2(benchmark::State& state) {
  const Model m = gpt2_model(static_cast<int>(state.range(0)));
  char dir[] = "/tmp/shapejit-compile-bench-XXXXXX";
  if (!mkdtemp(dir)) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  {
    std::vector<ir::Tensor> in, out;
    std::vector<DLTensor> dl;
    std::vector<const DLTensor*> args;
    for (const auto& [dtype, shape] : m.inputs) in.push_back(ir::Tensor::empty(dtype, shape));
    for (const ir::Tensor& x : in) dl.push_back(x.dl());
    for (const DLTensor& d : dl) args.push_back(&d);
    auto jit = std::move(runtime::Jit::create(bench_config(dir))).value();
    if (!jit->call_graph("model", m.graph, m.observed, runtime::Args(args.data(), args.size()), out).is_ok()) std::abort();
  }
  cold_compile(state, m, dir);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_DiskLoadGpt2)->Arg(1)->Arg(12)->Iterations(3)->Unit(benchmark::kMillisecond);

void BM_ColdCompileStackedBlocks(benchmark::State& state) { cold_compile(state, stacked_blocks(static_cast<int>(state.range(0)))); }
BENCHMARK(BM_ColdCompileStackedBlocks)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
