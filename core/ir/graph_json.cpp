#include "core/ir/graph_json.h"

#include <set>
#include <unordered_map>

#include "core/support/json.h"

namespace shapejit::ir {

using nlohmann::json;

namespace {

Status err(const std::string& ptr, const std::string& msg) { return invalid("graph: " + (ptr.empty() ? "/" : ptr) + ": " + msg); }

std::string kind_of(const json& j) { return json_kind(j); }

Status check_keys(const json& obj, const std::string& ptr, std::initializer_list<const char*> allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* k : allowed) ok |= it.key() == k;
    if (!ok) {
      std::string list;
      for (const char* k : allowed) list += std::string(list.empty() ? "" : ", ") + k;
      return err(ptr + "/" + it.key(), "unknown key (expected one of: " + list + ")");
    }
  }
  return Status::ok();
}

Expected<int64_t> get_int(const json& j, const std::string& ptr) {
  auto v = json_int64(j);
  if (!v) return err(ptr, "expected an integer, got " + kind_of(j));
  return *v;
}

Expected<std::vector<int64_t>> get_int_list(const json& j, const std::string& ptr) {
  if (!j.is_array()) return err(ptr, "expected a list of integers, got " + kind_of(j));
  std::vector<int64_t> out;
  for (size_t i = 0; i < j.size(); ++i) out.push_back(SJ_TRY(get_int(j[i], ptr + "/" + std::to_string(i))));
  return out;
}

}  // namespace

Status parse_node_attrs(const json& j, const std::string& ptr, Node& node) {
  if (!j.is_object()) return err(ptr, "expected an object, got " + kind_of(j));
  const OpInfo& info = op_info(node.op);
  Attrs& a = node.attrs;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string p = ptr + "/" + it.key();
    const json& v = it.value();
    uint32_t bit = 0;
    for (uint32_t b = 1; b <= kAttrApproximate; b <<= 1) {
      if (it.key() == attr_name(static_cast<AttrBit>(b))) bit = b;
    }
    if (bit == 0 || !(info.attrs & bit)) {
      std::string list;
      for (uint32_t b = 1; b <= kAttrApproximate; b <<= 1) {
        if (info.attrs & b) list += std::string(list.empty() ? "" : ", ") + attr_name(static_cast<AttrBit>(b));
      }
      return err(p, std::string("op '") + info.name + "' has no attribute '" + it.key() + "'" +
                        (list.empty() ? " (it takes none)" : " (it takes: " + list + ")"));
    }
    switch (static_cast<AttrBit>(bit)) {
      case kAttrAxes: a.axes = SJ_TRY(get_int_list(v, p)); break;
      case kAttrPerm: a.perm = SJ_TRY(get_int_list(v, p)); break;
      case kAttrDims: a.dims = SJ_TRY(get_int_list(v, p)); break;
      case kAttrDim: a.dim = SJ_TRY(get_int(v, p)); break;
      case kAttrDim0: a.dim0 = SJ_TRY(get_int(v, p)); break;
      case kAttrDim1: a.dim1 = SJ_TRY(get_int(v, p)); break;
      case kAttrKeepdim:
        if (!v.is_boolean()) return err(p, "expected true or false, got " + kind_of(v));
        a.keepdim = v.get<bool>();
        break;
      case kAttrDtype: {
        auto t = v.is_string() ? parse_dtype(v.get<std::string>()) : std::nullopt;
        if (!t) return err(p, "expected a dtype (f32, f64, i32, i64, bool), got " + json_excerpt(v));
        a.dtype = *t;
        break;
      }
      case kAttrEps:
        if (!v.is_number()) return err(p, "expected a number, got " + kind_of(v));
        a.eps = v.get<double>();
        if (!(a.eps >= 0)) return err(p, "eps must be >= 0");
        break;
      case kAttrValue:
        if (v.is_boolean()) a.value = {false, v.get<bool>() ? 1 : 0, 0};
        else if (auto i = json_int64(v)) a.value = {false, *i, 0};
        else if (v.is_number_float()) a.value = {true, 0, v.get<double>()};
        else return err(p, "expected a number or a boolean, got " + kind_of(v));
        break;
      case kAttrApproximate: {
        std::string s = v.is_string() ? v.get<std::string>() : "";
        if (s != "none" && s != "tanh") return err(p, "expected \"none\" or \"tanh\", got " + json_excerpt(v));
        a.approximate_tanh = s == "tanh";
        break;
      }
    }
    a.present |= bit;
  }
  return Status::ok();
}

