// A traced function's results as the extension gives them back.
//
// A trace gives their spec (python/shapejit/_runtime/calls.py, ResultSpec),
// read here once per site: their structure, which of them are numbers or the
// call's own arrays (Python builds those: calls.results), how many there
// are, and the writes the function makes into the call's inputs. The
// kernel's outputs are the results, then per write its block's start in
// each dim it names and its value.
//
// Every write a call makes into its inputs is made here, after a compiled
// call and after a segmented run alike, as NumPy's assignment makes it: all
// are refused, before any is made, where a target is read-only; a block of
// the target's own dtype and within its bounds is copied straight from the
// value's memory; any other write (a cast, a broadcast, an input that is not
// a NumPy array) is the target's own __setitem__.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "python/src/arrays.h"

namespace shapejit::python {

struct ResultSpec {
  nb::object python;  // the ResultSpec; None: one array and no writes
  nb::object tree;    // their structure, a _pytree spec
  size_t count = 0;   // the results; the writes' starts and values follow them
  bool numbers = false;  // numbers or the call's own arrays among them: Python builds the results
  struct Write {
    size_t input = 0;
    std::optional<std::vector<int>> dims;  // the dims its block's start names; none: the whole input
  };
  std::vector<Write> writes;

  // The spec a trace gave (a ResultSpec, or None).
  static ResultSpec read(nb::handle spec);
  bool one_array() const { return python.is_none(); }
  // Whether `other`, another trace's spec of the same site, differs from
  // this one in its writes alone.
  bool differs_in_writes_only(const ResultSpec& other) const;
};

// Input i of a call (i < its number of inputs): the call's arrays, then its captures.
using InputFn = std::function<PyObject*(size_t)>;

// The outputs as the writes read them: a block's start, a value's bytes
// where they may be copied from as they lie, or the value as a Python object.
class WriteValues {
 public:
  virtual ~WriteValues() = default;
  struct Memory {
    const char* data = nullptr;
    int nd = 0;
    int type = 0;  // NumPy's type number
    const int64_t* shape = nullptr;
    int64_t strides[ir::kMaxRank] = {};  // in bytes
  };
  virtual int64_t start(size_t i) = 0;
  // Output i's elements where nothing else holds them (a kernel's own
  // buffer, a NumPy array), false where its object must make the write.
  virtual bool memory(size_t i, Memory& m) = 0;
  virtual nb::object object(size_t i) = 0;
};

// A compiled call's outputs, read where the kernel wrote them; made NumPy
// arrays only where asked for (objects).
class KernelOutputs final : public WriteValues {
 public:
  explicit KernelOutputs(std::vector<ir::Tensor>& outputs) : outputs_(outputs), objects_(outputs.size()) {}
  int64_t start(size_t i) override;
  bool memory(size_t i, Memory& m) override;
  nb::object object(size_t i) override;

 private:
  std::vector<ir::Tensor>& outputs_;
  std::vector<nb::object> objects_;  // those made, which own their tensors from then on
};

// A segmented run's outputs: NumPy arrays and numbers.
class ObjectOutputs final : public WriteValues {
 public:
  explicit ObjectOutputs(std::vector<nb::object>& values) : values_(values) {}
  int64_t start(size_t i) override;
  bool memory(size_t i, Memory& m) override;
  nb::object object(size_t i) override { return values_.at(i); }

 private:
  std::vector<nb::object>& values_;
};

// Makes `spec`'s writes into the call's `num_inputs` inputs, in order, from
// `values`. Raises what NumPy raises, having made none, where a target is
// read-only.
void write_back(const ResultSpec& spec, WriteValues& values, size_t num_inputs, const InputFn& input);

// Whether an input `spec` writes into shares memory with another of the
// call's `num_inputs` inputs (`span(i)`: the bytes input i spans): NumPy
// would read the write through the other name, where the kernel took them
// as apart.
bool writes_overlap(const ResultSpec& spec, size_t num_inputs, const std::function<ir::ByteSpan(size_t)>& span);

}  // namespace shapejit::python
