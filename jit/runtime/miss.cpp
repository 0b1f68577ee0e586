// The miss path: one ordered pipeline under the site's mutex.
//
//   0. recheck   an entry another thread installed since this call's lookup
//   1. explain   which guards of the newest entry failed, and why
//   2. decide    the RecompilePolicy: compile (reusing a trace or not),
//                compile the generic entry, run eagerly, or break
//   3. trace     reuse the chosen trace, or run the interpreter's function
//   4. specialize  the policy's choices on the trace's env, the layout,
//                then ir::specialize (inference, once) and the entry's guards
//   5. compile   through the kernel cache (the backend with its fallback)
//   6. install   publish a new snapshot
//   7. log       the recompile line and the stats
// then the call runs on its new entry, outside the mutex.
#include <algorithm>
#include <chrono>
#include <set>

#include "jit/runtime/background.h"
#include "jit/runtime/site_types.h"
#include "jit/runtime/trace_recorder.h"

namespace shapejit::runtime {

using Clock = std::chrono::steady_clock;
using Action = policy::Decision::Action;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

const char* device_name(int type) {
  switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    default: return "device type";
  }
}

std::string device_text(DLDevice d) { return std::string(device_name(d.device_type)) + " " + std::to_string(d.device_id); }

// What a miss checks before anything reads a shape: a call that no entry
// takes may be malformed.
Status validate_args(Args args, const backends::Backend& backend) {
  for (size_t i = 0; i < args.size(); ++i) {
    const DLTensor* t = args[i];
    const std::string where = "input " + std::to_string(i);
    if (t == nullptr) return invalid(where + " is null");
    if (t->ndim < 0 || t->ndim > ir::kMaxRank) return invalid(where + ": rank " + std::to_string(t->ndim) + " is out of range");
    if (t->ndim > 0 && t->shape == nullptr) return invalid(where + ": shape is null");
    if (!ir::from_dl(t->dtype)) return invalid(where + ": unsupported dtype (f32, f64, i32, i64, bool)");
    const DLDevice want = backend.device();
    if (t->device.device_type != want.device_type || t->device.device_id != want.device_id) {
      std::string type = device_name(t->device.device_type);
      if (type == "device type") type += " " + std::to_string(t->device.device_type);
      return unsupported(where + " is on " + type + " " + std::to_string(t->device.device_id) + "; the " + backend.name() +
                         " backend runs on " + device_text(want) + " (compile.backend chooses it)");
    }
    for (int d = 0; d < t->ndim; ++d) {
      if (t->shape[d] < 0) return invalid(where + " dim " + std::to_string(d) + " is negative");
    }
    // The bytes it spans, checked: no tensor in memory spans 2^62 bytes, and
    // one that claims to cannot be sized without overflow downstream. Huge
    // dims beside a 0 are fine: the tensor holds nothing.
    const std::span<const int64_t> shape(t->shape, static_cast<size_t>(t->ndim));
    const std::optional<uint64_t> bytes = ir::dense_bytes_within(ir::dtype_size(*ir::from_dl(t->dtype)), shape, uint64_t{1} << 62);
    if (!bytes) return invalid(where + ": its shape spans more than 2^62 bytes");
    if (*bytes > 0 && t->data == nullptr) return invalid(where + ": data is null");
  }
  return Status::ok();
}

std::string dims_text(const std::vector<std::pair<int, int>>& dims) {
  std::string s;
  for (auto [i, d] : dims) s += (s.empty() ? "" : ", ") + std::string("input ") + std::to_string(i) + " dim " + std::to_string(d);
  return s;
}

std::vector<std::pair<int, int>> symbol_sources(const sym::ShapeEnv& env) {
  std::vector<std::pair<int, int>> out;
  for (const sym::Symbol& s : env.symbols()) out.emplace_back(s.unbacked ? -1 : s.input, s.unbacked ? -1 : s.dim);
  return out;
}

}  // namespace

