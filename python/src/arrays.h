// Arrays across the boundary, without copies: arguments in as DLTensors
// (NumPy through its C API, anything else through `__dlpack__`), results out
// as NumPy arrays over the kernels' buffers.
#pragma once

#include <array>
#include <span>
#include <vector>

#include "python/src/binding.h"

namespace shapejit::python {

// A call's arguments as DLTensors, and what keeps them valid until the call
// returns (references, DLPack capsules whose deleters it runs).
class ArgList {
 public:
  explicit ArgList(size_t n) { slots_.reserve(n); }
  ~ArgList();
  ArgList(const ArgList&) = delete;
  ArgList& operator=(const ArgList&) = delete;

  // Whether `o` is an array this package takes: a NumPy array whose
  // semantics are NumPy's own (is_plain_numpy), or an object with
  // `__dlpack__` (PyTorch, JAX, CuPy...). NumPy scalars are values.
  static bool is_array(PyObject* o);

  // Appends `o` (an array, see is_array) as argument `index` (for messages).
  // Raises TypeError for an array it cannot take (a dtype outside the five,
  // a device other than the CPU).
  void add(PyObject* o, size_t index);

  size_t size() const { return ptrs_.size(); }
  // Whether argument i is a copy (a layout DLPack cannot say), not the
  // caller's memory.
  bool copied(size_t i) const { return slots_[i].keep.is_valid(); }
  std::span<const DLTensor* const> span() const { return ptrs_; }

 private:
  // A slot's DLTensor and strides are written by add before anything reads
  // them: its constructor leaves them as they are (zeroing 150 bytes an
  // argument was a sixth of a 147-array call).
  struct Slot {
    Slot() {}  // NOLINT(modernize-use-equals-default): `= default` would zero the slot
    DLTensor dl;
    std::array<int64_t, 8> strides;
    std::vector<int64_t> more_strides;  // rank above 8
    nb::object keep;                    // a copy made for a layout DLPack cannot say
    DLManagedTensor* managed = nullptr;  // from __dlpack__: its deleter runs at the end
  };
  void add_numpy(PyArrayObject* a, size_t index);
  void add_dlpack(PyObject* o, size_t index);

  std::vector<Slot> slots_;
  std::vector<const DLTensor*> ptrs_;
};

// Whether `o` is an ndarray or a memory map (its data in a file): NumPy's
// own semantics. A subclass that changes them (a masked array, a matrix,
// any other) runs in NumPy.
bool is_plain_numpy(PyObject* o);

// NumPy's type number of our dtype.
int numpy_type(ir::DType t);

// A NumPy array over `t`'s buffer, which it keeps alive (no copy). A tensor
// borrowed from a caller's memory (an output that is an input) is copied.
nb::object to_numpy(ir::Tensor t);

// The bytes an argument's elements span, [begin, end) (begin == end when
// it has none): a NumPy array's own, also where ArgList passes a copy of it;
// another's from its DLTensor `dl`.
ir::ByteSpan argument_span(PyObject* o, const DLTensor& dl);

// The bytes a NumPy array's elements span, as above; none for any other object.
ir::ByteSpan numpy_span(PyObject* o);

}  // namespace shapejit::python
