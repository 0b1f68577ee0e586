// What a call site holds: its compiled entries and its traces. Internal to
// jit/runtime.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "core/support/hash.h"
#include "core/sym/shape_env.h"
#include "guards/guard_set.h"
#include "jit/trace/tracer.h"

namespace shapejit::runtime {

// A compiled entry: its guards, its kernel, the specialized graph whose
// shape functions size its outputs, and where each symbol's value is read.
struct Entry {
  guards::GuardSet guards;
  std::shared_ptr<backends::Kernel> kernel;
  ir::SpecializedGraphPtr graph;
  std::vector<std::pair<int, int>> symbol_sources;  // per symbol: (input, dim); (-1, -1) when unbacked
  // A cached GraphBreak: calls it matches break at once, without tracing.
  std::optional<std::string> graph_break;
  // A cached error of the interpreter's function: calls it matches return
  // Raised with this label at once, without tracing (Tracer::raise_error).
  std::optional<std::string> raised;
  std::string description;  // the entry's static and dynamic dims, for logs
  // Runs the reference interpreter while its kernel compiles in the
  // background (compile.async); replaced by a copy with the kernel then.
  bool stand_in = false;
};

// A trace of the interpreter's function, with the guards under which its
// semantic decisions hold (no policy guards: those belong to entries).
struct StoredTrace {
  int id = 0;
  std::shared_ptr<const ir::Graph> graph;
  sym::ShapeEnv env;
  std::vector<trace::Observation> observed;
  Hash128 graph_hash;
  guards::GuardSet semantic;  // derived once, when traced
  bool generic = false;       // traced with every dim backed off
  std::unique_ptr<Entry> eager;  // the reference kernel, for the eager path
  // Per layout, the trace with its dims left free: what a stand-in's
  // dynamic kernel compiles (stand_in.h); null where it does not specialize.
  std::map<std::vector<sym::Layout>, ir::SpecializedGraphPtr> dynamic;
};

// Where each of `env`'s symbols is read on a call: (input, dim), or
// (-1, -1) for a symbol no input dim backs.
std::vector<std::pair<int, int>> symbol_sources(const sym::ShapeEnv& env);

}  // namespace shapejit::runtime
