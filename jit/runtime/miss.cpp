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
//   5. compile     through the kernel cache (the backend with its fallback);
//                  with compile.async, a stand-in while it compiles
//   6. install     the entry, in a new snapshot
//   7. log         the recompile line and the stats
// then the call runs on its new entry, outside the mutex.
#include <chrono>
#include <set>

#include "core/ir/infer.h"
#include "jit/runtime/background.h"
#include "jit/runtime/call_site.h"
#include "jit/runtime/entry.h"
#include "jit/runtime/stand_in.h"
#include "jit/runtime/trace_recorder.h"

namespace shapejit::runtime {

using Clock = std::chrono::steady_clock;
using Action = policy::Decision::Action;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

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
  Compiled compiled = SJ_TRY(compile(*st, sp));
  Entry* entry = install(std::move(sp), std::move(compiled), generic);
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
  std::vector<bool> contiguous(args.size(), false);
  if (services_.backend.specializes_layout()) {
    for (size_t i = 0; i < args.size(); ++i) contiguous[i] = ir::Tensor::borrow(*args[i], ir::DType::kF32).is_contiguous();
  }
  env.set_contiguous(contiguous);
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

// 5. The kernel, through the cache's tiers; with compile.async, only what
// memory or disk has now, and otherwise the reference interpreter stands in
// while it compiles (a generic entry that covers the call would have taken
// it at the lookup, before any miss).
Expected<CallSite::Compiled> CallSite::compile(StoredTrace& st, const Specialized& sp) {
  Compiled c;
  c.key = cache::make_key(st.graph_hash, sp.graph->spec_hash, services_.backend.name(), services_.backend.target());
  const cache::Maker maker = make_maker(sp.graph, context(false));
  const Clock::time_point t0 = Clock::now();
  std::optional<cache::Found> found;
  if (services_.background) {
    found = services_.cache.get_local(c.key, maker);
  } else {
    auto got = services_.cache.get(c.key, maker);
    if (!got.is_ok()) return got.status().with_context("site " + name_ + ": compiling");
    found = std::move(got).value();
  }
  stats_.compile_ms += ms_since(t0);
  if (found) {
    c.kernel = std::static_pointer_cast<backends::Kernel>(found->artifact);
    count_origin(*found);
  } else {
    // A call that waits gets the kernel itself, counted as the background's
    // compile would be (which then finds it in memory).
    const size_t nodes = sp.graph->graph->nodes.size();
    c.pending = std::make_shared<PendingKernel>([this, key = c.key, maker, nodes](bool begun) -> std::shared_ptr<backends::Kernel> {
      const Clock::time_point t0 = Clock::now();
      // Beside the background's compile when it has begun (its kernel lands
      // as the entry's, counted there), else through the cache.
      std::optional<cache::Found> got;
      std::shared_ptr<backends::Kernel> kernel;
      if (begun) {
        Expected<std::unique_ptr<cache::Artifact>> made = maker.compile(nullptr);
        if (!made.is_ok()) return nullptr;
        kernel.reset(static_cast<backends::Kernel*>(made->release()));
      } else {
        Expected<cache::Found> found = services_.cache.get(key, maker);
        if (!found.is_ok()) return nullptr;
        got = std::move(found).value();
        kernel = std::static_pointer_cast<backends::Kernel>(got->artifact);
      }
      const double ms = ms_since(t0);
      if (!got || got->origin == cache::Origin::kCompile) services_.background->costs().saw_compile(nodes, ms);
      std::lock_guard<std::mutex> lock(mu_);
      stats_.compile_ms += ms;
      if (got) count_origin(*got);
      return kernel;
    }, [background = services_.background](const PendingKernel* p) { background->hurry(p); });
    // The quicker tier, for a call that would wait: in no cache (it is
    // only a stand-in), its time counted as compiling.
    auto quick = std::make_shared<QuickKernel>([this, graph = sp.graph]() -> std::shared_ptr<backends::Kernel> {
      const Clock::time_point t0 = Clock::now();
      Expected<std::unique_ptr<backends::Kernel>> made = services_.backend.compile(graph, {.quick = true, .context = context(false)});
      const double ms = ms_since(t0);
      std::lock_guard<std::mutex> lock(mu_);
      stats_.compile_ms += ms;
      return made.is_ok() ? std::shared_ptr<backends::Kernel>(std::move(made).value()) : nullptr;
    });
    c.kernel = std::make_shared<StandInKernel>(SJ_TRY(services_.backend.compile_reference(sp.graph)), *sp.graph, c.pending,
                                               services_.background->costs(), stand_in_counts_, dynamic_stand_in(st, sp, c),
                                               std::move(quick));
    c.stand_in = true;
  }
  return c;
}

// The trace with its dims left free, under the entry's layout: it takes
// every call the entry takes. When the entry is that already (a dynamic
// policy's), there is none to add.
std::shared_ptr<backends::Kernel> CallSite::dynamic_stand_in(StoredTrace& st, const Specialized& sp, Compiled& c) {
  // Inferred once per trace and layout (a model's inference takes
  // milliseconds, and this is on the call's path).
  auto [it, added] = st.dynamic.try_emplace(sp.env.contiguous());
  if (added) {
    sym::ShapeEnv env = st.env;
    env.set_contiguous(sp.env.contiguous());
    Expected<ir::SpecializedGraphPtr> graph = ir::specialize(st.graph, env.specialization());
    if (graph.is_ok()) it->second = std::move(graph).value();
  }
  const ir::SpecializedGraphPtr& graph = it->second;
  if (!graph || graph->spec_hash == sp.graph->spec_hash) return nullptr;
  const Hash128 key = cache::make_key(st.graph_hash, graph->spec_hash, services_.backend.name(), services_.backend.target());
  if (std::optional<cache::Found> found = services_.cache.get_local(key, make_maker(graph, context(false)))) {
    auto kernel = std::static_pointer_cast<backends::Kernel>(found->artifact);
    return kernel->fallback_reason().empty() ? kernel : nullptr;
  }
  // Asked for once, and queued behind the entry's own compile (install).
  if (dynamic_queued_.insert({key.hi, key.lo}).second) c.dynamic.emplace(key, graph);
  return nullptr;
}

// A kernel through the cache on a background thread, whose task has no
// caller to throw to.
Expected<cache::Found> CallSite::background_get(const Hash128& key, const ir::SpecializedGraphPtr& graph) {
  try {
    return services_.cache.get(key, make_maker(graph, context(true)));
  } catch (const std::exception& ex) {
    return Status(Code::kInternal, std::string("the background compile threw: ") + ex.what());
  }
}

void CallSite::compile_dynamic_in_background(Hash128 key, ir::SpecializedGraphPtr graph) {
  services_.background->run([this, key, graph = std::move(graph)] {
    const Clock::time_point t0 = Clock::now();
    Expected<cache::Found> got = background_get(key, graph);
    const double ms = ms_since(t0);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.compile_ms += ms;
    if (got.is_ok() && got->origin == cache::Origin::kCompile &&
        static_cast<const backends::Kernel&>(*got->artifact).fallback_reason().empty()) {
      ++stats_.stand_in_kernels;  // a graph the backend could not compile dynamic stays on the reference
    }
  });
}

cache::Maker CallSite::make_maker(const ir::SpecializedGraphPtr& graph, const backends::CompileContext& context) const {
  backends::WithFallback& backend = services_.backend;
  cache::Maker m;
  m.target = std::string(backend.name()) + " " + backend.target();
  m.compile = [&backend, graph, context](std::string* image) -> Expected<std::unique_ptr<cache::Artifact>> {
    return std::unique_ptr<cache::Artifact>(SJ_TRY(backend.compile(graph, {.image = image, .context = context})).release());
  };
  if (backend.persists()) {
    m.load = [&backend, graph, context](std::string_view image) -> Expected<std::unique_ptr<cache::Artifact>> {
      return std::unique_ptr<cache::Artifact>(SJ_TRY(backend.load(graph, image, context)).release());
    };
  }
  return m;
}

void CallSite::count_origin(const cache::Found& found) {
  if (found.origin != cache::Origin::kMemory) {
    if (const backends::CompilePhases* p = static_cast<const backends::Kernel&>(*found.artifact).phases()) stats_.phases += *p;
  }
  switch (found.origin) {
    case cache::Origin::kMemory: break;
    case cache::Origin::kDisk: ++stats_.disk_loads; break;
    case cache::Origin::kRemote: ++stats_.remote_loads; break;
    case cache::Origin::kCompile: {
      ++stats_.backend_compiles;
      const std::string& why = static_cast<const backends::Kernel&>(*found.artifact).fallback_reason();
      if (!why.empty()) {
        ++stats_.fallbacks;
        services_.log("shapejit: site " + name_ + ": the " + services_.backend.name() + " backend could not compile the graph (" + why +
                      "); it runs on the reference interpreter");
      }
      break;
    }
  }
}

// 6. The entry goes into a new snapshot; a stand-in's kernel starts compiling.
Entry* CallSite::install(Specialized sp, Compiled c, bool generic) {
  auto e = std::make_unique<Entry>();
  e->guards = std::move(sp.guards);
  e->kernel = std::move(c.kernel);
  e->graph = std::move(sp.graph);
  e->symbol_sources = symbol_sources(sp.env);
  e->description = describe(sp.env, generic);
  e->stand_in = c.stand_in;
  Entry* raw = e.get();
  add_entry(std::move(e));
  last_compiled_ = raw;
  has_generic_ |= generic;
  if (raw->stand_in) compile_in_background(raw, c.key, std::move(c.pending));
  if (c.dynamic) compile_dynamic_in_background(c.dynamic->first, std::move(c.dynamic->second));
  return raw;
}

void CallSite::add_entry(std::unique_ptr<Entry> e) {
  snapshots_.publish(Snapshot::with(snapshots_.live(), *e));
  entries_.push_back(std::move(e));
}

void CallSite::compile_in_background(Entry* stand_in, Hash128 key, std::shared_ptr<PendingKernel> pending) {
  const PendingKernel* tag = pending.get();  // what its stand-in's hurry() names
  services_.background->run([this, stand_in, key, graph = stand_in->graph, pending = std::move(pending)] {
    const Clock::time_point t0 = Clock::now();
    pending->started();
    Expected<cache::Found> got = background_get(key, graph);
    const double ms = ms_since(t0);
    // Calls waiting on the stand-in go on with the kernel before the entry is replaced.
    pending->finish(got.is_ok() ? std::static_pointer_cast<backends::Kernel>(got->artifact) : nullptr);
    land(stand_in, std::move(got), ms);
  }, tag);
}

// A background compile is done: its kernel replaces the stand-in's in a new
// snapshot (same guards, same place in the tree). A failed compile leaves
// the stand-in where it is, and says so once.
void CallSite::land(Entry* stand_in, Expected<cache::Found> got, double ms) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.compile_ms += ms;
  if (!got.is_ok()) {
    services_.log("shapejit: warning: site " + name_ + ": a background compile failed (" + got.status().message() +
                  "); its entry stays on the reference interpreter");
    return;
  }
  auto e = std::make_unique<Entry>(*stand_in);
  e->kernel = std::static_pointer_cast<backends::Kernel>(got->artifact);
  e->stand_in = false;
  count_origin(*got);
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
