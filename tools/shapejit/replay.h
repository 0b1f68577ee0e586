// Replaying a recorded trace under several configs, to compare recompile
// policies on one workload.
//
// The configs run in lockstep: each call of the trace runs under every
// config (each with its own Jit, cache and sites) before the next call is
// read, so machine noise falls on all of them alike and the trace is read
// once, a line at a time. The config that runs a call first changes from
// call to call (the first finds colder caches, and a fixed order would
// charge them to one config). Inputs have the recorded dtypes and shapes and
// read zeros (index inputs are then valid). A call that raises GraphBreak is
// charged what the interpreter would pay: it runs the graph on the reference
// interpreter, timed as part of the call.
//
// Each config keeps its kernels apart: its disk folder is
// `<cache.disk.path>/replay-<name>` and its Redis keys are prefixed with
// `replay-<name>:`, so that no config loads what another compiled in the
// same replay, while a replay run again finds what the last one left.
#pragma once

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "jit/policy/config.h"
#include "jit/runtime/jit.h"
#include "jit/trace/trace_file.h"

namespace shapejit::tools {

struct NamedConfig {
  std::string name;
  policy::Config config;
};

struct ReplayOptions {
  bool execute = true;          // --exec all (run kernels) or none
  bool progress = false;        // a progress bar, with the large compiles under way
  std::FILE* progress_to = stderr;  // where it is drawn (a terminal)
  bool log_recompiles = false;  // print the Jits' recompile lines to stderr
};

struct ReplayResult {
  std::string config_name;
  // Jit::stats_json, plus: config, executed, total_ms (the calls' wall time:
  // dispatch, tracing, compiles, kernels and graph breaks), break_ms,
  // kernel_ms (kernels and graph breaks), retraces (traces after each
  // site's first), max_site_compiles, peak_cache_bytes, and each call's
  // latency: call_ms_p50, call_ms_p99, call_ms_max.
  nlohmann::json stats;
  std::vector<float> cumulative_ms;  // total_ms after each call, for --plot
};

class Replayer {
 public:
  static Expected<std::unique_ptr<Replayer>> create(const std::vector<NamedConfig>& configs, const ReplayOptions& options);
  ~Replayer();

  Status feed(const trace::TraceEvent& event);
  // Each config's Jit tells `watch` of its large compiles (Jit::set_compile_watch).
  void watch_compiles(const runtime::Jit::CompileWatch& watch);
  std::vector<ReplayResult> results() const;
  size_t calls() const { return calls_; }

 private:
  struct Run;
  struct SiteGraph;
  Replayer() = default;
  Status make_args(const trace::TraceCall& call, size_t line);
  Status run_break(Run& run, const trace::TraceCall& call, const SiteGraph& graph);

  ReplayOptions options_;
  std::vector<std::unique_ptr<Run>> runs_;
  std::vector<std::unique_ptr<SiteGraph>> graphs_;  // by site, newest graph line
  std::vector<int64_t> zeros_;                      // every input's data
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<DLTensor> dl_;
  std::vector<const DLTensor*> args_;
  size_t calls_ = 0;
};

// The whole trace, read a line at a time (with a progress bar when asked).
Expected<std::vector<ReplayResult>> replay(trace::TraceReader& reader, const std::vector<NamedConfig>& configs, const ReplayOptions& options);
Expected<std::vector<ReplayResult>> replay(const trace::TraceContents& trace, const std::vector<NamedConfig>& configs,
                                           const ReplayOptions& options);

// One row per config.
std::string format_table(const std::vector<ReplayResult>& results);
// "12.3 KiB", "4.5 MiB".
std::string format_bytes(uint64_t bytes);

}  // namespace shapejit::tools
