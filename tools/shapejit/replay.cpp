#include "tools/shapejit/replay.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <sstream>

#include "jit/runtime/jit.h"

namespace shapejit::tools {

using Clock = std::chrono::steady_clock;

namespace {

double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

// What the interpreter runs when shapejit breaks the graph: the reference
// interpreter, allowed every specialization, compiling nothing.
policy::Config interpreter_config() {
  policy::Config c;
  c.policy.mode = "always_static";
  c.policy.cache_size_limit = 1'000'000;
  c.compile.backend = "reference";
  c.log.recompiles = false;
  return c;
}

}  // namespace

struct Replayer::SiteGraph {
  std::string site;
  ir::Graph graph;
  std::vector<trace::Observation> observed;
};

// One config's replay.
struct Replayer::Run {
  std::string name;
  std::unique_ptr<runtime::Jit> jit;
  std::unique_ptr<runtime::Jit> interpreter;  // created at the first graph break
  std::vector<ir::Tensor> outputs;
  double total_ms = 0, break_ms = 0;
  std::vector<float> cumulative_ms;
  std::vector<float> call_ms;  // each call's latency, for its percentiles
};

Replayer::~Replayer() = default;

Expected<std::unique_ptr<Replayer>> Replayer::create(const std::vector<NamedConfig>& configs, const ReplayOptions& options) {
  if (configs.empty()) return invalid("replay: no config");
  std::unique_ptr<Replayer> r(new Replayer());
  r->options_ = options;
  for (const NamedConfig& nc : configs) {
    policy::Config c = nc.config;
    c.log.record.clear();  // a replay does not record itself
    c.log.stats.clear();
    // Each config keeps its kernels apart, on disk and in Redis: no config
    // loads what another compiled in the same replay, while a second replay
    // finds what the first left.
    if (c.cache.disk_path.empty()) c.cache.disk_path = cache::default_disk_dir();
    if (!c.cache.disk_path.empty()) c.cache.disk_path += "/replay-" + nc.name;
    c.cache.redis_prefix += "replay-" + nc.name + ":";
    auto run = std::make_unique<Run>();
    run->name = nc.name;
    auto jit = runtime::Jit::create(c);
    if (!jit.is_ok()) return jit.status().with_context("replay under " + nc.name);
    run->jit = std::move(jit).value();
    run->jit->set_timing(true);
    run->jit->set_execute(options.execute);
    const bool log = options.log_recompiles;
    const std::string name = nc.name;
    run->jit->set_log([log, name](const std::string& line) {
      if (log) std::fprintf(stderr, "[%s] %s\n", name.c_str(), line.c_str());
    });
    r->runs_.push_back(std::move(run));
  }
  return r;
}

void Replayer::watch_compiles(const runtime::Jit::CompileWatch& watch) {
  for (auto& run : runs_) run->jit->set_compile_watch(watch);
}

// Every input reads the same zeroed memory: kernels never write their
// inputs, and zeros are valid indices.
Status Replayer::make_args(const trace::TraceCall& call, size_t line) {
  uint64_t bytes = 0;
  shapes_.resize(call.inputs.size());
  dl_.resize(call.inputs.size());
  args_.resize(call.inputs.size());
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const trace::TraceInput& in = call.inputs[i];
    // Checked as a call's arguments are (runtime/inputs.cpp): a trace may
    // name a shape no memory holds.
    const std::optional<uint64_t> n = ir::dense_bytes_within(ir::dtype_size(in.dtype), in.shape, uint64_t{1} << 62);
    if (!n) return invalid("line " + std::to_string(line) + ": input " + std::to_string(i) + ": its shape spans more than 2^62 bytes");
    bytes = std::max(bytes, *n);
    shapes_[i] = in.shape;
  }
  if (zeros_.empty() || zeros_.size() * sizeof(int64_t) < bytes) {
    try {
      zeros_.assign(bytes / sizeof(int64_t) + 1, 0);
    } catch (const std::bad_alloc&) {
      return Status(Code::kRuntime, "line " + std::to_string(line) + ": its inputs need " + format_bytes(bytes) + ", more memory than there is");
    }
  }
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    DLTensor d{};
    d.data = zeros_.data();
    d.device = {kDLCPU, 0};
    d.ndim = static_cast<int32_t>(shapes_[i].size());
    d.dtype = ir::to_dl(call.inputs[i].dtype);
    d.shape = shapes_[i].data();
    dl_[i] = d;
    args_[i] = &dl_[i];
  }
  return Status::ok();
}

Status Replayer::run_break(Run& run, const trace::TraceCall& call, const SiteGraph& g) {
  if (!run.interpreter) {
    run.interpreter = SJ_TRY(runtime::Jit::create(interpreter_config()));
    run.interpreter->set_execute(options_.execute);
  }
  std::vector<ir::Tensor> outputs;
  return run.interpreter->call_graph(call.site, g.graph, g.observed, runtime::Args(args_.data(), args_.size()), outputs);
}

