#include "python/src/function.h"

#include <algorithm>
#include <array>
#include <cstring>

#include <nanobind/stl/string.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/vector.h>

#include "python/src/pytree.h"
#include "python/src/tracer.h"
#include "python/src/watches.h"

namespace shapejit::python {

// What one call's trace function needs from the call, and what it hands back.
struct Function::TraceContext {
  nb::handle args, kwargs;
  nb::handle key;                        // its site's key (None: the arguments are all arrays)
  const std::vector<PyObject*>* leaves;  // the call's own arrays, flattened once (null: the arguments)
  nb::object arrays;                     // the same as a Python sequence, made when a trace asks
  nb::list captures;            // the arrays after the call's own, in input order
  nb::list sources;             // where each was found (Capture::source)
  nb::object found;             // captures the trace met that were not inputs
  std::optional<nb::python_error> error;  // raised by the traced function

  nb::object own_arrays() {
    if (!arrays.is_valid()) {
      if (!leaves) {
        arrays = nb::borrow(args);
      } else {
        nb::list list;
        for (PyObject* a : *leaves) list.append(nb::handle(a));
        arrays = std::move(list);
      }
    }
    return arrays;
  }
};

Function::Function(std::shared_ptr<runtime::Jit> jit, nb::object fn, std::string name, nb::object helpers, nb::object segments)
    : jit_(std::move(jit)),
      fn_(std::move(fn)),
      name_(std::move(name)),
      flatten_(helpers.attr("flatten")),
      trace_(helpers.attr("trace")),
      results_(helpers.attr("results")),
      eager_(helpers.attr("eager")),
      segmented_(helpers.attr("segmented")),
      still_raises_(helpers.attr("still_raises")),
      helpers_(std::move(helpers)),
      args_root_(helpers_.attr("args_root")),
      instance_types_(helpers_.attr("instance_types")),
      segments_(std::move(segments)) {}

Function::Site& Function::site_for(nb::handle key, size_t fast_arity) {
  if (key.is_none()) {  // the fast path
    if (fast_arity < by_arity_.size() && by_arity_[fast_arity]) return *by_arity_[fast_arity];
  } else if (PyObject* index = PyDict_GetItemWithError(by_key_.ptr(), key.ptr())) {
    return *sites_[PyLong_AsSize_t(index)];
  } else if (PyErr_Occurred()) {
    throw nb::python_error();
  }
  auto s = std::make_unique<Site>();
  s->key = nb::borrow(key);
  s->arity = fast_arity;
  s->name = name_;
  if (!sites_.empty()) {
    std::string k = key.is_none() ? std::to_string(fast_arity) + " arrays" : nb::cast<std::string>(nb::repr(key));
    // A long key is cut for the name: the site's number keeps it apart from
    // another key that begins alike (the Jit's sites are by name).
    if (k.size() > 80) k = k.substr(0, 77) + "...#" + std::to_string(sites_.size());
    s->name += "[" + k + "]";
  }
  s->site = &jit_->site(s->name);
  s->generations.push_back(s->site);
  Site& ref = *s;
  if (key.is_none()) {
    if (by_arity_.size() <= fast_arity) by_arity_.resize(fast_arity + 1, nullptr);
    by_arity_[fast_arity] = &ref;
  } else {
    by_key_[key] = sites_.size();
  }
  sites_.push_back(std::move(s));
  return ref;
}

void Function::next_generation(Site& s) {
  // Numbered by how many there are: a variant taken back keeps its own.
  s.site = &jit_->site(s.name + "~" + std::to_string(s.generations.size()));
  s.generations.push_back(s.site);
}

bool Function::match_values(Site& s, PathRoots& roots) {
  ++value_changes_;
  nb::object now;
  if (const Watch* w = s.watches.first_changed(roots, &now); w && !w->size && now.is_valid() && PyFloat_CheckExact(now.ptr()) &&
                                                                       PyFloat_CheckExact(w->value.ptr())) {
    nb::list steps;
    for (const auto& [attr, key] : w->steps) steps.append(nb::make_tuple(nb::bool_(attr), key));
    helpers_.attr("float_changed")(w->root, nb::tuple(steps));
  }
  for (Variant& v : s.others) {
    if (v.watches.hold(roots)) {
      std::swap(static_cast<Variant&>(s), v);
      return true;
    }
  }
  if (s.others.size() + 1 >= kMaxVariants) return false;
  s.others.push_back(std::move(static_cast<Variant&>(s)));
  static_cast<Variant&>(s) = Variant();
  next_generation(s);
  return true;
}

void Function::add_capture(std::vector<Capture>& captures, nb::handle array, nb::handle source) {
  Capture c;
  c.array = nb::borrow(array);
  c.source = nb::borrow(source);
  if (!source.is_none()) {
    c.root = source[0];
    for (nb::handle step : nb::cast<nb::tuple>(source[1])) c.steps.emplace_back(nb::cast<bool>(step[0]), nb::borrow(step[1]));
    if (nb::len(source) == 3) c.base = source[2];
    for (auto before = captures.rbegin(); before != captures.rend(); ++before) {
      if (!before->root.is_valid()) continue;
      if (before->root.ptr() == c.root.ptr()) {
        while (c.shared < c.steps.size() && c.shared < before->steps.size() && same_step(c.steps[c.shared], before->steps[c.shared])) ++c.shared;
      }
      break;
    }
  }
  captures.push_back(std::move(c));
}

void Function::add_found(std::vector<Capture>& captures, nb::handle found) {
  // One capture per place: an array found in two places (a global under
  // two names) is two inputs, each read again from its own place.
  const nb::handle array = found[0], source = found[1];
  for (const Capture& c : captures) {
    if (c.array.ptr() != array.ptr()) continue;
    if (source.is_none() ? c.source.is_none() : !c.source.is_none() && c.source[0].ptr() == source[0].ptr() &&
                                                    nb::len(c.source) == nb::len(source) && c.source[1].equal(source[1])) {
      return;
    }
  }
  add_capture(captures, array, source);
  captures.back().from_float = nb::len(found) == 3;  // (array, source, "float"): a float made an input
}

bool Function::refresh(Site& s, PathRoots& roots) {
  std::vector<nb::object> at;  // the objects along the last path walked: at[j] after its first j steps
  for (Capture& c : s.captures) {
    if (!c.root.is_valid()) continue;
    size_t j = c.shared < at.size() ? c.shared : 0;
    if (j == 0) {
      at.clear();
      at.push_back(nb::borrow(roots.of(c.root)));
    } else {
      at.resize(j + 1);  // the shared steps' objects, at[0] the root
    }
    for (; j < c.steps.size(); ++j) {
      PyObject* next = step_into(at.back().ptr(), c.steps[j]);
      if (!next) return false;
      at.push_back(nb::steal(next));
    }
    const nb::handle o = at.back();
    if (c.base.is_valid()) {  // a view of an array found there: held, unless that array was rebound
      if (o.ptr() != c.base.ptr()) return false;
      continue;
    }
    if (o.ptr() == c.array.ptr()) continue;
    if (c.from_float) {  // a float the package made an input: held as a 0-d float64 array
      if (!PyFloat_CheckExact(o.ptr())) return false;
      const double v = PyFloat_AS_DOUBLE(o.ptr());
      if (std::memcmp(PyArray_DATA(reinterpret_cast<PyArrayObject*>(c.array.ptr())), &v, sizeof v) == 0) continue;
      PyObject* a = PyArray_SimpleNew(0, nullptr, NPY_FLOAT64);
      if (!a) throw nb::python_error();
      *static_cast<double*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(a))) = v;
      c.array = nb::steal(a);
      continue;
    }
    if (!ArgList::is_array(o.ptr())) return false;
    c.array = nb::borrow(o);  // rebound: the new array is the input, its shape guarded as any input's
  }
  return true;
}

