#include "python/src/results.h"

#include <algorithm>
#include <array>
#include <cstring>

#include <nanobind/stl/vector.h>

namespace shapejit::python {

ResultSpec ResultSpec::read(nb::handle spec) {
  ResultSpec r;
  r.python = nb::borrow(spec);
  if (spec.is_none()) return r;
  r.tree = spec.attr("tree");
  r.count = nb::cast<size_t>(spec.attr("count"));
  r.numbers = nb::len(nb::object(spec.attr("numbers"))) > 0;
  for (nb::handle w : nb::iter(spec.attr("writes"))) {
    Write write{nb::cast<size_t>(w[0]), std::nullopt};
    if (!w[1].is_none()) {
      write.dims = nb::cast<std::vector<int>>(w[1]);
      for (const int d : *write.dims) {
        if (d < 0 || d >= static_cast<int>(ir::kMaxRank)) raise(internal_error("a write's block names dim " + std::to_string(d)));
      }
    }
    r.writes.push_back(std::move(write));
  }
  return r;
}

namespace {

int64_t start_of(const nb::object& v) {
  nb::object i = nb::steal(PyNumber_Index(v.ptr()));
  if (!i.is_valid()) throw nb::python_error();
  return nb::cast<int64_t>(i);
}

}  // namespace

bool ResultSpec::differs_in_writes_only(const ResultSpec& other) const {
  if (one_array() && other.one_array()) return false;
  if (one_array() || other.one_array()) {
    const ResultSpec& spec = one_array() ? other : *this;
    return spec.tree.equal(nb::make_tuple("leaf")) && !spec.writes.empty();
  }
  return tree.equal(other.tree) && python.attr("numbers").equal(other.python.attr("numbers")) && count == other.count &&
         !python.attr("writes").equal(other.python.attr("writes"));
}

int64_t KernelOutputs::start(size_t i) {
  const ir::Tensor& t = outputs_.at(i);
  if (objects_[i].is_valid() || t.rank() != 0 || t.device().device_type != kDLCPU) return start_of(object(i));
  if (t.dtype() == ir::DType::kI64) return *t.ptr<int64_t>();
  if (t.dtype() == ir::DType::kI32) return *t.ptr<int32_t>();
  return start_of(object(i));
}

bool KernelOutputs::memory(size_t i, Memory& m) {
  const ir::Tensor& t = outputs_.at(i);
  // A tensor over an argument's memory (an output that is an input) may be
  // the target itself: its object, a copy, makes the write.
  if (objects_[i].is_valid() || t.borrowed() || t.device().device_type != kDLCPU) return false;
  m.data = static_cast<const char*>(t.data());
  m.nd = static_cast<int>(t.rank());
  m.type = numpy_type(t.dtype());
  m.shape = t.shape().data();
  const auto item = static_cast<int64_t>(ir::dtype_size(t.dtype()));
  for (int d = 0; d < m.nd; ++d) m.strides[d] = t.strides()[d] * item;
  return true;
}

nb::object KernelOutputs::object(size_t i) {
  if (!objects_.at(i).is_valid()) objects_[i] = to_numpy(std::move(outputs_[i]));
  return objects_[i];
}

int64_t ObjectOutputs::start(size_t i) { return start_of(values_.at(i)); }

bool ObjectOutputs::memory(size_t i, Memory& m) {
  PyObject* o = values_.at(i).ptr();
  if (!PyArray_CheckExact(o)) return false;
  auto* a = reinterpret_cast<PyArrayObject*>(o);
  m.data = static_cast<const char*>(PyArray_DATA(a));
  m.nd = PyArray_NDIM(a);
  m.type = PyArray_TYPE(a);
  m.shape = reinterpret_cast<const int64_t*>(PyArray_DIMS(a));
  for (int d = 0; d < m.nd; ++d) m.strides[d] = PyArray_STRIDES(a)[d];
  return true;
}

namespace {

// One write, resolved: its target, its value (output `value`), and its
// block's start in each dim.
struct Planned {
  PyObject* target;
  size_t value;
  const ResultSpec::Write* write;
  std::array<int64_t, ir::kMaxRank> start{};
};

// Dims [d, nd) of a block: from `src` to `dst`, both with byte strides,
// each row whose elements are contiguous in both as one copy.
void copy_dims(int d, int nd, const int64_t* shape, const char* src, const int64_t* from, char* dst, const npy_intp* to, size_t item) {
  if (d == nd - 1) {
    const auto n = static_cast<size_t>(shape[d]);
    if (from[d] == static_cast<int64_t>(item) && to[d] == static_cast<npy_intp>(item)) {
      std::memcpy(dst, src, n * item);
      return;
    }
    for (int64_t i = 0; i < shape[d]; ++i) std::memcpy(dst + i * to[d], src + i * from[d], item);
    return;
  }
  for (int64_t i = 0; i < shape[d]; ++i) copy_dims(d + 1, nd, shape, src + i * from[d], from, dst + i * to[d], to, item);
}

// The write made as a copy of the value's bytes into the target's, where
// it is one: a NumPy target, a value of its dtype and rank in memory of its
// own, the block within the target (a dim the block does not name: the
// target's whole dim). False, with nothing written, where the target's
// __setitem__ has to make it.
bool copied(const Planned& p, WriteValues& values) {
  if (!is_plain_numpy(p.target)) return false;
  WriteValues::Memory v;
  if (!values.memory(p.value, v)) return false;
  auto* target = reinterpret_cast<PyArrayObject*>(p.target);
  const int nd = PyArray_NDIM(target);
  if (v.nd != nd || v.type != PyArray_TYPE(target)) return false;
  const npy_intp* tshape = PyArray_DIMS(target);
  std::array<bool, ir::kMaxRank> named{};
  if (p.write->dims) {
    for (const int d : *p.write->dims) named[d] = true;
  }
  int64_t size = 1;
  for (int d = 0; d < nd; ++d) {
    const int64_t s = named[d] ? p.start[d] : 0;
    if (named[d] ? (s < 0 || v.shape[d] > tshape[d] - s) : v.shape[d] != tshape[d]) return false;
    size *= v.shape[d];
  }
  if (size == 0) return true;
  const npy_intp* to = PyArray_STRIDES(target);
  char* dst = static_cast<char*>(PyArray_DATA(target));
  for (int d = 0; d < nd; ++d) dst += (named[d] ? p.start[d] : 0) * to[d];
  const auto item = static_cast<size_t>(PyArray_ITEMSIZE(target));
  if (nd == 0) {
    std::memcpy(dst, v.data, item);
    return true;
  }
  copy_dims(0, nd, v.shape, v.data, v.strides, dst, to, item);
  return true;
}

// target[...] = value, or target[start:start + n, ...] in the dims the block names.
void assigned(const Planned& p, WriteValues& values) {
  const nb::object value = values.object(p.value);
  nb::object key;
  if (!p.write->dims) {
    key = nb::borrow(Py_Ellipsis);
  } else {
    const auto nd = nb::cast<size_t>(nb::handle(p.target).attr("ndim"));
    const nb::object shape = value.attr("shape");
    nb::list index;
    for (size_t d = 0; d < nd; ++d) index.append(nb::slice(nb::none(), nb::none(), nb::none()));
    for (const int d : *p.write->dims) {
      if (static_cast<size_t>(d) >= nd) raise(internal_error("a write's block names a dim its target lacks"));
      const int64_t start = p.start[d];
      index[d] = nb::slice(nb::int_(start), nb::int_(start + nb::cast<int64_t>(shape[d])), nb::none());
    }
    key = nb::tuple(index);
  }
  if (PyObject_SetItem(p.target, key.ptr(), value.ptr()) < 0) throw nb::python_error();
}

}  // namespace

void write_back(const ResultSpec& spec, WriteValues& values, size_t num_inputs, const InputFn& input) {
  std::vector<Planned> plan;
  size_t at = spec.count;
  for (const ResultSpec::Write& w : spec.writes) {
    if (w.input >= num_inputs) raise(internal_error("a write into input " + std::to_string(w.input) + " of " + std::to_string(num_inputs)));
    Planned p{input(w.input), 0, &w};
    if (w.dims) {
      for (const int d : *w.dims) p.start[d] = values.start(at++);
    }
    p.value = at++;
    plan.push_back(p);
  }
  for (const Planned& p : plan) {  // all or none: NumPy refuses before it writes
    if (PyArray_Check(p.target) && !PyArray_ISWRITEABLE(reinterpret_cast<PyArrayObject*>(p.target))) {
      PyErr_SetString(PyExc_ValueError, "assignment destination is read-only");
      throw nb::python_error();
    }
  }
  for (const Planned& p : plan) {
    if (!copied(p, values)) assigned(p, values);
  }
}

bool writes_overlap(const ResultSpec& spec, size_t num_inputs, const std::function<ir::ByteSpan(size_t)>& span) {
  if (spec.writes.empty()) return false;
  // Every input's bytes, sorted by where they begin; a sweep finds a pair
  // that overlaps with a written one among them: n log n, for a model's
  // hundreds of inputs and tens of cache writes.
  struct Bytes {
    uintptr_t begin, end;
    bool written;
  };
  thread_local std::vector<Bytes> spans;
  spans.clear();
  std::vector<bool> written(num_inputs, false);
  for (const ResultSpec::Write& w : spec.writes) {
    if (w.input < num_inputs) written[w.input] = true;
  }
  for (size_t i = 0; i < num_inputs; ++i) {
    const ir::ByteSpan b = span(i);
    if (b.begin != b.end) spans.push_back({b.begin, b.end, written[i]});
  }
  std::sort(spans.begin(), spans.end(), [](const Bytes& a, const Bytes& b) { return a.begin < b.begin; });
  uintptr_t any_end = 0, written_end = 0;  // the furthest end of those before, all and written ones
  for (const Bytes& b : spans) {
    if (b.begin < (b.written ? any_end : written_end)) return true;
    any_end = std::max(any_end, b.end);
    if (b.written) written_end = std::max(written_end, b.end);
  }
  return false;
}

}  // namespace shapejit::python
