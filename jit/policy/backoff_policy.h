// BackoffPolicy: what the built-in modes share, and a base for new ones.
//
// A dim is `dynamic`, `static` or `backed_off`. A recompile is attributed to
// the dims whose failed guards the mode counts (`counts`): always those the
// interpreter needed as ints and those the policy pinned for speed. A dim
// that has caused `backoff_after` recompiles is backed off, and the
// recompile that reaches the count is itself built backed off: its policy
// guards are dropped (the kernel takes the dim at run time), and guard_int
// on it is a GraphBreak (`backed_off_int: graph_break`, the default) or
// still specializes it, one entry per value (`recompile`, PyTorch's).
//
// Pins from the config's `sites` override the mode for a dim: static pins
// always specialize and never back off; dynamic pins never specialize, and
// guard_int on them is a GraphBreak (torch's mark_dynamic).
//
// Past `cache_size_limit` entries, `on_limit: dynamic` makes the site
// generic (every dim backed off, guard_int a GraphBreak; one more, fully
// dynamic entry, then eager) and `on_limit: eager` runs further misses on
// the reference interpreter.
//
// A mode says three things (the virtual hooks): what a free dim becomes,
// which failures count, and whether a dim may back off.
#pragma once

#include <map>
#include <string>

#include "jit/policy/recompile_policy.h"

namespace shapejit::policy {

class BackoffPolicy : public RecompilePolicy {
 public:
  BackoffPolicy(const PolicyConfig& config, const std::string& site);

  Decision decide(const Miss& miss) override;
  trace::IntUse on_guard_int(int input, int dim) const override;
  Status specialize(sym::ShapeEnv& env, bool generic) const override;
  DimState state(int input, int dim) const override;

  // The pow2 bucket that holds `v` (DESIGN.md: TensorRT profiles).
  sym::Range bucket(int64_t v, int64_t lowest) const;

 protected:
  enum class FreeDim { kDynamic, kStatic, kBucket };
  // What a dim no observation and no pin decided becomes.
  virtual FreeDim free_dim() const = 0;
  // Whether a failed guard of this origin counts toward its dims' backoff.
  virtual bool counts(sym::Origin origin) const { return origin == sym::Origin::kObservedInt || origin == sym::Origin::kPolicy; }
  virtual bool may_back_off() const { return true; }
  // guard_int on any dim is a GraphBreak (a mode with no static dims).
  virtual bool never_specializes() const { return false; }

  const PolicyConfig& config() const { return config_; }

 private:
  struct Dim {
    int recompiles = 0;
    bool backed_off = false;
  };
  // Counts the miss against the failed guards' dims; backs off those at the count.
  void attribute(const Miss& miss, Decision& d);
  // The newest candidate that `generic` may reuse and that is not stale.
  int pick_trace(const Miss& miss, bool generic) const;
  bool backed_off(int input, int dim) const;
  bool pinned_static(int input, int dim) const;
  bool pinned_dynamic(int input, int dim) const;

  PolicyConfig config_;
  SitePins pins_;
  std::map<DimRef, Dim> dims_;
  bool generic_ = false;
  bool warned_eager_ = false;
};

}  // namespace shapejit::policy
