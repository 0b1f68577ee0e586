// What the pieces of shapejit's Python extension share: the exception types,
// how a Status becomes a Python exception, and the NumPy C API.
//
// The extension is thin: arrays in and out (arrays.cpp), the tracer that the
// package's Python tracing values drive (tracer.cpp), and a jitted function's
// call path (function.cpp). Everything about Python semantics (operators,
// indexing, NumPy names, pytrees) is Python, in python/shapejit.
#pragma once

#include <nanobind/nanobind.h>

#include <string>

#include "jit/runtime/jit.h"

// One translation unit (module.cpp) imports the NumPy API table; the others
// reach it through this symbol.
#define PY_ARRAY_UNIQUE_SYMBOL shapejit_numpy_api
#ifndef SHAPEJIT_NUMPY_IMPORT
#define NO_IMPORT_ARRAY
#endif
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

namespace shapejit::python {

namespace nb = nanobind;

// shapejit.ShapeError (a ValueError) and shapejit.GraphBreak, made at import.
extern PyObject* shape_error;
extern PyObject* graph_break_error;

// Raises `s` as the Python exception its code maps to: kInvalidArgument a
// ValueError (a TypeError when it is about dtypes, a ShapeError when `shape`:
// an op's inference failed),
// kGraphBreak a GraphBreak, kUnsupported a TypeError, kRuntime a
// RuntimeError (an IndexError for indices out of range), kIo an OSError.
[[noreturn]] void raise(const Status& s, bool shape = false);

}  // namespace shapejit::python
