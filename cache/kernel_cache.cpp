#include "cache/kernel_cache.h"
#include "core/support/faults.h"

#include <chrono>

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
  if (!tiers.disk_dir.empty() && tiers.disk_max_bytes > 0) {
    Expected<std::unique_ptr<DiskTier>> disk = DiskTier::open(tiers.disk_dir, tiers.disk_max_bytes, signer_);
    if (disk.is_ok()) {
      disk_ = std::move(disk).value();
      disk_on_ = true;
    } else {
      this->log("shapejit: warning: cache: the disk tier is off: " + disk.status().message() + "; calls go on");
    }
  }
  if (!tiers.redis.url.empty()) {
    Expected<std::unique_ptr<RedisTier>> remote = RedisTier::open(tiers.redis, log_);
    if (remote.is_ok()) remote_ = std::move(remote).value();
    else this->log("shapejit: cache: the remote tier is off: " + remote.status().message());
  }
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
  const Clock::time_point t0 = Clock::now();
  std::optional<Found> f = load_disk(key, maker);
  if (!f) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  if (!maker.part) {
    ++stats_.misses;
    stats_.disk_load_ms.push_back(ms_since(t0));
  }
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
  Clock::time_point t0 = Clock::now();
  if (std::optional<Found> f = load_disk(key, maker)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!maker.part) stats_.disk_load_ms.push_back(ms_since(t0));
    return *f;
  }
  t0 = Clock::now();
  if (std::optional<Found> f = load_remote(key, maker)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!maker.part) stats_.remote_load_ms.push_back(ms_since(t0));
    return *f;
  }
  t0 = Clock::now();
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
  if (!image.empty()) store(key, maker, image, /*remote=*/true);
  return Found{std::shared_ptr<Artifact>(std::move(made)), Origin::kCompile};
}

std::optional<Found> KernelCache::load_disk(const Hash128& key, const Maker& maker) {
  if (!maker.load || !disk_on_.load() || support::fault(support::Fault::kLoad)) return std::nullopt;
  // Lines are logged outside the lock: a sink may take locks of its own
  // (Python's takes the GIL).
  std::string why;
  Rejection kind = Rejection::kNone;
  std::optional<std::string> payload = disk_->load(key, maker.target, &why, &kind);
  if (!payload) {
    if (!why.empty()) {
      rejected(disk_->dir(), why, kind, /*remote=*/false);
    } else if (!maker.part) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.disk_misses;
    }
    return std::nullopt;
  }
  Expected<std::unique_ptr<Artifact>> made = maker.load(*payload);
  if (!made.is_ok()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.disk_rejected;
    }
    disk_->remove(key);
    log("shapejit: cache: " + disk_->path_of(key) + ": the backend cannot load it (" + made.status().message() +
        "); removed, the kernel is compiled again");
    return std::nullopt;
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++(maker.part ? stats_.parts.disk_hits : stats_.disk_hits);
  return Found{std::shared_ptr<Artifact>(std::move(made).value()), Origin::kDisk};
}

std::optional<Found> KernelCache::load_remote(const Hash128& key, const Maker& maker) {
  if (!maker.load || !remote_ || support::fault(support::Fault::kLoad)) return std::nullopt;
  std::optional<std::string> record = remote_->get(key);
  if (!record) return std::nullopt;
  Rejection kind = Rejection::kNone;
  Expected<std::string_view> payload = decode_record(*record, key, maker.target, signer_, &kind);
  // A record that fails its checks is never handed to the backend.
  Expected<std::unique_ptr<Artifact>> made = payload.is_ok() ? maker.load(*payload) : Expected<std::unique_ptr<Artifact>>(payload.status());
  if (!made.is_ok()) {
    rejected("redis at " + remote_->url(),
             "redis at " + remote_->url() + ": the value of " + key.hex() + " is unusable (" + made.status().message() + "); a miss", kind,
             /*remote=*/true);
    return std::nullopt;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++(maker.part ? stats_.parts.remote_loads : stats_.remote_loads);
  }
  store(key, maker, *payload, /*remote=*/false);  // a Redis hit fills the disk
  return Found{std::shared_ptr<Artifact>(std::move(made).value()), Origin::kRemote};
}

void KernelCache::store(const Hash128& key, const Maker& maker, std::string_view image, bool remote) {
  if (disk_on_.load()) {
    Status s = disk_->store(key, maker.target, image);
    if (s.is_ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      ++(maker.part ? stats_.parts.disk_writes : stats_.disk_writes);
    } else if (s.code() == Code::kInvalidArgument) {  // this key's place alone: the tier goes on
      log("shapejit: warning: cache: " + s.message());
    } else {
      disk_failed(s);
    }
  }
  if (remote && remote_) remote_->put(key, encode_record(key, maker.target, image, signer_));
}

void KernelCache::rejected(const std::string& origin, const std::string& why, Rejection kind, bool remote) {
  bool quiet = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++(remote ? stats_.remote_rejected : stats_.disk_rejected);
    if (kind == Rejection::kSignature) {
      ++(remote ? stats_.remote_bad_signatures : stats_.disk_bad_signatures);
      bool& logged = remote ? remote_signature_logged_ : disk_signature_logged_;
      quiet = logged;
      logged = true;
    }
  }
  if (quiet) return;
  log("shapejit: cache: " + why);
  if (kind == Rejection::kSignature) log("shapejit: cache: further records from " + origin + " that fail their signature are counted in stats, not logged");
}

void KernelCache::disk_failed(const Status& s) {
  if (disk_on_.exchange(false)) log("shapejit: warning: cache: the disk tier at " + disk_->dir() + " is off: " + s.message() + "; calls go on");
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
  s.disk_on = disk_on_.load();
  s.remote_on = remote_ != nullptr;
  s.signed_records = signer_.enabled();
  if (remote_) s.remote = remote_->stats();
  return s;
}

}  // namespace shapejit::cache
