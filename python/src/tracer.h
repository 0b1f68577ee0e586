// The tracer as Python sees it while a jitted function is traced: the
// package's Tensor and SymInt values (python/shapejit/_trace/) call these
// methods with value ids. It is valid only during its trace; afterwards every
// method raises, so a tracing value that escaped cannot reach freed memory.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "python/src/binding.h"

namespace shapejit::python {

// A graph traced by the package itself between two graph breaks (a
// segment: python/shapejit/_runtime/segments.py), over the inputs it reads, with
// what the tracer observed, and its canonical hash, which names the site it
// runs on.
struct HeldGraph {
  std::shared_ptr<const ir::Graph> graph;
  std::vector<trace::Observation> observed;
  std::string hash;
  std::vector<int> inputs;  // the tracer's inputs the graph reads, in its order
};

class PyTracer {
 public:
  explicit PyTracer(trace::Tracer* t) : t_(t) {}
  // A tracer of its own over `arrays` (every dim a symbol, 0 and 1 pinned
  // when `specialize_zero_one`); `finish` ends it with its graph.
  PyTracer(nb::handle arrays, bool specialize_zero_one);
  HeldGraph finish();

  // Ends the trace's access (the function returned).
  void close() { t_ = nullptr; }
  trace::Tracer& get() const;
  // The break the Python side declared (a branch on tensor data), if any.
  const std::optional<Status>& declared_break() const { return break_; }
  // The error of the function's own the Python side declared, if any.
  const std::optional<Status>& declared_raise() const { return raised_; }

  int num_inputs() const { return get().num_inputs(); }
  // An op of TRACE_FORMAT.md by name; operands are value ids (objects with
  // an `_id`), ints and floats; attrs by their TRACE_FORMAT names.
  int op(const std::string& name, nb::handle operands, nb::handle attrs);
  // (is_tensor, dtype name, rank).
  nb::tuple info(int value) const;
  // A tensor value's element count at this call (None where a size has no
  // hint: a data-dependent one): what a choice that is only about speed
  // reads, deciding nothing.
  std::optional<int64_t> elements_hint(int value) const;
  int64_t guard_int(int value);
  bool guard_bool(const std::string& cmp, nb::handle lhs, nb::handle rhs);
  void output(int value);
  // Those of `values` that no output so far is computed from.
  std::vector<int> dead(const std::vector<int>& values) const;
  // Records the break and returns; the caller raises GraphBreak.
  void break_graph(const std::string& why);
  // Records that the trace raised the error `label` names (the site keeps
  // a raised entry, whose calls NumPy runs) and returns; the caller raises
  // the error, which Function::call drops to run the call in NumPy.
  void raise_error(const std::string& label);

 private:
  trace::Tracer* t_;
  std::unique_ptr<trace::Tracer> owned_;
  std::optional<Status> break_;
  std::optional<Status> raised_;
};

void bind_tracer(nb::module_& m);

}  // namespace shapejit::python
