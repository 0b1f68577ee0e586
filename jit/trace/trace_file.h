// Trace files (TRACE_FORMAT.md, Trace): JSON Lines with a header, `graph`
// lines and `call` lines. The reader rejects what it does not understand
// with an error naming the line and the JSON pointer; blank lines and lines
// starting with '#' are skipped.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "jit/ir/graph.h"
#include "jit/support/status.h"
#include "jit/trace/tracer.h"

namespace shapejit {

struct TraceGraph {
  std::string site;
  ir::Graph graph;
  std::vector<Observation> observed;
};

struct TraceInput {
  ir::DType dtype;
  std::vector<int64_t> shape;
};

struct TraceCall {
  std::string site;
  std::optional<int64_t> t_us;
  std::vector<TraceInput> inputs;
};

struct TraceEvent {
  size_t line = 0;
  std::optional<TraceGraph> graph;  // exactly one of graph and call
  std::optional<TraceCall> call;
};

struct TraceContents {
  std::string note;
  std::vector<TraceEvent> events;
};

Expected<TraceContents> read_trace(std::istream& in, const std::string& name);
Expected<TraceContents> read_trace_file(const std::string& path);

// One line each, without the newline.
std::string trace_header_line(const std::string& note);
std::string trace_graph_line(const std::string& site, const ir::Graph& g, const std::vector<Observation>& observed);
std::string trace_call_line(const std::string& site, std::optional<int64_t> t_us, const std::vector<TraceInput>& inputs);

}  // namespace shapejit
