// Reading and writing graphs in TRACE_FORMAT.md's JSON, exactly as written
// there. A reader error names the JSON pointer of the offending element.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/ir/graph.h"
#include "core/support/status.h"

namespace shapejit::ir {

// Structure, names, op names, arity and attributes are checked here; operand
// kinds and shapes are checked by shape inference.
Expected<Graph> graph_from_json(const nlohmann::json& j, const std::string& pointer = "");
Expected<Graph> parse_graph(std::string_view text);
nlohmann::json graph_to_json(const Graph& g);
// Reads a node's "attrs" object (`ptr` names it in errors) into node.attrs.
Status parse_node_attrs(const nlohmann::json& j, const std::string& ptr, Node& node);

}  // namespace shapejit::ir
