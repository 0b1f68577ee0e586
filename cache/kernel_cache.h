// The kernel cache: compiled kernels (artifacts, artifact.h) by a 128-bit
// key, in memory. The cache knows nothing of backends or policy.
//
// Key: hash of the canonical graph, the specialization (symbol constants,
// ranges, assumed facts, layouts), the backend and its target (CPU features,
// GPU arch), and shapejit's version. Two sites or two processes that trace
// the same dataflow under the same specialization share one kernel.
//
// The memory tier is bounded in bytes (Artifact::code_bytes) and evicts the
// least recently used kernel; entries that still use an evicted kernel keep
// it alive (shared ownership), so eviction never breaks a call. Concurrent
// misses on one key compile once: later callers wait for the first.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include <string_view>

#include "cache/artifact.h"
#include "jit/support/hash.h"
#include "jit/support/status.h"

namespace shapejit::cache {

inline constexpr const char* kCompilerVersion = "shapejit-0.1.0";

// `backend` and `target`: the backend's name and what its code depends on.
Hash128 make_key(const Hash128& graph, const Hash128& specialization, std::string_view backend, std::string_view target);

struct CacheStats {
  uint64_t hits = 0, misses = 0, compiles = 0, failures = 0, evictions = 0, waits = 0;
  size_t bytes = 0, peak_bytes = 0, entries = 0;
};

class KernelCache {
 public:
  using Compile = std::function<Expected<std::unique_ptr<Artifact>>()>;

  explicit KernelCache(size_t capacity_bytes) : capacity_(capacity_bytes) {}

  // The cached kernel for `key`, or the result of `compile` (run once per
  // key however many threads ask; a failure is not cached).
  Expected<std::shared_ptr<Artifact>> get_or_compile(const Hash128& key, const Compile& compile);
  std::shared_ptr<Artifact> find(const Hash128& key);
  CacheStats stats() const;

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

  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<Hash128, Slot, KeyHash> slots_;
  std::list<Hash128> lru_;  // front: most recent
  std::unordered_map<Hash128, std::shared_ptr<Flight>, KeyHash> in_flight_;
  CacheStats stats_;
};

}  // namespace shapejit::cache
