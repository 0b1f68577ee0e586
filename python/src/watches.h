// The values a jitted function reads besides its arguments and arrays,
// which its compiled entries hold as constants (a global float, a
// closure's int, `self.temperature`, a function bound to a global): each
// is a path from a root to a place, as a capture's source is
// (_runtime/watches.py lists them after a trace), compared before every
// call. Also the path steps the captures' walk shares.
#pragma once

#include <utility>
#include <vector>

#include "python/src/binding.h"

namespace shapejit::python {

using PathStep = std::pair<bool, nb::object>;  // (is_attr, key)

// Steps are the same where their keys are one object, or equal and of one
// type (a list's 1 is not a dict's True).
bool same_step(const PathStep& a, const PathStep& b);

// The object one step of a path leads to (a new reference; null, with the
// error cleared, where there is none): dicts, lists and tuples read
// directly, anything else through Python's protocols.
PyObject* step_into(PyObject* at, const PathStep& step);

// The root a path begins from: its own object, or for a path through an
// instance the call passes (one from `args_root`, arguments.ARGS) the
// call's (args, kwargs), made on first use: a call whose paths are none of
// those makes no tuple.
class PathRoots {
 public:
  PathRoots(nb::handle args_root, nb::handle args, nb::handle kwargs) : args_root_(args_root), args_(args), kwargs_(kwargs) {}
  nb::handle of(const nb::object& root) {
    if (root.ptr() != args_root_.ptr()) return root;
    if (!call_.is_valid()) call_ = nb::make_tuple(args_, kwargs_);
    return call_;
  }

 private:
  nb::handle args_root_, args_, kwargs_;
  nb::object call_;
};

// A place a trace may have read a value from: its root, the steps to it,
// the value it held (or, `size`, the size of the dict or list there);
// `shared`, how many leading steps it shares with the watch before it.
struct Watch {
  nb::object root, value;
  std::vector<PathStep> steps;
  bool size = false;
  size_t shared = 0;
};

class Watches {
 public:
  // Adds a trace's (root, steps, value, is_size) entries, each place once.
  void add(nb::handle found);
  bool empty() const { return all_.empty(); }
  size_t size() const { return all_.size(); }
  // The first watch whose place holds another value now (null: none), and
  // in `now` (when given) what it holds: the same object, or for a scalar
  // (and a tuple of them) an equal one of the same type, a float's bits the
  // same (-0.0 is not 0.0, a NaN is itself).
  const Watch* first_changed(PathRoots& roots, nb::object* now) const;
  bool hold(PathRoots& roots) const { return !first_changed(roots, nullptr); }

 private:
  std::vector<Watch> all_;
};

}  // namespace shapejit::python
