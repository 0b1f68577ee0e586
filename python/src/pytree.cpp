#include "python/src/pytree.h"

#include <cstring>

namespace shapejit::python {

namespace {

// Token tags; a tag is followed by what it needs (a length, a value, an address).
enum Tag : uintptr_t { kTuple = 1, kList, kDict, kNamedTuple, kArray, kInt, kNegInt, kTrue, kFalse, kNone, kFloat, kFloatLeaf, kStr, kObject, kInstance };

constexpr int kMaxDepth = 32;
constexpr long long kIntLimit = 1LL << 62;  // flatten's _INT_LIMIT

bool is_namedtuple(PyObject* o) {
  static PyObject* fields = PyUnicode_InternFromString("_fields");
  return PyTuple_Check(o) && PyObject_HasAttr(o, fields);
}

bool has_dlpack(PyObject* o) {
  static PyObject* dlpack = PyUnicode_InternFromString("__dlpack__");
  return PyObject_HasAttr(o, dlpack);
}

}  // namespace

bool TreeWalk::walk(PyObject* args, PyObject* kwargs, bool floats_as_leaves) {
  floats_as_leaves_ = floats_as_leaves;
  leaves.clear();
  tokens.clear();
  addressed.clear();
  made_.clear();
  // flatten walks the tuple (args, kwargs)
  tokens.push_back(kTuple);
  tokens.push_back(2);
  if (!visit(args, 0)) return false;
  if (kwargs) return visit(kwargs, 0);
  tokens.push_back(kDict);
  tokens.push_back(0);
  return true;
}

bool TreeWalk::int_leaf(PyObject* o) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow || v >= kIntLimit || v <= -kIntLimit) return false;  // a key by value: the Python path
  npy_intp dims[2] = {0, static_cast<npy_intp>(v < 0 ? -v : v)};
  PyObject* a = PyArray_Empty(2, dims, PyArray_DescrFromType(NPY_BOOL), 0);
  if (!a) throw nb::python_error();
  made_.push_back(nb::steal(a));
  leaves.push_back(a);
  tokens.push_back(v < 0 ? kNegInt : kInt);
  return true;
}

bool TreeWalk::visit(PyObject* o, int depth) {
  if (depth > kMaxDepth) return false;
  if (PyArray_Check(o)) {
    if (!PyArray_CheckExact(o)) return false;  // a subclass: the Python flatten says what it is
    leaves.push_back(o);
    tokens.push_back(kArray);
    return true;
  }
  if (PyLong_CheckExact(o)) return int_leaf(o);
  if (o == Py_None) return tokens.push_back(kNone), true;
  if (o == Py_True || o == Py_False) return tokens.push_back(o == Py_True ? kTrue : kFalse), true;
  if (PyFloat_CheckExact(o) && floats_as_leaves_) {
    PyObject* a = PyArray_SimpleNew(0, nullptr, NPY_FLOAT64);
    if (!a) throw nb::python_error();
    *static_cast<double*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(a))) = PyFloat_AS_DOUBLE(o);
    made_.push_back(nb::steal(a));
    leaves.push_back(a);
    tokens.push_back(kFloatLeaf);
    return true;
  }
  if (PyFloat_CheckExact(o)) {
    const double d = PyFloat_AS_DOUBLE(o);
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    tokens.push_back(kFloat);
    tokens.push_back(static_cast<uintptr_t>(bits));
    return true;
  }
  if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
    const bool tuple = PyTuple_CheckExact(o);
    const Py_ssize_t n = tuple ? PyTuple_GET_SIZE(o) : PyList_GET_SIZE(o);
    tokens.push_back(tuple ? kTuple : kList);
    tokens.push_back(static_cast<uintptr_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!visit(tuple ? PyTuple_GET_ITEM(o, i) : PyList_GET_ITEM(o, i), depth + 1)) return false;
    }
    return true;
  }
  if (PyDict_CheckExact(o)) {
    tokens.push_back(kDict);
    tokens.push_back(static_cast<uintptr_t>(PyDict_GET_SIZE(o)));
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(o, &pos, &key, &value)) {
      if (!PyUnicode_CheckExact(key)) return false;  // other keys: by value, in Python
      tokens.push_back(reinterpret_cast<uintptr_t>(key));
      addressed.push_back(key);
      if (!visit(value, depth + 1)) return false;
    }
    return true;
  }
  if (PyUnicode_CheckExact(o)) {
    tokens.push_back(kStr);
    tokens.push_back(reinterpret_cast<uintptr_t>(o));
    addressed.push_back(o);
    return true;
  }
  if (is_namedtuple(o)) {
    PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(o));
    tokens.push_back(kNamedTuple);
    tokens.push_back(reinterpret_cast<uintptr_t>(type));
    tokens.push_back(static_cast<uintptr_t>(PyTuple_GET_SIZE(o)));
    addressed.push_back(type);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); ++i) {
      if (!visit(PyTuple_GET_ITEM(o, i), depth + 1)) return false;
    }
    return true;
  }
  // What flatten keys by value (NumPy scalars, bools' and ints' subclasses,
  // complex, bytes) or takes as an array (__dlpack__), or a tracing value.
  if (PyArray_IsScalar(o, Generic) || PyLong_Check(o) || PyFloat_Check(o) || PyComplex_Check(o) || PyBytes_Check(o) ||
      PyUnicode_Check(o) || PyTuple_Check(o) || PyList_Check(o) || PyDict_Check(o) || has_dlpack(o)) {
    return false;
  }
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(o));
  if (instance_types && PySet_Contains(instance_types, type) == 1) {  // by type, as flatten's InstanceOf
    tokens.push_back(kInstance);
    tokens.push_back(reinterpret_cast<uintptr_t>(type));
    addressed.push_back(type);
    return true;
  }
  tokens.push_back(kObject);  // by identity, as flatten's _Ident
  tokens.push_back(reinterpret_cast<uintptr_t>(o));
  addressed.push_back(o);
  return true;
}

