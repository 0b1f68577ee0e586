#include "cache/kernel_cache.h"

namespace shapejit::cache {

Hash128 make_key(const Hash128& graph, const Hash128& specialization, std::string_view backend, std::string_view target) {
  return Hasher()
      .add_hash(graph)
      .add_hash(specialization)
      .add_str(backend)
      .add_str(target)
      .add_str(kCompilerVersion)
      .finish();
}

std::shared_ptr<Artifact> KernelCache::find(const Hash128& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(key);
  if (it == slots_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.kernel;
}

Expected<std::shared_ptr<Artifact>> KernelCache::get_or_compile(const Hash128& key, const Compile& compile) {
  std::shared_ptr<Flight> flight;
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = slots_.find(key);
    if (it != slots_.end()) {
      ++stats_.hits;
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.kernel;
    }
    auto f = in_flight_.find(key);
    if (f != in_flight_.end()) {  // someone is compiling it: wait for them
      ++stats_.waits;
      std::shared_ptr<Flight> other = f->second;
      cv_.wait(lock, [&] { return other->done; });
      if (!other->status.is_ok()) return other->status;
      return other->kernel;
    }
    ++stats_.misses;
    flight = std::make_shared<Flight>();
    in_flight_[key] = flight;
  }
  // Whatever happens, the flight lands: a compile that throws must not
  // leave later callers of this key waiting forever.
  Expected<std::unique_ptr<Artifact>> made = Status(Code::kInternal, "compile did not run");
  try {
    made = compile();
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
  ++stats_.compiles;
  flight->kernel = std::shared_ptr<Artifact>(std::move(made).value());
  insert_locked(key, flight->kernel);
  cv_.notify_all();
  return flight->kernel;
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
  return stats_;
}

}  // namespace shapejit::cache
