// The trace reader (a header line, then graph and call lines): any bytes
// give the trace's events or an invalid-argument error naming the line.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "jit/trace/trace_file.h"

using namespace shapejit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  auto t = trace::read_trace(in, "fuzz.jsonl");
  if (!t.is_ok()) {
    const Status s = t.status();
    if (s.code() != Code::kInvalidArgument || s.message().rfind("fuzz.jsonl", 0) != 0) {
      std::fprintf(stderr, "trace reader: %s\n", s.to_string().c_str());
      std::abort();
    }
    return 0;
  }
  // What was read writes back as lines the reader takes again.
  std::string again = trace::trace_header_line(t->note) + "\n";
  for (const trace::TraceEvent& e : t->events) {
    if (e.graph) again += trace::trace_graph_line(e.graph->site, e.graph->graph, e.graph->observed) + "\n";
    if (e.call) again += trace::trace_call_line(e.call->site, e.call->t_us, e.call->inputs) + "\n";
  }
  std::istringstream in2(again);
  auto t2 = trace::read_trace(in2, "again.jsonl");
  if (!t2.is_ok() || t2->events.size() != t->events.size()) {
    std::fprintf(stderr, "trace reader: the written trace does not read back: %s\n", t2.status().to_string().c_str());
    std::abort();
  }
  return 0;
}
