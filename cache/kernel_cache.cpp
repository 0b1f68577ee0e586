#include "cache/kernel_cache.h"
#include "core/support/faults.h"

#include <chrono>
#include <cstdlib>

namespace shapejit::cache {

extern const char* const kSourceId;  // generated: cmake/source_id.cmake

namespace {

using Clock = std::chrono::steady_clock;
float ms_since(Clock::time_point t0) { return std::chrono::duration<float, std::milli>(Clock::now() - t0).count(); }

}  // namespace

Hash128 make_key(const Hash128& graph, const Hash128& specialization, std::string_view backend, std::string_view target) {
  return Hasher()
      .add_hash(graph)
      .add_hash(specialization)
      .add_str(backend)
      .add_str(target)
      .add_str(kCompilerVersion)
      .add_str(kSourceId)
      .finish();
}

KernelCache::KernelCache(size_t capacity_bytes, const TierOptions& tiers, Log log)
    : capacity_(capacity_bytes), log_(std::move(log)), signer_(tiers.signer) {
  std::unique_ptr<Tier> disk;
  if (!tiers.disk_dir.empty() && tiers.disk_max_bytes > 0) {
    Expected<std::unique_ptr<DiskTier>> opened = DiskTier::open(tiers.disk_dir, tiers.disk_max_bytes, signer_);
    if (opened.is_ok()) disk = std::move(opened).value();
    else this->log("shapejit: warning: cache: the disk tier is off: " + opened.status().message() + "; calls go on");
  }
  hold(std::move(disk), "disk", &DiskTier::describe, Origin::kDisk);
  std::unique_ptr<Tier> remote;
  if (!tiers.redis.url.empty()) {
    Expected<std::unique_ptr<RedisTier>> opened = RedisTier::open(tiers.redis, log_, signer_);
    if (opened.is_ok()) remote = std::move(opened).value();
    else this->log("shapejit: cache: the remote tier is off: " + opened.status().message());
  }
  hold(std::move(remote), "remote", &RedisTier::describe, Origin::kRemote);
}

KernelCache::KernelCache(size_t capacity_bytes) : capacity_(capacity_bytes) {
  hold(nullptr, "disk", &DiskTier::describe, Origin::kDisk);
  hold(nullptr, "remote", &RedisTier::describe, Origin::kRemote);
}

void KernelCache::hold(std::unique_ptr<Tier> tier, const char* name, DescribeTier describe, Origin origin) {
  auto held = std::make_unique<Held>();
  held->on = tier != nullptr;
  held->tier = std::move(tier);
  held->name = name;
  held->describe = describe;
  held->origin = origin;
  tiers_.push_back(std::move(held));
}

KernelCache::Held& KernelCache::held(Origin origin) {
  for (const auto& h : tiers_) {
    if (h->origin == origin) return *h;
  }
  std::abort();  // every kind is held, open or not (the constructors)
}

DiskTier* KernelCache::disk() {
  const Held& h = held(Origin::kDisk);
  return h.on.load() ? static_cast<DiskTier*>(h.tier.get()) : nullptr;
}

RedisTier* KernelCache::remote() { return static_cast<RedisTier*>(held(Origin::kRemote).tier.get()); }

const TierStats& CacheStats::tier(std::string_view name) const {
  for (const TierStats& t : tiers) {
    if (t.name == name) return t;
  }
  static const TierStats kNone;
  return kNone;
}

KernelCache::~KernelCache() = default;

std::optional<Found> KernelCache::hit_locked(const Hash128& key, bool part) {
  auto it = slots_.find(key);
  if (it == slots_.end()) return std::nullopt;
  ++(part ? stats_.parts.hits : stats_.hits);
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return Found{it->second.kernel, Origin::kMemory};
}

std::shared_ptr<Artifact> KernelCache::find(const Hash128& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(key);
  if (it == slots_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.kernel;
}

Expected<Found> KernelCache::get(const Hash128& key, const Maker& maker) {
  std::shared_ptr<Flight> flight;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (std::optional<Found> f = hit_locked(key, maker.part)) return *f;
    auto f = in_flight_.find(key);
    if (f != in_flight_.end()) {  // someone is making it: wait for them
      ++(maker.part ? stats_.parts.waits : stats_.waits);
      std::shared_ptr<Flight> other = f->second;
      cv_.wait(lock, [&] { return other->done; });
      if (!other->status.is_ok()) return other->status;
      return Found{other->kernel, Origin::kMemory};
    }
    if (!maker.part) ++stats_.misses;
    flight = std::make_shared<Flight>();
    in_flight_[key] = flight;
  }
  // Whatever happens, the flight lands: a compile that throws must not
  // leave later callers of this key waiting forever.
  Expected<Found> made = Status(Code::kInternal, "compile did not run");
  try {
    made = make(key, maker);
  } catch (const std::bad_alloc&) {
    made = Status(Code::kRuntime, "out of memory while compiling");
  } catch (const std::exception& e) {
    made = Status(Code::kInternal, std::string("compile threw: ") + e.what());
  }
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.erase(key);
  flight->done = true;
  if (!made.is_ok()) {
    ++stats_.failures;
    flight->status = made.status();
    cv_.notify_all();
    return made.status();
  }
  flight->kernel = made->artifact;
  insert_locked(key, flight->kernel);
  cv_.notify_all();
  return made;
}

std::optional<Found> KernelCache::get_local(const Hash128& key, const Maker& maker) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::optional<Found> f = hit_locked(key, maker.part)) return *f;
    if (in_flight_.count(key)) return std::nullopt;  // being made: the caller does not wait
  }
  std::optional<Found> f = load_tiers(key, maker, /*local_only=*/true);
  if (!f) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  if (!maker.part) ++stats_.misses;
  if (auto it = slots_.find(key); it != slots_.end()) return Found{it->second.kernel, Origin::kMemory};  // another thread was first
  insert_locked(key, f->artifact);
  return f;
}

