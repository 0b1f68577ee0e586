// Replaying a recorded trace under a config: every call of the trace runs
// through a fresh Jit, with inputs of the recorded dtypes and shapes (zero
// filled, so index inputs are valid), and the Jit's statistics are the
// result. Replays of one trace under several configs compare policies.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "jit/policy/config.h"
#include "jit/trace/trace_file.h"

namespace shapejit::tools {

struct ReplayOptions {
  bool execute = true;         // --exec all (run kernels) or none
  bool progress = false;       // a progress line on a terminal
  bool log_recompiles = false;  // print the Jit's recompile lines to stderr
};

struct ReplayResult {
  std::string config_name;
  nlohmann::json stats;  // Jit::stats_json plus config and total_ms
};

Expected<ReplayResult> replay(const TraceContents& trace, const policy::Config& config, const std::string& config_name,
                              const ReplayOptions& options);
std::string format_table(const std::vector<ReplayResult>& results);

}  // namespace shapejit::tools