Status Function::trace(Site& s, TraceContext& ctx, trace::Tracer& t) {
  nb::gil_scoped_acquire gil;
  auto* pt = new PyTracer(&t);
  nb::object handle = nb::cast(pt, nb::rv_policy::take_ownership);
  try {
    nb::object traced = trace_(handle, fn_, ctx.args, ctx.kwargs, ctx.own_arrays(), ctx.key, ctx.captures, ctx.sources);
    pt->close();
    nb::object found = traced.attr("found");
    if (nb::len(found) > 0) {
      ctx.found = found;
      return Status(Code::kRetry, "the function reads arrays that are not yet its inputs");
    }
    s.watches.add(traced.attr("watches"));
    ResultSpec spec = ResultSpec::read(traced.attr("spec"));
    if (!s.traced) {
      s.spec = std::move(spec);
      s.traced = true;
    } else if (s.spec.differs_in_writes_only(spec)) {
      return t.break_graph("the function writes into its inputs otherwise than on its first trace");
    } else if (!s.spec.python.equal(spec.python)) {
      // Compiled entries of one site give back one structure; these sizes
      // give another (a branch that returns a number or an array): NumPy's
      // to run, for the calls this trace's decisions take.
      return t.break_graph("the function returns results of another structure than on its first trace (" +
                           nb::cast<std::string>(nb::repr(spec.python)) + ", was " + nb::cast<std::string>(nb::repr(s.spec.python)) + ")");
    }
    return Status::ok();
  } catch (nb::python_error& e) {
    pt->close();
    if (const std::optional<Status>& b = pt->declared_break()) return *b;  // a branch on tensor data: cached
    if (e.matches(graph_break_error)) return graph_break(e.what());
    ctx.error.emplace(std::move(e));
    if (const std::optional<Status>& r = pt->declared_raise()) return *r;  // a raised entry: NumPy runs such calls
    return invalid("the traced function raised");
  } catch (...) {
    pt->close();
    throw;
  }
}

