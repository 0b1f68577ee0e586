// The built-in modes (DESIGN.md, Specialization semantics), and the table
// of modes the config may name.
//
//   mode            first compile                  on a failing dim
//   start_dynamic   dims dynamic; observed static  backed off after backoff_after
//   start_static    all dims static                backed off after backoff_after; leaving a
//                                                  0/1 entry counts as a change (TorchDynamo)
//   always_static   all dims static                never backs off (one entry per shape)
//   always_dynamic  all dims dynamic               guard_int is always a GraphBreak
//   bucketed        dims in a pow2 range bucket    a new bucket is a new entry; observed
//                                                  dims back off as in start_dynamic
#include <map>
#include <mutex>

#include "jit/policy/backoff_policy.h"

namespace shapejit::policy {

namespace {

class StartDynamic final : public BackoffPolicy {
 public:
  using BackoffPolicy::BackoffPolicy;
  FreeDim free_dim() const override { return FreeDim::kDynamic; }
};

// PyTorch's automatic dynamic shapes: a dim that changes between calls is
// made dynamic, and a size-1 dim leaving its 0/1 entry has changed too.
class StartStatic final : public BackoffPolicy {
 public:
  using BackoffPolicy::BackoffPolicy;
  FreeDim free_dim() const override { return FreeDim::kStatic; }
  bool counts(sym::Origin o) const override { return BackoffPolicy::counts(o) || o == sym::Origin::kZeroOne; }
};

class AlwaysStatic final : public BackoffPolicy {
 public:
  using BackoffPolicy::BackoffPolicy;
  FreeDim free_dim() const override { return FreeDim::kStatic; }
  bool may_back_off() const override { return false; }
};

class AlwaysDynamic final : public BackoffPolicy {
 public:
  using BackoffPolicy::BackoffPolicy;
  FreeDim free_dim() const override { return FreeDim::kDynamic; }
  bool never_specializes() const override { return true; }
};

// A new bucket is bounded by the bucket count: bucket changes never count.
class Bucketed final : public BackoffPolicy {
 public:
  using BackoffPolicy::BackoffPolicy;
  FreeDim free_dim() const override { return FreeDim::kBucket; }
};

template <typename P>
PolicyFactory factory() {
  return [](const PolicyConfig& c, const std::string& site) { return std::make_unique<P>(c, site); };
}

struct Registry {
  std::mutex mu;
  std::map<std::string, PolicyFactory> modes{
      {"start_dynamic", factory<StartDynamic>()}, {"start_static", factory<StartStatic>()},
      {"always_static", factory<AlwaysStatic>()}, {"always_dynamic", factory<AlwaysDynamic>()},
      {"bucketed", factory<Bucketed>()},
  };
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

Status register_mode(const std::string& name, PolicyFactory make) {
  if (name.empty() || !make) return invalid("register_mode: a mode needs a name and a factory");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.modes.emplace(name, std::move(make)).second) return invalid("register_mode: \"" + name + "\" is already a mode");
  return Status::ok();
}

bool has_mode(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.modes.count(name) != 0;
}

std::vector<std::string> mode_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, make] : r.modes) names.push_back(name);
  return names;
}

std::unique_ptr<RecompilePolicy> make_policy(const PolicyConfig& config, const std::string& site) {
  PolicyFactory make;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.modes.find(config.mode);
    SJ_CHECK(it != r.modes.end(), "a config names a mode that is not registered");
    make = it->second;
  }
  return make(config, site);
}

}  // namespace shapejit::policy