Expected<std::shared_ptr<Artifact>> KernelCache::get_or_compile(const Hash128& key, const Compile& compile) {
  Maker maker;
  maker.compile = [&](std::string*) { return compile(); };
  Found f = SJ_TRY(get(key, maker));
  return f.artifact;
}

Expected<Found> KernelCache::make(const Hash128& key, const Maker& maker) {
  if (std::optional<Found> f = load_tiers(key, maker, /*local_only=*/false)) return *f;
  const Clock::time_point t0 = Clock::now();
  std::string image;
  std::unique_ptr<Artifact> made = SJ_TRY(maker.compile(maker.load ? &image : nullptr));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (maker.part) {
      ++stats_.parts.compiles;
    } else {
      ++stats_.compiles;
      stats_.compile_ms.push_back(ms_since(t0));
    }
  }
  if (!image.empty()) store(key, maker, image, tiers_.size());
  return Found{std::shared_ptr<Artifact>(std::move(made)), Origin::kCompile};
}

// Each tier in order, timed from its own start.
std::optional<Found> KernelCache::load_tiers(const Hash128& key, const Maker& maker, bool local_only) {
  if (!maker.load) return std::nullopt;  // nothing of it is stored
  for (size_t i = 0; i < tiers_.size(); ++i) {
    Held& h = *tiers_[i];
    if (!h.on.load() || (local_only && !h.tier->local())) continue;
    const Clock::time_point t0 = Clock::now();
    std::optional<Found> f = load(i, key, maker);
    if (!f) continue;
    if (!maker.part) {
      std::lock_guard<std::mutex> lock(mu_);
      h.load_ms.push_back(ms_since(t0));
    }
    return f;
  }
  return std::nullopt;
}

std::optional<Found> KernelCache::load(size_t i, const Hash128& key, const Maker& maker) {
  Held& h = *tiers_[i];
  if (support::fault(support::Fault::kLoad)) return std::nullopt;
  // Lines are logged outside the lock: a sink may take locks of its own
  // (Python's takes the GIL).
  std::string why;
  Rejection kind = Rejection::kNone;
  std::optional<std::string> payload = h.tier->load(key, maker.target, &why, &kind);
  if (!payload) {
    if (!why.empty()) {
      rejected(i, why, kind);
    } else if (!maker.part) {
      std::lock_guard<std::mutex> lock(mu_);
      ++h.counts.misses;
    }
    return std::nullopt;
  }
  // A record that fails its checks never reached here: the backend sees
  // only checked bytes.
  Expected<std::unique_ptr<Artifact>> made = maker.load(*payload);
  if (!made.is_ok()) {
    rejected(i, h.tier->unusable(key, made.status()), Rejection::kNone);
    return std::nullopt;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++(maker.part ? h.counts.part_loads : h.counts.loads);
  }
  store(key, maker, *payload, i);  // a hit fills the tiers above it
  return Found{std::shared_ptr<Artifact>(std::move(made).value()), h.origin};
}

void KernelCache::store(const Hash128& key, const Maker& maker, std::string_view image, size_t end) {
  for (size_t i = 0; i < end; ++i) {
    Held& h = *tiers_[i];
    if (!h.on.load()) continue;
    Status s = h.tier->store(key, maker.target, image);
    if (s.is_ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      ++(maker.part ? h.counts.part_writes : h.counts.writes);
    } else if (s.code() == Code::kInvalidArgument) {  // this key's place alone: the tier goes on
      log("shapejit: warning: cache: " + s.message());
    } else if (h.on.exchange(false)) {
      log("shapejit: warning: cache: the " + h.name + " tier at " + h.tier->where() + " is off: " + s.message() + "; calls go on");
    }
  }
}

void KernelCache::rejected(size_t i, const std::string& why, Rejection kind) {
  Held& h = *tiers_[i];
  bool quiet = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++h.counts.rejected;
    if (kind == Rejection::kSignature) {
      ++h.counts.bad_signatures;
      quiet = h.signature_logged;
      h.signature_logged = true;
    }
  }
  if (quiet) return;
  log("shapejit: cache: " + why);
  if (kind == Rejection::kSignature) {
    log("shapejit: cache: further records from " + h.tier->where() + " that fail their signature are counted in stats, not logged");
  }
}

void KernelCache::insert_locked(const Hash128& key, std::shared_ptr<Artifact> kernel) {
  const size_t bytes = kernel->code_bytes();
  lru_.push_front(key);
  slots_[key] = Slot{std::move(kernel), bytes, lru_.begin()};
  stats_.bytes += bytes;
  // Evict from the cold end; the newest kernel stays even when it alone
  // exceeds the capacity (its caller is about to run it).
  while (stats_.bytes > capacity_ && lru_.size() > 1) {
    const Hash128 victim = lru_.back();
    lru_.pop_back();
    auto it = slots_.find(victim);
    stats_.bytes -= it->second.bytes;
    slots_.erase(it);
    ++stats_.evictions;
  }
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.bytes);
  stats_.entries = slots_.size();
}

CacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  CacheStats s = stats_;
  s.signed_records = signer_.enabled();
  for (const auto& h : tiers_) {
    TierStats& t = s.tiers.emplace_back();
    t.name = h->name;
    t.on = h->on.load();
    t.counts = h->counts;
    t.load_ms = h->load_ms;
    h->describe(h->tier.get(), t);
  }
  return s;
}

}  // namespace shapejit::cache