Status CallSite::miss(const Call& call, uint64_t seen, std::vector<ir::Tensor>& outputs) {
  const Args args = call.args;
  std::unique_lock<std::mutex> lock(mu_);
  ++misses_;
  // 0. Entries published since this call's lookup may take it. Holding the
  // mutex, the live snapshot cannot be retired; its entries outlive it.
  if (live_ && live_->version != seen) {
    const int id = live_->tree.lookup(args);
    if (id != guards::GuardTree::kMiss) {
      --misses_;  // a hit after all
      const Entry& entry = *live_->entries[id];
      lock.unlock();
      return run_entry(entry, call, outputs);
    }
  }
  SJ_TRY(validate_args(args, services_.backend));

  // 1. Explain the miss against the newest entry.
  const bool first = last_compiled_ == nullptr;
  std::vector<guards::Failure> failures;
  if (!first) failures = last_compiled_->guards.explain(args);

  // 2. Decide.
  const std::vector<policy::TraceCandidate> traces = candidates(args);
  policy::Miss m;
  m.first = first;
  m.failures = failures;
  m.entries = static_cast<int>(compiled_entries()) - (has_generic_ ? 1 : 0);
  m.has_generic = has_generic_;
  m.traces = traces;
  const policy::Decision d = policy_->decide(m);
  if (!d.warning.empty()) services_.log("shapejit: warning: site " + name_ + ": " + d.warning);
  if (d.action == Action::kGraphBreak) {
    ++stats_.graph_breaks;
    return shapejit::graph_break("site " + name_ + ": " + d.why);
  }

  // 3. Trace, or reuse the trace the policy chose.
  const bool generic = d.action == Action::kCompileGeneric;
  StoredTrace* st = d.trace >= 0 ? stored(d.trace) : nullptr;
  if (!st) st = SJ_TRY(trace(call, generic));
  if (d.action == Action::kEager) return run_eager(*st, call, outputs);

  // 4-6. Specialize, compile, install.
  Entry* entry = SJ_TRY(compile(*st, args, generic));
  has_generic_ |= generic;

  // 7. Log.
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

std::vector<policy::TraceCandidate> CallSite::candidates(Args args) const {
  std::vector<policy::TraceCandidate> out;
  for (auto it = traces_.rbegin(); it != traces_.rend(); ++it) {
    const StoredTrace& t = **it;
    if (t.semantic.check(args)) out.push_back({t.id, t.observed, t.generic});
  }
  return out;
}

CallSite::StoredTrace* CallSite::stored(int id) {
  for (auto& t : traces_) {
    if (t->id == id) return t.get();
  }
  return nullptr;
}

Expected<CallSite::StoredTrace*> CallSite::trace(const Call& call, bool generic) {
  const Args args = call.args;
  const Source& source = call.source;
  const Clock::time_point t0 = Clock::now();
  ++stats_.traces;
  std::vector<ir::InputSpec> inputs;
  TraceFn replay;  // a held graph is traced by replaying its nodes and observations
  if (source.graph == nullptr) {
    inputs = SJ_TRY(dynamic_inputs(args));
  } else {
    const ir::Graph& graph = *source.graph;
    inputs = graph.inputs;
    replay = [&graph, observed = source.observed](trace::Tracer& t) -> Status {
      for (const ir::Node& n : graph.nodes) SJ_TRY(t.append(n, graph.value_names[n.out[0]]));
      for (const trace::Observation& o : observed) SJ_TRY(t.observe(o));
      for (int o : graph.outputs) SJ_TRY(t.output(trace::Tracer::Value{o}));
      return Status::ok();
    };
    if (inputs.size() != args.size()) {
      return invalid("site " + name_ + ": the graph has " + std::to_string(inputs.size()) + " inputs, the call passes " + std::to_string(args.size()));
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto dt = ir::from_dl(args[i]->dtype);
      if (dt != inputs[i].dtype) {
        return invalid("site " + name_ + ": input " + std::to_string(i) + " ('" + inputs[i].name + "'): the graph says " +
                       ir::dtype_name(inputs[i].dtype) + ", the call passes " + (dt ? ir::dtype_name(*dt) : "an unsupported dtype"));
      }
    }
  }
  ir::ShapeHints hints;
  for (const DLTensor* a : args) hints.emplace_back(a->shape, a->shape + a->ndim);
  trace::TraceOptions options;
  options.specialize_zero_one = services_.config.policy.specialize_zero_one;
  options.on_guard_int = [this](int input, int dim) { return policy_->on_guard_int(input, dim); };
  std::unique_ptr<trace::Tracer> tracer = SJ_TRY(trace::Tracer::create(std::move(inputs), std::move(hints), std::move(options)));
  Status traced = source.graph ? replay(*tracer) : (*source.fn)(*tracer);
  stats_.trace_ms += ms_since(t0);
  if (!traced.is_ok()) {
    Status s = traced.with_context("site " + name_);
    if (traced.code() == Code::kGraphBreak) {
      ++stats_.graph_breaks;
      // A break the tracer raised follows from the decisions taken so far,
      // and the policy only ever moves dims toward backed off: cache it.
      if (tracer->broke()) install_break(*tracer, s.message());
    }
    return s;
  }
  trace::Trace t = std::move(*tracer).finish();
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

Expected<CallSite::Entry*> CallSite::compile(StoredTrace& st, Args args, bool generic) {
  // 4. Specialize: the policy's choices for the free dims, this call's
  // layout where the backend specializes on it, then inference once.
  sym::ShapeEnv env = st.env;
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
  auto specialized = ir::specialize(st.graph, env.specialization());
  if (!specialized.is_ok()) return specialized.status().with_context("site " + name_);
  ir::SpecializedGraphPtr graph = std::move(specialized).value();
  auto e = std::make_unique<Entry>();
  e->guards = guards::specialize_guards(st.semantic, env);
  if (!e->guards.check(args)) {
    std::string why;
    for (const auto& f : e->guards.explain(args)) why += "; " + f.describe();
    return internal_error("site " + name_ + ": a new entry does not accept the call it was built for" + why);
  }

  // 5. Compile, through the cache's tiers; with compile.async, only what
  // memory or disk has now, and otherwise a stand-in while it compiles.
  const Hash128 key = cache::make_key(st.graph_hash, graph->spec_hash, services_.backend.name(), services_.backend.target());
  const cache::Maker maker = make_maker(graph);
  const Clock::time_point t0 = Clock::now();
  std::optional<cache::Found> found;
  if (services_.background) {
    found = services_.cache.get_local(key, maker);
  } else {
    auto got = services_.cache.get(key, maker);
    if (!got.is_ok()) return got.status().with_context("site " + name_ + ": compiling");
    found = std::move(got).value();
  }
  stats_.compile_ms += ms_since(t0);
  if (found) {
    e->kernel = std::static_pointer_cast<backends::Kernel>(found->artifact);
    count_origin(*found);
  } else {
    // The reference interpreter computes the call now; the kernel lands in
    // the entry when it is ready (land). A generic entry that covers the
    // call would have taken it at the lookup, before any miss.
    e->kernel = std::shared_ptr<backends::Kernel>(SJ_TRY(services_.backend.compile_reference(graph)));
    e->stand_in = true;
  }

  // 6. Install.
  e->graph = std::move(graph);
  e->symbol_sources = symbol_sources(env);
  std::vector<std::pair<int, int>> statics, dynamics;
  for (const sym::Symbol& s : env.symbols()) {
    if (s.unbacked || s.input < 0) continue;
    (s.binding && s.binding->is_const() ? statics : dynamics).emplace_back(s.input, s.dim);
  }
  e->description = std::string(generic ? "generic entry; " : "") + "static: [" + dims_text(statics) + "], dynamic: [" + dims_text(dynamics) + "]";
  Entry* raw = e.get();
  install(std::move(e));
  last_compiled_ = raw;
  if (raw->stand_in) {
    services_.background->run([this, raw, key, maker] {
      const Clock::time_point t0 = Clock::now();
      Expected<cache::Found> got = Status(Code::kInternal, "the background compile did not run");
      try {
        got = services_.cache.get(key, maker);
      } catch (const std::exception& ex) {
        got = Status(Code::kInternal, std::string("the background compile threw: ") + ex.what());
      }
      land(raw, std::move(got), ms_since(t0));
    });
  }
  return raw;
}

cache::Maker CallSite::make_maker(const ir::SpecializedGraphPtr& graph) const {
  backends::WithFallback& backend = services_.backend;
  cache::Maker m;
  m.target = std::string(backend.name()) + " " + backend.target();
  m.compile = [&backend, graph](std::string* image) -> Expected<std::unique_ptr<cache::Artifact>> {
    if (image) return std::unique_ptr<cache::Artifact>(SJ_TRY(backend.compile_image(graph, *image)).release());
    return std::unique_ptr<cache::Artifact>(SJ_TRY(backend.compile(graph)).release());
  };
  if (backend.persists()) {
    m.load = [&backend, graph](std::string_view image) -> Expected<std::unique_ptr<cache::Artifact>> {
      return std::unique_ptr<cache::Artifact>(SJ_TRY(backend.load(graph, image)).release());
    };
  }
  return m;
}

void CallSite::count_origin(const cache::Found& found) {
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
  auto snap = std::make_unique<Snapshot>(*live_);
  ++snap->version;
  std::replace(snap->entries.begin(), snap->entries.end(), static_cast<const Entry*>(stand_in), static_cast<const Entry*>(e.get()));
  if (last_compiled_ == stand_in) last_compiled_ = e.get();
  entries_.push_back(std::move(e));
  ++landed_;
  publish(std::move(snap));
}

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

void CallSite::install_break(const trace::Tracer& tracer, const std::string& message) {
  auto e = std::make_unique<Entry>();
  e->guards = guards::derive_guards(tracer.graph(), tracer.env(), services_.backend.device());
  e->graph_break = message;
  e->description = "graph break";
  ++break_entries_;
  install(std::move(e));
}

void CallSite::install(std::unique_ptr<Entry> e) {
  auto snap = std::make_unique<Snapshot>();
  if (live_) *snap = *live_;
  ++snap->version;
  snap->tree.add(static_cast<int>(snap->entries.size()), e->guards);
  snap->entries.push_back(e.get());
  snap->flat_symbols.clear();
  if (const std::vector<int32_t>* offsets = snap->tree.flat_offsets()) {
    for (const Entry* entry : snap->entries) {
      std::vector<int32_t> flat;
      for (auto [input, dim] : entry->symbol_sources) flat.push_back(input < 0 ? -1 : (*offsets)[input] + dim);
      snap->flat_symbols.push_back(std::move(flat));
    }
  }
  entries_.push_back(std::move(e));
  publish(std::move(snap));
}

void CallSite::publish(std::unique_ptr<Snapshot> snap) {
  current_.store(snap.get(), std::memory_order_seq_cst);
  if (live_) retired_.push_back(std::move(live_));
  live_ = std::move(snap);
  // A reader that arrives after this load reads the new pointer (both are
  // seq_cst); none is left holding a retired one.
  if (readers_.load(std::memory_order_seq_cst) == 0) retired_.clear();
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
