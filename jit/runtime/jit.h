// Jit: the facade an interpreter links. It owns the backend, the kernel
// cache, the call sites and the config; `call` is the life of a call in
// DESIGN.md.
//
//   auto jit = Jit::create(R"({"policy": {"mode": "start_dynamic"}})");
//   CallSite& site = (*jit)->site("encoder");       // keep the handle: no lookup per call
//   Status s = site.call(args, [&](Tracer& t) -> Status {
//     auto x = t.input(0), y = t.input(1);
//     auto z = SJ_TRY(t.op(ir::Op::kMul, {x, y}));
//     return t.output(z);
//   }, outputs);
//
// `outputs` receives the results. Tensors already in it that nothing else
// references are reused as the results' buffers when their shapes match, so
// a caller that passes the same vector on every call allocates nothing.
// A GraphBreak status means the interpreter must run that call itself.
//
// Kernels are kept in the cache's tiers (cache/kernel_cache.h) as the
// config says: memory, a disk folder shared by the machine's processes, a
// Redis server shared by the fleet. With compile.async, a miss that must
// compile runs on the reference interpreter meanwhile, and its kernel is
// installed when ready.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <tbb/concurrent_unordered_map.h>

#include "jit/policy/config.h"
#include "jit/runtime/background.h"
#include "jit/runtime/call_site.h"

namespace shapejit::runtime {

class Jit {
 public:
  static Expected<std::unique_ptr<Jit>> create(const policy::Config& config);
  static Expected<std::unique_ptr<Jit>> create(std::string_view config_json);
  // With a backend of the caller's (tests, benchmarks, out-of-tree backends).
  static Expected<std::unique_ptr<Jit>> create(const policy::Config& config, std::unique_ptr<backends::Backend> backend);
  ~Jit();

  // The site named `name`, created on first use; the reference stays valid
  // for the Jit's life. Safe to call from several threads.
  CallSite& site(std::string_view name);

  Status call(std::string_view site_name, Args args, const TraceFn& trace, std::vector<ir::Tensor>& outputs, void* stream = nullptr) {
    return site(site_name).call(args, trace, outputs, stream);
  }
  Status call_graph(std::string_view site_name, const ir::Graph& graph, std::span<const trace::Observation> observed, Args args,
                    std::vector<ir::Tensor>& outputs, void* stream = nullptr) {
    return site(site_name).call_graph(graph, observed, args, outputs, stream);
  }

  // Records every call from now on into `recorder` (a trace `shapejit
  // replay` reads), which several Jits may share; null stops. A site that
  // traced before writes its newest graph at its next call.
  void record(std::shared_ptr<TraceRecorder> recorder);

  // Where recompile lines and warnings go (stderr by default). The sink is
  // called from whichever thread has the line: a call's, a background
  // compile's, a step compile's; it must take lines from several at once.
  void set_log(std::function<void(const std::string&)> sink);
  // Told, besides the log, when a compile expected to take
  // log.slow_compile_ms or longer starts and when it ends, with the site
  // that compiles ("" when none is known): replay's progress bar shows it.
  // Set it before the first call; it runs on the compiling thread.
  using CompileWatch = std::function<void(const std::string& site, const backends::CompileServices::Notice&)>;
  void set_compile_watch(CompileWatch watch) { watch_ = std::move(watch); }
  // Collect per-call dispatch and kernel times (replays turn it on).
  void set_timing(bool on) { timing_.store(on); }
  // Off: calls dispatch, trace and compile but run no kernel and leave the
  // outputs untouched (replays that study the policy alone).
  void set_execute(bool on) { execute_.store(on); }

  const policy::Config& config() const { return config_; }
  // The backend the config chose (the one that compiles; not its fallback).
  backends::Backend& backend() { return backend_.primary(); }
  cache::CacheStats cache_stats() const { return cache_.stats(); }
  cache::KernelCache& kernel_cache() { return cache_; }
  // Until every background compile begun so far has landed (compile.async).
  void wait_compiles();
  // Drops the background compiles not yet begun, now and later, and waits
  // for the one running: before a process exits with this Jit alive.
  void stop_compiles();
  // Totals and per-site counts, the cache's, and the CPU device's choice of
  // tiles (see tools/shapejit replay --json).
  nlohmann::json stats_json() const;

 private:
  Jit(policy::Config config, std::unique_ptr<backends::Backend> backend, cache::Signer signer);
  void notice_slow_compile(const backends::CompileServices::Notice& n) const;

  std::function<void(const std::string&)> log_;  // first: the cache's tiers log until they close
  CompileWatch watch_;
  policy::Config config_;
  backends::WithFallback backend_;
  cache::KernelCache cache_;
  std::unique_ptr<Background> background_;  // compile.async; null: misses compile on the call's path
  std::atomic<TraceRecorder*> recorder_{nullptr};
  std::mutex record_mu_;
  std::vector<std::shared_ptr<TraceRecorder>> recorders_;  // every one set: sites hold raw pointers
  std::atomic<bool> timing_{false};
  std::atomic<bool> execute_{true};
  std::mutex sites_mu_;  // creation only; lookups are lock-free
  tbb::concurrent_unordered_map<std::string, std::unique_ptr<CallSite>> sites_;
};

// The CPU device's family of GEMM tiles, why, and the probe's figures
// (backends/cpu/tile_choice.h): stats_json's "cpu" where the backend is
// the CPU's, and `shapejit cpu`.
nlohmann::json cpu_json();

}  // namespace shapejit::runtime
