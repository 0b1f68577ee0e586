#include "jit/trace/trace_file.h"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/ir/graph_json.h"
#include "core/support/json.h"

namespace shapejit::trace {

using nlohmann::json;

namespace {

Status keys_in(const json& j, const std::string& ptr, std::initializer_list<const char*> allowed) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const char* k : allowed) ok |= it.key() == k;
    if (!ok) return invalid(ptr + "/" + json_pointer_token(it.key()) + ": unknown key");
  }
  return Status::ok();
}

Expected<std::string> site_of(const json& j) {
  if (!j.contains("site") || !j["site"].is_string() || j["site"].get<std::string>().empty()) {
    return invalid("/site: expected a non-empty string");
  }
  return j["site"].get<std::string>();
}

Expected<TraceGraph> read_graph_line(const json& j) {
  SJ_TRY(keys_in(j, "", {"kind", "site", "graph", "observed"}));
  TraceGraph g;
  g.site = SJ_TRY(site_of(j));
  if (!j.contains("graph")) return invalid("/graph: missing");
  g.graph = SJ_TRY(ir::graph_from_json(j["graph"], "/graph"));
  if (j.contains("observed")) {
    const json& obs = j["observed"];
    if (!obs.is_array()) return invalid("/observed: expected a list");
    for (size_t i = 0; i < obs.size(); ++i) {
      const std::string p = "/observed/" + std::to_string(i);
      const json& o = obs[i];
      if (!o.is_object()) return invalid(p + ": expected an object");
      SJ_TRY(keys_in(o, p, {"input", "dim", "as", "cmp", "value"}));
      Observation ob;
      const std::optional<int64_t> in = o.contains("input") ? json_int64(o["input"]) : std::nullopt;
      const std::optional<int64_t> d = o.contains("dim") ? json_int64(o["dim"]) : std::nullopt;
      if (!in) return invalid(p + "/input: expected an integer");
      if (!d) return invalid(p + "/dim: expected an integer");
      const int64_t input = *in, dim = *d;
      const std::string as = o.contains("as") && o["as"].is_string() ? o["as"].get<std::string>() : "";
      if (as == "int") {
        ob.as_int = true;
        if (o.contains("cmp") || o.contains("value")) return invalid(p + ": 'cmp' and 'value' belong to as: bool");
      } else if (as == "bool") {
        ob.as_int = false;
        auto c = o.contains("cmp") && o["cmp"].is_string() ? parse_cmp(o["cmp"].get<std::string>()) : std::nullopt;
        if (!c) return invalid(p + "/cmp: expected one of eq, ne, lt, le, gt, ge");
        ob.cmp = *c;
        const auto value = o.contains("value") ? json_int64(o["value"]) : std::nullopt;
        if (!value) return invalid(p + "/value: expected an integer");
        ob.value = *value;
      } else {
        return invalid(p + "/as: expected \"int\" or \"bool\"");
      }
      if (input < 0 || input >= static_cast<int64_t>(g.graph.inputs.size()) || dim < 0 ||
          dim >= static_cast<int64_t>(g.graph.inputs[input].shape.size())) {
        return invalid(p + ": the graph has no input " + std::to_string(input) + " dim " + std::to_string(dim));
      }
      ob.input = static_cast<int>(input);
      ob.dim = static_cast<int>(dim);
      g.observed.push_back(ob);
    }
  }
  return g;
}

Expected<TraceCall> read_call_line(const json& j) {
  SJ_TRY(keys_in(j, "", {"kind", "site", "t_us", "inputs"}));
  TraceCall c;
  c.site = SJ_TRY(site_of(j));
  if (j.contains("t_us")) {
    const auto t = json_int64(j["t_us"]);
    if (!t) return invalid("/t_us: expected an integer");
    c.t_us = *t;
  }
  if (!j.contains("inputs") || !j["inputs"].is_array()) return invalid("/inputs: expected a list");
  for (size_t i = 0; i < j["inputs"].size(); ++i) {
    const std::string p = "/inputs/" + std::to_string(i);
    const json& in = j["inputs"][i];
    if (!in.is_object()) return invalid(p + ": expected an object");
    SJ_TRY(keys_in(in, p, {"dtype", "shape"}));
    auto dt = in.contains("dtype") && in["dtype"].is_string() ? ir::parse_dtype(in["dtype"].get<std::string>()) : std::nullopt;
    if (!dt) return invalid(p + "/dtype: expected f32, f64, i32, i64 or bool");
    if (!in.contains("shape") || !in["shape"].is_array()) return invalid(p + "/shape: expected a list of sizes");
    TraceInput ti{*dt, {}};
    for (size_t d = 0; d < in["shape"].size(); ++d) {
      const json& v = in["shape"][d];
      const auto size = json_int64(v);
      if (!size || *size < 0) return invalid(p + "/shape/" + std::to_string(d) + ": expected a size >= 0, got " + json_excerpt(v));
      ti.shape.push_back(*size);
    }
    c.inputs.push_back(std::move(ti));
  }
  return c;
}

}  // namespace

