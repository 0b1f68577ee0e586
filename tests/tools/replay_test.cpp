// Replays: the shipped policies on the bundled decoder trace, lockstep
// replays against one-config replays, graph breaks charged to the call,
// streaming errors, and the cumulative-time plot.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "jit/policy/config.h"
#include "tools/shapejit/plot.h"
#include "tools/shapejit/replay.h"

namespace shapejit {
namespace {

using tools::NamedConfig;
using tools::ReplayOptions;
using tools::ReplayResult;

const std::string kSource = SHAPEJIT_SOURCE_DIR;
const std::string kTrace = kSource + "/bench/traces/decoder_conv8.jsonl";

NamedConfig shipped(const std::string& name) {
  std::ifstream in(kSource + "/bench/policies/" + name + ".json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto c = policy::parse_config(ss.str());
  EXPECT_TRUE(c.is_ok()) << name << ": " << c.status().to_string();
  return {name, c.is_ok() ? *c : policy::Config()};
}

std::vector<ReplayResult> replay_file(const std::string& path, const std::vector<NamedConfig>& configs, bool execute) {
  auto reader = trace::TraceReader::open(path);
  EXPECT_TRUE(reader.is_ok()) << reader.status().to_string();
  ReplayOptions options;
  options.execute = execute;
  auto r = tools::replay(**reader, configs, options);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : std::vector<ReplayResult>{};
}

uint64_t site_compiles(const ReplayResult& r, const std::string& site) { return r.stats["sites"][site]["compiles"].get<uint64_t>(); }

// The distinct input signatures per site: what a compile per shape compiles.
std::map<std::string, size_t> distinct_shapes(const std::string& path) {
  auto trace = trace::read_trace_file(path);
  EXPECT_TRUE(trace.is_ok());
  std::map<std::string, std::set<std::vector<std::vector<int64_t>>>> shapes;
  for (const trace::TraceEvent& ev : trace->events) {
    if (!ev.call) continue;
    std::vector<std::vector<int64_t>> sig;
    for (const trace::TraceInput& in : ev.call->inputs) sig.push_back(in.shape);
    shapes[ev.call->site].insert(sig);
  }
  std::map<std::string, size_t> out;
  for (const auto& [site, s] : shapes) out[site] = s.size();
  return out;
}

TEST(Replay, ShippedPoliciesOnTheDecoderTrace) {
  const std::vector<NamedConfig> configs = {shipped("default"), shipped("jax"), shipped("dynamo"), shipped("tvm"), shipped("bucketed")};
  std::vector<ReplayResult> r = replay_file(kTrace, configs, /*execute=*/false);
  ASSERT_EQ(r.size(), 5u);
  const auto distinct = distinct_shapes(kTrace);
  ASSERT_EQ(distinct.size(), 3u);
  const ReplayResult &dflt = r[0], &jax = r[1], &dynamo = r[2], &tvm = r[3], &bucketed = r[4];
  for (const ReplayResult& x : r) {
    EXPECT_EQ(x.stats["calls"], dflt.stats["calls"]);
    EXPECT_EQ(x.stats["graph_breaks"], 0u) << x.config_name;
    EXPECT_EQ(x.cumulative_ms.size(), dflt.stats["calls"].get<size_t>());
  }
  for (const auto& [site, n] : distinct) {
    // Start dynamic: one prefill entry (cache length 0, any prompt) and one
    // decode entry (one new position, any cache length) per site.
    EXPECT_EQ(site_compiles(dflt, site), 2u) << site;
    // A compile per shape.
    EXPECT_EQ(site_compiles(jax, site), n) << site;
    // Static first, then automatic dynamic: at most two more.
    EXPECT_GT(site_compiles(dynamo, site), site_compiles(dflt, site)) << site;
    EXPECT_LE(site_compiles(dynamo, site), 4u) << site;
    EXPECT_LT(site_compiles(bucketed, site), n) << site;
  }
  // Fully dynamic without 0/1 specialization: one kernel, except where the
  // interpreter branches on t == 1 (the block), which guards the predicate.
  EXPECT_EQ(site_compiles(tvm, "embed"), 1u);
  EXPECT_EQ(site_compiles(tvm, "head"), 1u);
  EXPECT_EQ(site_compiles(tvm, "block"), 2u);
  EXPECT_EQ(tvm.stats["recompile_reasons"]["interpreter branch"], 1u);
  EXPECT_GT(jax.stats["recompile_reasons"]["policy static"].get<uint64_t>(), 0u);
  EXPECT_GT(bucketed.stats["recompile_reasons"]["policy bucket"].get<uint64_t>(), 0u);
  // The 0/1 rule separates decode from prefill for the default policy: no
  // retrace is a policy decision.
  EXPECT_EQ(dflt.stats["recompile_reasons"].size(), 1u);
  EXPECT_EQ(dflt.stats["recompile_reasons"]["0/1 specialization"], 3u);
}

TEST(Replay, LockstepMakesTheSameDecisionsAsOneConfigAtATime) {
  const std::vector<NamedConfig> both = {shipped("default"), shipped("dynamo")};
  std::vector<ReplayResult> together = replay_file(kTrace, both, /*execute=*/true);
  ASSERT_EQ(together.size(), 2u);
  for (size_t i = 0; i < both.size(); ++i) {
    std::vector<ReplayResult> alone = replay_file(kTrace, {both[i]}, /*execute=*/true);
    ASSERT_EQ(alone.size(), 1u);
    for (const char* key : {"calls", "compiles", "traces", "hits", "recompile_reasons", "retraces", "max_site_compiles"}) {
      EXPECT_EQ(together[i].stats[key], alone[0].stats[key]) << both[i].name << " " << key;
    }
  }
  // The cumulative total ends at the total, and never decreases.
  const ReplayResult& r = together[0];
  ASSERT_FALSE(r.cumulative_ms.empty());
  EXPECT_NEAR(r.cumulative_ms.back(), r.stats["total_ms"].get<double>(), 1e-3 * r.stats["total_ms"].get<double>());
  EXPECT_TRUE(std::is_sorted(r.cumulative_ms.begin(), r.cumulative_ms.end()));
  EXPECT_GE(r.stats["total_ms"].get<double>(), r.stats["compile_ms"].get<double>() + r.stats["run_ms"].get<double>());
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// A site whose interpreter needs a varying size as an int.
const char* kNeedsInt =
    "{\"format\": \"shapejit-trace\", \"version\": 1}\n"
    "{\"kind\": \"graph\", \"site\": \"s\", \"graph\": {\"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"n\"]}],"
    " \"nodes\": [{\"op\": \"exp\", \"in\": [\"x\"], \"out\": \"y\"}], \"outputs\": [\"y\"]},"
    " \"observed\": [{\"input\": 0, \"dim\": 0, \"as\": \"int\"}]}\n";

TEST(Replay, GraphBreaksAreChargedTheInterpretersTime) {
  std::string text = kNeedsInt;
  for (int n : {4, 5, 6, 7, 6}) text += "{\"kind\": \"call\", \"site\": \"s\", \"inputs\": [{\"dtype\": \"f32\", \"shape\": [" + std::to_string(n) + "]}]}\n";
  const std::string path = write_temp("needs_int.jsonl", text);
  policy::Config tvm;
  tvm.policy.mode = "always_dynamic";
  policy::Config dflt;
  std::vector<ReplayResult> r = replay_file(path, {{"tvm", tvm}, {"default", dflt}}, /*execute=*/true);
  ASSERT_EQ(r.size(), 2u);
  // always_dynamic never specializes: every call breaks, and the
  // interpreter runs it.
  EXPECT_EQ(r[0].stats["graph_breaks"], 5u);
  EXPECT_EQ(r[0].stats["compiles"], 0u);
  EXPECT_GT(r[0].stats["break_ms"].get<double>(), 0.0);
  EXPECT_GE(r[0].stats["kernel_ms"].get<double>(), r[0].stats["break_ms"].get<double>());
  EXPECT_GE(r[0].stats["total_ms"].get<double>(), r[0].stats["break_ms"].get<double>());
  // The default specializes n twice, then backs off: later calls break.
  EXPECT_EQ(r[1].stats["compiles"], 2u);
  EXPECT_EQ(r[1].stats["graph_breaks"], 3u);
}

TEST(Replay, ABadLineStopsTheReplayWithItsPlace) {
  std::string text = kNeedsInt;
  text += "{\"kind\": \"call\", \"site\": \"s\", \"inputs\": [{\"dtype\": \"f32\", \"shape\": [3]}]}\n";
  text += "{\"kind\": \"call\", \"site\": \"s\", \"inputs\": [{\"dtype\": \"f32\", \"shape\": [-3]}]}\n";
  const std::string path = write_temp("bad_line.jsonl", text);
  auto reader = trace::TraceReader::open(path);
  ASSERT_TRUE(reader.is_ok());
  auto r = tools::replay(**reader, {{"default", policy::Config()}}, ReplayOptions{});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("bad_line.jsonl:4: /inputs/0/shape/0: expected a size >= 0"), std::string::npos)
      << r.status().to_string();
  // A call whose inputs the graph does not take names the line and config.
  std::string wrong = kNeedsInt;
  wrong += "{\"kind\": \"call\", \"site\": \"s\", \"inputs\": [{\"dtype\": \"i64\", \"shape\": [3]}]}\n";
  auto reader2 = trace::TraceReader::open(write_temp("wrong_dtype.jsonl", wrong));
  ASSERT_TRUE(reader2.is_ok());
  auto r2 = tools::replay(**reader2, {{"mine", policy::Config()}}, ReplayOptions{});
  ASSERT_FALSE(r2.is_ok());
  EXPECT_NE(r2.status().message().find("line 3 under mine"), std::string::npos) << r2.status().to_string();
  EXPECT_NE(r2.status().message().find("the graph says f32, the call passes i64"), std::string::npos) << r2.status().to_string();
}

// A compile expected to take log.slow_compile_ms or longer shows in the
// progress bar while it runs (here every compile is one: the bound is 0).
TEST(Replay, TheProgressBarShowsALargeCompile) {
  std::string text = kNeedsInt;
  for (int n : {4, 5}) text += "{\"kind\": \"call\", \"site\": \"s\", \"inputs\": [{\"dtype\": \"f32\", \"shape\": [" + std::to_string(n) + "]}]}\n";
  auto reader = trace::TraceReader::open(write_temp("slow_compile.jsonl", text));
  ASSERT_TRUE(reader.is_ok());
  policy::Config config;
  config.compile.backend = "llvm";
  config.compile.async = false;
  config.log.slow_compile_ms = 0;
  std::FILE* bar = std::tmpfile();
  ASSERT_NE(bar, nullptr);
  ReplayOptions options;
  options.progress = true;
  options.progress_to = bar;
  auto r = tools::replay(**reader, {{"slow", config}}, options);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::rewind(bar);
  std::string drawn;
  for (int c; (c = std::fgetc(bar)) != EOF;) drawn += static_cast<char>(c);
  std::fclose(bar);
  EXPECT_NE(drawn.find("compiling site 's': "), std::string::npos) << drawn;
  EXPECT_NE(drawn.find("distinct steps (about "), std::string::npos) << drawn;
  EXPECT_NE(drawn.find("compiled site 's' in "), std::string::npos) << drawn;
  EXPECT_NE(drawn.find("100%  2 calls"), std::string::npos) << drawn;
}

TEST(Replay, TheReaderStreamsAndCountsBytes) {
  auto reader = trace::TraceReader::open(kTrace);
  ASSERT_TRUE(reader.is_ok());
  size_t graphs = 0, calls = 0;
  while (true) {
    auto ev = (*reader)->next();
    ASSERT_TRUE(ev.is_ok()) << ev.status().to_string();
    if (!*ev) break;
    graphs += (*ev)->graph.has_value();
    calls += (*ev)->call.has_value();
  }
  EXPECT_EQ(graphs, 3u);
  // Per request of the CSV: a prefill and min(generated - 1, 16) decode
  // steps (the trace's --max-decode), 4 calls a step (embed, 2 blocks, head).
  std::ifstream csv(kSource + "/bench/workloads/azure-llm-2023/AzureLLMInferenceTrace_conv.csv");
  std::string row;
  std::getline(csv, row);
  size_t expected = 0;
  for (int i = 0; i < 8 && std::getline(csv, row); ++i) {
    const long generated = std::stol(row.substr(row.rfind(',') + 1));
    expected += 4 * (1 + std::min(generated - 1, 16L));
  }
  EXPECT_EQ(calls, expected);
  EXPECT_EQ((*reader)->bytes_read(), (*reader)->size_bytes());
  EXPECT_NE((*reader)->note().find("CC BY 4.0"), std::string::npos);
  EXPECT_FALSE(trace::TraceReader::open(kSource + "/no/such/trace.jsonl").is_ok());
}

TEST(Plot, OneLinePerConfigWithEscapedNames) {
  const std::vector<float> a = {1, 2, 30, 31, 32}, b = {5, 6, 7, 8, 9}, none;
  std::string svg = tools::cumulative_time_svg({{"default", a}, {"<jax & co>", b}, {"empty", none}}, "t \"x\"");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  size_t lines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++lines;
  EXPECT_EQ(lines, 3u);
  EXPECT_NE(svg.find("&lt;jax &amp; co&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<jax"), std::string::npos);
  EXPECT_NE(svg.find("t &quot;x&quot;"), std::string::npos);
  EXPECT_NE(svg.find("default (32 ms)"), std::string::npos);
  // Long replays are drawn from at most 1500 points a line, in seconds.
  std::vector<float> many(100000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<float>(i);
  std::string big = tools::cumulative_time_svg({{"long", many}}, "long");
  EXPECT_NE(big.find("cumulative total time (s)"), std::string::npos);
  EXPECT_LT(big.size(), 60000u);
}

}  // namespace
}  // namespace shapejit