nb::object Function::results(const Site& s, std::vector<ir::Tensor>& outputs, size_t num_inputs, const InputFn& input) {
  if (!s.traced) raise(internal_error("a compiled entry of " + s.name + " ran before its trace"));
  if (s.spec.one_array()) return to_numpy(std::move(outputs.at(0)));
  KernelOutputs values(outputs);
  write_back(s.spec, values, num_inputs, input);
  std::vector<nb::object> results;
  results.reserve(s.spec.count);
  for (size_t i = 0; i < s.spec.count; ++i) results.push_back(values.object(i));
  return build(s.spec, results, num_inputs, input);
}

nb::object Function::build(const ResultSpec& spec, std::vector<nb::object>& results, size_t num_inputs, const InputFn& input) {
  if (!spec.numbers) {
    if (std::optional<nb::object> tree = build_tree(spec.tree, results)) return std::move(*tree);
  }
  nb::list list, inputs;  // a result that is one of the inputs is given back as itself
  for (nb::object& v : results) list.append(std::move(v));
  for (size_t i = 0; i < num_inputs; ++i) inputs.append(nb::handle(input(i)));
  return results_(spec.python, list, inputs);
}

nb::object Function::call(nb::args args, nb::kwargs kwargs) {
  const size_t n = nb::len(args);
  bool fast = nb::len(kwargs) == 0;
  for (size_t i = 0; fast && i < n; ++i) fast = PyArray_CheckExact(PyTuple_GET_ITEM(args.ptr(), i));
  // The arrays: the arguments themselves on the fast path, else from the
  // C++ walk of a signature met before, else from the Python flatten.
  TreeWalk walk;
  nb::object arrays;  // the Python flatten's, which `leaves` borrows from
  std::vector<PyObject*>& leaves = walk.leaves;
  Site* found = nullptr;
  if (fast) {
    found = &site_for(nb::none(), n);
  } else {
    static PyObject* dynamic_floats = PyUnicode_InternFromString("dynamic_floats");
    nb::object floats = nb::steal(PyObject_GetAttr(helpers_.ptr(), dynamic_floats));
    if (!floats.is_valid()) throw nb::python_error();
    walk.instance_types = instance_types_.ptr();
    const bool walked = walk.walk(args.ptr(), kwargs.ptr(), floats.ptr() == Py_True);
    if (walked) found = tree_sites_.find(walk);
    if (!found) {
      nb::object flat = flatten_(args, kwargs);
      if (flat.is_none()) return fn_(*args, **kwargs);  // tracing values: traced through; a masked array: NumPy's
      arrays = flat[0];
      found = &site_for(flat[1], n);
      // Walked again: flatten may have keyed a new class's instance by its
      // type, and the signature kept holds that type, not the instance.
      if (walked && walk.walk(args.ptr(), kwargs.ptr(), floats.ptr() == Py_True)) tree_sites_.add(walk, found);
      leaves.clear();
      for (nb::handle a : arrays) leaves.push_back(a.ptr());
    }
  }
  Site& s = *found;

  PathRoots roots(args_root_, args, kwargs);
  for (int attempt = 0;; ++attempt) {
    if (!s.watches.hold(roots) && !match_values(s, roots)) {
      helpers_.attr("why") = nb::str("the values the function reads besides its arguments have changed between calls "
                                     "more often than a site keeps variants for");
      ++unmatched_values_;
      return numpy_runs(args, kwargs);
    }
    if (!refresh(s, roots)) {  // a captured array's source is gone or no longer an array
      s.captures.clear();
      next_generation(s);
    }
    const size_t own = fast ? n : leaves.size();
    ArgList in(own + s.captures.size());
    TraceContext ctx{args, kwargs, s.key, fast ? nullptr : &leaves, arrays, nb::list(), nb::list(), nb::object(), std::nullopt};
    try {
      for (size_t i = 0; i < own; ++i) in.add(fast ? PyTuple_GET_ITEM(args.ptr(), i) : leaves[i], i);
      for (const Capture& c : s.captures) {
        in.add(c.array.ptr(), in.size());
        ctx.captures.append(c.array);
        ctx.sources.append(c.source);
      }
    } catch (nb::python_error& e) {
      // An array shapejit does not take (float16, uint8, complex, a rank
      // past its own): NumPy's to run, as every call it cannot compile.
      if (!e.matches(PyExc_TypeError)) throw;
      helpers_.attr("why") = nb::str(e.what());
      return numpy_runs(args, kwargs);
    }
    runtime::CallSite& site = *s.site;
    const runtime::TraceFn trace_fn = [&](trace::Tracer& t) { return trace(s, ctx, t); };
    std::vector<ir::Tensor> outputs;
    Status st;
    {
      nb::gil_scoped_release release;
      st = site.call(in.span(), trace_fn, outputs);
    }
    if (st.is_ok()) {
      const auto input = [&](size_t i) {
        return i < own ? (fast ? PyTuple_GET_ITEM(args.ptr(), i) : leaves[i]) : PyList_GET_ITEM(ctx.captures.ptr(), i - own);
      };
      // The kernel took the inputs as apart; NumPy would read the writes
      // through the other names. Nothing is written yet: NumPy runs it.
      const std::span<const DLTensor* const> dl = in.span();
      if (writes_overlap(s.spec, dl.size(), [&](size_t i) { return argument_span(input(i), *dl[i]); })) {
        helpers_.attr("why") = nb::str("a write into an input that another input shares");
        return numpy_runs(args, kwargs);
      }
      return results(s, outputs, own + nb::len(ctx.captures), input);
    }
    if (ctx.error) {
      // The trace raised (NumPy's error on these shapes, the function's own,
      // or a tracing value that NumPy's code or the program's did not take):
      // the site keeps a raised entry, and NumPy runs the call, raising its
      // own error or giving what the trace could not.
      if (st.code() != Code::kRaised) throw std::move(*ctx.error);
      ctx.error.reset();
      return numpy_runs(args, kwargs);
    }
    if (st.code() == Code::kRetry) {
      ++retries_;
      if (attempt >= 8) return numpy_runs(args, kwargs);  // the arrays it reads keep changing as it is traced
      if (&site == s.site) {  // another thread has not moved the site on already
        for (nb::handle f : ctx.found) add_found(s.captures, f);
        next_generation(s);
      }
      continue;
    }
    if (st.code() == Code::kGraphBreak) return run_segmented(s, args, kwargs, ctx.own_arrays(), ctx.captures, ctx.sources);
    if (st.code() == Code::kRaised) {  // a raised entry: NumPy's call, unless what the function reads changed
      if (nb::cast<bool>(still_raises_(nb::str(st.message().c_str())))) return numpy_runs(args, kwargs);
      if (attempt >= 8) return numpy_runs(args, kwargs);  // its raised entries keep being dropped
      s.site->forget_raised();
      continue;
    }
    // A kernel that cannot finish the call (an index out of range, an
    // integer to a negative power, a size past int64, a tensor too large to
    // allocate): NumPy runs it, with its own exception, its own writes
    // before it, and Python's ints, which do not overflow.
    if (st.code() == Code::kRuntime) return numpy_runs(args, kwargs);
    // Any other failure of shapejit's (a limit of its own, a compile that
    // failed): NumPy's to run too, the reason kept for explain and strict.
    helpers_.attr("why") = nb::str(st.message().c_str());
    return numpy_runs(args, kwargs);
  }
}

