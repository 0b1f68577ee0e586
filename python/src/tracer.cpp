#include "python/src/tracer.h"

#include <algorithm>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "jit/runtime/inputs.h"
#include "python/src/arrays.h"

namespace shapejit::python {

namespace {

trace::Tracer::Arg operand(nb::handle o) {
  PyObject* p = o.ptr();
  if (PyBool_Check(p)) return int64_t{p == Py_True};
  if (PyLong_Check(p)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (overflow) raise(invalid("the integer " + nb::cast<std::string>(nb::str(o)) + " does not fit in 64 bits"));
    return int64_t{v};
  }
  if (PyFloat_Check(p)) return PyFloat_AS_DOUBLE(p);
  static PyObject* id = PyUnicode_InternFromString("_id");
  nb::object v = nb::steal(PyObject_GetAttr(p, id));
  if (!v.is_valid()) {
    if (PyErr_ExceptionMatches(graph_break_error)) throw nb::python_error();  // the value could not be read: a break
    PyErr_Clear();
    raise(Status(Code::kUnsupported, std::string("an operand of type '") + Py_TYPE(p)->tp_name +
                                         "' is not a traced value or a number"));
  }
  return trace::Tracer::Value{nb::cast<int>(v)};
}

std::vector<int64_t> ints(nb::handle o) {
  std::vector<int64_t> out;
  for (nb::handle x : o) out.push_back(nb::cast<int64_t>(x));
  return out;
}

ir::Attrs attrs_of(nb::handle d) {
  ir::Attrs a;
  if (d.is_none()) return a;
  for (auto [key, value] : nb::cast<nb::dict>(d)) {
    const std::string k = nb::cast<std::string>(key);
    if (k == "axes") a.axes = ints(value), a.present |= ir::kAttrAxes;
    else if (k == "perm") a.perm = ints(value), a.present |= ir::kAttrPerm;
    else if (k == "dims") a.dims = ints(value), a.present |= ir::kAttrDims;
    else if (k == "keepdim") a.keepdim = nb::cast<bool>(value), a.present |= ir::kAttrKeepdim;
    else if (k == "dim") a.dim = nb::cast<int64_t>(value), a.present |= ir::kAttrDim;
    else if (k == "dim0") a.dim0 = nb::cast<int64_t>(value), a.present |= ir::kAttrDim0;
    else if (k == "dim1") a.dim1 = nb::cast<int64_t>(value), a.present |= ir::kAttrDim1;
    else if (k == "eps") a.eps = nb::cast<double>(value), a.present |= ir::kAttrEps;
    else if (k == "approximate") {
      const std::string v = nb::cast<std::string>(value);
      if (v != "none" && v != "tanh") raise(invalid("attribute 'approximate' is \"none\" or \"tanh\", not \"" + v + "\""));
      a.approximate_tanh = v == "tanh", a.present |= ir::kAttrApproximate;
    } else if (k == "dtype") {
      const std::string v = nb::cast<std::string>(value);
      std::optional<ir::DType> t = ir::parse_dtype(v);
      if (!t) raise(invalid("dtype \"" + v + "\" is not one of f32, f64, i32, i64, bool"));
      a.dtype = *t, a.present |= ir::kAttrDtype;
    } else if (k == "value") {
      if (PyFloat_Check(value.ptr())) a.value = {true, 0, nb::cast<double>(value)};
      else a.value = {false, nb::cast<int64_t>(value), 0};
      a.present |= ir::kAttrValue;
    } else {
      raise(invalid("unknown attribute '" + k + "'"));
    }
  }
  return a;
}

template <typename T>
T value_or_raise(Expected<T> e, bool shape = false) {
  // A size past int64 at this call's sizes: a break the site does not
  // cache, so that NumPy computes it with Python's ints.
  if (!e.is_ok() && e.status().detail() == Detail::kOverflow) raise(Status(Code::kGraphBreak, e.status().message()));
  if (!e.is_ok()) raise(e.status(), shape);
  return std::move(e).value();
}

}  // namespace

trace::Tracer& PyTracer::get() const {
  if (!t_) raise(invalid("a traced value was used outside the call that traced it (keep results, not tracing values)"));
  return *t_;
}

int PyTracer::op(const std::string& name, nb::handle operands, nb::handle attrs) {
  trace::Tracer& t = get();
  std::optional<ir::Op> op = ir::parse_op(name);
  if (!op) raise(invalid("unknown op '" + name + "'"));
  std::vector<trace::Tracer::Arg> in;
  for (nb::handle o : operands) in.push_back(operand(o));
  return value_or_raise(t.op(*op, in, attrs_of(attrs)), /*shape=*/true).id;
}

nb::tuple PyTracer::info(int value) const {
  trace::Tracer& t = get();
  if (value < 0 || value >= t.graph().num_values()) raise(invalid("no such traced value"));
  const trace::Tracer::Value v{value};
  const int rank = t.is_tensor(v) ? t.rank(v) : 0;
  return nb::make_tuple(t.is_tensor(v), ir::dtype_name(t.dtype(v)), rank);
}

std::optional<int64_t> PyTracer::elements_hint(int value) const {
  trace::Tracer& t = get();
  if (value < 0 || value >= t.graph().num_values() || !t.is_tensor({value})) raise(invalid("no such traced tensor"));
  int64_t n = 1;
  for (const sym::Expr& d : t.types()[static_cast<size_t>(value)].shape) {
    const std::optional<int64_t> h = t.env().hint(d);
    if (!h || __builtin_mul_overflow(n, *h, &n)) return std::nullopt;
  }
  return n;
}

std::vector<int> PyTracer::dead(const std::vector<int>& values) const {
  const ir::Graph& g = get().graph();
  std::vector<bool> live(static_cast<size_t>(g.num_values()), false);
  for (int o : g.outputs) live[static_cast<size_t>(o)] = true;
  for (auto n = g.nodes.rbegin(); n != g.nodes.rend(); ++n) {  // in order: a node's operands come before it
    if (std::none_of(n->out.begin(), n->out.end(), [&](int v) { return live[static_cast<size_t>(v)]; })) continue;
    if (n->op == ir::Op::kSymSize) continue;  // a size, known from the type: its tensor is not computed for it
    for (const ir::Operand& o : n->in) {
      if (o.is_value()) live[static_cast<size_t>(o.value)] = true;
    }
  }
  std::vector<int> out;
  for (int v : values) {
    if (v >= 0 && v < g.num_values() && !live[static_cast<size_t>(v)]) out.push_back(v);
  }
  return out;
}

int64_t PyTracer::guard_int(int value) { return value_or_raise(get().guard_int({value})); }

bool PyTracer::guard_bool(const std::string& cmp, nb::handle lhs, nb::handle rhs) {
  std::optional<trace::Cmp> c = trace::parse_cmp(cmp);
  if (!c) raise(invalid("unknown comparison '" + cmp + "'"));
  trace::Tracer& t = get();
  return value_or_raise(t.guard_bool(*c, operand(lhs), operand(rhs)));
}

void PyTracer::output(int value) {
  Status s = get().output({value});
  if (!s.is_ok()) raise(s);
}

void PyTracer::break_graph(const std::string& why) { break_ = get().break_graph(why); }

void PyTracer::raise_error(const std::string& label) { raised_ = get().raise_error(label); }

PyTracer::PyTracer(nb::handle arrays, bool specialize_zero_one) : t_(nullptr) {
  const size_t n = nb::len(arrays);
  ArgList args(n);
  size_t i = 0;
  for (nb::handle a : arrays) args.add(a.ptr(), i++);
  ir::ShapeHints hints;
  for (const DLTensor* a : args.span()) hints.emplace_back(a->shape, a->shape + a->ndim);
  trace::TraceOptions options;
  options.specialize_zero_one = specialize_zero_one;
  owned_ = value_or_raise(trace::Tracer::create(runtime::dynamic_inputs(args.span()), std::move(hints), std::move(options)));
  t_ = owned_.get();
}

namespace {

// The graph over the inputs it reads, in the order it first reads them
// (then the outputs that are inputs): a segment that computes alike from
// other positions of the carried values is the same graph. `kept` gets the
// original index of each input kept.
ir::Graph pruned(const ir::Graph& g, std::vector<trace::Observation>& observed, std::vector<int>& kept) {
  const int n = static_cast<int>(g.inputs.size());
  std::vector<int> index(n, -1);
  const auto use = [&](int v) {
    if (v < n && index[v] < 0) {
      index[v] = static_cast<int>(kept.size());
      kept.push_back(v);
    }
  };
  for (const ir::Node& node : g.nodes) {
    for (const ir::Operand& o : node.in) {
      if (o.is_value()) use(o.value);
    }
  }
  for (int o : g.outputs) use(o);
  for (const trace::Observation& o : observed) use(o.input);
  const int m = static_cast<int>(kept.size());
  const auto remap = [&](int v) { return v < n ? index[v] : v - n + m; };
  ir::Graph out;
  int symbol = 0;
  for (int k = 0; k < m; ++k) {
    ir::InputSpec spec = g.inputs[kept[k]];
    spec.name = "in" + std::to_string(k);
    for (ir::DimSpec& d : spec.shape) {
      if (d.is_symbol) d.name = "s" + std::to_string(symbol++);  // every dim its own symbol, as traced
    }
    out.inputs.push_back(std::move(spec));
    out.value_names.push_back(out.inputs.back().name);
  }
  for (int v = n; v < g.num_values(); ++v) out.value_names.push_back(g.value_names[v]);
  out.nodes = g.nodes;
  for (ir::Node& node : out.nodes) {
    for (ir::Operand& o : node.in) {
      if (o.is_value()) o.value = remap(o.value);
    }
    for (int& v : node.out) v = remap(v);
  }
  for (int o : g.outputs) out.outputs.push_back(remap(o));
  for (trace::Observation& o : observed) o.input = index[o.input];
  return out;
}

}  // namespace

HeldGraph PyTracer::finish() {
  if (!owned_ || !t_) raise(invalid("finish: not a tracer of its own, or finished already"));
  t_ = nullptr;
  trace::Trace t = std::move(*owned_).finish();
  owned_.reset();
  HeldGraph g;
  g.observed = std::move(t.observed);
  ir::Graph graph = pruned(t.graph, g.observed, g.inputs);
  g.hash = graph.canonical_hash().hex();
  g.graph = std::make_shared<const ir::Graph>(std::move(graph));
  return g;
}

void bind_tracer(nb::module_& m) {
  nb::class_<HeldGraph>(m, "HeldGraph")
      .def_ro("hash", &HeldGraph::hash)
      .def_ro("inputs", &HeldGraph::inputs)
      .def_prop_ro("num_nodes", [](const HeldGraph& g) { return g.graph->nodes.size(); });
  nb::class_<PyTracer>(m, "Tracer")
      .def(nb::init<nb::handle, bool>(), nb::arg("arrays"), nb::arg("specialize_zero_one") = true)
      .def("finish", &PyTracer::finish)
      .def_prop_ro("num_inputs", &PyTracer::num_inputs)
      .def("op", &PyTracer::op, nb::arg("name"), nb::arg("operands"), nb::arg("attrs").none() = nb::none())
      .def("info", &PyTracer::info)
      .def("elements_hint", &PyTracer::elements_hint)
      .def("guard_int", &PyTracer::guard_int)
      .def("guard_bool", &PyTracer::guard_bool)
      .def("output", &PyTracer::output)
      .def("dead", &PyTracer::dead)
      .def("break_graph", &PyTracer::break_graph)
      .def("raise_error", &PyTracer::raise_error);
}

}  // namespace shapejit::python
