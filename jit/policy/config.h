// The JSON config (DESIGN.md, Config). Every key has a default, so `{}` is a
// valid config. Unknown keys, wrong types and out-of-range values are errors
// that name the JSON pointer and, where it helps, the valid choices.
#pragma once

#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/support/status.h"

namespace shapejit::policy {

enum class OnLimit { kDynamic, kEager };
// What guard_int does with a dim that has backed off.
enum class BackedOffInt {
  kGraphBreak,  // the interpreter runs that part itself (the seeds' design)
  kRecompile,   // it still specializes: one entry per value, up to the limit (PyTorch)
};

struct Buckets {
  std::string kind = "pow2";
  int64_t min = 16, max = 65536;
};

// Per-site pins, like torch's mark_dynamic: [input, dim] pairs.
struct SitePins {
  std::vector<std::pair<int, int>> static_dims, dynamic_dims;
};

struct PolicyConfig {
  std::string mode = "start_dynamic";  // a registered mode (recompile_policy.h)
  int backoff_after = 2;
  int cache_size_limit = 8;
  OnLimit on_limit = OnLimit::kDynamic;
  BackedOffInt backed_off_int = BackedOffInt::kGraphBreak;
  bool specialize_zero_one = true;
  Buckets buckets;
  std::map<std::string, SitePins> sites;
};

struct CompileConfig {
  std::string backend = "auto";  // auto, reference, llvm, cuda
  int opt_level = 2;
  int threads = 0;     // background compiles at once (compile.async); 0: one per core
  bool async = false;  // a miss runs on a stand-in while its kernel compiles
};

struct CacheConfig {
  int64_t memory_mb = 512;
  std::string disk_path;  // empty: $XDG_CACHE_HOME/shapejit
  int64_t disk_max_mb = 2048;  // 0: no disk tier
  std::string redis;      // empty: no remote tier
  // Bounds on every Redis operation, and how long the tier stays off after
  // one fails (cache/redis_tier.h).
  int redis_connect_timeout_ms = 100;
  int redis_timeout_ms = 100;
  int redis_cooldown_ms = 10'000;
  std::string redis_prefix = "shapejit:";  // keys are the prefix and the kernel key in hex
  // Files holding the keys that sign and check records (cache/signer.h):
  // the first signs, every one verifies. Empty: records are not signed,
  // unless $SHAPEJIT_CACHE_SIGN_KEYS is set.
  std::vector<std::string> sign_key_files;
};

struct LogConfig {
  bool recompiles = true;
  std::string stats;   // a file to write the stats JSON to when the Jit is destroyed
  std::string record;  // a file to record a trace to
  int64_t slow_compile_ms = 1000;  // a compile expected to take longer logs a line when it starts and one when it ends
};

struct Config {
  PolicyConfig policy;
  CompileConfig compile;
  CacheConfig cache;
  LogConfig log;
};

Expected<Config> config_from_json(const nlohmann::json& j);
Expected<Config> parse_config(std::string_view text);
nlohmann::json config_to_json(const Config& c);

}  // namespace shapejit::policy