namespace {

// Builds a Graph from its JSON, a section at a time, each value defined
// once and read only after it is defined; errors name the JSON pointer.
class GraphReader {
 public:
  Status input(const json& in, const std::string& p) {
    if (!in.is_object()) return err(p, "an input is an object, got " + kind_of(in));
    SJ_TRY(check_keys(in, p, {"name", "dtype", "shape"}));
    if (!in.contains("name") || !in["name"].is_string()) return err(p + "/name", "expected a string");
    InputSpec spec;
    spec.name = in["name"].get<std::string>();
    auto dt = in.contains("dtype") && in["dtype"].is_string() ? parse_dtype(in["dtype"].get<std::string>()) : std::nullopt;
    if (!dt) return err(p + "/dtype", "expected a dtype (f32, f64, i32, i64, bool)");
    spec.dtype = *dt;
    if (!in.contains("shape") || !in["shape"].is_array()) return err(p + "/shape", "expected a list of dims");
    const json& shape = in["shape"];
    for (size_t d = 0; d < shape.size(); ++d) {
      const std::string pd = p + "/shape/" + std::to_string(d);
      if (auto dim = json_int64(shape[d])) {
        int64_t v = *dim;
        if (v < 0) return err(pd, "a dim must be >= 0, got " + std::to_string(v));
        spec.shape.push_back(DimSpec::pinned(v));
      } else if (shape[d].is_string() && !shape[d].get<std::string>().empty()) {
        spec.shape.push_back(DimSpec::symbol(shape[d].get<std::string>()));
      } else {
        return err(pd, "a dim is an integer or a symbol name, got " + json_excerpt(shape[d]));
      }
    }
    SJ_TRY(define(spec.name, p + "/name"));
    g_.inputs.push_back(std::move(spec));
    return Status::ok();
  }

  Status node(const json& jn, const std::string& p) {
    if (!jn.is_object()) return err(p, "a node is an object, got " + kind_of(jn));
    SJ_TRY(check_keys(jn, p, {"op", "in", "out", "attrs"}));
    if (!jn.contains("op") || !jn["op"].is_string()) return err(p + "/op", "expected an op name");
    auto op = parse_op(jn["op"].get<std::string>());
    if (!op) return err(p + "/op", "unknown op '" + jn["op"].get<std::string>() + "'");
    Node node{*op, {}, {}, {}};
    const OpInfo& info = op_info(*op);
    SJ_TRY(operands(jn, p, info, node));
    if (jn.contains("attrs")) SJ_TRY(parse_node_attrs(jn["attrs"], p + "/attrs", node));
    uint32_t missing = info.required & ~node.attrs.present;
    for (uint32_t b = 1; b <= kAttrApproximate; b <<= 1) {
      if (missing & b) return err(p + "/attrs", std::string("op '") + info.name + "' needs attribute '" + attr_name(static_cast<AttrBit>(b)) + "'");
    }
    normalize_attrs(node);
    if (!jn.contains("out")) return err(p + "/out", "expected a result name");
    const json& out = jn["out"];
    std::string name;
    if (out.is_string()) {
      name = out.get<std::string>();
    } else if (out.is_array() && out.size() == 1 && out[0].is_string()) {
      name = out[0].get<std::string>();
    } else {
      return err(p + "/out", std::string("op '") + info.name + "' has one result: expected a name or a list of one name");
    }
    node.out.push_back(g_.num_values());
    SJ_TRY(define(name, p + "/out"));
    g_.nodes.push_back(std::move(node));
    return Status::ok();
  }

  Status output(const json& o, const std::string& p) {
    if (!o.is_string()) return err(p, "expected a value name");
    auto it = names_.find(o.get<std::string>());
    if (it == names_.end()) return err(p, "unknown value '" + o.get<std::string>() + "'");
    g_.outputs.push_back(it->second);
    return Status::ok();
  }

  Graph finish() && { return std::move(g_); }

 private:
  Status define(const std::string& name, const std::string& ptr) {
    if (name.empty()) return err(ptr, "a value name must not be empty");
    if (!names_.emplace(name, g_.num_values()).second) return err(ptr, "value '" + name + "' is defined twice");
    g_.value_names.push_back(name);
    return Status::ok();
  }

