// The remote tier: records (record.h) in a Redis server that a fleet
// shares, through hiredis (DESIGN.md, Cache).
//
// Every operation is bounded: a connect by `connect_timeout_ms`, a command
// by `timeout_ms`. An error or a timeout turns the tier off for
// `cooldown_ms` (one log line), after which the next operation tries again
// (one line when it is back): an outage costs a call at most one bound, and
// then nothing. Look-ups run on the caller's thread over a pool of
// connections, so concurrent callers do not queue behind one socket;
// writes are queued to one background thread and never run on a call's
// path (a full queue, or a tier that is off, drops them).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cache/disk_tier.h"
#include "cache/signer.h"
#include "cache/tier.h"

struct redisContext;

namespace shapejit::cache {

struct RedisOptions {
  std::string url;  // redis://HOST[:PORT][/DB]
  int connect_timeout_ms = 100;
  int timeout_ms = 100;
  int cooldown_ms = 10'000;
  std::string key_prefix = "shapejit:";  // a key is the prefix and the kernel key in hex
};

struct RedisStats {
  uint64_t hits = 0, misses = 0, errors = 0, skipped = 0,  // skipped: asked while off
      writes = 0, dropped = 0;
};

class RedisTier final : public Tier {
 public:
  // Parses the URL; connects on first use. Records are signed and checked
  // with `signer` (signer.h).
  static Expected<std::unique_ptr<RedisTier>> open(const RedisOptions& options, Log log, Signer signer = Signer());
  // Finishes the queued writes (each within its bound) and closes.
  ~RedisTier() override;

  // The record stored under `key`, or nullopt (absent, off, or failed).
  std::optional<std::string> get(const Hash128& key);
  // Queues the record for the writer thread.
  void put(const Hash128& key, std::string record);
  // Waits until the queue is empty (tests, and a process about to exit).
  void flush();
  RedisStats stats() const;
  const std::string& url() const { return options_.url; }

  // As a tier of the kernel cache (tier.h): a look-up is a get and the
  // record's checks, a store a queued put (it never fails: a write that
  // cannot be made is dropped and counted), and a value the backend cannot
  // load is a miss.
  std::string where() const override { return "redis at " + options_.url; }
  bool local() const override { return false; }
  std::optional<std::string> load(const Hash128& key, std::string_view target, std::string* rejected = nullptr,
                                  Rejection* why = nullptr) override;
  Status store(const Hash128& key, std::string_view target, std::string_view payload) override;
  std::string unusable(const Hash128& key, const Status& why) override;
  static void describe(const Tier* tier, TierStats& s);

 private:
  using Clock = std::chrono::steady_clock;
  RedisTier(RedisOptions options, Log log, Signer signer) : options_(std::move(options)), log_(std::move(log)), signer_(std::move(signer)) {}

  bool off() const;  // in a cool-down
  // A connection from the pool, or a new one; null (and the tier off) when
  // none can be made.
  redisContext* take();
  void give_back(redisContext* c);
  void fail(const std::string& what);  // drops to a cool-down
  void succeeded();                    // ends an outage
  void write_loop();

  RedisOptions options_;
  Log log_;
  Signer signer_;
  std::string host_;
  int port_ = 6379;
  int db_ = 0;

  mutable std::mutex mu_;
  std::vector<redisContext*> idle_;
  Clock::time_point off_until_{};
  bool down_ = false;  // an outage was logged and has not ended
  RedisStats stats_;

  std::mutex queue_mu_;
  std::condition_variable queue_cv_, idle_cv_;
  std::deque<std::pair<Hash128, std::string>> queue_;
  bool writing_ = false, stopping_ = false;
  std::thread writer_;
};

}  // namespace shapejit::cache