Status Replayer::feed(const trace::TraceEvent& ev) {
  if (ev.graph) {
    auto it = std::find_if(graphs_.begin(), graphs_.end(), [&](const auto& g) { return g->site == ev.graph->site; });
    auto g = std::make_unique<SiteGraph>(SiteGraph{ev.graph->site, ev.graph->graph, ev.graph->observed});
    if (it == graphs_.end()) graphs_.push_back(std::move(g));
    else *it = std::move(g);
    return Status::ok();
  }
  const trace::TraceCall& call = *ev.call;
  auto it = std::find_if(graphs_.begin(), graphs_.end(), [&](const auto& g) { return g->site == call.site; });
  if (it == graphs_.end()) return invalid("line " + std::to_string(ev.line) + ": a call of site '" + call.site + "' before its graph line");
  const SiteGraph& g = **it;
  SJ_TRY(make_args(call, ev.line));
  // Each call starts with the next config: the first to run a call finds
  // colder caches than those after it, and no config should always pay that.
  for (size_t k = 0; k < runs_.size(); ++k) {
    Run& run = *runs_[(calls_ + k) % runs_.size()];
    const Clock::time_point t0 = Clock::now();
    Status s = run.jit->call_graph(call.site, g.graph, g.observed, runtime::Args(args_.data(), args_.size()), run.outputs);
    if (s.code() == Code::kGraphBreak) {
      const Clock::time_point t1 = Clock::now();
      s = run_break(run, call, g);
      run.break_ms += ms_between(t1, Clock::now());
    }
    if (!s.is_ok()) return s.with_context("line " + std::to_string(ev.line) + " under " + run.name);
    const double ms = ms_between(t0, Clock::now());
    run.total_ms += ms;
    run.cumulative_ms.push_back(static_cast<float>(run.total_ms));
    run.call_ms.push_back(static_cast<float>(ms));
  }
  ++calls_;
  return Status::ok();
}

std::vector<ReplayResult> Replayer::results() const {
  std::vector<ReplayResult> out;
  for (const auto& run : runs_) {
    run->jit->wait_compiles();  // background compiles land in the counts
    ReplayResult r;
    r.config_name = run->name;
    nlohmann::json& s = r.stats;
    s = run->jit->stats_json();
    s["config"] = run->name;
    s["executed"] = options_.execute;
    s["total_ms"] = run->total_ms;
    s["break_ms"] = run->break_ms;
    s["kernel_ms"] = s["run_ms"].get<double>() + run->break_ms;
    uint64_t retraces = 0, max_site_compiles = 0;
    for (const auto& [site, st] : s["sites"].items()) {
      retraces += std::max<uint64_t>(st["traces"].get<uint64_t>(), 1) - 1;
      max_site_compiles = std::max(max_site_compiles, st["compiles"].get<uint64_t>());
    }
    s["retraces"] = retraces;
    s["max_site_compiles"] = max_site_compiles;
    s["peak_cache_bytes"] = s["cache"]["peak_bytes"];
    std::vector<float> lat = run->call_ms;
    auto pct = [&](double p) -> double {
      if (lat.empty()) return 0;
      const size_t k = std::min(lat.size() - 1, static_cast<size_t>(p * static_cast<double>(lat.size())));
      std::nth_element(lat.begin(), lat.begin() + static_cast<long>(k), lat.end());
      return lat[k];
    };
    s["call_ms_p50"] = pct(0.50);
    s["call_ms_p99"] = pct(0.99);
    s["call_ms_max"] = lat.empty() ? 0.0 : static_cast<double>(*std::max_element(lat.begin(), lat.end()));
    r.cumulative_ms = run->cumulative_ms;
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

// [=======>      ]  53%  281234 calls  1:02 elapsed  compiling site 'gpt2': 4729 nodes, 23 distinct steps (about 0.5 s)
class ProgressBar {
 public:
  ProgressBar(bool on, std::FILE* to) : on_(on), to_(to), start_(Clock::now()), last_(start_) {}
  bool on() const { return on_; }
  void update(double fraction, size_t calls, bool done = false) {
    if (!on_) return;
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::time_point now = Clock::now();
    if (!done && now - last_ < std::chrono::milliseconds(200)) return;
    fraction_ = fraction;
    calls_ = calls;
    draw(now, done);
  }
  // A large compile holds the replay: the bar says so while it runs.
  void compiling(const std::string& site, const backends::CompileServices::Notice& n) {
    if (!on_) return;
    const std::string who = site.empty() ? std::string("a kernel") : "site '" + site + "'";
    char note[256];
    if (!n.done) {
      std::snprintf(note, sizeof note, "  compiling %s: %zu nodes, %d distinct steps (about %.1f s)", who.c_str(), n.nodes,
                    n.distinct_steps, n.estimate_ms / 1000);
    } else {
      std::snprintf(note, sizeof note, "  compiled %s in %.2f s", who.c_str(), n.elapsed_ms / 1000);
    }
    std::lock_guard<std::mutex> lock(mu_);
    note_ = note;
    draw(Clock::now(), false);
  }

 private:
  void draw(Clock::time_point now, bool done) {
    last_ = now;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(std::clamp(fraction_, 0.0, 1.0) * kWidth);
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < kWidth) bar += '>' + std::string(static_cast<size_t>(kWidth - filled - 1), ' ');
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(now - start_).count();
    // \x1b[K: what a longer line before left is cleared.
    std::fprintf(to_, "\r[%s] %3.0f%%  %zu calls  %lld:%02lld elapsed%s\x1b[K", bar.c_str(), 100.0 * fraction_, calls_,
                 static_cast<long long>(secs / 60), static_cast<long long>(secs % 60), note_.c_str());
    if (done) std::fprintf(to_, "\n");
    std::fflush(to_);
  }

  bool on_;
  std::FILE* to_;
  std::mutex mu_;  // background compiles (compile.async) tell it from their threads
  Clock::time_point start_, last_;
  double fraction_ = 0;
  size_t calls_ = 0;
  std::string note_;
};

}  // namespace

