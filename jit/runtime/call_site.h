// CallSite: one traced function of the interpreter, its traces, its compiled
// entries, and the dispatch between them (DESIGN.md, the life of a call).
//
// The hit path (call_site.cpp) reads an immutable snapshot (GuardTree +
// entries) through one atomic pointer: no lock, no allocation in the guards.
// A miss (miss.cpp) takes the site's mutex and runs one ordered pipeline:
// explain, decide (the RecompilePolicy), trace or reuse, specialize,
// compile, install, log. A replaced snapshot is retired and freed at a
// later publish that finds no reader inside dispatch (a count of readers,
// raised before the snapshot pointer is read): a concurrent reader never
// sees freed memory, and a site with thousands of entries (a compile per
// shape) holds one snapshot, not one per entry it ever had.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/fallback.h"
#include "cache/kernel_cache.h"
#include "guards/guard_tree.h"
#include "jit/policy/recompile_policy.h"
#include "core/sym/program.h"
#include "jit/trace/tracer.h"

namespace shapejit::runtime {

using Args = std::span<const DLTensor* const>;
using TraceFn = std::function<Status(trace::Tracer&)>;

class Background;
class TraceRecorder;

// What a site shares with the rest of the Jit.
struct Services {
  const policy::Config& config;
  backends::WithFallback& backend;  // compiles, and the eager path's reference kernels
  cache::KernelCache& cache;
  Background* background;  // compile.async: where misses compile; null: on the call's path
  backends::Log log;  // recompile lines and warnings
  const std::atomic<TraceRecorder*>& recorder;   // log.record, Jit::record; null: off
  const std::atomic<bool>& timing;               // collect dispatch and kernel times
  const std::atomic<bool>& execute;              // false: dispatch and compile, run no kernel
};

struct SiteStats {
  uint64_t calls = 0, hits = 0, compiles = 0, backend_compiles = 0, traces = 0, eager_calls = 0, graph_breaks = 0,
           recompiles = 0, errors = 0,
           fallbacks = 0,  // compiles the backend failed, run on the reference interpreter
           disk_loads = 0, remote_loads = 0,  // kernels a lower tier had: loaded, not compiled
           stand_in_calls = 0;                // calls run on the reference while their kernel compiled (compile.async)
  std::map<std::string, uint64_t> recompile_reasons;  // by guard origin
  double compile_ms = 0, run_ms = 0, trace_ms = 0;
  std::vector<uint32_t> dispatch_ns;  // samples, when timing is on
};

class CallSite {
 public:
  CallSite(std::string name, Services services);
  ~CallSite();

  const std::string& name() const { return name_; }

  // The interpreter traces through `trace` on a miss that needs a trace.
  // `stream`: where a device backend runs the call (a CUstream; null is the
  // default stream); the outputs are ready in that stream's order.
  Status call(Args args, const TraceFn& trace, std::vector<ir::Tensor>& outputs, void* stream = nullptr);
  // For callers that already hold the graph (and, from a recorded trace,
  // the observations the interpreter made while tracing it).
  Status call_graph(const ir::Graph& graph, std::span<const trace::Observation> observed, Args args, std::vector<ir::Tensor>& outputs,
                    void* stream = nullptr);

  SiteStats stats() const;
  size_t num_entries() const;  // compiled entries (cached graph breaks aside)
  // Its entries, each with its static and dynamic dims and its guards, one
  // per line, in the order the hit path tries them.
  std::string explain() const;
  policy::DimState dim_state(int input, int dim) const;

 private:
  struct Entry;
  struct StoredTrace;
  struct Snapshot;
  // How to trace on a miss: the interpreter's function, or a graph the
  // caller holds (with its observations). Built per call, so it only points.
  struct Source {
    const TraceFn* fn = nullptr;
    const ir::Graph* graph = nullptr;
    std::span<const trace::Observation> observed;
  };
  // What one call brings: its arguments, how to trace it, its stream.
  struct Call {
    Args args;
    const Source& source;
    backends::RunContext ctx;
  };

  // The hit path (call_site.cpp).
  Status dispatch(const Call& call, std::vector<ir::Tensor>& outputs);
  Status dispatch_timed(const Call& call, std::vector<ir::Tensor>& outputs);
  // `dims` and `flat`, from a flat lookup, give the symbols without reading
  // the arguments again.
  Status run_entry(const Entry& e, const Call& call, std::vector<ir::Tensor>& outputs, const int64_t* dims = nullptr,
                   const int32_t* flat = nullptr);
  void count_error(const Status& s);

  // The miss path (miss.cpp); `seen` is the snapshot version the lookup read.
  Status miss(const Call& call, uint64_t seen, std::vector<ir::Tensor>& outputs);
  std::vector<policy::TraceCandidate> candidates(Args args) const;
  StoredTrace* stored(int id);
  Expected<StoredTrace*> trace(const Call& call, bool generic);
  Expected<Entry*> compile(StoredTrace& trace, Args args, bool generic);
  cache::Maker make_maker(const ir::SpecializedGraphPtr& graph) const;
  void count_origin(const cache::Found& found);  // a kernel from a tier, or a compile
  void land(Entry* stand_in, Expected<cache::Found> got, double ms);  // a background compile's end
  Status run_eager(StoredTrace& trace, const Call& call, std::vector<ir::Tensor>& outputs);
  void log_recompile(std::span<const guards::Failure> failures, const policy::Decision& d, const Entry& e);
  void install(std::unique_ptr<Entry> e);
  void publish(std::unique_ptr<Snapshot> snap);
  size_t compiled_entries() const { return entries_.size() - break_entries_ - landed_; }
  void install_break(const trace::Tracer& tracer, const std::string& message);
  void record_graph(TraceRecorder* r);

  const std::string name_;
  Services services_;
  std::unique_ptr<policy::RecompilePolicy> policy_;

  std::atomic<const Snapshot*> current_{nullptr};
  std::atomic<uint32_t> readers_{0};  // threads between reading current_ and leaving dispatch
  std::atomic<uint64_t> calls_{0};  // hits are calls that did not miss or break
  std::atomic<uint64_t> break_hits_{0};
  std::atomic<uint64_t> stand_in_calls_{0};
  std::atomic<TraceRecorder*> recorded_to_{nullptr};  // the recorder that has this site's graph

  mutable std::mutex mu_;  // everything below; the miss path
  std::unique_ptr<Snapshot> live_;                     // what current_ points to
  std::vector<std::unique_ptr<Snapshot>> retired_;      // replaced, maybe still read
  std::vector<std::unique_ptr<Entry>> entries_;
  std::vector<std::unique_ptr<StoredTrace>> traces_;
  int next_trace_id_ = 0;
  uint64_t misses_ = 0;
  size_t break_entries_ = 0;
  size_t landed_ = 0;  // stand-ins replaced by their kernels (entries_ keeps both)
  const Entry* last_compiled_ = nullptr;  // what a miss is explained against
  bool has_generic_ = false;
  SiteStats stats_;
};

// Input specs for a call traced from scratch: every dim a fresh symbol.
Expected<std::vector<ir::InputSpec>> dynamic_inputs(Args args);

}  // namespace shapejit::runtime
