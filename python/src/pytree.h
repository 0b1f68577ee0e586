// A call's arguments walked in C++, for the calls that pass a pytree (a dict
// of lists of weights, an int position): the arrays in order, and a
// signature of everything else that picks the call's site without the
// package's Python flatten.
//
// The signature is a sequence of tokens: each container's kind and length,
// a dict's keys, each value that is not an array (an int's sign, a float's
// bits (or, once the function's floats are inputs, a float leaf), a bool,
// None, and a string, a namedtuple's type, an instance's type where flatten
// keys it by type, or any other object by address, the object kept alive by
// whoever keeps the signature). Two
// calls with equal signatures have equal keys under flatten (_runtime/arguments.py), so
// the site a signature was first seen with is the site of every call that
// matches it. What the walk does not know as flatten does (an array other
// than NumPy's, a NumPy scalar, a tracing value, a big int) stops it, and
// the call takes the Python flatten.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "python/src/binding.h"

namespace shapejit::python {

class TreeWalk {
 public:
  // Walks (args, kwargs); false where only the Python flatten may go on.
  // `floats_as_leaves`: the function's floats are inputs (0-d float64
  // arrays), not values of the key (_runtime/arguments.py).
  bool walk(PyObject* args, PyObject* kwargs, bool floats_as_leaves);
  // The types whose instances flatten keys by type (arguments.INSTANCE_TYPES,
  // a set): their instances are a token of the type, not of the object.
  PyObject* instance_types = nullptr;

  // The arrays, borrowed from the call or made for its int arguments (an
  // empty array whose second dim is the int, as flatten makes).
  std::vector<PyObject*> leaves;
  std::vector<uintptr_t> tokens;
  std::vector<PyObject*> addressed;  // objects whose address is a token (borrowed)
  uint64_t hash() const;

 private:
  bool visit(PyObject* o, int depth);
  bool floats_as_leaves_ = false;
  bool int_leaf(PyObject* o);
  std::vector<nb::object> made_;
};

// The signatures a function has met, each with its site.
template <typename Site>
class TreeSites {
 public:
  static constexpr size_t kMax = 32;  // past it, calls of new signatures take the Python path

  Site* find(const TreeWalk& w) const {
    const uint64_t h = w.hash();
    for (const Entry& e : entries_) {
      if (e.hash == h && e.tokens == w.tokens) return e.site;
    }
    return nullptr;
  }

  void add(const TreeWalk& w, Site* site) {
    if (entries_.size() >= kMax || find(w)) return;
    Entry e{w.hash(), w.tokens, {}, site};
    for (PyObject* o : w.addressed) e.keep.push_back(nb::borrow(o));
    entries_.push_back(std::move(e));
  }

 private:
  struct Entry {
    uint64_t hash;
    std::vector<uintptr_t> tokens;
    std::vector<nb::object> keep;  // what the address tokens name stays alive, and so unique
    Site* site;
  };
  std::vector<Entry> entries_;
};

// A compiled call's results: the tree of `spec` (a _pytree spec: leaves,
// tuples, lists, dicts, namedtuples, and "other" values, a _Constant's
// `value`) over `arrays`, in order, as _pytree.unflatten builds it,
// without its Python frames (a microsecond a call for a tuple of three
// arrays). nullopt for a spec it does not know, which the Python
// unflatten then builds.
std::optional<nb::object> build_tree(nb::handle spec, const std::vector<nb::object>& arrays);

}  // namespace shapejit::python
