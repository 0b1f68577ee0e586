#include "jit/runtime/call_site.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "jit/runtime/trace_recorder.h"

namespace shapejit {

using Clock = std::chrono::steady_clock;

namespace {
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
}  // namespace

// A compiled entry: its guards, its kernel, and the shape functions that
// size its outputs from the symbols read off the inputs.
struct CallSite::Entry {
  guards::GuardSet guards;
  std::shared_ptr<backends::Kernel> kernel;
  std::vector<std::pair<int, int>> symbol_sources;  // per symbol; (-1, -1) when unbacked
  std::vector<ir::DType> out_dtypes;
  std::vector<std::vector<sym::Program>> out_shapes;
  std::vector<uint8_t> out_data_dependent;  // sized by the kernel
  bool generic = false;
  // A cached GraphBreak: calls it matches break at once, without tracing.
  std::optional<std::string> graph_break;
  std::string description;  // the entry's static and dynamic dims, for logs
};

// A trace of the interpreter's function, with the guards under which its
// semantic decisions hold (no policy guards: those belong to entries).
struct CallSite::StoredTrace {
  Trace trace;
  Hash128 graph_hash;
  guards::GuardSet semantic;
  bool made_generic = false;
  std::unique_ptr<Entry> eager;  // the reference kernel for the eager path
};

struct CallSite::Snapshot {
  guards::GuardTree tree;
  std::vector<const Entry*> entries;  // by GuardTree id
  // Per entry, each symbol's place in the tree's flat dims (-1: unbacked);
  // empty when the tree is not flat.
  std::vector<std::vector<int32_t>> flat_symbols;
};

CallSite::CallSite(std::string name, Services services)
    : name_(std::move(name)), services_(std::move(services)), policy_(services_.config.policy, name_) {}

CallSite::~CallSite() = default;

Expected<std::vector<ir::InputSpec>> dynamic_inputs(Args args) {
  std::vector<ir::InputSpec> inputs;
  int symbol = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == nullptr) return invalid("input " + std::to_string(i) + " is null");
    auto dt = ir::from_dl(args[i]->dtype);
    if (!dt) return invalid("input " + std::to_string(i) + " has an unsupported dtype (code " + std::to_string(args[i]->dtype.code) + ", " + std::to_string(args[i]->dtype.bits) + " bits)");
    ir::InputSpec spec{"in" + std::to_string(i), *dt, {}};
    for (int d = 0; d < args[i]->ndim; ++d) spec.shape.push_back(ir::DimSpec::symbol("s" + std::to_string(symbol++)));
    inputs.push_back(std::move(spec));
  }
  return inputs;
}

namespace {

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
    int64_t numel = 1;
    for (int d = 0; d < t->ndim; ++d) {
      if (t->shape[d] < 0) return invalid(where + " dim " + std::to_string(d) + " is negative");
      numel *= t->shape[d];
    }
    if (numel > 0 && t->data == nullptr) return invalid(where + ": data is null");
  }
  return Status::ok();
}

std::string dims_text(const std::vector<std::pair<int, int>>& dims) {
  std::string s;
  for (auto [i, d] : dims) s += (s.empty() ? "" : ", ") + std::string("input ") + std::to_string(i) + " dim " + std::to_string(d);
  return s;
}

}  // namespace

Status CallSite::call(Args args, const TraceFn& trace, std::vector<ir::Tensor>& outputs, void* stream) {
  backends::StreamScope on(stream);
  return dispatch(args, Source{&trace, nullptr, {}}, outputs);
}

Status CallSite::call_graph(const ir::Graph& graph, std::span<const Observation> observed, Args args,
                            std::vector<ir::Tensor>& outputs, void* stream) {
  backends::StreamScope on(stream);
  return dispatch(args, Source{nullptr, &graph, observed}, outputs);
}

Status CallSite::dispatch(Args args, const Source& source, std::vector<ir::Tensor>& outputs) try {
  if (services_.recorder) {
    Status s = dispatch_timed(args, source, outputs);
    // After the call: its first miss writes the graph line, which must come first.
    if (recorded_graph_.load(std::memory_order_acquire)) services_.recorder->call(name_, args);
    return s;
  }
  return dispatch_timed(args, source, outputs);
} catch (const std::bad_alloc&) {
  Status s = runtime_error("site " + name_ + ": out of memory (a tensor of this call is too large to allocate)");
  count_error(s);
  return s;
}