nb::object Function::numpy_runs(nb::args args, nb::kwargs kwargs) {
  ++numpy_runs_;
  return eager_(fn_, args, kwargs);
}

nb::object Function::run_segmented(Site& s, nb::args args, nb::kwargs kwargs, nb::handle arrays, nb::handle captures, nb::handle sources) {
  nb::object run = segmented_(fn_, args, kwargs, arrays, s.key, captures, sources);
  nb::object found = run.attr("found");
  if (nb::len(found) > 0) {
    for (nb::handle f : found) add_found(s.captures, f);
    next_generation(s);
  }
  nb::object spec_object = run.attr("spec");
  if (spec_object.is_none()) return run.attr("value");
  const ResultSpec spec = ResultSpec::read(spec_object);
  nb::list inputs = nb::cast<nb::list>(run.attr("inputs"));
  const size_t n = nb::len(inputs);
  const InputFn input = [&](size_t i) { return PyList_GET_ITEM(inputs.ptr(), i); };
  // The arrays it found are inputs too; those that are not NumPy's span
  // nothing here (their writes are theirs to make).
  if (writes_overlap(spec, n, [&](size_t i) { return numpy_span(input(i)); })) {
    helpers_.attr("why") = nb::str("a write into an input that another input shares");
    return numpy_runs(args, kwargs);
  }
  std::vector<nb::object> values;
  for (nb::handle v : nb::iter(run.attr("arrays"))) values.push_back(nb::borrow(v));
  ObjectOutputs outputs(values);
  write_back(spec, outputs, n, input);
  values.resize(std::min(values.size(), spec.count));
  return build(spec, values, n, input);
}

