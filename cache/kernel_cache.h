// The kernel cache: compiled kernels (artifacts, artifact.h) by a 128-bit
// key, in tiers: memory, then the lower tiers in order (tier.h: the disk,
// disk_tier.h, then a Redis server the fleet shares, redis_tier.h), then a
// compile. The cache knows nothing of backends or policy: a Maker says how
// to compile an artifact and how to load one back from the image a compile
// left.
//
// Key: hash of the canonical graph, the specialization (symbol constants,
// ranges, assumed facts, layouts), the backend and its target (CPU features,
// GPU arch), and shapejit's version. Two sites or two processes that trace
// the same dataflow under the same specialization share one kernel.
//
// The memory tier is bounded in bytes (Artifact::code_bytes) and evicts the
// least recently used kernel; entries that still use an evicted kernel keep
// it alive (shared ownership), so eviction never breaks a call. Concurrent
// misses on one key load or compile once: later callers wait for the first.
// A compile's image goes to every lower tier (to disk at once, to Redis in
// the background); a lower tier's hit fills the tiers above it (a Redis hit
// fills the disk). Whatever a lower tier does wrong (a corrupt file, a full
// folder, a server that went away) is a miss and a log line, never a failed
// call: a tier that cannot be written (a folder) is off for the cache's
// life. With a signer that has keys (TierOptions), records are signed as
// they are written and a record from any tier that is unsigned, signed with
// another key or altered is never loaded: it is counted, logged once per
// tier, and its kernel compiled again.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/artifact.h"
#include "cache/disk_tier.h"
#include "cache/redis_tier.h"
#include "cache/tier.h"
#include "core/support/hash.h"
#include "core/support/status.h"

namespace shapejit::cache {

inline constexpr const char* kCompilerVersion = "shapejit-0.1.0";

// `backend` and `target`: the backend's name and what its code depends on.
Hash128 make_key(const Hash128& graph, const Hash128& specialization, std::string_view backend, std::string_view target);

// A backend may keep pieces of kernels under keys of their own (the LLVM
// backend's fused steps, which kernels share): their counts are apart, so
// that the kernel counts still count kernels (the lower tiers count theirs
// in TierCounts).
struct PartStats {
  uint64_t hits = 0, waits = 0, compiles = 0;
};

struct CacheStats {
  uint64_t hits = 0, misses = 0, compiles = 0, failures = 0, evictions = 0, waits = 0;
  size_t bytes = 0, peak_bytes = 0, entries = 0;
  bool signed_records = false;  // a signer with keys
  std::vector<float> compile_ms;  // each compile's milliseconds
  PartStats parts;  // hits, waits and compiles of parts, not in the counts above
  // Every kind of lower tier, in order, open or not.
  std::vector<TierStats> tiers;
  // The tier called `name` (tier.h; "disk", "remote").
  const TierStats& tier(std::string_view name) const;
};

// Where get() found an artifact: memory, a lower tier (each kind has its
// own), or a compile.
enum class Origin { kMemory, kDisk, kRemote, kCompile };

// How to make the artifact of a key.
struct Maker {
  std::string target;  // what an image depends on; checked when one is read
  bool part = false;   // a piece of kernels, counted in CacheStats::parts
  // Compiles it; when `image` is not null, fills it with the bytes `load`
  // takes back (left empty: this artifact cannot be stored).
  std::function<Expected<std::unique_ptr<Artifact>>(std::string* image)> compile;
  // Loads an image a compile left (empty: nothing is stored or loaded).
  std::function<Expected<std::unique_ptr<Artifact>>(std::string_view image)> load;
};

struct Found {
  std::shared_ptr<Artifact> artifact;
  Origin origin = Origin::kMemory;
};

struct TierOptions {
  std::string disk_dir;  // empty: no disk tier
  uint64_t disk_max_bytes = 0;
  RedisOptions redis;  // an empty url: no remote tier
  Signer signer;       // no keys: records are neither signed nor checked
};

class KernelCache {
 public:
  using Compile = std::function<Expected<std::unique_ptr<Artifact>>()>;

  // Memory only.
  explicit KernelCache(size_t capacity_bytes);
  // With the lower tiers; a tier that cannot be opened is logged (one line)
  // and left off.
  KernelCache(size_t capacity_bytes, const TierOptions& tiers, Log log);
  ~KernelCache();

  // The artifact for `key` from the first tier that has it, or compiled
  // (once per key however many threads ask; a failure is not cached).
  Expected<Found> get(const Hash128& key, const Maker& maker);
  // From memory or disk only: no compile, no network, no waiting on a
  // compile in flight; nullopt when neither tier has it.
  std::optional<Found> get_local(const Hash128& key, const Maker& maker);
  // A compile with nothing to store (tests, artifacts without images).
  Expected<std::shared_ptr<Artifact>> get_or_compile(const Hash128& key, const Compile& compile);

  std::shared_ptr<Artifact> find(const Hash128& key);
  CacheStats stats() const;
  // The tiers themselves (tests, and a process about to exit that flushes
  // Redis's writes); null where not open (the disk: or turned off).
  DiskTier* disk();
  RedisTier* remote();

 private:
  struct KeyHash {
    size_t operator()(const Hash128& k) const { return k.lo ^ (k.hi * 0x9e3779b97f4a7c15ULL); }
  };
  struct Slot {
    std::shared_ptr<Artifact> kernel;
    size_t bytes;
    std::list<Hash128>::iterator lru;
  };
  struct Flight {
    bool done = false;
    Status status;
    std::shared_ptr<Artifact> kernel;
  };
  void insert_locked(const Hash128& key, std::shared_ptr<Artifact> kernel);
  std::optional<Found> hit_locked(const Hash128& key, bool part);  // memory, counted as a hit
  // A kind of lower tier, open or not, and what the cache counts of it.
  struct Held {
    std::unique_ptr<Tier> tier;  // null: not open
    DescribeTier describe;
    std::string name;
    Origin origin;               // what its hits say
    std::atomic<bool> on{false};
    TierCounts counts;           // under mu_, as the two below
    std::vector<float> load_ms;
    bool signature_logged = false;
  };
  // `tier` null: the kind `name` is not open.
  void hold(std::unique_ptr<Tier> tier, const char* name, DescribeTier describe, Origin origin);
  Held& held(Origin origin);  // the kind whose hits say `origin`
  // The lower tiers (those on this machine alone with `local_only`), then
  // the compile: what a flight runs.
  Expected<Found> make(const Hash128& key, const Maker& maker);
  std::optional<Found> load_tiers(const Hash128& key, const Maker& maker, bool local_only);
  std::optional<Found> load(size_t i, const Hash128& key, const Maker& maker);
  // The image to tiers [0, end).
  void store(const Hash128& key, const Maker& maker, std::string_view image, size_t end);
  // Counts a record tier `i` held and that failed its checks, and logs
  // `why`: every time for an accident, once per tier for a signature.
  void rejected(size_t i, const std::string& why, Rejection kind);
  void log(const std::string& line) const {
    if (log_) log_(line);
  }

  const size_t capacity_;
  Log log_;
  Signer signer_;
  std::vector<std::unique_ptr<Held>> tiers_;  // nearest first; fixed after the constructor

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<Hash128, Slot, KeyHash> slots_;
  std::list<Hash128> lru_;  // front: most recent
  std::unordered_map<Hash128, std::shared_ptr<Flight>, KeyHash> in_flight_;
  CacheStats stats_;
};

}  // namespace shapejit::cache