namespace {

// Marks a reader of the site's snapshot for its scope (see call_site.h).
class ReaderScope {
 public:
  explicit ReaderScope(std::atomic<uint32_t>& readers) : readers_(&readers) { readers.fetch_add(1, std::memory_order_seq_cst); }
  ~ReaderScope() { leave(); }
  void leave() {
    if (readers_) readers_->fetch_sub(1, std::memory_order_release);
    readers_ = nullptr;
  }

 private:
  std::atomic<uint32_t>* readers_;
};

}  // namespace

Status CallSite::dispatch_timed(Args args, const Source& source, std::vector<ir::Tensor>& outputs) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  for (const DLTensor* a : args) {
    if (a == nullptr) return invalid("site " + name_ + ": an input is null");
  }
  const bool timing = services_.timing.load(std::memory_order_relaxed);
  const Clock::time_point t0 = timing ? Clock::now() : Clock::time_point{};
  ReaderScope reading(readers_);
  const Snapshot* snap = current_.load(std::memory_order_seq_cst);
  int64_t dims[guards::GuardTree::kMaxFlat];
  const int id = snap ? snap->tree.lookup(args, dims) : guards::GuardTree::kMiss;
  if (id == guards::GuardTree::kMiss) {
    reading.leave();  // the miss path publishes under the site's mutex
    Status s = miss(args, source, outputs);
    if (!s.is_ok()) count_error(s);
    return s;
  }
  const int32_t* flat = snap->flat_symbols.empty() ? nullptr : snap->flat_symbols[id].data();
  if (!timing) return run_entry(*snap->entries[id], args, outputs, dims, flat);
  const Clock::time_point t1 = Clock::now();
  Status s = run_entry(*snap->entries[id], args, outputs, dims, flat);
  const double run_ms = ms_since(t1);
  reading.leave();
  std::lock_guard<std::mutex> lock(mu_);
  stats_.dispatch_ns.push_back(static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
  stats_.run_ms += run_ms;
  return s;
}

void CallSite::count_error(const Status& s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (s.code() != Code::kGraphBreak) ++stats_.errors;
}

Status CallSite::run_entry(const Entry& e, Args args, std::vector<ir::Tensor>& outputs, const int64_t* dims,
                           const int32_t* flat) {
  if (e.graph_break) {
    break_hits_.fetch_add(1, std::memory_order_relaxed);
    return shapejit::graph_break(*e.graph_break);
  }
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
      symbols[k] = input < 0 ? 0 : args[input]->shape[dim];
    }
  }
  outputs.resize(e.out_shapes.size());
  // Host outputs are allocated here; a device backend allocates its own.
  const DLDevice device = services_.backend.device();
  const bool host = device.device_type == kDLCPU;
  for (size_t i = 0; i < e.out_shapes.size(); ++i) {
    ir::Tensor& out = outputs[i];
    if (e.out_data_dependent[i]) {
      out = ir::Tensor();
      continue;
    }
    const auto& progs = e.out_shapes[i];
    int64_t shape[ir::kMaxRank];  // ranks are validated <= kMaxRank on the miss path
    for (size_t d = 0; d < progs.size(); ++d) shape[d] = progs[d].run([&](int32_t id, int32_t) { return symbols[id]; });
    const bool reuse = out.is_unique() && out.device().device_type == device.device_type && out.dtype() == e.out_dtypes[i] && out.is_contiguous() &&
                       std::equal(out.shape().begin(), out.shape().end(), shape, shape + progs.size());
    if (!reuse) out = host ? ir::Tensor::empty(e.out_dtypes[i], std::vector<int64_t>(shape, shape + progs.size())) : ir::Tensor();
  }
  Status s = e.kernel->run(args, std::span<int64_t>(symbols, n), outputs);
  if (!s.is_ok()) return s.with_context("site " + name_);
  return s;
}