Expected<std::vector<ReplayResult>> replay(trace::TraceReader& reader, const std::vector<NamedConfig>& configs, const ReplayOptions& options) {
  // Before the replayer: its Jits' background compiles may tell the bar
  // until they are gone.
  ProgressBar progress(options.progress && reader.size_bytes() > 0, options.progress_to);
  std::unique_ptr<Replayer> replayer = SJ_TRY(Replayer::create(configs, options));
  if (progress.on()) {
    replayer->watch_compiles([&progress](const std::string& site, const backends::CompileServices::Notice& n) { progress.compiling(site, n); });
  }
  while (true) {
    std::optional<trace::TraceEvent> ev = SJ_TRY(reader.next());
    if (!ev) break;
    SJ_TRY(replayer->feed(*ev));
    progress.update(static_cast<double>(reader.bytes_read()) / static_cast<double>(reader.size_bytes()), replayer->calls());
  }
  progress.update(1.0, replayer->calls(), /*done=*/true);
  return replayer->results();
}

Expected<std::vector<ReplayResult>> replay(const trace::TraceContents& trace, const std::vector<NamedConfig>& configs,
                                           const ReplayOptions& options) {
  std::unique_ptr<Replayer> replayer = SJ_TRY(Replayer::create(configs, options));
  for (const trace::TraceEvent& ev : trace.events) SJ_TRY(replayer->feed(ev));
  return replayer->results();
}

std::string format_bytes(uint64_t b) {
  char buf[32];
  if (b >= (uint64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / (1 << 10));
  return buf;
}

std::string format_table(const std::vector<ReplayResult>& results) {
  std::ostringstream out;
  char line[768];
  std::snprintf(line, sizeof line, "%-16s %8s %8s %8s %8s %7s %11s %9s %9s %11s %11s %9s %9s %9s %10s  %s\n", "config", "calls", "compiles",
                "max/site", "retraces", "breaks", "compile_ms", "disp_p50", "disp_p99", "kernel_ms", "total_ms", "call_p99", "call_max",
                "stand-ins", "peak_cache", "recompiles by reason");
  out << line;
  for (const ReplayResult& r : results) {
    const auto& s = r.stats;
    std::string reasons;
    for (const auto& [k, v] : s["recompile_reasons"].items()) reasons += (reasons.empty() ? "" : ", ") + k + ": " + std::to_string(v.get<uint64_t>());
    if (reasons.empty()) reasons = "-";
    auto u = [&](const char* key) { return static_cast<unsigned long long>(s[key].get<uint64_t>()); };
    std::snprintf(line, sizeof line, "%-16s %8llu %8llu %8llu %8llu %7llu %11.1f %7.0fns %7.0fns %11.1f %11.1f %7.2fms %7.1fms %9llu %10s  %s\n",
                  r.config_name.c_str(), u("calls"), u("compiles"), u("max_site_compiles"), u("retraces"), u("graph_breaks"),
                  s["compile_ms"].get<double>(), s["dispatch_ns_p50"].get<double>(), s["dispatch_ns_p99"].get<double>(),
                  s["kernel_ms"].get<double>(), s["total_ms"].get<double>(), s["call_ms_p99"].get<double>(), s["call_ms_max"].get<double>(),
                  u("stand_in_calls"), format_bytes(s["peak_cache_bytes"].get<uint64_t>()).c_str(), reasons.c_str());
    out << line;
  }
  return out.str();
}

}  // namespace shapejit::tools
