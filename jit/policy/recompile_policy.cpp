#include "jit/policy/recompile_policy.h"

#include <algorithm>
#include <set>

namespace shapejit::policy {

using sym::Origin;

RecompilePolicy::RecompilePolicy(const PolicyConfig& config, const std::string& site) : config_(config) {
  auto it = config.sites.find(site);
  if (it != config.sites.end()) pins_ = it->second;
}

bool RecompilePolicy::pinned_static(int input, int dim) const {
  return std::find(pins_.static_dims.begin(), pins_.static_dims.end(), std::make_pair(input, dim)) != pins_.static_dims.end();
}
bool RecompilePolicy::pinned_dynamic(int input, int dim) const {
  return std::find(pins_.dynamic_dims.begin(), pins_.dynamic_dims.end(), std::make_pair(input, dim)) != pins_.dynamic_dims.end();
}

MissReport RecompilePolicy::on_miss(const std::vector<guards::Failure>& failures) {
  MissReport report;
  std::set<std::pair<int, int>> dims;
  for (const guards::Failure& f : failures) {
    Origin o = f.guard->origin;
    bool counts = o == Origin::kObservedInt || (o == Origin::kPolicy && config_.mode != Mode::kBucketed);
    if (!counts) continue;
    for (auto d : f.guard->dims()) dims.insert(d);
  }
  for (auto d : dims) {
    Dim& s = dims_[d];
    ++s.recompiles;
    report.counted.push_back(d);
    bool can_back_off = config_.mode != Mode::kAlwaysStatic && !pinned_static(d.first, d.second);
    if (can_back_off && !s.backed_off && s.recompiles >= config_.backoff_after) {
      s.backed_off = true;
      report.backed_off.push_back(d);
    }
  }
  return report;
}

std::optional<std::string> RecompilePolicy::may_specialize(int input, int dim) const {
  const std::string where = "input " + std::to_string(input) + " dim " + std::to_string(dim);
  if (pinned_static(input, dim)) return std::nullopt;
  if (pinned_dynamic(input, dim)) return where + " is pinned dynamic by the config";
  if (config_.mode == Mode::kAlwaysDynamic) return where + " is dynamic (policy always_dynamic)";
  if (generic_) return where + " is dynamic: the site reached cache_size_limit (" + std::to_string(config_.cache_size_limit) + ")";
  auto it = dims_.find({input, dim});
  if (it != dims_.end() && it->second.backed_off) {
    return where + " backed off after " + std::to_string(it->second.recompiles) + " recompiles";
  }
  return std::nullopt;
}

sym::Range RecompilePolicy::bucket(int64_t v, int64_t lowest) const {
  const Buckets& b = config_.buckets;
  if (v <= b.min) return {lowest, b.min};
  if (v > b.max) return {b.max + 1, sym::Range::kInf};
  int64_t edge = b.min;  // buckets are (min * 2^(k-1), min * 2^k], the last one cut at max
  while (edge < v) edge *= 2;
  return {edge / 2 + 1, std::min(edge, b.max)};
}

Status RecompilePolicy::specialize(sym::ShapeEnv& env) const {
  const auto& symbols = env.symbols();
  for (size_t id = 0; id < symbols.size(); ++id) {
    const sym::Symbol& s = symbols[id];
    if (s.unbacked || s.binding || s.input < 0) continue;
    const int input = s.input, dim = s.dim;
    if (pinned_dynamic(input, dim)) continue;
    auto it = dims_.find({input, dim});
    bool backed_off = it != dims_.end() && it->second.backed_off;
    bool make_static = pinned_static(input, dim);
    if (!make_static && (backed_off || generic_)) continue;
    if (!make_static) {
      switch (config_.mode) {
        case Mode::kStartDynamic:
        case Mode::kAlwaysDynamic: continue;
        case Mode::kStartStatic:
        case Mode::kAlwaysStatic: make_static = true; break;
        case Mode::kBucketed: env.set_range(static_cast<int>(id), bucket(*s.hint, s.range.lo), Origin::kBucket); continue;
      }
    }
    SJ_CHECK(s.hint.has_value(), "specializing a symbol without a hint");
    SJ_TRY(env.bind(static_cast<int>(id), sym::Expr(*s.hint), Origin::kPolicy));
  }
  return Status::ok();
}

DimState RecompilePolicy::state(int input, int dim) const {
  auto it = dims_.find({input, dim});
  if (it != dims_.end() && it->second.backed_off) return DimState::kBackedOff;
  if (generic_) return DimState::kBackedOff;
  if (pinned_static(input, dim)) return DimState::kStatic;
  if (pinned_dynamic(input, dim)) return DimState::kDynamic;
  return (config_.mode == Mode::kStartStatic || config_.mode == Mode::kAlwaysStatic) ? DimState::kStatic : DimState::kDynamic;
}


}  // namespace shapejit::policy
