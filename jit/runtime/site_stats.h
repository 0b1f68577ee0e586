// SiteStats: what a call site counts, and their sum over sites (a Jit's
// totals, a Python function's generations of sites).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace shapejit::runtime {

struct SiteStats {
  uint64_t calls = 0, hits = 0, compiles = 0, backend_compiles = 0, traces = 0, eager_calls = 0, graph_breaks = 0,
           recompiles = 0, errors = 0,
           fallbacks = 0,  // compiles the backend failed, run on the reference interpreter
           disk_loads = 0, remote_loads = 0,  // kernels a lower tier had: loaded, not compiled
           stand_in_calls = 0,                // calls of an entry whose kernel compiled meanwhile (compile.async)
           stand_in_waits = 0,                // of those, the calls that waited for a compile: cheaper than the reference
           stand_in_dynamic = 0,              // of those, the calls run on their trace's dynamic kernel
           stand_in_quick = 0,                // of those, the calls run on a quick kernel (CompileRequest::quick)
           stand_in_kernels = 0;              // dynamic kernels compiled for stand-ins
  std::map<std::string, uint64_t> recompile_reasons;  // by guard origin
  double compile_ms = 0, run_ms = 0, trace_ms = 0;
  double specialize_ms = 0;          // inference under the entry's specialization, and its guards
  backends::CompilePhases phases;    // the backend's, over the kernels it compiled or loaded
  std::vector<uint32_t> dispatch_ns;  // samples, when timing is on

  // Every count and time, by its name in stats (the JSON's and Python's):
  // `f(name, &SiteStats::field)` for each, in the order Python shows them.
  // The one list that +=, the stats JSON and the Python dict read; a new
  // counter is a member and a line here.
  template <class F>
  static void each_number(F&& f) {
    f("calls", &SiteStats::calls);
    f("hits", &SiteStats::hits);
    f("compiles", &SiteStats::compiles);
    f("traces", &SiteStats::traces);
    f("graph_breaks", &SiteStats::graph_breaks);
    f("recompiles", &SiteStats::recompiles);
    f("eager_calls", &SiteStats::eager_calls);
    f("errors", &SiteStats::errors);
    f("fallbacks", &SiteStats::fallbacks);
    f("backend_compiles", &SiteStats::backend_compiles);
    f("disk_loads", &SiteStats::disk_loads);
    f("remote_loads", &SiteStats::remote_loads);
    f("stand_in_calls", &SiteStats::stand_in_calls);
    f("stand_in_waits", &SiteStats::stand_in_waits);
    f("stand_in_dynamic", &SiteStats::stand_in_dynamic);
    f("stand_in_quick", &SiteStats::stand_in_quick);
    f("stand_in_kernels", &SiteStats::stand_in_kernels);
    f("compile_ms", &SiteStats::compile_ms);
    f("trace_ms", &SiteStats::trace_ms);
    f("specialize_ms", &SiteStats::specialize_ms);
    f("run_ms", &SiteStats::run_ms);
  }

  // Adds every count, time and sample of `o`.
  SiteStats& operator+=(const SiteStats& o) {
    each_number([&](const char*, auto SiteStats::*field) { this->*field += o.*field; });
    for (const auto& [why, n] : o.recompile_reasons) recompile_reasons[why] += n;
    phases += o.phases;
    dispatch_ns.insert(dispatch_ns.end(), o.dispatch_ns.begin(), o.dispatch_ns.end());
    return *this;
  }
};

}  // namespace shapejit::runtime
