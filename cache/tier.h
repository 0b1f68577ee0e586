// A tier below memory: where kernels' payloads outlive the process (the
// disk, disk_tier.h; a Redis server the fleet shares, redis_tier.h). The
// kernel cache (kernel_cache.h) holds a list of tiers, nearest first, and
// reads them in order after memory: what a tier serves fills the tiers above
// it, and a compile's payload is written to every tier.
//
// A tier moves bytes and nothing else. The cache decides what to read and
// write, hands payloads to the backend, counts what each tier did
// (TierCounts) and writes every log line; a tier says where it is, what its
// lines say of a payload the backend could not use, and what its counts are
// called in stats (DescribeTier). The cache names each kind ("disk",
// "remote": its section in stats) when it holds it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/record.h"
#include "core/support/hash.h"
#include "core/support/status.h"

namespace shapejit::cache {

// What the cache counts of one tier. Parts (Maker::part: the pieces that
// kernels share) are counted apart, so that the kernel counts count kernels.
struct TierCounts {
  uint64_t loads = 0;           // kernels it served that the backend loaded
  uint64_t misses = 0;          // look-ups it had nothing for (parts not counted)
  uint64_t rejected = 0;        // records that failed their checks, or that the backend could not load
  uint64_t bad_signatures = 0;  // of the rejected, those whose signature failed: maybe an attack, not an accident
  uint64_t writes = 0;          // payloads written (or queued, for a tier that writes in the background)
  uint64_t part_loads = 0, part_writes = 0;
};

// One tier's figures in CacheStats: the cache's counts, and the fields the
// tier shows under its name (the stats JSON's `cache.<name>` section, and
// its counts of parts in `cache.steps`).
struct TierStats {
  using Fields = std::vector<std::pair<std::string, uint64_t>>;
  std::string name;
  bool on = false;  // open, and not turned off
  TierCounts counts;
  std::vector<float> load_ms;  // each kernel's load, checks and the backend's load included
  Fields fields, part_fields;
  // The section's field `name` (0 when it has none).
  uint64_t field(std::string_view name) const {
    for (const auto& [n, v] : fields) {
      if (n == name) return v;
    }
    return 0;
  }
};

class Tier {
 public:
  virtual ~Tier() = default;
  // Where it is, as log lines name it (a folder, "redis at URL").
  virtual std::string where() const = 0;
  // Whether it is on this machine: a look-up that must not wait on a
  // network (KernelCache::get_local) reads only these.
  virtual bool local() const = 0;

  // The payload stored under `key` for `target`, or nullopt when there is
  // none. A record that fails its checks sets `rejected` to one line that
  // names it and says why, and `why` to the kind of check.
  virtual std::optional<std::string> load(const Hash128& key, std::string_view target, std::string* rejected = nullptr,
                                          Rejection* why = nullptr) = 0;
  // Writes the payload. kInvalidArgument: this key's place alone failed and
  // the tier goes on; any other error turns the tier off for the cache's life.
  virtual Status store(const Hash128& key, std::string_view target, std::string_view payload) = 0;
  // The backend could not load the payload `load` gave: the line that says
  // so, and what became of the record.
  virtual std::string unusable(const Hash128& key, const Status& why) = 0;
};

// How a kind of tier shows in stats: fills `s.fields` and `s.part_fields`
// from `s.counts` and, when `tier` is open (not null), the tier's own
// counts. A tier that is not open still has its section, of zeros.
using DescribeTier = void (*)(const Tier* tier, TierStats& s);

}  // namespace shapejit::cache
