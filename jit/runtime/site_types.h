// What a call site holds: its compiled entries, its traces, and the
// immutable snapshot the hit path reads. Internal to jit/runtime.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "guards/guard_tree.h"
#include "jit/runtime/call_site.h"

namespace shapejit::runtime {

// A compiled entry: its guards, its kernel, the specialized graph whose
// shape functions size its outputs, and where each symbol's value is read.
struct CallSite::Entry {
  guards::GuardSet guards;
  std::shared_ptr<backends::Kernel> kernel;
  ir::SpecializedGraphPtr graph;
  std::vector<std::pair<int, int>> symbol_sources;  // per symbol; (-1, -1) when unbacked
  // A cached GraphBreak: calls it matches break at once, without tracing.
  std::optional<std::string> graph_break;
  std::string description;  // the entry's static and dynamic dims, for logs
  // Runs the reference interpreter while its kernel compiles in the
  // background (compile.async); replaced by a copy with the kernel then.
  bool stand_in = false;
};

// A trace of the interpreter's function, with the guards under which its
// semantic decisions hold (no policy guards: those belong to entries).
struct CallSite::StoredTrace {
  int id = 0;
  std::shared_ptr<const ir::Graph> graph;
  sym::ShapeEnv env;
  std::vector<trace::Observation> observed;
  Hash128 graph_hash;
  guards::GuardSet semantic;  // derived once, when traced
  bool generic = false;       // traced with every dim backed off
  std::unique_ptr<Entry> eager;  // the reference kernel, for the eager path
};

struct CallSite::Snapshot {
  uint64_t version = 0;  // one more per publish: a miss sees whether entries came since its lookup
  guards::GuardTree tree;
  std::vector<const Entry*> entries;  // by GuardTree id
  // Per entry, each symbol's place in the tree's flat dims (-1: unbacked);
  // empty when the tree is not flat.
  std::vector<std::vector<int32_t>> flat_symbols;
};

}  // namespace shapejit::runtime
