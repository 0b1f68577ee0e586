#include "jit/policy/config.h"

#include <gtest/gtest.h>

namespace shapejit::policy {
namespace {

std::string error_of(const std::string& text) {
  auto c = parse_config(text);
  EXPECT_FALSE(c.is_ok()) << text;
  return c.is_ok() ? "" : c.status().message();
}

TEST(Config, EmptyDocumentGivesTheDefaults) {
  auto c = parse_config("{}");
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->policy.mode, "start_dynamic");
  EXPECT_EQ(c->policy.backoff_after, 2);
  EXPECT_EQ(c->policy.cache_size_limit, 8);
  EXPECT_EQ(c->policy.on_limit, OnLimit::kDynamic);
  EXPECT_TRUE(c->policy.specialize_zero_one);
  EXPECT_EQ(c->policy.buckets.min, 16);
  EXPECT_EQ(c->policy.buckets.max, 65536);
  EXPECT_EQ(c->compile.backend, "auto");
  EXPECT_EQ(c->compile.opt_level, 2);
  EXPECT_EQ(c->cache.memory_mb, 512);
  EXPECT_EQ(c->cache.disk_max_mb, 2048);
  EXPECT_TRUE(c->log.recompiles);
}

TEST(Config, ReadsEveryKeyOfTheDesignExample) {
  auto c = parse_config(R"({
    "policy": {"mode": "bucketed", "backoff_after": 3, "cache_size_limit": 4, "on_limit": "eager",
               "specialize_zero_one": false, "buckets": {"kind": "pow2", "min": 32, "max": 4096},
               "sites": {"encoder": {"static": [[0, 1]], "dynamic": [[0, 0]]}}},
    "compile": {"backend": "reference", "opt_level": 3, "threads": 2, "async": true},
    "cache": {"memory_mb": 64, "disk": {"path": "/tmp/x", "max_mb": 10}, "remote": {"redis": "redis://127.0.0.1:6379"}},
    "log": {"recompiles": false, "stats": "s.json", "record": "t.jsonl"}})");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->policy.mode, "bucketed");
  EXPECT_EQ(c->policy.on_limit, OnLimit::kEager);
  EXPECT_EQ(c->policy.sites.at("encoder").static_dims, (std::vector<std::pair<int, int>>{{0, 1}}));
  EXPECT_EQ(c->policy.sites.at("encoder").dynamic_dims, (std::vector<std::pair<int, int>>{{0, 0}}));
  EXPECT_EQ(c->compile.threads, 2);
  EXPECT_EQ(c->cache.redis, "redis://127.0.0.1:6379");
  EXPECT_EQ(c->log.record, "t.jsonl");
  // And it survives a round trip.
  auto again = config_from_json(config_to_json(*c));
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(config_to_json(*again), config_to_json(*c));
}

TEST(Config, ErrorsNameTheJsonPointer) {
  EXPECT_NE(error_of(R"({"policy": {"mode": "sometimes"}})").find("/policy/mode: \"sometimes\" is not one of: always_dynamic, always_static, bucketed, start_dynamic, start_static"), std::string::npos);
  EXPECT_NE(error_of(R"({"policy": {"cache_size_limit": -1}})").find("/policy/cache_size_limit: must be in [1,"), std::string::npos);
  EXPECT_NE(error_of(R"({"policy": {"backoff_after": "2"}})").find("/policy/backoff_after: expected an integer, got string"), std::string::npos);
  EXPECT_NE(error_of(R"({"policy": {"modee": "x"}})").find("/policy/modee: unknown key"), std::string::npos);
  EXPECT_NE(error_of(R"({"polcy": {}})").find("/polcy: unknown key"), std::string::npos);
  EXPECT_NE(error_of(R"({"policy": {"buckets": {"min": 64, "max": 32}}})").find("/policy/buckets/max: must be >= min"), std::string::npos);
  EXPECT_NE(error_of(R"({"policy": {"sites": {"e": {"static": [[0]]}}}})").find("/policy/sites/e/static/0"), std::string::npos);
  EXPECT_NE(error_of(R"({"policy": {"sites": {"e": {"static": [[0, 1]], "dynamic": [[0, 1]]}}}})").find("pinned both static and dynamic"), std::string::npos);
  EXPECT_NE(error_of(R"({"policy": {"sites": {"e": {"pinned": []}}}})").find("/policy/sites/e/pinned: unknown key"), std::string::npos);
  EXPECT_NE(error_of(R"({"compile": {"opt_level": 7}})").find("/compile/opt_level"), std::string::npos);
  EXPECT_NE(error_of(R"({"log": {"recompiles": 1}})").find("/log/recompiles: expected true or false"), std::string::npos);
  EXPECT_NE(error_of("[1]").find("expected an object"), std::string::npos);
  EXPECT_NE(error_of("{").find("not valid JSON"), std::string::npos);
}

}  // namespace
}  // namespace shapejit::policy

namespace shapejit::policy {
namespace {

TEST(Config, DeepSiteListsAndDuplicateKeysAreClearErrors) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto c = parse_config(R"({"policy": {"sites": {"f": {"static": [)" + deep + "]}}}}");
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("/policy/sites/f/static/0"), std::string::npos) << c.status().message().substr(0, 200);
  EXPECT_LT(c.status().message().size(), 200u);
  auto dup = parse_config(R"({"policy": {"mode": "always_static", "mode": "always_dynamic"}})");
  ASSERT_FALSE(dup.is_ok());
  EXPECT_EQ(dup.status().message(), "config: /policy/mode: a duplicate key (each key may appear once in an object)");
}

TEST(Config, CachePlacesAreChecked) {
  EXPECT_TRUE(parse_config(R"({"cache": {"remote": {"redis": "redis://cache.internal:6380/2"}}})").is_ok());
  for (const char* bad : {"localhost:6379", "redis://", "redis://host:0", "redis://host:99999", "redis://h st", "redis://host/x"}) {
    auto c = parse_config(std::string(R"({"cache": {"remote": {"redis": ")") + bad + "\"}}}");
    ASSERT_FALSE(c.is_ok()) << bad;
    EXPECT_NE(c.status().message().find("config: /cache/remote/redis: expected redis://HOST[:PORT][/DB]"), std::string::npos)
        << c.status().message();
  }
  auto file = parse_config(R"({"cache": {"disk": {"path": "/etc/hostname"}}})");
  ASSERT_FALSE(file.is_ok());
  EXPECT_EQ(file.status().message(), "config: /cache/disk/path: \"/etc/hostname\" exists and is not a folder");
}

}  // namespace
}  // namespace shapejit::policy
