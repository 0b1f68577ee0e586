// What a call site shares with the rest of its Jit: the config, the
// backend, the kernel cache, the background compiles, the log, and the
// switches the Jit turns for all its sites.
#pragma once

#include <atomic>

#include "backends/fallback.h"
#include "cache/kernel_cache.h"
#include "jit/policy/config.h"

namespace shapejit::runtime {

class Background;
class TraceRecorder;

struct Services {
  const policy::Config& config;
  backends::WithFallback& backend;  // compiles, and the eager path's reference kernels
  cache::KernelCache& cache;
  Background* background;  // compile.async: where misses compile; null: on the call's path
  backends::Log log;  // recompile lines and warnings
  const std::atomic<TraceRecorder*>& recorder;   // log.record, Jit::record; null: off
  const std::atomic<bool>& timing;               // collect dispatch and kernel times
  const std::atomic<bool>& execute;              // false: dispatch and compile, run no kernel
};

}  // namespace shapejit::runtime