CallSite::StoredTrace* CallSite::reusable_trace(Args args) {
  for (auto it = traces_.rbegin(); it != traces_.rend(); ++it) {
    StoredTrace& t = **it;
    if (policy_.generic() && !t.made_generic) continue;
    if (!t.semantic.check(args)) continue;
    // A trace that specialized a dim the policy has since backed off is
    // stale: tracing again makes that guard_int a GraphBreak.
    bool stale = false;
    for (const Observation& o : t.trace.observed) stale |= o.as_int && policy_.may_specialize(o.input, o.dim).has_value();
    if (!stale) return &t;
  }
  return nullptr;
}

Expected<CallSite::StoredTrace*> CallSite::retrace(Args args, const Source& source) {
  const Clock::time_point t0 = Clock::now();
  ++stats_.traces;
  std::vector<ir::InputSpec> inputs;
  TraceFn replay;  // a held graph is traced by replaying its nodes and observations
  if (source.graph == nullptr) {
    inputs = SJ_TRY(dynamic_inputs(args));
  } else {
    const ir::Graph& graph = *source.graph;
    inputs = graph.inputs;
    replay = [&graph, observed = source.observed](Tracer& t) -> Status {
      for (const ir::Node& n : graph.nodes) SJ_TRY(t.append(n, graph.value_names[n.out[0]]));
      for (const Observation& o : observed) SJ_TRY(t.observe(o));
      for (int o : graph.outputs) SJ_TRY(t.output(Tracer::Value{o}));
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
  TraceOptions options;
  options.specialize_zero_one = services_.config.policy.specialize_zero_one;
  options.may_specialize = [this](int input, int dim) { return policy_.may_specialize(input, dim); };
  std::unique_ptr<Tracer> tracer = SJ_TRY(Tracer::create(std::move(inputs), std::move(hints), std::move(options)));
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
  auto stored = std::make_unique<StoredTrace>();
  stored->trace = std::move(*tracer).finish();
  stored->graph_hash = stored->trace.graph.canonical_hash();
  stored->semantic = guards::derive_guards(stored->trace.graph, stored->trace.env, services_.backend.device());
  stored->made_generic = policy_.generic();
  if (services_.recorder) {
    services_.recorder->graph(name_, stored->trace.graph, stored->trace.observed);
    recorded_graph_.store(true, std::memory_order_release);
  }
  // Entries do not refer to traces; keep the newest few for reuse, so a
  // site that keeps missing (eager past its limit) does not grow forever.
  const size_t keep = 2 * static_cast<size_t>(services_.config.policy.cache_size_limit) + 2;
  if (traces_.size() >= keep) traces_.erase(traces_.begin());
  traces_.push_back(std::move(stored));
  return traces_.back().get();
}

Expected<CallSite::Entry*> CallSite::compile_entry(StoredTrace& st, Args args, bool generic) {
  sym::ShapeEnv env = st.trace.env;
  for (size_t id = 0; id < env.symbols().size(); ++id) {
    const sym::Symbol& s = env.symbols()[id];
    if (!s.unbacked) env.set_hint(static_cast<int>(id), args[s.input]->shape[s.dim]);
  }
  if (!generic) SJ_TRY(policy_.specialize(env));
  std::vector<bool> contiguous(args.size(), false);
  if (services_.backend.specializes_layout()) {
    for (size_t i = 0; i < args.size(); ++i) contiguous[i] = ir::Tensor::borrow(*args[i], ir::DType::kF32).is_contiguous();
  }
  env.set_contiguous(contiguous);

  sym::Specialization spec = env.specialization();
  const Hash128 key = cache::make_key(st.graph_hash, spec.hash(), services_.backend);
  const Clock::time_point t0 = Clock::now();
  bool compiled = false;
  auto kernel = services_.cache.get_or_compile(key, [&]() -> Expected<std::unique_ptr<backends::Kernel>> {
    compiled = true;
    auto k = services_.backend.compile(st.trace.graph, spec);
    if (k.is_ok() || &services_.backend == &services_.reference) return k;
    // Never a crash, never a wrong answer: what the backend cannot compile
    // runs on the reference interpreter, cached under the same key.
    auto fallback = services_.reference.compile(st.trace.graph, spec);
    if (!fallback.is_ok()) return fallback;
    fallback = services_.backend.host_fallback(std::move(fallback).value());
    ++stats_.fallbacks;
    services_.log("shapejit: site " + name_ + ": the " + services_.backend.name() + " backend could not compile the graph (" +
                  k.status().message() + "); it runs on the reference interpreter");
    return fallback;
  });
  stats_.compile_ms += ms_since(t0);
  if (!kernel.is_ok()) return kernel.status().with_context("site " + name_ + ": compiling");
  if (compiled) ++stats_.backend_compiles;

  auto e = std::make_unique<Entry>();
  e->kernel = std::move(kernel).value();
  e->generic = generic;
  e->guards = guards::derive_guards(st.trace.graph, env, services_.backend.device());
  if (!e->guards.check(args)) {
    std::string why;
    for (const auto& f : e->guards.explain(args)) why += "; " + f.describe();
    return Status(Code::kInternal, "site " + name_ + ": a new entry does not accept the call it was built for" + why);
  }
  for (const sym::Symbol& s : env.symbols()) e->symbol_sources.emplace_back(s.unbacked ? -1 : s.input, s.unbacked ? -1 : s.dim);
  // Output shapes under the specialization: the same inference the backend ran.
  sym::ShapeEnv spec_env = sym::ShapeEnv::from_specialization(spec);
  std::vector<ir::ValueType> types = SJ_TRY(ir::infer(st.trace.graph, spec_env, nullptr));
  for (int o : st.trace.graph.outputs) {
    const ir::ValueType& t = types[o];
    if (t.shape.size() > static_cast<size_t>(ir::kMaxRank)) {
      return invalid("site " + name_ + ": output '" + st.trace.graph.value_names[o] + "' has rank " +
                     std::to_string(t.shape.size()) + "; at most " + std::to_string(ir::kMaxRank) + " is supported");
    }
    e->out_dtypes.push_back(t.dtype);
    std::vector<sym::Program> progs;
    bool data_dependent = false;
    for (const sym::Expr& d : t.shape) {
      data_dependent |= spec_env.has_unbacked(d);
      progs.push_back(sym::Program::compile(d, [](int id) { return std::make_pair(int32_t{id}, int32_t{0}); }));
    }
    e->out_shapes.push_back(std::move(progs));
    e->out_data_dependent.push_back(data_dependent);
  }
  std::vector<std::pair<int, int>> statics, dynamics;
  for (const sym::Symbol& s : env.symbols()) {
    if (s.unbacked || s.input < 0) continue;
    (s.binding && s.binding->is_const() ? statics : dynamics).emplace_back(s.input, s.dim);
  }
  e->description = std::string(generic ? "generic entry; " : "") + "static: [" + dims_text(statics) + "], dynamic: [" + dims_text(dynamics) + "]";
  Entry* raw = e.get();
  install(std::move(e));
  last_compiled_ = raw;
  return raw;
}

void CallSite::install_break(const Tracer& tracer, const std::string& message) {
  auto e = std::make_unique<Entry>();
  e->guards = guards::derive_guards(tracer.graph(), tracer.env(), services_.backend.device());
  e->graph_break = message;
  e->description = "graph break";
  ++break_entries_;
  install(std::move(e));
}

void CallSite::install(std::unique_ptr<Entry> e) {
  auto snap = std::make_unique<Snapshot>();
  const Snapshot* old = current_.load(std::memory_order_relaxed);
  if (old) *snap = *old;
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
  current_.store(snap.get(), std::memory_order_seq_cst);
  if (live_) retired_.push_back(std::move(live_));
  live_ = std::move(snap);
  // A reader that arrives after this load reads the new pointer (both are
  // seq_cst); none is left holding a retired one.
  if (readers_.load(std::memory_order_seq_cst) == 0) retired_.clear();
}

Status CallSite::run_eager(StoredTrace& st, Args args, std::vector<ir::Tensor>& outputs) {
  if (!st.eager) {
    auto e = std::make_unique<Entry>();
    sym::Specialization spec = st.trace.env.specialization();
    e->kernel = std::shared_ptr<backends::Kernel>(services_.backend.host_fallback(SJ_TRY(services_.reference.compile(st.trace.graph, spec))));
    for (const sym::Symbol& s : st.trace.env.symbols()) e->symbol_sources.emplace_back(s.unbacked ? -1 : s.input, s.unbacked ? -1 : s.dim);
    e->out_dtypes.resize(st.trace.graph.outputs.size());
    e->out_shapes.resize(st.trace.graph.outputs.size());
    e->out_data_dependent.assign(st.trace.graph.outputs.size(), true);  // the interpreter sizes them
    st.eager = std::move(e);
  }
  ++stats_.eager_calls;
  const Clock::time_point t0 = Clock::now();
  Status s = run_entry(*st.eager, args, outputs);
  stats_.run_ms += ms_since(t0);
  return s;
}

Status CallSite::miss(Args args, const Source& source, std::vector<ir::Tensor>& outputs) {
  std::unique_lock<std::mutex> lock(mu_);
  ++misses_;
  // Another thread may have installed the entry while we waited. Holding
  // the mutex, the current snapshot cannot be retired; the entry outlives it.
  if (const Snapshot* snap = current_.load(std::memory_order_acquire)) {
    int id = snap->tree.lookup(args);
    if (id != guards::GuardTree::kMiss) {
      --misses_;  // a hit after all
      const Entry& entry = *snap->entries[id];
      lock.unlock();
      return run_entry(entry, args, outputs);
    }
  }
  SJ_TRY(validate_args(args, services_.backend));

  // Explain the miss against the newest entry and let the policy attribute it.
  std::vector<guards::Failure> failures;
  policy::MissReport report;
  const bool first = last_compiled_ == nullptr;
  if (!first) {
    failures = last_compiled_->guards.explain(args);
    report = policy_.on_miss(failures);
  }

  StoredTrace* st = reusable_trace(args);
  const bool retraced = st == nullptr;
  if (!st) st = SJ_TRY(retrace(args, source));

  const int limit = services_.config.policy.cache_size_limit;
  const int normal_entries = static_cast<int>(entries_.size() - break_entries_) - (has_generic_ ? 1 : 0);
  std::string decision;
  Entry* entry = nullptr;
  if (normal_entries >= limit) {
    const bool eager = services_.config.policy.on_limit == policy::OnLimit::kEager || has_generic_;
    if (eager) {
      if (!warned_eager_ && services_.log) {
        services_.log("shapejit: warning: site " + name_ + " reached cache_size_limit (" + std::to_string(limit) +
                      "); further new shapes run on the reference interpreter (eager)");
      }
      warned_eager_ = true;
      return run_eager(*st, args, outputs);
    }
    policy_.make_generic();
    if (!st->made_generic) st = SJ_TRY(retrace(args, source));
    entry = SJ_TRY(compile_entry(*st, args, /*generic=*/true));
    has_generic_ = true;
    decision = "cache_size_limit reached: one generic entry";
  } else {
    entry = SJ_TRY(compile_entry(*st, args, /*generic=*/false));
    decision = retraced ? "retraced" : "reused the trace (policy guards only)";
  }
  ++stats_.compiles;
  if (!first) {
    ++stats_.recompiles;
    std::set<std::string> origins;
    for (const auto& f : failures) origins.insert(sym::origin_name(f.guard->origin));
    if (origins.empty()) origins.insert("new input signature");
    for (const auto& o : origins) ++stats_.recompile_reasons[o];
    if (services_.config.log.recompiles && services_.log) {
      std::string line = "site " + name_ + ": recompile #" + std::to_string(stats_.recompiles) + ": ";
      if (failures.empty()) line += "no entry takes this input signature";
      for (size_t i = 0; i < failures.size(); ++i) line += (i ? "; " : "") + failures[i].describe();
      line += "; decision: " + decision;
      if (!report.backed_off.empty()) line += "; backed off: " + dims_text(report.backed_off);
      line += "; new entry " + entry->description;
      services_.log(line);
    }
  }
  lock.unlock();
  const Clock::time_point t0 = Clock::now();
  Status s = run_entry(*entry, args, outputs);
  const double run_ms = ms_since(t0);
  lock.lock();
  stats_.run_ms += run_ms;
  return s;
}

SiteStats CallSite::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  SiteStats s = stats_;
  s.calls = calls_.load(std::memory_order_relaxed);
  const uint64_t breaks = break_hits_.load(std::memory_order_relaxed);
  s.hits = s.calls - misses_ - breaks;
  s.graph_breaks += breaks;
  return s;
}

size_t CallSite::num_entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size() - break_entries_;
}

policy::DimState CallSite::dim_state(int input, int dim) const {
  std::lock_guard<std::mutex> lock(mu_);
  return policy_.state(input, dim);
}

}  // namespace shapejit
