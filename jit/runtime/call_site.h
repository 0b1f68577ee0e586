// CallSite: one traced function of the interpreter, its traces, its compiled
// entries, and the dispatch between them (DESIGN.md, the life of a call).
//
// The hit path (call_site.cpp) reads the site's current snapshot (a
// GuardTree over its entries) without a lock and runs the entry it finds
// (snapshot.h says how snapshots are published and retired). A miss
// (miss.cpp) takes the site's mutex and runs one ordered pipeline, a
// function a step: recheck, explain, decide (the RecompilePolicy), trace
// or reuse, specialize, get the kernel (the site's KernelSource, through the
// cache or with compile.async a stand-in: kernel_source.h), install, log.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "guards/guard_set.h"
#include "jit/policy/recompile_policy.h"
#include "jit/runtime/inputs.h"
#include "jit/runtime/kernel_source.h"
#include "jit/runtime/services.h"
#include "jit/runtime/site_stats.h"
#include "jit/runtime/snapshot.h"
#include "jit/trace/tracer.h"

namespace shapejit::runtime {

using TraceFn = std::function<Status(trace::Tracer&)>;

class TraceRecorder;
struct Entry;
struct StoredTrace;

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

  // Drops the site's cached errors of the interpreter's function
  // (Tracer::raise_error): the interpreter saw what the function reads
  // besides the call's arguments change, so the next call traces again.
  void forget_raised();

  SiteStats stats() const;
  size_t num_entries() const;  // compiled entries (cached graph breaks and errors aside)
  // Its entries, each with its static and dynamic dims and its guards, one
  // per line, in the order the hit path tries them.
  std::string explain() const;
  policy::DimState dim_state(int input, int dim) const;

 private:
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
  // A trace under one specialization (miss step 4).
  struct Specialized {
    sym::ShapeEnv env;
    ir::SpecializedGraphPtr graph;
    guards::GuardSet guards;
  };
  // The hit path (call_site.cpp).
  Status dispatch(const Call& call, std::vector<ir::Tensor>& outputs);
  Status dispatch_timed(const Call& call, std::vector<ir::Tensor>& outputs);
  // `dims` and `flat`, from a flat lookup, give the symbols without reading
  // the arguments again.
  Status run_entry(const Entry& e, const Call& call, std::vector<ir::Tensor>& outputs, const int64_t* dims = nullptr,
                   const int32_t* flat = nullptr);
  void count_error(const Status& s);
  void record_graph(TraceRecorder* r);

  // The miss path (miss.cpp), its steps in order; `seen` is the snapshot
  // version the lookup read.
  Status miss(const Call& call, uint64_t seen, std::vector<ir::Tensor>& outputs);
  const Entry* recheck(Args args, uint64_t seen) const;                                   // 0
  std::vector<guards::Failure> explain_miss(Args args) const;                             // 1
  policy::Decision decide(Args args, std::span<const guards::Failure> failures);           // 2
  Expected<StoredTrace*> trace_or_reuse(const Call& call, const policy::Decision& d);      // 3
  Expected<Specialized> specialize(const StoredTrace& st, Args args, bool generic);        // 4
  // 5 is the site's KernelSource: source_->get().
  Entry* install(Specialized sp, KernelSource::Got got, bool generic);                   // 6
  void log_recompile(std::span<const guards::Failure> failures, const policy::Decision& d, const Entry& e);  // 7
  // Step 3's parts: tracing the call's source, and keeping what it made.
  Expected<StoredTrace*> trace(const Call& call, bool generic);
  StoredTrace* store(trace::Trace t, bool generic);
  StoredTrace* stored(int id);
  // A kernel compiled in the background replaces its stand-in's (KernelSource::Land).
  void land(Entry* stand_in, std::shared_ptr<backends::Kernel> kernel);
  // Misses that do not compile.
  Status run_eager(StoredTrace& trace, const Call& call, std::vector<ir::Tensor>& outputs);
  // A cached break, or with `raised` a cached error of the function's own.
  void install_break(const trace::Tracer& tracer, const std::string& message, bool raised = false);
  void add_entry(std::unique_ptr<Entry> e);
  size_t compiled_entries() const { return entries_.size() - break_entries_ - landed_; }

  const std::string name_;
  Services services_;
  std::unique_ptr<policy::RecompilePolicy> policy_;
  // Where a miss's kernel comes from; made after the name and the
  // services, which it refers to.
  const std::unique_ptr<KernelSource> source_;

  SnapshotCell snapshots_;
  std::atomic<uint64_t> calls_{0};  // hits are calls that did not miss or break
  std::atomic<uint64_t> break_hits_{0};
  std::atomic<uint64_t> stand_in_calls_{0};
  std::atomic<TraceRecorder*> recorded_to_{nullptr};  // the recorder that has this site's graph

  mutable std::mutex mu_;  // everything below; the miss path; publishing snapshots
  std::vector<std::unique_ptr<Entry>> entries_;
  std::vector<std::unique_ptr<StoredTrace>> traces_;
  int next_trace_id_ = 0;
  uint64_t misses_ = 0;
  size_t break_entries_ = 0;
  size_t landed_ = 0;  // stand-ins replaced by their kernels (entries_ keeps both)
  const Entry* last_compiled_ = nullptr;  // what a miss is explained against
  bool has_generic_ = false;
  SiteStats stats_;  // the source counts its own (KernelSource::stats)
};

}  // namespace shapejit::runtime
