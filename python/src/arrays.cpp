#include "python/src/arrays.h"

#include <cstring>
#include <string>

namespace shapejit::python {

int numpy_type(ir::DType t) {
  switch (t) {
    case ir::DType::kF32: return NPY_FLOAT32;
    case ir::DType::kF64: return NPY_FLOAT64;
    case ir::DType::kI32: return NPY_INT32;
    case ir::DType::kI64: return NPY_INT64;
    case ir::DType::kBool: return NPY_BOOL;
  }
  return NPY_FLOAT32;
}

namespace {

static_assert(sizeof(npy_intp) == sizeof(int64_t), "NumPy's dims are read as DLPack's int64 shape");

std::string arg_name(size_t index) { return "argument " + std::to_string(index); }

// NumPy's dtype as ours, or none (float16, uint8, complex, object...).
std::optional<ir::DType> numpy_dtype(PyArrayObject* a) {
  PyArray_Descr* d = PyArray_DESCR(a);
  const npy_intp size = PyArray_ITEMSIZE(a);
  if (!PyArray_ISNBO(d->byteorder)) return std::nullopt;
  switch (d->kind) {
    case 'f': return size == 4 ? std::optional(ir::DType::kF32) : size == 8 ? std::optional(ir::DType::kF64) : std::nullopt;
    case 'i': return size == 4 ? std::optional(ir::DType::kI32) : size == 8 ? std::optional(ir::DType::kI64) : std::nullopt;
    case 'b': return ir::DType::kBool;
    default: return std::nullopt;
  }
}

[[noreturn]] void type_error(const std::string& message) {
  PyErr_SetString(PyExc_TypeError, message.c_str());
  throw nb::python_error();
}

}  // namespace

ArgList::~ArgList() {
  for (Slot& s : slots_) {
    if (s.managed && s.managed->deleter) s.managed->deleter(s.managed);
  }
}

bool is_plain_numpy(PyObject* o) {
  if (PyArray_CheckExact(o)) return true;
  if (!PyArray_Check(o)) return false;
  static PyObject* memmap = [] {
    nb::object np = nb::module_::import_("numpy");
    return nb::object(np.attr("memmap")).release().ptr();
  }();
  return Py_TYPE(o) == reinterpret_cast<PyTypeObject*>(memmap);
}

bool ArgList::is_array(PyObject* o) {
  if (PyArray_Check(o)) return is_plain_numpy(o);
  if (PyArray_IsScalar(o, Generic) || PyLong_Check(o) || PyFloat_Check(o)) return false;
  static PyObject* dlpack = PyUnicode_InternFromString("__dlpack__");
  return PyObject_HasAttr(o, dlpack);
}

void ArgList::add(PyObject* o, size_t index) {
  if (slots_.size() == slots_.capacity()) {
    slots_.reserve(2 * slots_.size() + 4);  // moves the slots: point their strides again
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& s = slots_[i];
      if (s.dl.strides) s.dl.strides = s.more_strides.empty() ? s.strides.data() : s.more_strides.data();
      ptrs_[i] = &s.dl;
    }
  }
  slots_.emplace_back();
  ptrs_.push_back(&slots_.back().dl);
  if (PyArray_Check(o)) add_numpy(reinterpret_cast<PyArrayObject*>(o), index);
  else add_dlpack(o, index);
}

void ArgList::add_numpy(PyArrayObject* a, size_t index) {
  Slot& s = slots_.back();
  std::optional<ir::DType> dt = numpy_dtype(a);
  if (!dt) {
    nb::str name = nb::steal<nb::str>(PyObject_Str(reinterpret_cast<PyObject*>(PyArray_DESCR(a))));
    type_error(arg_name(index) + ": dtype " + name.c_str() + " is not one shapejit takes (float32, float64, int32, int64, bool)");
  }
  const int nd = PyArray_NDIM(a);
  if (nd > ir::kMaxRank) type_error(arg_name(index) + ": rank " + std::to_string(nd) + " is above shapejit's " + std::to_string(ir::kMaxRank));
  const npy_intp item = PyArray_ITEMSIZE(a);
  const npy_intp* dims = PyArray_DIMS(a);
  const npy_intp* bytes = PyArray_STRIDES(a);
  bool dense = PyArray_IS_C_CONTIGUOUS(a);
  int64_t* strides = nd <= 8 ? s.strides.data() : (s.more_strides.resize(nd), s.more_strides.data());
  for (int d = 0; d < nd && !dense; ++d) {
    if (dims[d] <= 1) {
      strides[d] = 0;  // any stride reads the same elements
    } else if (bytes[d] >= 0 && bytes[d] % item == 0) {
      strides[d] = bytes[d] / item;
    } else {
      // A reversed or byte-misaligned view: DLPack strides cannot say it.
      s.keep = nb::steal(PyArray_NewCopy(a, NPY_CORDER));
      if (!s.keep.is_valid()) throw nb::python_error();
      a = reinterpret_cast<PyArrayObject*>(s.keep.ptr());
      dims = PyArray_DIMS(a);
      dense = true;
    }
  }
  s.dl.data = PyArray_DATA(a);
  s.dl.device = {kDLCPU, 0};
  s.dl.ndim = nd;
  s.dl.dtype = ir::to_dl(*dt);
  s.dl.shape = const_cast<int64_t*>(reinterpret_cast<const int64_t*>(dims));
  s.dl.strides = dense ? nullptr : strides;
  s.dl.byte_offset = 0;
}

