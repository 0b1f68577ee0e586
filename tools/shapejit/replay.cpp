#include "tools/shapejit/replay.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>

#include "jit/runtime/jit.h"

namespace shapejit::tools {

namespace {

struct SiteGraph {
  ir::Graph graph;
  std::vector<Observation> observed;
};

}  // namespace

Expected<ReplayResult> replay(const TraceContents& trace, const policy::Config& config, const std::string& config_name,
                              const ReplayOptions& options) {
  policy::Config c = config;
  c.log.record.clear();  // a replay does not record itself
  c.log.stats.clear();
  std::unique_ptr<Jit> jit = SJ_TRY(Jit::create(c));
  jit->set_timing(true);
  jit->set_execute(options.execute);
  jit->set_log([&](const std::string& line) {
    if (options.log_recompiles) std::fprintf(stderr, "%s\n", line.c_str());
  });

  std::map<std::string, SiteGraph> graphs;
  std::vector<ir::Tensor> outputs;
  static int64_t dummy[8];  // data for inputs of calls that run no kernel
  size_t calls = 0, done = 0;
  for (const TraceEvent& ev : trace.events) calls += ev.call.has_value();

  const auto t0 = std::chrono::steady_clock::now();
  for (const TraceEvent& ev : trace.events) {
    if (ev.graph) {
      graphs[ev.graph->site] = SiteGraph{ev.graph->graph, ev.graph->observed};
      continue;
    }
    const TraceCall& call = *ev.call;
    const SiteGraph& sg = graphs.at(call.site);
    std::vector<ir::Tensor> inputs;
    std::vector<DLTensor> dl;
    std::vector<const DLTensor*> args;
    std::vector<std::vector<int64_t>> shapes;
    for (const TraceInput& in : call.inputs) {
      if (options.execute) {
        inputs.push_back(ir::Tensor::empty(in.dtype, in.shape));
        dl.push_back(inputs.back().dl());
      } else {
        shapes.push_back(in.shape);
        DLTensor d{};
        d.data = dummy;
        d.device = {kDLCPU, 0};
        d.ndim = static_cast<int32_t>(in.shape.size());
        d.dtype = ir::to_dl(in.dtype);
        d.shape = shapes.back().data();
        dl.push_back(d);
      }
    }
    for (const DLTensor& d : dl) args.push_back(&d);
    Status s = jit->call_graph(call.site, sg.graph, sg.observed, Args(args.data(), args.size()), outputs);
    if (!s.is_ok() && s.code() != Code::kGraphBreak) {
      return s.with_context("replay of line " + std::to_string(ev.line) + " under " + config_name);
    }
    ++done;
    if (options.progress && (done % 256 == 0 || done == calls)) {
      std::fprintf(stderr, "\r%s: %zu/%zu calls (%3.0f%%)", config_name.c_str(), done, calls, 100.0 * double(done) / double(calls ? calls : 1));
      if (done == calls) std::fprintf(stderr, "\n");
    }
  }
  const double total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ReplayResult r;
  r.config_name = config_name;
  r.stats = jit->stats_json();
  r.stats["config"] = config_name;
  r.stats["total_ms"] = total_ms;
  r.stats["executed"] = options.execute;
  return r;
}

std::string format_table(const std::vector<ReplayResult>& results) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%-24s %8s %8s %7s %9s %7s %7s %11s %11s %10s %10s %11s  %s\n", "config", "calls", "compiles",
                "traces", "hits", "eager", "breaks", "compile_ms", "run_ms", "disp_p50", "disp_p99", "total_ms", "recompiles by reason");
  out << line;
  for (const ReplayResult& r : results) {
    const auto& s = r.stats;
    std::string reasons;
    for (const auto& [k, v] : s["recompile_reasons"].items()) reasons += (reasons.empty() ? "" : ", ") + k + ": " + std::to_string(v.get<uint64_t>());
    if (reasons.empty()) reasons = "-";
    std::snprintf(line, sizeof line, "%-24s %8llu %8llu %7llu %9llu %7llu %7llu %11.1f %11.1f %8.0fns %8.0fns %11.1f  %s\n",
                  r.config_name.c_str(), (unsigned long long)s["calls"].get<uint64_t>(), (unsigned long long)s["compiles"].get<uint64_t>(),
                  (unsigned long long)s["traces"].get<uint64_t>(), (unsigned long long)s["hits"].get<uint64_t>(),
                  (unsigned long long)s["eager_calls"].get<uint64_t>(), (unsigned long long)s["graph_breaks"].get<uint64_t>(),
                  s["compile_ms"].get<double>(), s["run_ms"].get<double>(), s["dispatch_ns_p50"].get<double>(),
                  s["dispatch_ns_p99"].get<double>(), s["total_ms"].get<double>(), reasons.c_str());
    out << line;
  }
  return out.str();
}

}  // namespace shapejit::tools
