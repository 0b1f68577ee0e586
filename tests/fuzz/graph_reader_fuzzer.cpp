// The graph reader (TRACE_FORMAT.md's graph JSON): any bytes give a graph or
// an invalid-argument error, never a crash or an internal error; a graph it
// accepts writes back to JSON that reads as the same graph.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/ir/graph_json.h"

using namespace shapejit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto g = ir::parse_graph(text);
  if (!g.is_ok()) {
    if (g.status().code() != Code::kInvalidArgument) {
      std::fprintf(stderr, "graph reader: %s\n", g.status().to_string().c_str());
      std::abort();
    }
    return 0;
  }
  const std::string again = ir::graph_to_json(*g).dump();
  auto g2 = ir::parse_graph(again);
  if (!g2.is_ok() || ir::graph_to_json(*g2).dump() != again) {
    std::fprintf(stderr, "graph reader: the written graph does not read back: %s\n%s\n", g2.status().to_string().c_str(), again.c_str());
    std::abort();
  }
  return 0;
}
