#include "jit/policy/backoff_policy.h"

#include <algorithm>
#include <set>

namespace shapejit::policy {

using sym::Origin;

namespace {

std::string dim_name(int input, int dim) { return "input " + std::to_string(input) + " dim " + std::to_string(dim); }

}  // namespace

BackoffPolicy::BackoffPolicy(const PolicyConfig& config, const std::string& site) : config_(config) {
  auto it = config.sites.find(site);
  if (it != config.sites.end()) pins_ = it->second;
}

bool BackoffPolicy::pinned_static(int input, int dim) const {
  return std::find(pins_.static_dims.begin(), pins_.static_dims.end(), DimRef(input, dim)) != pins_.static_dims.end();
}

bool BackoffPolicy::pinned_dynamic(int input, int dim) const {
  return std::find(pins_.dynamic_dims.begin(), pins_.dynamic_dims.end(), DimRef(input, dim)) != pins_.dynamic_dims.end();
}

bool BackoffPolicy::backed_off(int input, int dim) const {
  auto it = dims_.find({input, dim});
  return it != dims_.end() && it->second.backed_off;
}

void BackoffPolicy::attribute(const Miss& miss, Decision& d) {
  std::set<DimRef> dims;
  for (const guards::Failure& f : miss.failures) {
    if (!counts(f.guard->origin)) continue;
    for (DimRef r : f.guard->dims()) dims.insert(r);
  }
  for (DimRef r : dims) {
    Dim& s = dims_[r];
    ++s.recompiles;
    if (may_back_off() && !pinned_static(r.first, r.second) && !s.backed_off && s.recompiles >= config_.backoff_after) {
      s.backed_off = true;
      d.backed_off.push_back(r);
    }
  }
}

int BackoffPolicy::pick_trace(const Miss& miss, bool generic) const {
  for (const TraceCandidate& t : miss.traces) {
    if (generic && !t.generic) continue;
    // A trace that specialized a dim guard_int may no longer specialize is
    // stale: tracing again makes that guard_int a GraphBreak.
    bool stale = false;
    for (const trace::Observation& o : t.observed) stale |= o.as_int && on_guard_int(o.input, o.dim).graph_break;
    if (!stale) return t.id;
  }
  return -1;
}

Decision BackoffPolicy::decide(const Miss& miss) {
  Decision d;
  if (!miss.first) attribute(miss, d);
  const int limit = config_.cache_size_limit;
  if (miss.entries >= limit) {
    if (config_.on_limit == OnLimit::kEager || miss.has_generic) {
      d.action = Decision::Action::kEager;
      d.trace = pick_trace(miss, generic_);
      d.why = "cache_size_limit reached: eager";
      if (!warned_eager_) {
        d.warning = "cache_size_limit (" + std::to_string(limit) + ") reached; further new shapes run on the reference interpreter (eager)";
      }
      warned_eager_ = true;
      return d;
    }
    generic_ = true;
    d.action = Decision::Action::kCompileGeneric;
    d.trace = pick_trace(miss, true);
    d.why = "cache_size_limit reached: one generic entry";
    return d;
  }
  d.action = Decision::Action::kCompile;
  d.trace = pick_trace(miss, generic_);
  d.why = d.trace < 0 ? "retraced" : "reused the trace (policy guards only)";
  return d;
}

trace::IntUse BackoffPolicy::on_guard_int(int input, int dim) const {
  const std::string where = dim_name(input, dim);
  if (pinned_static(input, dim)) return trace::IntUse::specialize();
  if (pinned_dynamic(input, dim)) return trace::IntUse::break_graph(where + " is pinned dynamic by the config");
  if (never_specializes()) return trace::IntUse::break_graph(where + " is dynamic (policy " + config_.mode + ")");
  if (generic_) return trace::IntUse::break_graph(where + " is dynamic: the site reached cache_size_limit (" + std::to_string(config_.cache_size_limit) + ")");
  if (backed_off(input, dim) && config_.backed_off_int == BackedOffInt::kGraphBreak) {
    return trace::IntUse::break_graph(where + " backed off after " + std::to_string(dims_.at({input, dim}).recompiles) + " recompiles");
  }
  return trace::IntUse::specialize();
}

sym::Range BackoffPolicy::bucket(int64_t v, int64_t lowest) const {
  const Buckets& b = config_.buckets;
  if (v <= b.min) return {lowest, b.min};
  if (v > b.max) return {b.max + 1, sym::Range::kInf};
  int64_t edge = b.min;  // buckets are (min * 2^(k-1), min * 2^k], the last one cut at max
  while (edge < v) edge *= 2;
  return {edge / 2 + 1, std::min(edge, b.max)};
}

Status BackoffPolicy::specialize(sym::ShapeEnv& env, bool generic) const {
  if (generic) return Status::ok();
  const auto& symbols = env.symbols();
  for (size_t id = 0; id < symbols.size(); ++id) {
    const sym::Symbol& s = symbols[id];
    if (s.unbacked || s.binding || s.input < 0 || pinned_dynamic(s.input, s.dim)) continue;
    FreeDim choice = FreeDim::kStatic;
    if (!pinned_static(s.input, s.dim)) {
      if (backed_off(s.input, s.dim) || generic_) continue;
      choice = free_dim();
    }
    if (choice == FreeDim::kDynamic) continue;
    SJ_CHECK(s.hint.has_value(), "specializing a symbol without a hint");
    if (choice == FreeDim::kBucket) {
      env.set_range(static_cast<int>(id), bucket(*s.hint, s.range.lo), Origin::kBucket);
      continue;
    }
    SJ_TRY(env.bind(static_cast<int>(id), sym::Expr(*s.hint), Origin::kPolicy));
  }
  return Status::ok();
}

DimState BackoffPolicy::state(int input, int dim) const {
  if (backed_off(input, dim) || generic_) return DimState::kBackedOff;
  if (pinned_static(input, dim)) return DimState::kStatic;
  if (pinned_dynamic(input, dim)) return DimState::kDynamic;
  return free_dim() == FreeDim::kStatic ? DimState::kStatic : DimState::kDynamic;
}

}  // namespace shapejit::policy
