// The embedding application's loop, through the C API as such an
// application links it: the MiniLM-size encoder's graph
// (bench/traces/gpu_encoder.jsonl, recorded from examples/encoder.py), its
// weights loaded once, then one call a sentence over a stream of single
// sentences whose lengths follow a chat-like distribution (log-normal,
// median 16 tokens, 5 to 74). Reports the stream's total, the first call
// (the compile) apart, and compiles, for each way the loop can call:
//
//   text      sj_call_graph with the graph's text (parsed every call)
//   handle    sj_graph_parse once, sj_call_graph_handle
// each with the weights frozen (sj_freeze) or not, interleaved over
// --rounds rounds, each round on a fresh jit with the memory tier alone
// (a cold cache: the compile counts, as in a new process).
//
//   taskset -c 0 build/embed_stream_bench [--sentences 500] [--rounds 3] [--seed 1]
//       [--way text-inputs|handle-inputs|text-frozen|handle-frozen ...] [--length N (every sentence N tokens)]
//       [--lengths FILE (one length a line: the stream of bench/peers/transformer_peers.py --stream)]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "jit/capi/shapejit.h"

#ifndef SHAPEJIT_SOURCE_DIR
#define SHAPEJIT_SOURCE_DIR "."
#endif

namespace {

using Clock = std::chrono::steady_clock;

// A host tensor the C API reads.
struct Host {
  std::vector<int64_t> shape;
  std::vector<char> bytes;
  DLTensor dl{};
  Host(DLDataType dt, std::vector<int64_t> s) : shape(std::move(s)) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    bytes.resize(static_cast<size_t>(std::max<int64_t>(n, 1)) * dt.bits / 8);
    dl.data = bytes.data();
    dl.device = {kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(shape.size());
    dl.dtype = dt;
    dl.shape = shape.data();
  }
  int64_t numel() const { return static_cast<int64_t>(bytes.size() * 8 / dl.dtype.bits); }
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "embed_stream_bench: %s: %s\n", what.c_str(), sj_last_error());
  std::exit(1);
}

std::string encoder_graph() {
  std::ifstream f(std::string(SHAPEJIT_SOURCE_DIR) + "/bench/traces/gpu_encoder.jsonl");
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    auto j = nlohmann::json::parse(line);
    if (j.value("kind", "") == "graph") return j["graph"].dump();
  }
  std::fprintf(stderr, "embed_stream_bench: no graph in bench/traces/gpu_encoder.jsonl\n");
  std::exit(1);
}

// The stream's lengths: log-normal around 16 tokens, clipped to 5..74.
std::vector<int64_t> lengths(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::lognormal_distribution<double> d(std::log(16.0), 0.55);
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(std::clamp<int64_t>(std::llround(d(rng)), 5, 74));
  return out;
}

struct Result {
  double total_s = 0, first_ms = 0;
  int64_t compiles = 0;
};