nb::dict Function::stats() const {
  std::vector<runtime::CallSite*> all;
  std::vector<const runtime::CallSite*> current;
  for (const auto& s : sites_) {
    all.insert(all.end(), s->generations.begin(), s->generations.end());
    current.push_back(s->site);
  }
  runtime::SiteStats total;
  size_t entries = 0;
  {
    nb::gil_scoped_release release;  // a miss in progress holds its site and may be waiting for the GIL
    for (const runtime::CallSite* site : all) total += site->stats();
    for (const runtime::CallSite* site : current) entries += site->num_entries();
  }
  nb::dict reasons;
  for (const auto& [why, count] : total.recompile_reasons) reasons[nb::str(why.c_str())] = count;
  nb::dict d;
  runtime::SiteStats::each_number([&](const char* name, auto runtime::SiteStats::*field) { d[name] = total.*field; });
  d["calls"] = total.calls - retries_;
  d["value_changes"] = value_changes_;
  d["recompile_reasons"] = reasons;
  d["entries"] = entries;
  d["sites"] = sites_.size();
  nb::dict phases;
  phases["lower"] = total.phases.lower_ms;
  phases["emit"] = total.phases.emit_ms;
  phases["optimize"] = total.phases.optimize_ms;
  phases["codegen"] = total.phases.codegen_ms;
  phases["steps"] = total.phases.steps_ms;
  d["compile_phases_ms"] = phases;
  nb::dict steps;
  steps["steps"] = total.phases.steps;
  steps["distinct"] = total.phases.distinct_steps;
  steps["compiled"] = total.phases.compiled_steps;
  d["steps"] = steps;
  d.update(segments_.attr("stats")());
  // NumPy's runs of whole calls: the runtime's, this function's (a raised
  // entry, a kernel that cannot finish the call), and those after a break
  // that no cut takes (the segments').
  d["eager_calls"] = total.eager_calls + numpy_runs_ + nb::cast<uint64_t>(d["numpy_reruns"]);
  return d;
}

std::string Function::explain() const {
  std::string out;
  for (const auto& s : sites_) {
    std::string text;
    {
      nb::gil_scoped_release release;
      text = s->site->explain();
    }
    nb::list captures;
    for (const Capture& c : s->captures) captures.append(nb::make_tuple(c.array, c.source));
    out += "site " + s->site->name() + " (key " + (s->key.is_none() ? std::string("all arrays") : nb::cast<std::string>(nb::repr(s->key))) +
           ", " + std::to_string(s->captures.size()) + " captured arrays):\n" +
           nb::cast<std::string>(helpers_.attr("describe_inputs")(s->key, s->arity, captures)) +
           (s->watches.empty() ? "" : "  watches " + std::to_string(s->watches.size()) + " places it reads values from besides its arguments" +
                                          (s->others.empty() ? "" : " (" + std::to_string(s->others.size()) + " variants traced with other values)") + "\n") +
           (text.empty() ? "  no entries\n" : text);
  }
  if (unmatched_values_ > 0) {
    out += "calls NumPy ran because the values the function reads besides its arguments changed past " + std::to_string(kMaxVariants) +
           " variants of a site: " + std::to_string(unmatched_values_) + "\n";
  }
  return out + nb::cast<std::string>(segments_.attr("explain")());
}

void bind_function(nb::module_& m) {
  nb::class_<Function>(m, "Function", nb::dynamic_attr())  // functools.update_wrapper sets __name__, __doc__...
      .def("__call__", &Function::call)
      .def("__get__",  // a jitted method: the instance is an argument like any other (guarded by identity)
           [](nb::handle self, nb::handle obj, nb::handle) -> nb::object {
             if (obj.is_none()) return nb::borrow(self);
             return nb::module_::import_("functools").attr("partial")(self, obj);
           },
           nb::arg("obj").none(), nb::arg("type").none() = nb::none())
      .def("stats", &Function::stats)
      .def("explain", &Function::explain)
      .def_prop_ro("name", &Function::name);
}

}  // namespace shapejit::python
