// The remote tier against a real redis-server (tests/support/redis_server.h):
// hits and misses, a Redis hit filling the disk, a corrupt value, and an
// outage: every operation bounded, the tier off for its cool-down, back when
// the server is.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "cache/kernel_cache.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text_artifact.h"
#include "tests/support/redis_server.h"

namespace shapejit::cache {
namespace {

using Clock = std::chrono::steady_clock;
using testing::RedisServer;
namespace fs = std::filesystem;

Hash128 key_of(int i) { return Hasher().add(static_cast<uint64_t>(i) + 100).finish(); }

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

using testing::Counting;
using testing::Text;
using testing::text_of;

using testing::TempDir;

RedisOptions options(const RedisServer& server, int cooldown_ms = 200) {
  RedisOptions o;
  o.url = server.url();
  o.connect_timeout_ms = 100;
  o.timeout_ms = 100;
  o.cooldown_ms = cooldown_ms;
  o.key_prefix = "test:" + std::to_string(::getpid()) + ":";
  return o;
}

TEST(RedisTier, AFleetCompilesEachKernelOnceAndAHitFillsTheDisk) {
  RedisServer server;
  ASSERT_TRUE(server.start()) << "redis-server did not start (scripts/setup.sh installs it)";
  TempDir a, b;
  Counting c;
  {
    KernelCache first(1 << 20, TierOptions{a.path(), 1 << 20, options(server), {}}, {});
    EXPECT_EQ(first.get(key_of(1), c.maker("k1"))->origin, Origin::kCompile);
    first.remote()->flush();  // the write is in the background
    EXPECT_EQ(first.remote()->stats().writes, 1u);
  }
  std::vector<std::string> lines;
  KernelCache second(1 << 20, TierOptions{b.path(), 1 << 20, options(server), {}}, [&](const std::string& l) { lines.push_back(l); });
  auto f = second.get(key_of(1), c.maker("k1"));
  EXPECT_EQ(text_of(f), "k1");
  EXPECT_EQ(f->origin, Origin::kRemote);
  EXPECT_EQ(c.compiles.load(), 1);
  EXPECT_TRUE(fs::exists(second.disk()->path_of(key_of(1)))) << "a Redis hit fills the disk";
  EXPECT_EQ(second.get(key_of(2), c.maker("k2"))->origin, Origin::kCompile);  // a miss everywhere
  const CacheStats s = second.stats();
  EXPECT_EQ(s.tier("remote").field("hits"), 1u);
  EXPECT_EQ(s.tier("remote").field("misses"), 1u);
  EXPECT_EQ(s.tier("remote").counts.loads, 1u);
  EXPECT_TRUE(lines.empty());
}

TEST(RedisTier, AValueThatFailsItsChecksumIsAMiss) {
  RedisServer server;
  ASSERT_TRUE(server.start());
  TempDir dir;
  Counting c;
  RedisOptions o = options(server);
  {
    auto writer = std::move(RedisTier::open(o, {})).value();
    std::string record = encode_record(key_of(3), "fake-target", "good bytes");
    record.back() ^= 1;
    writer->put(key_of(3), record);
    writer->flush();
  }
  std::vector<std::string> lines;
  KernelCache cache(1 << 20, TierOptions{dir.path(), 1 << 20, o, {}}, [&](const std::string& l) { lines.push_back(l); });
  auto f = cache.get(key_of(3), c.maker("good bytes"));
  EXPECT_EQ(f->origin, Origin::kCompile);
  EXPECT_EQ(c.compiles.load(), 1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("checksum mismatch"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("a miss"), std::string::npos) << lines[0];
}

TEST(RedisTier, AnOutageCostsOneBoundThenNothingAndTheTierComesBack) {
  RedisServer server;
  ASSERT_TRUE(server.start());
  std::vector<std::string> lines;
  std::mutex mu;
  auto tier = std::move(RedisTier::open(options(server, /*cooldown_ms=*/300), [&](const std::string& l) {
                std::lock_guard<std::mutex> lock(mu);
                lines.push_back(l);
              })).value();
  tier->put(key_of(4), "value");
  tier->flush();
  EXPECT_EQ(tier->get(key_of(4)), "value");

  server.stop();
  Clock::time_point t0 = Clock::now();
  EXPECT_FALSE(tier->get(key_of(4)).has_value());
  EXPECT_LT(ms_since(t0), 100 + 100 + 50) << "one connect or command bound (and slack)";
  t0 = Clock::now();
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(tier->get(key_of(4)).has_value());
  EXPECT_LT(ms_since(t0), 50) << "off during the cool-down: no network at all";
  tier->put(key_of(5), "dropped while off");
  tier->flush();
  EXPECT_GE(tier->stats().skipped, 100u);
  EXPECT_GE(tier->stats().dropped, 1u);
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("redis at " + server.url()), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find("the remote tier is off for 300 ms"), std::string::npos) << lines[0];
  }

  ASSERT_TRUE(server.start());  // the same port, empty
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  EXPECT_FALSE(tier->get(key_of(4)).has_value());  // answered: a miss, the server forgot it
  tier->put(key_of(6), "after");
  tier->flush();
  EXPECT_EQ(tier->get(key_of(6)), "after");
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("answers again"), std::string::npos) << lines[1];
}

TEST(RedisTier, AServerThatNeverAnswersIsBoundedToo) {
  // A listening socket that accepts and never replies: the command timeout.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 8), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  RedisOptions o;
  o.url = "redis://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  o.timeout_ms = 80;
  auto tier = std::move(RedisTier::open(o, {})).value();
  const Clock::time_point t0 = Clock::now();
  EXPECT_FALSE(tier->get(key_of(1)).has_value());
  const double ms = ms_since(t0);
  EXPECT_GE(ms, 70);
  EXPECT_LT(ms, 80 + 100);
  EXPECT_EQ(tier->stats().errors, 1u);
  ::close(fd);
}

}  // namespace
}  // namespace shapejit::cache
