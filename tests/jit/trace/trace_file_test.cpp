// Trace files (TRACE_FORMAT.md, Trace): what the writers write, the reader
// reads back the same; what the format does not allow is an error naming
// the line and the JSON pointer.
#include "jit/trace/trace_file.h"

#include <gtest/gtest.h>

#include <sstream>

#include "core/ir/graph_json.h"

namespace shapejit::trace {
namespace {

// One line, as a trace's graph is.
const char* kGraph =
    R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["b", "t"]}], "nodes": [{"op": "exp", "in": ["x"], "out": "y"}], "outputs": ["y"]})";

Expected<TraceContents> read_text(const std::string& text) {
  std::istringstream in(text);
  return read_trace(in, "t.jsonl");
}

std::string error_of(const std::string& text) {
  Expected<TraceContents> t = read_text(text);
  EXPECT_FALSE(t.is_ok()) << text;
  return t.status().message();
}

std::string header() { return trace_header_line("a test") + "\n"; }

std::string graph_line() {
  const ir::Graph g = std::move(ir::parse_graph(kGraph)).value();
  return trace_graph_line("enc", g, {{0, 1, true, Cmp::kEq, 0}, {0, 0, false, Cmp::kLe, 8}}) + "\n";
}

TEST(TraceFile, WhatTheWritersWriteReadsBack) {
  std::string text = header() + graph_line();
  text += trace_call_line("enc", 1200, {{ir::DType::kF32, {2, 16}}}) + "\n";
  text += "\n# a comment line\n";
  text += trace_call_line("enc", std::nullopt, {{ir::DType::kF32, {0, 3}}}) + "\n";
  Expected<TraceContents> t = read_text(text);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->note, "a test");
  ASSERT_EQ(t->events.size(), 3u);

  const TraceGraph& g = *t->events[0].graph;
  EXPECT_EQ(t->events[0].line, 2u);
  EXPECT_EQ(g.site, "enc");
  EXPECT_EQ(g.graph.canonical_hash(), std::move(ir::parse_graph(kGraph)).value().canonical_hash());
  ASSERT_EQ(g.observed.size(), 2u);
  EXPECT_TRUE(g.observed[0].as_int);
  EXPECT_EQ(g.observed[0].dim, 1);
  EXPECT_FALSE(g.observed[1].as_int);
  EXPECT_EQ(g.observed[1].cmp, Cmp::kLe);
  EXPECT_EQ(g.observed[1].value, 8);

  const TraceCall& c = *t->events[1].call;
  EXPECT_EQ(c.t_us, 1200);
  ASSERT_EQ(c.inputs.size(), 1u);
  EXPECT_EQ(c.inputs[0].shape, (std::vector<int64_t>{2, 16}));
  EXPECT_FALSE(t->events[2].call->t_us.has_value());
  EXPECT_EQ(t->events[2].line, 6u);  // blank and comment lines count
}

TEST(TraceFile, TheFirstLineMustBeAHeaderOfVersionOne) {
  EXPECT_NE(error_of("").find("empty trace (no header line)"), std::string::npos);
  EXPECT_NE(error_of(graph_line()).find("t.jsonl:1: /format:"), std::string::npos);
  EXPECT_NE(error_of(R"({"format": "shapejit-trace", "version": 2})" "\n").find("t.jsonl:1: /version:"), std::string::npos);
}

TEST(TraceFile, ACallBeforeItsSitesGraphIsAnError) {
  const std::string m = error_of(header() + trace_call_line("enc", std::nullopt, {{ir::DType::kF32, {2, 3}}}) + "\n");
  EXPECT_NE(m.find("t.jsonl:2: /site: a call of site 'enc' before its graph line"), std::string::npos) << m;
}

TEST(TraceFile, BadLinesNameTheLineAndThePointer) {
  const std::string start = header() + graph_line();
  EXPECT_NE(error_of(start + R"({"kind": "cal", "site": "enc"})" "\n").find("t.jsonl:3: /kind:"), std::string::npos);
  EXPECT_NE(error_of(start + "[1, 2]\n").find("t.jsonl:3: expected a JSON object"), std::string::npos);
  EXPECT_NE(error_of(start + "{\"kind\": \n").find("t.jsonl:3"), std::string::npos);
  const std::string negative = error_of(start + R"({"kind": "call", "site": "enc", "inputs": [{"dtype": "f32", "shape": [2, -1]}]})" "\n");
  EXPECT_NE(negative.find("t.jsonl:3: /inputs/0/shape/1"), std::string::npos) << negative;
  const std::string dtype = error_of(start + R"({"kind": "call", "site": "enc", "inputs": [{"dtype": "f16", "shape": [2]}]})" "\n");
  EXPECT_NE(dtype.find("t.jsonl:3: /inputs/0/dtype"), std::string::npos) << dtype;
  const std::string cmp = error_of(header() + R"({"kind": "graph", "site": "s", "graph": )" + std::string(kGraph) +
                                   R"(, "observed": [{"input": 0, "dim": 0, "as": "bool", "cmp": "approx", "value": 1}]})" "\n");
  EXPECT_NE(cmp.find("t.jsonl:2: /observed/0/cmp"), std::string::npos) << cmp;
}

}  // namespace
}  // namespace shapejit::trace