Expected<std::unique_ptr<TraceReader>> TraceReader::open(const std::string& path) {
  auto file = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*file) return Status(Code::kIo, path + ": cannot open");
  file->seekg(0, std::ios::end);
  const auto size = file->tellg();
  file->seekg(0, std::ios::beg);
  auto reader = std::make_unique<TraceReader>(*file, path);
  reader->owned_ = std::move(file);
  reader->size_ = size > 0 ? static_cast<uint64_t>(size) : 0;
  return reader;
}

Expected<std::optional<json>> TraceReader::next_json() {
  while (std::getline(*in_, line_)) {
    ++number_;
    bytes_ += line_.size() + 1;
    if (line_.find_first_not_of(" \t\r") == std::string::npos || line_[0] == '#') continue;
    where_ = name_ + ":" + std::to_string(number_);
    return std::optional<json>(SJ_TRY(parse_json(line_, where_)));
  }
  if (in_->bad()) return Status(Code::kIo, name_ + ":" + std::to_string(number_ + 1) + ": read error");
  return std::optional<json>();
}

Status TraceReader::read_header() {
  if (header_) return Status::ok();
  std::optional<json> line = SJ_TRY(next_json());
  if (!line) return invalid(name_ + ": empty trace (no header line)");
  const json& j = *line;
  if (!j.is_object() || !j.contains("format") || j["format"] != "shapejit-trace") {
    return invalid(where_ + ": /format: the first line must be the header {\"format\": \"shapejit-trace\", \"version\": 1}");
  }
  if (!j.contains("version") || j["version"] != 1) return invalid(where_ + ": /version: this reader understands version 1");
  Status s = keys_in(j, "", {"format", "version", "note"});
  if (!s.is_ok()) return s.with_context(where_);
  if (j.contains("note") && j["note"].is_string()) note_ = j["note"].get<std::string>();
  header_ = true;
  return Status::ok();
}

Expected<std::optional<TraceEvent>> TraceReader::next() {
  SJ_TRY(read_header());
  std::optional<json> line = SJ_TRY(next_json());
  if (!line) return std::optional<TraceEvent>();
  const json& j = *line;
  if (!j.is_object()) return invalid(where_ + ": expected a JSON object");
  const std::string kind = j.contains("kind") && j["kind"].is_string() ? j["kind"].get<std::string>() : "";
  TraceEvent ev;
  ev.line = number_;
  if (kind == "graph") {
    auto g = read_graph_line(j);
    if (!g.is_ok()) return g.status().with_context(where_);
    sites_with_graph_.insert(g->site);
    ev.graph = std::move(g).value();
  } else if (kind == "call") {
    auto c = read_call_line(j);
    if (!c.is_ok()) return c.status().with_context(where_);
    if (!sites_with_graph_.count(c->site)) return invalid(where_ + ": /site: a call of site '" + c->site + "' before its graph line");
    ev.call = std::move(c).value();
  } else {
    return invalid(where_ + ": /kind: expected \"graph\" or \"call\"");
  }
  return std::optional<TraceEvent>(std::move(ev));
}

namespace {

Expected<TraceContents> read_all(TraceReader& reader) {
  TraceContents out;
  SJ_TRY(reader.read_header());
  out.note = reader.note();
  while (true) {
    std::optional<TraceEvent> ev = SJ_TRY(reader.next());
    if (!ev) return out;
    out.events.push_back(std::move(*ev));
  }
}

}  // namespace

Expected<TraceContents> read_trace(std::istream& in, const std::string& name) {
  TraceReader reader(in, name);
  return read_all(reader);
}

Expected<TraceContents> read_trace_file(const std::string& path) {
  std::unique_ptr<TraceReader> reader = SJ_TRY(TraceReader::open(path));
  return read_all(*reader);
}

std::string trace_header_line(const std::string& note) {
  return json{{"format", "shapejit-trace"}, {"version", 1}, {"note", note}}.dump();
}

std::string trace_graph_line(const std::string& site, const ir::Graph& g, const std::vector<Observation>& observed) {
  json obs = json::array();
  for (const Observation& o : observed) {
    if (o.as_int) obs.push_back({{"input", o.input}, {"dim", o.dim}, {"as", "int"}});
    else obs.push_back({{"input", o.input}, {"dim", o.dim}, {"as", "bool"}, {"cmp", cmp_name(o.cmp)}, {"value", o.value}});
  }
  return json{{"kind", "graph"}, {"site", site}, {"graph", ir::graph_to_json(g)}, {"observed", obs}}.dump();
}

std::string trace_call_line(const std::string& site, std::optional<int64_t> t_us, const std::vector<TraceInput>& inputs) {
  json ins = json::array();
  for (const TraceInput& t : inputs) ins.push_back({{"dtype", ir::dtype_name(t.dtype)}, {"shape", t.shape}});
  json j{{"kind", "call"}, {"site", site}, {"inputs", ins}};
  if (t_us) j["t_us"] = *t_us;
  return j.dump();
}

}  // namespace shapejit::trace
