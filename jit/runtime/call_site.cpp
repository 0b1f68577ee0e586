// The hit path: look the call up in the site's snapshot, run the entry.
#include "jit/runtime/call_site.h"

#include <chrono>

#include "core/support/faults.h"
#include "jit/runtime/entry.h"
#include "jit/runtime/trace_recorder.h"

namespace shapejit::runtime {

using Clock = std::chrono::steady_clock;

CallSite::CallSite(std::string name, Services services)
    : name_(std::move(name)),
      services_(std::move(services)),
      policy_(policy::make_policy(services_.config.policy, name_)),
      source_(KernelSource::make(name_, services_, [this](Entry* stand_in, std::shared_ptr<backends::Kernel> kernel) {
        land(stand_in, std::move(kernel));
      })) {}

CallSite::~CallSite() = default;

Status CallSite::call(Args args, const TraceFn& trace, std::vector<ir::Tensor>& outputs, void* stream) {
  const Source source{&trace, nullptr, {}};
  return dispatch(Call{args, source, {stream, &services_.log}}, outputs);
}

Status CallSite::call_graph(const ir::Graph& graph, std::span<const trace::Observation> observed, Args args,
                            std::vector<ir::Tensor>& outputs, void* stream) {
  const Source source{nullptr, &graph, observed};
  return dispatch(Call{args, source, {stream, &services_.log}}, outputs);
}

Status CallSite::dispatch(const Call& call, std::vector<ir::Tensor>& outputs) try {
  if (TraceRecorder* r = services_.recorder.load(std::memory_order_acquire)) {
    Status s = dispatch_timed(call, outputs);
    // After the call: its first miss writes the graph line, which must come
    // first; a site traced before this recorder began writes its newest now.
    if (recorded_to_.load(std::memory_order_acquire) != r) record_graph(r);
    if (recorded_to_.load(std::memory_order_acquire) == r) r->call(name_, call.args);
    return s;
  }
  return dispatch_timed(call, outputs);
} catch (const std::bad_alloc&) {
  Status s(Code::kRuntime, "site " + name_ + ": out of memory (a tensor of this call is too large to allocate)", Detail::kMemory);
  count_error(s);
  return s;
}

Status CallSite::dispatch_timed(const Call& call, std::vector<ir::Tensor>& outputs) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  if (Status s = check_present(call.args); !s.is_ok()) return s.with_context("site " + name_);
  const bool timing = services_.timing.load(std::memory_order_relaxed);
  const Clock::time_point t0 = timing ? Clock::now() : Clock::time_point{};
  SnapshotCell::Reader reading(snapshots_);
  const Snapshot* snap = reading.get();
  int64_t dims[guards::GuardTree::kMaxFlat];
  const int id = snap ? snap->tree.lookup(call.args, dims) : guards::GuardTree::kMiss;
  if (id == guards::GuardTree::kMiss) {
    const uint64_t seen = snap ? snap->version : 0;
    reading.leave();  // the miss path publishes under the site's mutex
    Status s = miss(call, seen, outputs);
    if (!s.is_ok()) count_error(s);
    return s;
  }
  const int32_t* flat = snap->flat_symbols.empty() ? nullptr : snap->flat_symbols[id].data();
  if (!timing) return run_entry(*snap->entries[id], call, outputs, dims, flat);
  const Clock::time_point t1 = Clock::now();
  Status s = run_entry(*snap->entries[id], call, outputs, dims, flat);
  const double run_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  reading.leave();
  std::lock_guard<std::mutex> lock(mu_);
  stats_.dispatch_ns.push_back(static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
  stats_.run_ms += run_ms;
  return s;
}

void CallSite::count_error(const Status& s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (s.code() != Code::kGraphBreak && s.code() != Code::kRetry) ++stats_.errors;
}

Status CallSite::run_entry(const Entry& e, const Call& call, std::vector<ir::Tensor>& outputs, const int64_t* dims, const int32_t* flat) {
  if (e.graph_break) {
    break_hits_.fetch_add(1, std::memory_order_relaxed);
    return shapejit::graph_break(*e.graph_break);
  }
  if (e.raised) return Status(Code::kRaised, *e.raised);
  if (e.stand_in) stand_in_calls_.fetch_add(1, std::memory_order_relaxed);
  if (!services_.execute.load(std::memory_order_relaxed)) return Status::ok();
  constexpr size_t kInline = 32;
  int64_t inline_symbols[kInline];
  std::vector<int64_t> heap_symbols;
  const size_t n = e.symbol_sources.size();
  int64_t* symbols = inline_symbols;
  if (n > kInline) {
    heap_symbols.resize(n);
    symbols = heap_symbols.data();
  }
  if (flat) {  // the lookup already gathered the dims
    for (size_t k = 0; k < n; ++k) symbols[k] = flat[k] < 0 ? 0 : dims[flat[k]];
  } else {
    for (size_t k = 0; k < n; ++k) {
      const auto [input, dim] = e.symbol_sources[k];
      symbols[k] = input < 0 ? 0 : call.args[input]->shape[dim];
    }
  }
  SJ_TRY(backends::prepare_outputs(services_.backend, call.ctx, *e.graph, call.args, std::span<const int64_t>(symbols, n), outputs));
  Status s = support::fault(support::Fault::kRun) ? Status(Code::kRuntime, "the kernel could not finish the call (fault injected)")
                                                  : e.kernel->run(call.ctx, call.args, std::span<int64_t>(symbols, n), outputs);
  if (s.is_ok() && e.graph->size_checks_after_run) s = backends::check_sizes(*e.graph, std::span<const int64_t>(symbols, n), true);
  if (!s.is_ok()) return s.with_context("site " + name_);
  return s;
}

void CallSite::forget_raised() {
  std::lock_guard<std::mutex> lock(mu_);
  const Snapshot* live = snapshots_.live();
  if (!live) return;
  std::unique_ptr<Snapshot> next;
  for (const Entry* e : live->entries) {
    if (!e->raised) next = Snapshot::with(next.get(), *e);
  }
  if (!next) next = std::make_unique<Snapshot>();
  next->version = live->version + 1;
  snapshots_.publish(std::move(next));
}

SiteStats CallSite::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  SiteStats s = stats_;
  s.calls = calls_.load(std::memory_order_relaxed);
  const uint64_t breaks = break_hits_.load(std::memory_order_relaxed);
  s.hits = s.calls - misses_ - breaks;
  s.graph_breaks += breaks;
  s.stand_in_calls = stand_in_calls_.load(std::memory_order_relaxed);
  s += source_->stats();
  return s;
}

void CallSite::record_graph(TraceRecorder* r) {
  std::lock_guard<std::mutex> lock(mu_);
  if (recorded_to_.load(std::memory_order_relaxed) == r || traces_.empty()) return;
  r->graph(name_, *traces_.back()->graph, traces_.back()->observed);
  recorded_to_.store(r, std::memory_order_release);
}

std::string CallSite::explain() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  const Snapshot* live = snapshots_.live();
  const std::vector<const Entry*> none;
  const std::vector<const Entry*>& entries = live ? live->entries : none;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = *entries[i];
    out += "entry " + std::to_string(i) + ": ";
    out += e.graph_break ? "graph break (" + *e.graph_break + ")" : e.raised ? "raises (" + *e.raised + ")" : e.description;
    if (e.stand_in) out += " (compiling; the reference interpreter runs it meanwhile)";
    out += "\n";
    for (const guards::Guard& g : e.guards.guards()) out += "  " + g.predicate() + "\n";
  }
  return out;
}

size_t CallSite::num_entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return compiled_entries();
}

policy::DimState CallSite::dim_state(int input, int dim) const {
  std::lock_guard<std::mutex> lock(mu_);
  return policy_->state(input, dim);
}

}  // namespace shapejit::runtime
