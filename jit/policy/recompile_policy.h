// RecompilePolicy: the one place that decides what a miss does.
//
// The runtime explains a miss (which guards of the site's newest entry
// failed, on which dims, with which origin), finds the stored traces whose
// semantic guards still hold, and asks `decide`. The answer is one of:
//   compile          specialize a trace into a new entry: a stored trace
//                    (a policy-only miss: no retrace) or a fresh one;
//   compile generic  the site reached its limit: one entry with every dim
//                    dynamic, from a trace taken with every dim backed off;
//   eager            run the call on the reference interpreter, no entry;
//   graph break      the interpreter runs the call itself.
// While the runtime traces, the policy answers what `guard_int` does with a
// dim (`on_guard_int`); when it specializes a trace, the policy chooses the
// free dims (`specialize`): static, dynamic, or a range bucket.
//
// A policy instance belongs to one call site and keeps that site's per-dim
// state; the runtime calls it under the site's mutex. Modes are
// implementations of this interface, named by the config's `policy.mode`:
// the five built in (modes.cpp; DESIGN.md's table) and any a user registers
// with `register_mode` before the config is read.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "guards/guard_set.h"
#include "jit/policy/config.h"
#include "core/sym/shape_env.h"
#include "jit/trace/tracer.h"

namespace shapejit::policy {

enum class DimState { kDynamic, kStatic, kBackedOff };

using DimRef = std::pair<int, int>;  // (input, dim)

// A stored trace whose semantic guards hold for the missing call.
struct TraceCandidate {
  int id;                                  // the runtime's handle for it
  std::span<const trace::Observation> observed;   // what the interpreter read while tracing it
  bool generic;                            // traced with every dim backed off
};

// What the runtime knows about a miss.
struct Miss {
  bool first = true;                           // the site has no compiled entry yet
  std::span<const guards::Failure> failures;   // the newest entry's failed guards
  int entries = 0;                             // compiled entries, the generic one aside
  bool has_generic = false;
  std::span<const TraceCandidate> traces;      // newest first
};

struct Decision {
  enum class Action : uint8_t { kCompile, kCompileGeneric, kEager, kGraphBreak };
  Action action = Action::kCompile;
  int trace = -1;     // the candidate to re-specialize; -1: trace again
  std::string why;    // the log line's decision; kGraphBreak: the break's message
  std::string warning;                 // a line for the log, once per condition
  std::vector<DimRef> backed_off;      // dims that backed off on this miss
};

class RecompilePolicy {
 public:
  virtual ~RecompilePolicy() = default;

  // The decision for a miss; updates the site's per-dim state first.
  virtual Decision decide(const Miss& miss) = 0;
  // While tracing: whether guard_int specializes the dim or breaks the graph.
  virtual trace::IntUse on_guard_int(int input, int dim) const = 0;
  // The policy's choices for the free symbols of a trace's env (bindings
  // with origin kPolicy, ranges with origin kBucket). A generic entry's
  // env gets none.
  virtual Status specialize(sym::ShapeEnv& env, bool generic) const = 0;
  virtual DimState state(int input, int dim) const = 0;
};

using PolicyFactory = std::function<std::unique_ptr<RecompilePolicy>(const PolicyConfig&, const std::string& site)>;

// Makes `name` a valid `policy.mode`. An error when the name is taken.
// Register before parsing the configs that name it.
Status register_mode(const std::string& name, PolicyFactory make);
bool has_mode(const std::string& name);
std::vector<std::string> mode_names();  // sorted
// The policy of one site under `config` (its mode must be registered).
std::unique_ptr<RecompilePolicy> make_policy(const PolicyConfig& config, const std::string& site);

}  // namespace shapejit::policy
