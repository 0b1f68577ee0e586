// Reading JSON from users: duplicates and syntax errors say where, and a
// value as deep as input likes is read, quoted and freed without recursion.
#include "core/support/json.h"

#include <gtest/gtest.h>

namespace shapejit {
namespace {

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(Json, ADuplicateKeyIsAnErrorAtItsPointer) {
  auto j = parse_json(R"({"a": [0, {"b~/": 1, "b~/": 2}]})", "graph");
  ASSERT_FALSE(j.is_ok());
  EXPECT_EQ(j.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(j.status().message(), "graph: /a/1/b~0~1: a duplicate key (each key may appear once in an object)");
}

TEST(Json, InvalidJsonSaysLineAndColumn) {
  auto j = parse_json("{\n  \"a\": tru\n}", "config");
  ASSERT_FALSE(j.is_ok());
  // nlohmann places the error after the bad token's last character read
  // (here the newline that ends "tru").
  EXPECT_EQ(j.status().message().rfind("config: not valid JSON: line 3, column 0: syntax error while parsing value", 0), 0u) << j.status().message();
  // A text of one line (a trace's line) gives its column alone.
  auto line = parse_json("{\"a\": tru}", "calls.jsonl:4");
  ASSERT_FALSE(line.is_ok());
  EXPECT_EQ(line.status().message().rfind("calls.jsonl:4: not valid JSON: column 10: ", 0), 0u) << line.status().message();
}

TEST(Json, AValueAHundredThousandLevelsDeepIsReadQuotedAndFreed) {
  auto j = parse_json(nested(100000), "config");
  ASSERT_TRUE(j.is_ok()) << j.status().to_string();
  const std::string e = json_excerpt(*j, 20);
  EXPECT_EQ(e, std::string(20, '[') + "...");
}

TEST(Json, ExcerptsAreCompactJsonCutAtTheLimit) {
  auto j = parse_json(R"({"k": [1, "two", null, 2.5], "z": {}})", "x");
  ASSERT_TRUE(j.is_ok());
  EXPECT_EQ(json_excerpt(*j, 100), R"({"k": [1, "two", null, 2.5], "z": {}})");
  EXPECT_EQ(json_excerpt(*j, 8), R"({"k": [1...)");
}

TEST(Json, IntegersPastInt64AreNotTaken) {
  auto j = parse_json("[9223372036854775807, 9223372036854775808, -9223372036854775808, 1.5]", "x");
  ASSERT_TRUE(j.is_ok());
  EXPECT_EQ(json_int64((*j)[0]), INT64_MAX);
  EXPECT_EQ(json_int64((*j)[1]), std::nullopt);
  EXPECT_EQ(json_int64((*j)[2]), INT64_MIN);
  EXPECT_EQ(json_int64((*j)[3]), std::nullopt);
  EXPECT_EQ(json_kind((*j)[1]), "an integer past int64 (9223372036854775808)");
}

}  // namespace
}  // namespace shapejit
