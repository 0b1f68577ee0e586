#include "jit/runtime/jit.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "backends/cpu/tile_choice.h"
#include "jit/runtime/trace_recorder.h"

namespace shapejit::runtime {

// `auto` is the best CPU backend built in that starts on this host: the
// inputs of a CPU program are host memory. `cuda` takes kDLCUDA tensors.
Expected<std::unique_ptr<Jit>> Jit::create(const policy::Config& config) {
  const std::string& b = config.compile.backend;
  std::string available = "auto, reference";
#ifdef SHAPEJIT_HAVE_LLVM
  available += ", llvm";
  if (b == "llvm" || b == "auto") {
    auto llvm = backends::make_llvm_backend(config.compile.opt_level);
    if (llvm.is_ok()) return create(config, std::move(llvm).value());
    if (b == "llvm") return llvm.status().with_context("config: /compile/backend: \"llvm\"");
  }
#endif
#ifdef SHAPEJIT_HAVE_CUDA
  available += ", cuda";
  if (b == "cuda") {
    auto cuda = backends::make_cuda_backend();
    if (!cuda.is_ok()) return cuda.status().with_context("config: /compile/backend: \"cuda\"");
    return create(config, std::move(cuda).value());
  }
#endif
  if (b == "llvm" || b == "cuda") {
    return unsupported("config: /compile/backend: \"" + b + "\" is not built into this version of shapejit (available: " + available + ")");
  }
  return create(config, backends::make_reference_backend());
}

Expected<std::unique_ptr<Jit>> Jit::create(const policy::Config& config, std::unique_ptr<backends::Backend> backend) {
  if (!backend) return invalid("Jit::create: no backend");
  if (!policy::has_mode(config.policy.mode)) return invalid("config: /policy/mode: \"" + config.policy.mode + "\" is not a registered mode");
  if (!config.log.stats.empty()) {
    // Checked now, so that the stats written at the end are not lost to a
    // path nobody can write (append mode: an existing file is kept as is).
    std::ofstream probe(config.log.stats, std::ios::app);
    if (!probe) return Status(Code::kIo, "config: /log/stats: cannot write \"" + config.log.stats + "\": " + std::strerror(errno));
  }
  // A key that cannot be read is an error, never unsigned records.
  Expected<cache::Signer> signer = cache::Signer::load(config.cache.sign_key_files);
  if (!signer.is_ok()) return signer.status();
  std::unique_ptr<Jit> jit(new Jit(config, std::move(backend), std::move(signer).value()));
  if (!config.log.record.empty()) jit->record(SJ_TRY(TraceRecorder::open(config.log.record)));
  return jit;
}

Expected<std::unique_ptr<Jit>> Jit::create(std::string_view config_json) {
  policy::Config c = SJ_TRY(policy::parse_config(config_json));
  return create(c);
}

namespace {

cache::TierOptions tier_options(const policy::CacheConfig& c, cache::Signer signer) {
  cache::TierOptions t;
  t.signer = std::move(signer);
  t.disk_dir = c.disk_path.empty() ? cache::default_disk_dir() : c.disk_path;
  t.disk_max_bytes = static_cast<uint64_t>(c.disk_max_mb) << 20;
  t.redis.url = c.redis;
  t.redis.connect_timeout_ms = c.redis_connect_timeout_ms;
  t.redis.timeout_ms = c.redis_timeout_ms;
  t.redis.cooldown_ms = c.redis_cooldown_ms;
  t.redis.key_prefix = c.redis_prefix;
  return t;
}

}  // namespace

Jit::Jit(policy::Config config, std::unique_ptr<backends::Backend> backend, cache::Signer signer)
    : log_([](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }),
      config_(std::move(config)),
      backend_(std::move(backend)),
      cache_(static_cast<size_t>(config_.cache.memory_mb) << 20, tier_options(config_.cache, std::move(signer)),
             [this](const std::string& line) {
               if (log_) log_(line);
             }) {
  backends::CompileServices services;
  services.cache = &cache_;
  services.threads = config_.compile.threads;
  services.slow_ms = static_cast<double>(config_.log.slow_compile_ms);
  services.notice = [this](const backends::CompileServices::Notice& n) { notice_slow_compile(n); };
  backend_.attach(services);
  // The reference backend compiles nothing: no stand-in would be faster.
  if (config_.compile.async && std::string_view(backend_.name()) != "reference") {
    background_ = std::make_unique<Background>(config_.compile.threads);
  }
}

// A compile long enough to wait for: a line when it starts, what it
// compiles and how long it should take, and one when it is done.
void Jit::notice_slow_compile(const backends::CompileServices::Notice& n) const {
  const std::string* site = n.site;
  if (watch_) watch_(site ? *site : std::string(), n);
  if (!log_) return;
  const std::string who = "shapejit: " + (site ? "site " + *site : std::string("a kernel")) + ": ";
  char line[256];
  if (!n.done) {
    std::snprintf(line, sizeof line, "compiling a large graph: %zu nodes, %d steps, %d distinct, %d to compile (about %.1f s)", n.nodes, n.steps,
                  n.distinct_steps, n.to_compile, n.estimate_ms / 1000);
  } else {
    std::snprintf(line, sizeof line, "compiled the large graph in %.2f s", n.elapsed_ms / 1000);
  }
  log_(who + line);
}

void Jit::wait_compiles() {
  if (background_) background_->wait();
}

void Jit::stop_compiles() {
  if (background_) background_->stop();
}

Jit::~Jit() {
  // Background compiles refer to their sites: the one running lands before
  // anything goes, and those not begun are dropped (no call is left to run
  // their kernels; a destroyed Jit does not make its owner wait for them).
  stop_compiles();
  if (config_.log.stats.empty()) return;
  std::ofstream out(config_.log.stats);
  if (out) out << stats_json().dump(2) << "\n" << std::flush;
  if (!out) log_("shapejit: log.stats: could not write \"" + config_.log.stats + "\"; the stats are lost");
}

void Jit::record(std::shared_ptr<TraceRecorder> recorder) {
  std::lock_guard<std::mutex> lock(record_mu_);
  recorder_.store(recorder.get(), std::memory_order_release);
  if (recorder) recorders_.push_back(std::move(recorder));
}

void Jit::set_log(std::function<void(const std::string&)> sink) { log_ = std::move(sink); }

CallSite& Jit::site(std::string_view name) {
  // concurrent_unordered_map::find needs a key object; the common case (a
  // site that exists) allocates only for long names (SSO covers short ones).
  const std::string key(name);
  auto it = sites_.find(key);
  if (it != sites_.end()) return *it->second;
  std::lock_guard<std::mutex> lock(sites_mu_);
  it = sites_.find(key);
  if (it != sites_.end()) return *it->second;
  Services services{config_, backend_, cache_, background_.get(),
                    [this](const std::string& line) { if (log_) log_(line); },
                    recorder_, timing_, execute_};
  auto site = std::make_unique<CallSite>(key, std::move(services));
  CallSite& ref = *site;
  sites_.emplace(key, std::move(site));
  return ref;
}

namespace {

nlohmann::json site_json(const SiteStats& s) {
  std::vector<uint32_t> d = s.dispatch_ns;
  auto pct = [&](double p) -> double {
    if (d.empty()) return 0;
    size_t k = std::min(d.size() - 1, static_cast<size_t>(p * static_cast<double>(d.size())));
    std::nth_element(d.begin(), d.begin() + static_cast<long>(k), d.end());
    return d[k];
  };
  nlohmann::json j = {{"recompile_reasons", s.recompile_reasons},
                      {"compile_phases_ms",
                       {{"lower", s.phases.lower_ms},
                        {"emit", s.phases.emit_ms},
                        {"optimize", s.phases.optimize_ms},
                        {"codegen", s.phases.codegen_ms},
                        {"steps", s.phases.steps_ms}}},
                      {"steps", {{"steps", s.phases.steps}, {"distinct", s.phases.distinct_steps}, {"compiled", s.phases.compiled_steps}}},
                      {"dispatch_ns_p50", pct(0.50)},
                      {"dispatch_ns_p99", pct(0.99)}};
  SiteStats::each_number([&](const char* name, auto SiteStats::*field) { j[name] = s.*field; });
  return j;
}

}  // namespace

// The CPU device's choice of GEMM tiles and the probe's figures
// (backends/cpu/tile_choice.h).
nlohmann::json cpu_json() {
  const backends::cpu::TileChoice& c = backends::cpu::tile_choice();
  return {{"tiles", backends::cpu::family_name(c.family)},
          {"why", c.why},
          {"avx512", c.probe.avx512},
          {"measured", c.probe.measured},
          {"fma256_g", c.probe.fma256},
          {"fma512_g", c.probe.fma512},
          {"tile256_g", c.probe.tile256},
          {"tile512_g", c.probe.tile512},
          {"probe_ms", c.probe.ms}};
}

namespace {

double median(std::vector<float> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

nlohmann::json Jit::stats_json() const {
  nlohmann::json sites = nlohmann::json::object();
  SiteStats total;
  std::vector<std::pair<std::string, const CallSite*>> ordered;
  for (const auto& [name, site] : sites_) ordered.emplace_back(name, site.get());
  std::sort(ordered.begin(), ordered.end());
  for (const auto& [name, site] : ordered) {
    SiteStats s = site->stats();
    sites[name] = site_json(s);
    sites[name]["entries"] = site->num_entries();
    total += s;
  }
  nlohmann::json j = site_json(total);
  const cache::CacheStats c = cache_.stats();
  nlohmann::json kernel_ms = {{"compiles", c.compile_ms.size()}, {"compile_p50", median(c.compile_ms)}};
  nlohmann::json steps = {{"hits", c.parts.hits}, {"waits", c.parts.waits}, {"compiles", c.parts.compiles}};
  nlohmann::json cache = {{"hits", c.hits}, {"misses", c.misses}, {"evictions", c.evictions}, {"bytes", c.bytes},
                          {"peak_bytes", c.peak_bytes}, {"signed", c.signed_records}};
  // Each lower tier: its loads' times, its counts of steps, and its section.
  for (const cache::TierStats& t : c.tiers) {
    kernel_ms[t.name + "_loads"] = t.load_ms.size();
    kernel_ms[t.name + "_load_p50"] = median(t.load_ms);
    for (const auto& [name, n] : t.part_fields) steps[name] = n;
    nlohmann::json& section = cache[t.name] = {{"on", t.on}};
    for (const auto& [name, n] : t.fields) section[name] = n;
  }
  cache["kernel_ms"] = std::move(kernel_ms);
  cache["steps"] = std::move(steps);
  j["cache"] = std::move(cache);
  if (std::string_view(backend_.name()) == "llvm") j["cpu"] = cpu_json();
  j["sites"] = sites;
  return j;
}

}  // namespace shapejit::runtime
