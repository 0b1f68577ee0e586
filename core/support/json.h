// Reading JSON from users: graphs, configs, traces, the C API's attributes.
//
// Input decides the shape of a JSON value, so nothing here recurses on its
// depth: parsing builds the value with an explicit stack, and an excerpt for
// a message walks it with one. nlohmann's own dump() recurses once per level
// (a value 100,000 levels deep overflows the stack), so messages never dump
// a value taken from input: they quote json_excerpt().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/support/status.h"

namespace shapejit {

// Parses `text` as one JSON value. Stricter than nlohmann's parse: a key
// that appears twice in one object is an error at its JSON pointer (JSON
// leaves duplicates undefined; nlohmann keeps the last, silently). Errors
// are invalid-argument Statuses that start with `what` and say where:
//   "config: not valid JSON: line 3, column 7: syntax error ..."
//   "calls.jsonl:4: not valid JSON: column 12: ..." (a text of one line)
//   "graph: /nodes/2/attrs/dim: a duplicate key"
Expected<nlohmann::json> parse_json(std::string_view text, const std::string& what);

// `j` as compact JSON, cut to about `max` characters with "..." where cut.
std::string json_excerpt(const nlohmann::json& j, size_t max = 48);

// An integer that int64 holds: nullopt for other kinds, and for unsigned
// integers past INT64_MAX (nlohmann's get<int64_t>() would wrap them).
std::optional<int64_t> json_int64(const nlohmann::json& j);

// nlohmann's type name ("number", "array", ...), or "an integer past int64
// (...)" for the ones json_int64 refuses, so a message says why.
std::string json_kind(const nlohmann::json& j);

// One reference token of a JSON pointer: "~" and "/" escaped (RFC 6901).
std::string json_pointer_token(std::string_view key);

}  // namespace shapejit
