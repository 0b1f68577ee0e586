#include "cache/redis_tier.h"

#include <hiredis/hiredis.h>

#include <sys/time.h>

namespace shapejit::cache {

namespace {

// Writes waiting for the writer thread at most; more are dropped (the
// kernels are in the local tiers, and another process will write them).
constexpr size_t kMaxQueued = 256;

timeval to_timeval(int ms) { return timeval{ms / 1000, static_cast<suseconds_t>(ms % 1000) * 1000}; }

struct Reply {
  redisReply* r;
  ~Reply() {
    if (r) freeReplyObject(r);
  }
};

}  // namespace

Expected<std::unique_ptr<RedisTier>> RedisTier::open(const RedisOptions& options, Log log, Signer signer) {
  // The config checked the form (config.cpp); split it.
  std::unique_ptr<RedisTier> t(new RedisTier(options, std::move(log), std::move(signer)));
  const std::string scheme = "redis://";
  if (options.url.rfind(scheme, 0) != 0) return invalid("redis: expected redis://HOST[:PORT][/DB], got \"" + options.url + "\"");
  std::string rest = options.url.substr(scheme.size());
  if (size_t slash = rest.find('/'); slash != std::string::npos) {
    t->db_ = std::atoi(rest.c_str() + slash + 1);
    rest.resize(slash);
  }
  if (!rest.empty() && rest.front() == '[') {  // [v6 address][:port]
    const size_t close = rest.find(']');
    if (close == std::string::npos) return invalid("redis: an unclosed [ in \"" + options.url + "\"");
    t->host_ = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') t->port_ = std::atoi(rest.c_str() + close + 2);
  } else if (size_t colon = rest.rfind(':'); colon != std::string::npos) {
    t->host_ = rest.substr(0, colon);
    t->port_ = std::atoi(rest.c_str() + colon + 1);
  } else {
    t->host_ = rest;
  }
  if (t->host_.empty()) return invalid("redis: no host in \"" + options.url + "\"");
  t->writer_ = std::thread([raw = t.get()] { raw->write_loop(); });
  return t;
}

RedisTier::~RedisTier() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  for (redisContext* c : idle_) redisFree(c);
}

bool RedisTier::off() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Clock::now() < off_until_;
}

redisContext* RedisTier::take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Clock::now() < off_until_) {
      ++stats_.skipped;
      return nullptr;
    }
    if (!idle_.empty()) {
      redisContext* c = idle_.back();
      idle_.pop_back();
      return c;
    }
  }
  redisContext* c = redisConnectWithTimeout(host_.c_str(), port_, to_timeval(options_.connect_timeout_ms));
  if (c == nullptr || c->err) {
    fail(std::string("cannot connect: ") + (c ? c->errstr : "out of memory"));
    if (c) redisFree(c);
    return nullptr;
  }
  if (redisSetTimeout(c, to_timeval(options_.timeout_ms)) != REDIS_OK) {
    fail("cannot set the command timeout");
    redisFree(c);
    return nullptr;
  }
  if (db_ != 0) {
    Reply r{static_cast<redisReply*>(redisCommand(c, "SELECT %d", db_))};
    if (!r.r || r.r->type == REDIS_REPLY_ERROR) {
      fail("SELECT " + std::to_string(db_) + ": " + (r.r ? std::string(r.r->str, r.r->len) : std::string(c->errstr)));
      redisFree(c);
      return nullptr;
    }
  }
  return c;
}

void RedisTier::give_back(redisContext* c) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(c);
}

void RedisTier::fail(const std::string& what) {
  std::vector<redisContext*> stale;
  bool log = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.errors;
    off_until_ = Clock::now() + std::chrono::milliseconds(options_.cooldown_ms);
    stale.swap(idle_);  // the server went away: its other connections are dead too
    log = !down_;
    down_ = true;
  }
  for (redisContext* c : stale) redisFree(c);
  if (log && log_) {
    log_("shapejit: cache: redis at " + options_.url + ": " + what + "; the remote tier is off for " + std::to_string(options_.cooldown_ms) +
         " ms at a time until it answers");
  }
}

