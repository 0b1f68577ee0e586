// The miss path: one ordered pipeline under the site's mutex, a function a
// step.
//
//   0. recheck     an entry another thread installed since this call's lookup
//   1. explain     which guards of the newest entry failed, and why
//   2. decide      the RecompilePolicy: compile (reusing a trace or not),
//                  compile the generic entry, run eagerly, or break
//   3. trace       reuse the chosen trace, or run the interpreter's function
//   4. specialize  the policy's choices on the trace's env, the layout,
//                  inference with the call's sizes (deciding what the choices
//                  left open), then ir::specialize and the entry's guards
//   5. kernel      from the site's KernelSource: through the kernel cache
//                  (the backend with its fallback); with compile.async, a
//                  stand-in while it compiles (kernel_source.h)
//   6. install     the entry, in a new snapshot
//   7. log         the recompile line and the stats
// then the call runs on its new entry, outside the mutex.
#include <chrono>
#include <set>

#include "core/ir/infer.h"
#include "core/support/clock.h"
#include "jit/runtime/call_site.h"
#include "jit/runtime/entry.h"
#include "jit/runtime/trace_recorder.h"

namespace shapejit::runtime {

using support::Clock;
using support::ms_since;
using Action = policy::Decision::Action;

namespace {

std::string dims_text(const std::vector<std::pair<int, int>>& dims) {
  std::string s;
  for (auto [i, d] : dims) s += (s.empty() ? "" : ", ") + std::string("input ") + std::to_string(i) + " dim " + std::to_string(d);
  return s;
}

// The entry's static and dynamic dims, for logs and explain().
std::string describe(const sym::ShapeEnv& env, bool generic) {
  std::vector<std::pair<int, int>> statics, dynamics;
  for (const sym::Symbol& s : env.symbols()) {
    if (s.unbacked || s.input < 0) continue;
    (s.binding && s.binding->is_const() ? statics : dynamics).emplace_back(s.input, s.dim);
  }
  return std::string(generic ? "generic entry; " : "") + "static: [" + dims_text(statics) + "], dynamic: [" + dims_text(dynamics) + "]";
}

// Traces a held graph: its nodes and the interpreter's observations
// replayed in order.
Status replay_graph(const ir::Graph& graph, std::span<const trace::Observation> observed, trace::Tracer& t) {
  for (const ir::Node& n : graph.nodes) SJ_TRY(t.append(n, graph.value_names[n.out[0]]));
  for (const trace::Observation& o : observed) SJ_TRY(t.observe(o));
  for (int o : graph.outputs) SJ_TRY(t.output(trace::Tracer::Value{o}));
  return Status::ok();
}

}  // namespace

std::vector<std::pair<int, int>> symbol_sources(const sym::ShapeEnv& env) {
  std::vector<std::pair<int, int>> out;
  for (const sym::Symbol& s : env.symbols()) out.emplace_back(s.unbacked ? -1 : s.input, s.unbacked ? -1 : s.dim);
  return out;
}

Status CallSite::miss(const Call& call, uint64_t seen, std::vector<ir::Tensor>& outputs) {
  const Args args = call.args;
  std::unique_lock<std::mutex> lock(mu_);
  ++misses_;
  if (const Entry* entry = recheck(args, seen)) {
    --misses_;  // a hit after all
    lock.unlock();
    return run_entry(*entry, call, outputs);
  }
  SJ_TRY(check_args(args, services_.backend));

  const bool first = last_compiled_ == nullptr;
  const std::vector<guards::Failure> failures = explain_miss(args);
  const policy::Decision d = decide(args, failures);
  if (d.action == Action::kGraphBreak) {
    ++stats_.graph_breaks;
    return shapejit::graph_break("site " + name_ + ": " + d.why);
  }
  StoredTrace* st = SJ_TRY(trace_or_reuse(call, d));
  if (d.action == Action::kEager) return run_eager(*st, call, outputs);
  const bool generic = d.action == Action::kCompileGeneric;
  const Clock::time_point t_specialize = Clock::now();
  Specialized sp = SJ_TRY(specialize(*st, args, generic));
  stats_.specialize_ms += ms_since(t_specialize);
  KernelSource::Got kernel = SJ_TRY(source_->get(*st, sp.graph, sp.env.layouts()));
  Entry* entry = install(std::move(sp), std::move(kernel), generic);
  ++stats_.compiles;
  if (!first) log_recompile(failures, d, *entry);

  lock.unlock();
  const Clock::time_point t0 = Clock::now();
  Status s = run_entry(*entry, call, outputs);
  const double run_ms = ms_since(t0);
  lock.lock();
  stats_.run_ms += run_ms;
  return s;
}

// 0. Entries published since this call's lookup may take it. Holding the
// mutex, the live snapshot cannot be retired; its entries outlive it.
const Entry* CallSite::recheck(Args args, uint64_t seen) const {
  const Snapshot* live = snapshots_.live();
  if (!live || live->version == seen) return nullptr;
  const int id = live->tree.lookup(args);
  return id == guards::GuardTree::kMiss ? nullptr : live->entries[id];
}

// 1. The newest entry's failed guards (none on the first call).
std::vector<guards::Failure> CallSite::explain_miss(Args args) const {
  if (last_compiled_ == nullptr) return {};
  return last_compiled_->guards.explain(args);
}

// 2. The policy decides, given the failures and the stored traces whose
// semantic guards take the call.
policy::Decision CallSite::decide(Args args, std::span<const guards::Failure> failures) {
  std::vector<policy::TraceCandidate> traces;
  for (auto it = traces_.rbegin(); it != traces_.rend(); ++it) {
    const StoredTrace& t = **it;
    if (t.semantic.check(args)) traces.push_back({t.id, t.observed, t.generic});
  }
  policy::Miss m;
  m.first = last_compiled_ == nullptr;
  m.failures = failures;
  m.entries = static_cast<int>(compiled_entries()) - (has_generic_ ? 1 : 0);
  m.has_generic = has_generic_;
  m.traces = traces;
  policy::Decision d = policy_->decide(m);
  if (!d.warning.empty()) services_.log("shapejit: warning: site " + name_ + ": " + d.warning);
  return d;
}

// 3. The trace the policy chose, or a new one.
Expected<StoredTrace*> CallSite::trace_or_reuse(const Call& call, const policy::Decision& d) {
  if (StoredTrace* st = d.trace >= 0 ? stored(d.trace) : nullptr) return st;
  return trace(call, d.action == Action::kCompileGeneric);
}

StoredTrace* CallSite::stored(int id) {
  for (auto& t : traces_) {
    if (t->id == id) return t.get();
  }
  return nullptr;
}

Expected<StoredTrace*> CallSite::trace(const Call& call, bool generic) {
  const Source& source = call.source;
  const Clock::time_point t0 = Clock::now();
  ++stats_.traces;
  std::vector<ir::InputSpec> inputs;
  if (source.graph) {
    SJ_TRY(check_graph_inputs(source.graph->inputs, call.args).with_context("site " + name_));
    inputs = source.graph->inputs;
  } else {
    inputs = dynamic_inputs(call.args);
  }
  ir::ShapeHints hints;
  for (const DLTensor* a : call.args) hints.emplace_back(a->shape, a->shape + a->ndim);
  trace::TraceOptions options;
  options.specialize_zero_one = services_.config.policy.specialize_zero_one;
  options.on_guard_int = [this](int input, int dim) { return policy_->on_guard_int(input, dim); };
  std::unique_ptr<trace::Tracer> tracer = SJ_TRY(trace::Tracer::create(std::move(inputs), std::move(hints), std::move(options)));
  Status traced = source.graph ? replay_graph(*source.graph, source.observed, *tracer) : (*source.fn)(*tracer);
  stats_.trace_ms += ms_since(t0);
  if (!traced.is_ok()) {
    Status s = traced.with_context("site " + name_);
    if (traced.code() == Code::kGraphBreak) {
      ++stats_.graph_breaks;
      // A break the tracer raised follows from the decisions taken so far,
      // and the policy only ever moves dims toward backed off: cache it.
      if (tracer->broke()) install_break(*tracer, s.message());
    }
    // The function's own error follows from the decisions taken so far
    // too: its label, unprefixed, names it for the interpreter.
    if (traced.code() == Code::kRaised && tracer->raised()) {
      install_break(*tracer, traced.message(), /*raised=*/true);
      return traced;
    }
    return s;
  }
  return store(std::move(*tracer).finish(), generic);
}

// Keeps a finished trace with its semantic guards, and records it.
StoredTrace* CallSite::store(trace::Trace t, bool generic) {
  auto st = std::make_unique<StoredTrace>();
  st->id = next_trace_id_++;
  st->graph = std::make_shared<const ir::Graph>(std::move(t.graph));
  st->env = std::move(t.env);
  st->observed = std::move(t.observed);
  st->graph_hash = st->graph->canonical_hash();
  st->semantic = guards::derive_guards(*st->graph, st->env, services_.backend.device());
  st->generic = generic;
  if (TraceRecorder* r = services_.recorder.load(std::memory_order_acquire)) {
    r->graph(name_, *st->graph, st->observed);
    recorded_to_.store(r, std::memory_order_release);
  }
  // Entries do not refer to traces; keep the newest few for reuse, so a
  // site that keeps missing (eager past its limit) does not grow forever.
  const size_t keep = 2 * static_cast<size_t>(services_.config.policy.cache_size_limit) + 2;
  if (traces_.size() >= keep) traces_.erase(traces_.begin());
  traces_.push_back(std::move(st));
  return traces_.back().get();
}

// 4. The policy's choices for the free dims, this call's layout where the
// backend specializes on it, then inference once and the entry's guards.
Expected<CallSite::Specialized> CallSite::specialize(const StoredTrace& st, Args args, bool generic) {
  Specialized sp{st.env, nullptr, {}};
  sym::ShapeEnv& env = sp.env;
  for (size_t id = 0; id < env.symbols().size(); ++id) {
    const sym::Symbol& s = env.symbols()[id];
    if (!s.unbacked) env.set_hint(static_cast<int>(id), args[s.input]->shape[s.dim]);
  }
  SJ_TRY(policy_->specialize(env, generic));
  std::vector<sym::Layout> layouts(args.size());
  if (services_.backend.specializes_layout()) {
    for (size_t i = 0; i < args.size(); ++i) layouts[i] = sym::Layout::of(args[i]->ndim, args[i]->shape, args[i]->strides);
  }
  env.set_layouts(std::move(layouts));
  // The policy's choices change what the trace's decisions were taken under
  // (a bucket's range makes min(2^62, n) plain n), so inference may now ask
  // what no recorded fact answers. Asked here, with the call's sizes as
  // hints, each such question is decided on them and recorded as a fact:
  // the entry is then built for, and guarded by, what this call satisfies,
  // and the inference without hints that follows meets no undecidable one.
  env.rewind_unbacked();
  if (auto settled = ir::infer(*st.graph, env, nullptr); !settled.is_ok()) return settled.status().with_context("site " + name_);
  auto graph = ir::specialize(st.graph, env.specialization());
  if (!graph.is_ok()) return graph.status().with_context("site " + name_);
  sp.graph = std::move(graph).value();
  sp.guards = guards::specialize_guards(st.semantic, env);
  if (!sp.guards.check(args)) {
    std::string why;
    for (const auto& f : sp.guards.explain(args)) why += "; " + f.describe();
    return internal_error("site " + name_ + ": a new entry does not accept the call it was built for" + why);
  }
  return sp;
}

// 6. The entry goes into a new snapshot; a stand-in's kernel starts compiling.
Entry* CallSite::install(Specialized sp, KernelSource::Got got, bool generic) {
  auto e = std::make_unique<Entry>();
  e->guards = std::move(sp.guards);
  e->kernel = std::move(got.kernel);
  e->graph = std::move(sp.graph);
  e->symbol_sources = symbol_sources(sp.env);
  e->description = describe(sp.env, generic);
  e->stand_in = got.stand_in;
  Entry* raw = e.get();
  add_entry(std::move(e));
  last_compiled_ = raw;
  has_generic_ |= generic;
  if (got.begin) got.begin(*raw);
  return raw;
}

void CallSite::add_entry(std::unique_ptr<Entry> e) {
  snapshots_.publish(Snapshot::with(snapshots_.live(), *e));
  entries_.push_back(std::move(e));
}

// A background compile is done: its kernel replaces the stand-in's in a new
// snapshot (same guards, same place in the tree).
void CallSite::land(Entry* stand_in, std::shared_ptr<backends::Kernel> kernel) {
  std::lock_guard<std::mutex> lock(mu_);
  auto e = std::make_unique<Entry>(*stand_in);
  e->kernel = std::move(kernel);
  e->stand_in = false;
  snapshots_.publish(snapshots_.live()->replacing(stand_in, e.get()));
  if (last_compiled_ == stand_in) last_compiled_ = e.get();
  entries_.push_back(std::move(e));
  ++landed_;
}

// 7. The recompile's reasons in the stats, and its line in the log.
void CallSite::log_recompile(std::span<const guards::Failure> failures, const policy::Decision& d, const Entry& e) {
  ++stats_.recompiles;
  std::set<std::string> origins;
  for (const auto& f : failures) origins.insert(sym::origin_name(f.guard->origin));
  if (origins.empty()) origins.insert("new input signature");
  for (const auto& o : origins) ++stats_.recompile_reasons[o];
  if (!services_.config.log.recompiles || !services_.log) return;
  std::string line = "site " + name_ + ": recompile #" + std::to_string(stats_.recompiles) + ": ";
  if (failures.empty()) line += "no entry takes this input signature";
  for (size_t i = 0; i < failures.size(); ++i) line += (i ? "; " : "") + failures[i].describe();
  line += "; decision: " + d.why;
  if (!d.backed_off.empty()) line += "; backed off: " + dims_text(d.backed_off);
  line += "; new entry " + e.description;
  services_.log(line);
}

void CallSite::install_break(const trace::Tracer& tracer, const std::string& message, bool raised) {
  auto e = std::make_unique<Entry>();
  e->guards = guards::derive_guards(tracer.graph(), tracer.env(), services_.backend.device());
  (raised ? e->raised : e->graph_break) = message;
  e->description = raised ? "raises" : "graph break";
  ++break_entries_;
  add_entry(std::move(e));
}

Status CallSite::run_eager(StoredTrace& st, const Call& call, std::vector<ir::Tensor>& outputs) {
  if (!st.eager) {
    auto e = std::make_unique<Entry>();
    e->graph = SJ_TRY(ir::specialize(st.graph, st.env.specialization()));
    e->kernel = std::shared_ptr<backends::Kernel>(SJ_TRY(services_.backend.compile_reference(e->graph)));
    e->symbol_sources = symbol_sources(st.env);
    st.eager = std::move(e);
  }
  ++stats_.eager_calls;
  const Clock::time_point t0 = Clock::now();
  Status s = run_entry(*st.eager, call, outputs);
  stats_.run_ms += ms_since(t0);
  return s;
}

}  // namespace shapejit::runtime