Result stream(const std::string& text, std::vector<Host>& weights, const std::vector<int64_t>& lens, bool handle, bool frozen) {
  sj_jit* jit = nullptr;
  if (sj_create(R"({"cache": {"disk": {"max_mb": 0}}, "log": {"recompiles": false}})", &jit) != SJ_OK) fail("sj_create");
  sj_site* site = nullptr;
  if (sj_site_get(jit, "encoder", &site) != SJ_OK) fail("sj_site_get");
  if (frozen) {
    for (Host& w : weights) {
      if (sj_freeze(&w.dl) != SJ_OK) fail("sj_freeze");
    }
  }
  sj_graph* graph = nullptr;
  Result r;
  const auto t0 = Clock::now();
  if (handle && sj_graph_parse(text.c_str(), &graph) != SJ_OK) fail("sj_graph_parse");
  for (size_t i = 0; i < lens.size(); ++i) {
    Host ids({kDLInt, 64, 1}, {1, lens[i]}), mask({kDLInt, 64, 1}, {1, lens[i]});
    for (int64_t j = 0; j < lens[i]; ++j) {
      reinterpret_cast<int64_t*>(ids.bytes.data())[j] = (j * 7919 + static_cast<int64_t>(i)) % 30522;
      reinterpret_cast<int64_t*>(mask.bytes.data())[j] = 1;
    }
    std::vector<const DLTensor*> args = {&ids.dl, &mask.dl};
    for (const Host& w : weights) args.push_back(&w.dl);
    DLManagedTensor** outs = nullptr;
    int32_t num = 0;
    const sj_status s = handle ? sj_call_graph_handle(site, graph, args.data(), static_cast<int32_t>(args.size()), &outs, &num)
                               : sj_call_graph(site, text.c_str(), args.data(), static_cast<int32_t>(args.size()), &outs, &num);
    if (s != SJ_OK) fail("a call");
    sj_free_outputs(outs, num);
    if (i == 0) r.first_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }
  r.total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  char* stats = nullptr;
  if (sj_stats_json(jit, &stats) != SJ_OK) fail("sj_stats_json");
  r.compiles = nlohmann::json::parse(stats)["sites"]["encoder"].value("compiles", int64_t{0});
  sj_free_string(stats);
  sj_graph_free(graph);
  if (frozen) {
    for (Host& w : weights) sj_thaw(&w.dl);
  }
  sj_destroy(jit);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int sentences = 500, rounds = 3;
  unsigned seed = 1;
  int64_t length = 0;
  std::vector<int64_t> from_file;
  std::vector<std::pair<bool, bool>> ways;  // handle, frozen
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--way" && (v == "text-inputs" || v == "handle-inputs" || v == "text-frozen" || v == "handle-frozen")) {
      ways.emplace_back(v.rfind("handle", 0) == 0, v.find("frozen") != std::string::npos);
    } else if (a == "--length") length = std::atoll(argv[i + 1]);
    else if (a == "--lengths") {
      std::ifstream f(v);
      for (int64_t t; f >> t;) from_file.push_back(t);
      if (from_file.empty()) {
        std::fprintf(stderr, "embed_stream_bench: no lengths in %s\n", v.c_str());
        return 2;
      }
    }
    else if (a == "--sentences") sentences = std::atoi(argv[i + 1]);
    else if (a == "--rounds") rounds = std::atoi(argv[i + 1]);
    else if (a == "--seed") seed = static_cast<unsigned>(std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: embed_stream_bench [--sentences N] [--rounds R] [--seed S] [--way W ...]\n");
      return 2;
    }
  }
  const std::string text = encoder_graph();
  const nlohmann::json g = nlohmann::json::parse(text);
  std::vector<Host> weights;
  for (size_t i = 2; i < g["inputs"].size(); ++i) {
    // The weights' shapes as examples/encoder.py makes them (the graph's are symbolic).
    static const std::vector<std::vector<int64_t>> first = {{30522, 384}, {512, 384}, {2, 384}, {384}, {384}};
    static const std::vector<std::vector<int64_t>> layer = {{384, 384}, {384}, {384, 384}, {384}, {384, 384}, {384}, {384, 384}, {384},
                                                            {384}, {384}, {384, 1536}, {1536}, {1536, 384}, {384}, {384}, {384}};
    const size_t w = i - 2;
    weights.emplace_back(DLDataType{kDLFloat, 32, 1}, w < first.size() ? first[w] : layer[(w - first.size()) % layer.size()]);
    std::mt19937 rng(static_cast<unsigned>(i));
    std::uniform_real_distribution<float> u(-0.05f, 0.05f);
    auto* p = reinterpret_cast<float*>(weights.back().bytes.data());
    for (int64_t j = 0; j < weights.back().numel(); ++j) p[j] = u(rng);
  }
  if (weights.size() != 101) {
    std::fprintf(stderr, "embed_stream_bench: the encoder graph has %zu weights, not 101\n", weights.size());
    return 1;
  }
  const std::vector<int64_t> lens = !from_file.empty() ? from_file : length > 0 ? std::vector<int64_t>(static_cast<size_t>(sentences), length) : lengths(sentences, seed);
  std::vector<int64_t> sorted = lens;
  std::sort(sorted.begin(), sorted.end());
  std::printf("%zu sentences, %lld to %lld tokens, median %lld\n", lens.size(), static_cast<long long>(sorted.front()),
              static_cast<long long>(sorted.back()), static_cast<long long>(sorted[sorted.size() / 2]));
  std::map<std::string, std::vector<Result>> results;
  if (ways.empty()) ways = {{false, false}, {true, false}, {false, true}, {true, true}};
  auto name = [](bool handle, bool frozen) { return std::string(handle ? "handle" : "text") + (frozen ? ", frozen" : ", inputs"); };
  for (int r = 0; r < rounds; ++r) {
    for (auto [handle, frozen] : ways) results[name(handle, frozen)].push_back(stream(text, weights, lens, handle, frozen));
  }
  std::printf("%-16s %12s %12s %14s %9s\n", "way", "total min s", "median s", "first call ms", "compiles");
  for (auto [handle, frozen] : ways) {
    std::vector<Result>& rs = results[name(handle, frozen)];
    std::sort(rs.begin(), rs.end(), [](const Result& a, const Result& b) { return a.total_s < b.total_s; });
    std::printf("%-16s %12.3f %12.3f %14.1f %9lld\n", name(handle, frozen).c_str(), rs.front().total_s, rs[rs.size() / 2].total_s,
                rs[rs.size() / 2].first_ms, static_cast<long long>(rs.front().compiles));
  }
  return 0;
}
