// shapejit._shapejit: the extension module under the `shapejit` package.
#define SHAPEJIT_NUMPY_IMPORT
#include "python/src/binding.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>


#include "backends/frozen.h"
#include "core/support/faults.h"
#include "jit/runtime/trace_recorder.h"
#include "python/src/arrays.h"
#include "python/src/function.h"
#include "python/src/tracer.h"

namespace shapejit::python {

PyObject* shape_error = nullptr;
PyObject* graph_break_error = nullptr;

void raise(const Status& s, bool shape) {
  const std::string& m = s.message();
  PyObject* type = PyExc_RuntimeError;
  switch (s.code()) {
    case Code::kInvalidArgument:
      type = s.detail() == Detail::kType ? PyExc_TypeError : shape ? shape_error : PyExc_ValueError;
      break;
    case Code::kGraphBreak: type = graph_break_error; break;
    case Code::kUnsupported: type = PyExc_TypeError; break;
    case Code::kRuntime:
      switch (s.detail()) {
        case Detail::kIndex: type = PyExc_IndexError; break;
        case Detail::kValue: type = PyExc_ValueError; break;
        case Detail::kOverflow: type = PyExc_OverflowError; break;
        case Detail::kMemory: type = PyExc_MemoryError; break;
        default: type = PyExc_RuntimeError;
      }
      break;
    case Code::kIo: type = PyExc_OSError; break;
    default: break;
  }
  PyErr_SetString(type, m.c_str());
  throw nb::python_error();
}

namespace {

// One Jit per config (the package keeps them); its log goes to a Python callable.
class PyJit {
 public:
  explicit PyJit(const std::string& config_json) {
    Expected<std::unique_ptr<runtime::Jit>> j = runtime::Jit::create(config_json);
    if (!j.is_ok()) raise(j.status());
    jit_ = std::move(j).value();
  }
  ~PyJit() {
    jit_->set_log(nullptr);
    Py_XDECREF(log_);
  }

  const std::shared_ptr<runtime::Jit>& get() const { return jit_; }

  void set_log(nb::object sink) {
    PyObject* old = log_;
    log_ = sink.release().ptr();
    PyObject* cb = log_;
    jit_->set_log([cb](const std::string& line) {
      if (!Py_IsInitialized()) return;
      nb::gil_scoped_acquire gil;
      nb::object text = nb::steal(PyUnicode_DecodeUTF8(line.data(), static_cast<Py_ssize_t>(line.size()), "replace"));
      PyObject* r = text.is_valid() ? PyObject_CallOneArg(cb, text.ptr()) : nullptr;
      if (r) Py_DECREF(r);
      else PyErr_WriteUnraisable(cb);
    });
    Py_XDECREF(old);
  }

  // At the interpreter's exit (the package's atexit): LLVM's static state
  // goes with the process, and no background compile may still be using it.
  void stop_compiles() {
    nb::gil_scoped_release release;  // a compile's log line takes the GIL
    jit_->stop_compiles();
  }

  std::string stats_json() const {
    nb::gil_scoped_release release;
    return jit_->stats_json().dump();
  }
  // Runs a held graph on the site `site` (created on first use), compiled
  // and cached as any site's: the arrays in, its outputs as NumPy arrays.
  nb::list call_graph(const std::string& site, const HeldGraph& g, nb::handle arrays) {
    ArgList args(nb::len(arrays));
    size_t i = 0;
    for (nb::handle a : arrays) args.add(a.ptr(), i++);
    std::vector<ir::Tensor> outputs;
    Status s;
    {
      nb::gil_scoped_release release;
      s = jit_->call_graph(site, *g.graph, g.observed, args.span(), outputs);
    }
    if (!s.is_ok()) raise(s);
    nb::list out;
    for (ir::Tensor& t : outputs) out.append(to_numpy(std::move(t)));
    return out;
  }
  bool specialize_zero_one() const { return jit_->config().policy.specialize_zero_one; }
  int backoff_after() const { return jit_->config().policy.backoff_after; }

 private:
  std::shared_ptr<runtime::Jit> jit_;
  PyObject* log_ = nullptr;
};

struct PyRecorder {
  std::shared_ptr<runtime::TraceRecorder> recorder;
};

// FrozenMemory's freeze or thaw of arrays' bytes, all or none; `names`
// name them in messages (the package keeps each array alive while it is
// frozen: shapejit/_frozen.py).
void freeze_or_thaw(const std::vector<nb::handle>& arrays, const std::vector<std::string>& names, bool freeze) {
  const std::string what = freeze ? "freeze" : "thaw";
  ArgList args(arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (!ArgList::is_array(arrays[i].ptr())) {
      PyErr_SetString(PyExc_TypeError, (what + ": " + names.at(i) + " is not an array").c_str());
      throw nb::python_error();
    }
    args.add(arrays[i].ptr(), i);
    if (args.copied(i)) {
      raise(invalid(what + ": " + names.at(i) + ": a reversed or byte-misaligned view, which calls copy; freeze a contiguous copy of it"));
    }
  }
  backends::FrozenMemory& frozen = backends::FrozenMemory::process();
  const Status s = freeze ? frozen.freeze(args.span(), names) : frozen.thaw(args.span(), names);
  if (!s.is_ok()) raise(s);
}

}  // namespace

}  // namespace shapejit::python

