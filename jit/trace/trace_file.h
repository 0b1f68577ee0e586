// Trace files (TRACE_FORMAT.md, Trace): JSON Lines with a header, `graph`
// lines and `call` lines. The reader rejects what it does not understand
// with an error naming the line and the JSON pointer; blank lines and lines
// starting with '#' are skipped.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/support/status.h"
#include "jit/trace/tracer.h"

namespace shapejit::trace {

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

// Reads a trace one event at a time, so a replay of a trace of millions of
// calls holds one line in memory. Errors name `name:line` and the pointer.
class TraceReader {
 public:
  static Expected<std::unique_ptr<TraceReader>> open(const std::string& path);
  TraceReader(std::istream& in, std::string name) : in_(&in), name_(std::move(name)) {}

  // Reads the header line; the first next() reads it when it was not read.
  Status read_header();
  // The next graph or call; nullopt at the end of the trace.
  Expected<std::optional<TraceEvent>> next();

  const std::string& note() const { return note_; }
  uint64_t bytes_read() const { return bytes_; }
  uint64_t size_bytes() const { return size_; }  // 0 when unknown (a stream)

 private:
  // The next line that is not blank or a comment, parsed as JSON; nullopt
  // at the end. `where_` names it (file:line).
  Expected<std::optional<nlohmann::json>> next_json();

  std::unique_ptr<std::istream> owned_;
  std::istream* in_;
  std::string name_;
  std::string note_;
  std::string line_, where_;
  size_t number_ = 0;
  uint64_t bytes_ = 0, size_ = 0;
  bool header_ = false;
  std::set<std::string> sites_with_graph_;
};

Expected<TraceContents> read_trace(std::istream& in, const std::string& name);
Expected<TraceContents> read_trace_file(const std::string& path);

// One line each, without the newline.
std::string trace_header_line(const std::string& note);
std::string trace_graph_line(const std::string& site, const ir::Graph& g, const std::vector<Observation>& observed);
std::string trace_call_line(const std::string& site, std::optional<int64_t> t_us, const std::vector<TraceInput>& inputs);

}  // namespace shapejit::trace
