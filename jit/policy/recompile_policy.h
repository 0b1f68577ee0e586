// RecompilePolicy: one call site's per-dim state and the decisions that
// follow from the config's mode.
//
// A dim is `dynamic`, `static` or `backed_off`. A recompile is attributed to
// the dims whose specialization guards failed: those the interpreter needed
// as ints (guard_int) and those the policy pinned for speed. A dim that has
// caused `backoff_after` recompiles is backed off, and the recompile that
// reaches the count is itself built backed off: its policy guards are
// dropped (the kernel takes the dim at run time), a later guard_int on it is
// a GraphBreak, and guard_bool still guards the predicate only.
//
//   mode            first compile                  on a failing dim
//   start_dynamic   dims dynamic; observed static  backed off after backoff_after
//   start_static    all dims static                backed off after backoff_after
//   always_static   all dims static                never backs off (one entry per shape)
//   always_dynamic  all dims dynamic               guard_int is always a GraphBreak
//   bucketed        dims in a pow2 range bucket    a new bucket is a new entry; observed
//                                                  dims back off as in start_dynamic
//
// Pins from the config's `sites` override the mode for a dim: static pins
// always specialize and never back off; dynamic pins never specialize, and a
// guard_int on them is a GraphBreak (torch's mark_dynamic).
//
// Past `cache_size_limit` entries, `on_limit: dynamic` makes the site
// generic (every dim backed off; one more, fully dynamic entry) and
// `on_limit: eager` runs further misses on the reference interpreter.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "guards/guard_set.h"
#include "jit/policy/config.h"
#include "jit/sym/shape_env.h"

namespace shapejit::policy {

enum class DimState { kDynamic, kStatic, kBackedOff };

struct MissReport {
  std::vector<std::pair<int, int>> counted;     // dims the recompile is attributed to
  std::vector<std::pair<int, int>> backed_off;  // dims that backed off on this miss
};

class RecompilePolicy {
 public:
  RecompilePolicy(const PolicyConfig& config, const std::string& site);

  const PolicyConfig& config() const { return config_; }

  // Attributes a recompile to the dims of the failed specialization guards.
  MissReport on_miss(const std::vector<guards::Failure>& failures);
  // Whether guard_int may specialize the dim; otherwise why not.
  std::optional<std::string> may_specialize(int input, int dim) const;
  // Applies the policy's choices to the free symbols of a trace's env:
  // binds static ones to their hints, gives bucketed ones their range.
  Status specialize(sym::ShapeEnv& env) const;

  bool generic() const { return generic_; }
  // The limit is reached: every dim backs off from now on.
  void make_generic() { generic_ = true; }

  DimState state(int input, int dim) const;
  // The pow2 bucket that holds `v` (DESIGN.md: TensorRT profiles).
  sym::Range bucket(int64_t v, int64_t lowest) const;

 private:
  struct Dim {
    int recompiles = 0;
    bool backed_off = false;
  };
  bool pinned_static(int input, int dim) const;
  bool pinned_dynamic(int input, int dim) const;

  PolicyConfig config_;
  SitePins pins_;
  std::map<std::pair<int, int>, Dim> dims_;
  bool generic_ = false;
};

}  // namespace shapejit::policy