  // A node's operands: names of earlier values, or literals; as many as its op takes.
  Status operands(const json& jn, const std::string& p, const OpInfo& info, Node& node) const {
    if (!jn.contains("in") || !jn["in"].is_array()) return err(p + "/in", "expected a list of operands");
    const json& ins = jn["in"];
    for (size_t i = 0; i < ins.size(); ++i) {
      const std::string pi = p + "/in/" + std::to_string(i);
      if (ins[i].is_string()) {
        auto it = names_.find(ins[i].get<std::string>());
        if (it == names_.end()) return err(pi, "unknown value '" + ins[i].get<std::string>() + "' (not defined earlier)");
        node.in.push_back(Operand::of(it->second));
      } else if (auto literal = json_int64(ins[i])) {
        node.in.push_back(Operand::integer(*literal));
      } else if (ins[i].is_number_float()) {
        node.in.push_back(Operand::real(ins[i].get<double>()));
      } else if (ins[i].is_boolean()) {
        node.in.push_back(Operand::integer(ins[i].get<bool>() ? 1 : 0));
      } else {
        return err(pi, "an operand is a value name or a number, got " + kind_of(ins[i]));
      }
    }
    const int n = static_cast<int>(node.in.size());
    if (n < info.min_in || (info.max_in >= 0 && n > info.max_in)) {
      std::string want = info.max_in < 0 ? "at least " + std::to_string(info.min_in)
                         : info.min_in == info.max_in ? std::to_string(info.min_in)
                                                      : std::to_string(info.min_in) + " to " + std::to_string(info.max_in);
      return err(p + "/in", std::string("op '") + info.name + "' takes " + want + " operands, got " + std::to_string(n));
    }
    return Status::ok();
  }

  Graph g_;
  std::unordered_map<std::string, int> names_;
};

}  // namespace

Expected<Graph> graph_from_json(const json& j, const std::string& base) {
  if (!j.is_object()) return err(base, "a graph is an object, got " + kind_of(j));
  SJ_TRY(check_keys(j, base, {"inputs", "nodes", "outputs"}));
  GraphReader r;
  if (!j.contains("inputs") || !j["inputs"].is_array()) return err(base + "/inputs", "expected a list of inputs");
  const json& inputs = j["inputs"];
  for (size_t i = 0; i < inputs.size(); ++i) SJ_TRY(r.input(inputs[i], base + "/inputs/" + std::to_string(i)));
  if (!j.contains("nodes") || !j["nodes"].is_array()) return err(base + "/nodes", "expected a list of nodes");
  const json& nodes = j["nodes"];
  for (size_t k = 0; k < nodes.size(); ++k) SJ_TRY(r.node(nodes[k], base + "/nodes/" + std::to_string(k)));
  if (!j.contains("outputs") || !j["outputs"].is_array()) return err(base + "/outputs", "expected a list of value names");
  const json& outputs = j["outputs"];
  for (size_t i = 0; i < outputs.size(); ++i) SJ_TRY(r.output(outputs[i], base + "/outputs/" + std::to_string(i)));
  return std::move(r).finish();
}

Expected<Graph> parse_graph(std::string_view text) {
  const json j = SJ_TRY(parse_json(text, "graph"));
  return graph_from_json(j);
}

json graph_to_json(const Graph& g) {
  json j;
  j["inputs"] = json::array();
  for (const InputSpec& in : g.inputs) {
    json shape = json::array();
    for (const DimSpec& d : in.shape) {
      if (d.is_symbol) shape.push_back(d.name);
      else shape.push_back(d.value);
    }
    j["inputs"].push_back({{"name", in.name}, {"dtype", dtype_name(in.dtype)}, {"shape", shape}});
  }
  j["nodes"] = json::array();
  for (const Node& n : g.nodes) {
    json jn;
    jn["op"] = op_name(n.op);
    json ins = json::array();
    for (const Operand& o : n.in) {
      if (o.is_value()) ins.push_back(g.value_names[o.value]);
      else if (o.kind == Operand::Kind::kInt) ins.push_back(o.i);
      else ins.push_back(o.f);
    }
    jn["in"] = ins;
    jn["out"] = g.value_names[n.out.at(0)];
    const Attrs& a = n.attrs;
    json attrs = json::object();
    if (a.has(kAttrAxes)) attrs["axes"] = a.axes;
    if (a.has(kAttrPerm)) attrs["perm"] = a.perm;
    if (a.has(kAttrDims)) attrs["dims"] = a.dims;
    if (a.has(kAttrKeepdim)) attrs["keepdim"] = a.keepdim;
    if (a.has(kAttrDim)) attrs["dim"] = a.dim;
    if (a.has(kAttrDim0)) attrs["dim0"] = a.dim0;
    if (a.has(kAttrDim1)) attrs["dim1"] = a.dim1;
    if (a.has(kAttrDtype)) attrs["dtype"] = dtype_name(a.dtype);
    if (a.has(kAttrEps)) attrs["eps"] = a.eps;
    if (a.has(kAttrValue)) {
      if (a.value.is_float) attrs["value"] = a.value.f;
      else attrs["value"] = a.value.i;
    }
    if (a.has(kAttrApproximate)) attrs["approximate"] = a.approximate_tanh ? "tanh" : "none";
    if (!attrs.empty()) jn["attrs"] = attrs;
    j["nodes"].push_back(jn);
  }
  j["outputs"] = json::array();
  for (int o : g.outputs) j["outputs"].push_back(g.value_names[o]);
  return j;
}

}  // namespace shapejit::ir
