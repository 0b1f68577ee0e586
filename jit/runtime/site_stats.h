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
           stand_in_quick = 0,                // of those, the calls run on a quick kernel (Backend::compile_quick)
           stand_in_kernels = 0;              // dynamic kernels compiled for stand-ins
  std::map<std::string, uint64_t> recompile_reasons;  // by guard origin
  double compile_ms = 0, run_ms = 0, trace_ms = 0;
  double specialize_ms = 0;          // inference under the entry's specialization, and its guards
  backends::CompilePhases phases;    // the backend's, over the kernels it compiled or loaded
  std::vector<uint32_t> dispatch_ns;  // samples, when timing is on

  // Adds every count, time and sample of `o`.
  SiteStats& operator+=(const SiteStats& o) {
    calls += o.calls, hits += o.hits, compiles += o.compiles, backend_compiles += o.backend_compiles, traces += o.traces;
    eager_calls += o.eager_calls, graph_breaks += o.graph_breaks, recompiles += o.recompiles, errors += o.errors;
    fallbacks += o.fallbacks, disk_loads += o.disk_loads, remote_loads += o.remote_loads, stand_in_calls += o.stand_in_calls;
    stand_in_waits += o.stand_in_waits, stand_in_dynamic += o.stand_in_dynamic, stand_in_quick += o.stand_in_quick;
    stand_in_kernels += o.stand_in_kernels;
    for (const auto& [why, n] : o.recompile_reasons) recompile_reasons[why] += n;
    compile_ms += o.compile_ms, run_ms += o.run_ms, trace_ms += o.trace_ms, specialize_ms += o.specialize_ms;
    phases += o.phases;
    dispatch_ns.insert(dispatch_ns.end(), o.dispatch_ns.begin(), o.dispatch_ns.end());
    return *this;
  }
};

}  // namespace shapejit::runtime