NB_MODULE(_shapejit, m) {
  using namespace shapejit::python;
  if (_import_array() < 0) throw nb::python_error();
  // Jits and jitted functions live in module globals until the interpreter
  // exits, where nothing is collected in order: that is not a leak.
  nb::set_leak_warnings(false);
  m.doc() = "shapejit's extension: the Jit, jitted functions' call path, the tracer";
  // The NumPy whose headers this was compiled against, for the build's own
  // check (tests/python/test_build.py): NPY_ABI_VERSION's top byte is its
  // major version, NPY_API_VERSION its C API's feature level.
  m.attr("numpy_abi_version") = static_cast<unsigned>(NPY_ABI_VERSION);
  m.attr("numpy_api_version") = static_cast<unsigned>(NPY_API_VERSION);

  shape_error = PyErr_NewExceptionWithDoc("shapejit.ShapeError", "A shape the traced function cannot take.", PyExc_ValueError, nullptr);
  graph_break_error = PyErr_NewExceptionWithDoc(
      "shapejit.GraphBreak", "Raised while tracing where the function cannot be traced; the call runs eagerly.",
      PyExc_BaseException, nullptr);  // not an Exception: the function's `except Exception` must not take it
  m.attr("ShapeError") = nb::handle(shape_error);
  m.attr("GraphBreak") = nb::handle(graph_break_error);

  nb::class_<PyJit>(m, "Jit")
      .def(nb::init<const std::string&>(), nb::arg("config_json"))
      .def("set_log", &PyJit::set_log)
      .def("stats_json", &PyJit::stats_json)
      .def("stop_compiles", &PyJit::stop_compiles)
      .def("call_graph", &PyJit::call_graph)
      .def_prop_ro("specialize_zero_one", &PyJit::specialize_zero_one)
      .def_prop_ro("backoff_after", &PyJit::backoff_after)
      .def("record", [](PyJit& j, PyRecorder* r) { j.get()->record(r ? r->recorder : nullptr); }, nb::arg("recorder").none());

  nb::class_<PyRecorder>(m, "Recorder").def("__init__", [](PyRecorder* self, const std::string& path) {
    shapejit::Expected<std::unique_ptr<shapejit::runtime::TraceRecorder>> r = shapejit::runtime::TraceRecorder::open(path);
    if (!r.is_ok()) raise(r.status());
    new (self) PyRecorder{std::shared_ptr<shapejit::runtime::TraceRecorder>(std::move(r).value().release())};
  });

  m.def("_freeze", [](const std::vector<nb::handle>& a, const std::vector<std::string>& names) { freeze_or_thaw(a, names, true); });
  m.def("_thaw", [](const std::vector<nb::handle>& a, const std::vector<std::string>& names) { freeze_or_thaw(a, names, false); });
  m.def("_frozen_stats", [] {
    const shapejit::backends::FrozenMemory::Stats s = shapejit::backends::FrozenMemory::process().stats();
    nb::dict d;
    d["ranges"] = s.ranges;
    d["frozen_bytes"] = s.frozen_bytes;
    d["derived"] = s.derived;
    d["derived_bytes"] = s.derived_bytes;
    d["made"] = s.made;
    return d;
  });

  // Fault injection (core/support/faults.h): the stages SHAPEJIT_FAULTS
  // names, and whether one fails at this chance (the package's own stages,
  // trace and numpy, ask here so that one seed picks every stage's chances).
  m.def("faults", [] { return shapejit::support::faults_named(); });
  m.def("fault", [](const std::string& stage) {
    for (int f = 0; f < static_cast<int>(shapejit::support::Fault::kCount); ++f) {
      const auto fault = static_cast<shapejit::support::Fault>(f);
      if (stage == shapejit::support::fault_name(fault)) return shapejit::support::fault(fault);
    }
    raise(shapejit::invalid("'" + stage + "' is not a stage of SHAPEJIT_FAULTS"));
  });

  bind_tracer(m);
  bind_function(m);
  m.def("_make_function", [](PyJit& jit, nb::object fn, const std::string& name, nb::object helpers, nb::object segments) {
    return new Function(jit.get(), std::move(fn), name, std::move(helpers), std::move(segments));
  }, nb::rv_policy::take_ownership);
}