void ArgList::add_dlpack(PyObject* o, size_t index) {
  Slot& s = slots_.back();
  nb::object capsule = nb::steal(PyObject_CallMethod(o, "__dlpack__", nullptr));
  if (!capsule.is_valid()) throw nb::python_error();
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (!m) {
    PyErr_Clear();
    type_error(arg_name(index) + ": its __dlpack__ did not return a DLPack capsule");
  }
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");  // the deleter is ours to run now
  s.managed = m;
  s.dl = m->dl_tensor;
  if (s.dl.device.device_type != kDLCPU && s.dl.device.device_type != kDLCUDAHost) {
    type_error(arg_name(index) + ": the array is on DLPack device type " + std::to_string(s.dl.device.device_type) +
               "; shapejit's Python package takes arrays in CPU memory");
  }
  s.dl.device = {kDLCPU, 0};
  if (!ir::from_dl(s.dl.dtype)) {
    type_error(arg_name(index) + ": DLPack dtype (code " + std::to_string(s.dl.dtype.code) + ", " + std::to_string(s.dl.dtype.bits) +
               " bits) is not one shapejit takes (float32, float64, int32, int64, bool)");
  }
  if (s.dl.ndim > ir::kMaxRank) type_error(arg_name(index) + ": rank " + std::to_string(s.dl.ndim) + " is too high");
  if (s.dl.strides) {
    for (int d = 0; d < s.dl.ndim; ++d) {
      if (s.dl.strides[d] < 0 && s.dl.shape[d] > 1) {
        type_error(arg_name(index) + ": negative strides (a reversed view); pass a copy");
      }
    }
  }
}

nb::object to_numpy(ir::Tensor t) {
  if (t.device().device_type != kDLCPU) {
    type_error("an output is in device memory; shapejit's Python package returns CPU arrays (compile.backend: llvm or reference)");
  }
  if (t.borrowed()) {  // a view of an argument: the result must own its memory
    ir::Tensor copy = ir::Tensor::empty(t.dtype(), t.shape());
    copy.copy_from(t);
    t = std::move(copy);
  }
  const int nd = static_cast<int>(t.rank());
  const npy_intp item = static_cast<npy_intp>(ir::dtype_size(t.dtype()));
  npy_intp dims[ir::kMaxRank], strides[ir::kMaxRank];
  for (int d = 0; d < nd; ++d) {
    dims[d] = t.shape()[d];
    strides[d] = t.strides()[d] * item;
  }
  static char empty;  // a size-0 tensor may have no buffer; NumPy allocates for a null pointer
  void* data = t.data() ? t.data() : &empty;
  const int type = numpy_type(t.dtype());
  auto* holder = new ir::Tensor(std::move(t));
  nb::object base = nb::steal(PyCapsule_New(holder, "shapejit.buffer", [](PyObject* c) {
    delete static_cast<ir::Tensor*>(PyCapsule_GetPointer(c, "shapejit.buffer"));
  }));
  if (!base.is_valid()) {
    delete holder;
    throw nb::python_error();
  }
  PyObject* arr = PyArray_New(&PyArray_Type, nd, dims, type, strides, data, 0, NPY_ARRAY_WRITEABLE, nullptr);
  if (!arr) throw nb::python_error();
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(arr), base.release().ptr()) < 0) {
    Py_DECREF(arr);
    throw nb::python_error();
  }
  return nb::steal(arr);
}

ir::ByteSpan argument_span(PyObject* o, const DLTensor& dl) {
  return PyArray_Check(o) ? numpy_span(o) : ir::byte_span(dl);
}

ir::ByteSpan numpy_span(PyObject* o) {
  if (!PyArray_Check(o)) return {};
  auto* a = reinterpret_cast<PyArrayObject*>(o);
  const npy_intp* dims = PyArray_DIMS(a);
  const npy_intp* strides = PyArray_STRIDES(a);
  intptr_t lo = 0, hi = 0;
  for (int d = 0; d < PyArray_NDIM(a); ++d) {
    if (dims[d] == 0) return {};
    (strides[d] < 0 ? lo : hi) += (dims[d] - 1) * strides[d];
  }
  const auto data = reinterpret_cast<uintptr_t>(PyArray_DATA(a));
  return {data + lo, data + hi + static_cast<uintptr_t>(PyArray_ITEMSIZE(a))};
}

}  // namespace shapejit::python
