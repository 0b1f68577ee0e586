#include "python/src/tracer.h"

#include <nanobind/stl/string.h>

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

void bind_tracer(nb::module_& m) {
  nb::class_<PyTracer>(m, "Tracer")
      .def_prop_ro("num_inputs", &PyTracer::num_inputs)
      .def("op", &PyTracer::op, nb::arg("name"), nb::arg("operands"), nb::arg("attrs").none() = nb::none())
      .def("info", &PyTracer::info)
      .def("guard_int", &PyTracer::guard_int)
      .def("guard_bool", &PyTracer::guard_bool)
      .def("output", &PyTracer::output)
      .def("break_graph", &PyTracer::break_graph);
}

}  // namespace shapejit::python