void RedisTier::succeeded() {
  bool log = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    log = down_;
    down_ = false;
  }
  if (log && log_) log_("shapejit: cache: redis at " + options_.url + " answers again; the remote tier is on");
}

std::optional<std::string> RedisTier::get(const Hash128& key) {
  redisContext* c = take();
  if (!c) return std::nullopt;
  const std::string k = options_.key_prefix + key.hex();
  Reply r{static_cast<redisReply*>(redisCommand(c, "GET %b", k.data(), k.size()))};
  if (!r.r) {
    fail(std::string("GET: ") + c->errstr);
    redisFree(c);
    return std::nullopt;
  }
  give_back(c);
  succeeded();
  std::lock_guard<std::mutex> lock(mu_);
  if (r.r->type != REDIS_REPLY_STRING) {  // nil, or a value of another type under our key
    ++stats_.misses;
    return std::nullopt;
  }
  ++stats_.hits;
  return std::string(r.r->str, r.r->len);
}

void RedisTier::put(const Hash128& key, std::string record) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (queue_.size() >= kMaxQueued || off()) {
      std::lock_guard<std::mutex> stats(mu_);
      ++stats_.dropped;
      return;
    }
    queue_.emplace_back(key, std::move(record));
  }
  queue_cv_.notify_one();
}

void RedisTier::write_loop() {
  std::unique_lock<std::mutex> lock(queue_mu_);
  while (true) {
    queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    auto [key, record] = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    lock.unlock();
    bool written = false;
    if (redisContext* c = take()) {
      const std::string k = options_.key_prefix + key.hex();
      Reply r{static_cast<redisReply*>(redisCommand(c, "SET %b %b", k.data(), k.size(), record.data(), record.size()))};
      if (!r.r) {
        fail(std::string("SET: ") + c->errstr);
        redisFree(c);
      } else {
        give_back(c);
        succeeded();
        written = r.r->type != REDIS_REPLY_ERROR;
      }
    }
    {
      std::lock_guard<std::mutex> stats(mu_);
      ++(written ? stats_.writes : stats_.dropped);
    }
    lock.lock();
    writing_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

void RedisTier::flush() {
  std::unique_lock<std::mutex> lock(queue_mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && !writing_; });
}

RedisStats RedisTier::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::optional<std::string> RedisTier::load(const Hash128& key, std::string_view target, std::string* rejected, Rejection* why) {
  std::optional<std::string> record = get(key);
  if (!record) return std::nullopt;
  Expected<std::string_view> payload = decode_record(*record, key, target, signer_, why);
  if (!payload.is_ok()) {
    if (rejected) *rejected = unusable(key, payload.status());
    return std::nullopt;
  }
  return std::string(*payload);
}

Status RedisTier::store(const Hash128& key, std::string_view target, std::string_view payload) {
  put(key, encode_record(key, target, payload, signer_));
  return Status::ok();
}

std::string RedisTier::unusable(const Hash128& key, const Status& why) {
  return where() + ": the value of " + key.hex() + " is unusable (" + why.message() + "); a miss";
}

void RedisTier::describe(const Tier* tier, TierStats& s) {
  const RedisStats r = tier ? static_cast<const RedisTier&>(*tier).stats() : RedisStats{};
  const TierCounts& c = s.counts;
  // Redis's own hits and misses (of its values, before their checks) and
  // writes (made, not queued); the kernels loaded are the cache's.
  s.fields = {{"hits", r.hits},         {"misses", r.misses},   {"loads", c.loads},   {"rejected", c.rejected}, {"bad_signatures", c.bad_signatures},
              {"errors", r.errors},     {"skipped", r.skipped}, {"writes", r.writes}, {"dropped", r.dropped}};
  s.part_fields = {{"remote_loads", c.part_loads}};
}

}  // namespace shapejit::cache
