#include "python/src/watches.h"

#include <algorithm>
#include <cstring>

namespace shapejit::python {

bool same_step(const PathStep& a, const PathStep& b) {
  if (a.first != b.first) return false;
  if (a.second.ptr() == b.second.ptr()) return true;
  if (Py_TYPE(a.second.ptr()) != Py_TYPE(b.second.ptr())) return false;
  const int eq = PyObject_RichCompareBool(a.second.ptr(), b.second.ptr(), Py_EQ);
  if (eq < 0) PyErr_Clear();
  return eq == 1;
}

PyObject* step_into(PyObject* at, const PathStep& step) {
  PyObject* key = step.second.ptr();
  if (!step.first) {
    if (PyDict_CheckExact(at)) {
      PyObject* v = PyDict_GetItemWithError(at, key);
      if (!v && PyErr_Occurred()) PyErr_Clear();
      return Py_XNewRef(v);
    }
    if ((PyList_CheckExact(at) || PyTuple_CheckExact(at)) && PyLong_CheckExact(key)) {
      const Py_ssize_t i = PyLong_AsSsize_t(key), n = Py_SIZE(at);
      if (i >= 0 && i < n) return Py_NewRef(PyList_CheckExact(at) ? PyList_GET_ITEM(at, i) : PyTuple_GET_ITEM(at, i));
    }
  }
  PyObject* next = step.first ? PyObject_GetAttr(at, key) : PyObject_GetItem(at, key);
  if (!next) PyErr_Clear();
  return next;
}

namespace {

// What a watch found at its place is what the trace saw there.
bool same_value(PyObject* now, PyObject* then) {
  if (now == then) return true;
  if (Py_TYPE(now) != Py_TYPE(then)) return false;
  if (PyFloat_CheckExact(now)) {
    const double a = PyFloat_AS_DOUBLE(now), b = PyFloat_AS_DOUBLE(then);
    return std::memcmp(&a, &b, sizeof a) == 0;
  }
  // The other scalars a watch keeps by value (ints, strings, NumPy's
  // scalars, tuples of them); an object of another kind by identity alone.
  if (!(PyLong_CheckExact(now) || PyUnicode_CheckExact(now) || PyBytes_CheckExact(now) || PyComplex_CheckExact(now) ||
        PyTuple_CheckExact(now) || PyArray_IsScalar(now, Generic))) {
    return false;
  }
  const int eq = PyObject_RichCompareBool(now, then, Py_EQ);
  if (eq < 0) PyErr_Clear();
  return eq == 1;
}

}  // namespace

void Watches::add(nb::handle found) {
  for (nb::handle f : found) {
    Watch w;
    w.root = nb::borrow(f[0]);
    for (nb::handle step : nb::cast<nb::tuple>(f[1])) w.steps.emplace_back(nb::cast<bool>(step[0]), nb::borrow(step[1]));
    w.value = nb::borrow(f[2]);
    w.size = nb::cast<bool>(f[3]);
    const auto same_place = [&](const Watch& had) {
      return had.root.ptr() == w.root.ptr() && had.size == w.size && had.steps.size() == w.steps.size() &&
             std::equal(had.steps.begin(), had.steps.end(), w.steps.begin(), same_step);
    };
    if (std::any_of(all_.begin(), all_.end(), same_place)) continue;
    if (!all_.empty() && all_.back().root.ptr() == w.root.ptr()) {
      const Watch& before = all_.back();
      while (w.shared < w.steps.size() && w.shared < before.steps.size() && same_step(w.steps[w.shared], before.steps[w.shared])) ++w.shared;
    }
    all_.push_back(std::move(w));
  }
}

const Watch* Watches::first_changed(PathRoots& roots, nb::object* now_out) const {
  std::vector<nb::object> at;  // the objects along the last path walked: at[j] after its first j steps
  for (const Watch& w : all_) {
    size_t j = w.shared < at.size() ? w.shared : 0;
    if (j == 0) {
      at.clear();
      at.push_back(nb::borrow(roots.of(w.root)));
    } else {
      at.resize(j + 1);
    }
    for (; j < w.steps.size(); ++j) {
      PyObject* next = step_into(at.back().ptr(), w.steps[j]);
      if (!next) return &w;
      at.push_back(nb::steal(next));
    }
    PyObject* now = at.back().ptr();
    bool same;
    if (w.size) {
      const Py_ssize_t n = PyDict_Check(now) ? PyDict_GET_SIZE(now) : PyList_Check(now) ? PyList_GET_SIZE(now) : -1;
      same = n == PyLong_AsSsize_t(w.value.ptr());
    } else {
      same = same_value(now, w.value.ptr());
    }
    if (!same) {
      if (now_out) *now_out = at.back();
      return &w;
    }
  }
  return nullptr;
}

}  // namespace shapejit::python