uint64_t TreeWalk::hash() const {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (uintptr_t t : tokens) h = (h ^ t) * 0x100000001b3ULL;
  return h;
}

namespace {

// Into `out`, the tree of `spec` from arrays[next] on; false for a spec
// build_tree leaves to Python.
bool build(PyObject* spec, const std::vector<nb::object>& arrays, size_t& next, nb::object& out) {
  if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(spec, 0))) return false;
  const char* kind = PyUnicode_AsUTF8(PyTuple_GET_ITEM(spec, 0));
  if (kind == nullptr) {
    PyErr_Clear();
    return false;
  }
  if (std::strcmp(kind, "leaf") == 0) {  // its own spec too
    if (next >= arrays.size()) return false;
    out = arrays[next++];
    return true;
  }
  if (PyTuple_GET_SIZE(spec) < 2) return false;
  PyObject* items = PyTuple_GET_ITEM(spec, 1);
  if (std::strcmp(kind, "other") == 0) {
    out = nb::borrow(items).attr("value");
    return true;
  }
  const bool tuple = std::strcmp(kind, "tuple") == 0, list = std::strcmp(kind, "list") == 0, dict = std::strcmp(kind, "dict") == 0,
             named = std::strcmp(kind, "namedtuple") == 0;
  if (named) {
    if (PyTuple_GET_SIZE(spec) < 3) return false;
    items = PyTuple_GET_ITEM(spec, 2);
  }
  if (!(tuple || list || dict || named) || !PyTuple_Check(items)) return false;
  const Py_ssize_t n = PyTuple_GET_SIZE(items);
  nb::object built = nb::steal(tuple || named ? PyTuple_New(n) : list ? PyList_New(n) : PyDict_New());
  if (!built.is_valid()) throw nb::python_error();
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PyTuple_GET_ITEM(items, i);
    PyObject* key = nullptr;
    if (dict) {  // (key, spec)
      if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) return false;
      key = PyTuple_GET_ITEM(item, 0);
      item = PyTuple_GET_ITEM(item, 1);
    }
    nb::object value;
    if (!build(item, arrays, next, value)) return false;
    if (dict) {
      if (PyDict_SetItem(built.ptr(), key, value.ptr()) != 0) throw nb::python_error();
    } else if (list) {
      PyList_SET_ITEM(built.ptr(), i, value.release().ptr());
    } else {
      PyTuple_SET_ITEM(built.ptr(), i, value.release().ptr());
    }
  }
  out = named ? nb::borrow(PyTuple_GET_ITEM(spec, 1))(*nb::borrow<nb::tuple>(built)) : std::move(built);
  return true;
}

}  // namespace

std::optional<nb::object> build_tree(nb::handle spec, const std::vector<nb::object>& arrays) {
  size_t next = 0;
  nb::object out;
  if (!build(spec.ptr(), arrays, next, out) || next != arrays.size()) return std::nullopt;
  return out;
}

}  // namespace shapejit::python
