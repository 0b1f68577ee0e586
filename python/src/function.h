// A jitted Python function: the call path from Python into a CallSite.
//
// A call's arrays (top-level NumPy arrays on the fast path; any pytree of
// arrays and values otherwise, walked in C++ where the call's signature was
// met before, through the package's flatten where not) are the inputs; the
// non-array values make the key that picks a site, so they are
// guarded by value. Arrays the function reads from its closure or globals
// (weights) are inputs too, after the call's own: the first trace that meets
// one returns kRetry with what it found, and the call is made again with
// them, on a new generation of the site (its input count changed). Each
// capture keeps where it was found (a global's name, a closure cell) and is
// read from there on every call, so rebinding a weight takes effect without
// a recompile. The other values a trace reads there (a global float, a
// closure's int, `self.temperature`, a function bound to a global) are
// constants of its entries: each is watched, compared before every call,
// and a call that finds one changed is served by the entries traced with
// its values (a variant), or traced again.
//
// The GIL is released while the site runs (guards, kernel, compile) and
// taken back by the trace function and the log.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "python/src/arrays.h"
#include "python/src/pytree.h"
#include "python/src/results.h"
#include "python/src/watches.h"

namespace shapejit::python {

class Function {
 public:
  // `helpers` is the function's shapejit._runtime.calls.Callbacks: flatten
  // (a call's arrays and key, where the C++ walk has not met its
  // signature), trace (the miss callback: a Traced), results (those that
  // hold numbers), eager, segmented (a SegmentedRun), still_raises, and
  // dynamic_floats; `segments` its _runtime.segments.Segments.
  Function(std::shared_ptr<runtime::Jit> jit, nb::object fn, std::string name, nb::object helpers, nb::object segments);
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;

  nb::object call(nb::args args, nb::kwargs kwargs);
  nb::dict stats() const;
  std::string explain() const;
  const std::string& name() const { return name_; }

 private:
  struct Capture {
    nb::object array;
    bool from_float = false;  // found as a Python float, held as a 0-d float64 array
    nb::object source;  // (root, ((is_attr, key), ...)), or None: held as it was found;
                        // (root, steps, base): a view of `base`, found there, held while it is
    // The source as refresh walks it, read once: its root (null: held as
    // found), its steps (is_attr, key), the view's base (null: none), and
    // how many leading steps it shares with the path of the capture before
    // it that has one (from the same root).
    nb::object root, base;
    std::vector<PathStep> steps;
    size_t shared = 0;
  };
  // Appends the capture of `array` found at `source` to `captures`.
  static void add_capture(std::vector<Capture>& captures, nb::handle array, nb::handle source);
  // Appends a capture a trace found, (array, source), unless it has it.
  static void add_found(std::vector<Capture>& captures, nb::handle found);
  // What a site's entries were traced with: the values they hold, the
  // CallSite that has them, its captures and its results' structure.
  struct Variant {
    Watches watches;  // the values they hold
    runtime::CallSite* site = nullptr;
    std::vector<Capture> captures;
    bool traced = false;
    ResultSpec spec;  // the results' of its first trace, which every entry gives
  };
  struct Site : Variant {
    std::string name;  // of generation 0
    nb::object key;
    size_t arity = 0;  // the fast path's: how many arrays
    std::vector<runtime::CallSite*> generations;  // every one, for stats
    // The variants traced with other values (a global rebound, a
    // temperature changed), the current one's place taken by whichever
    // holds when a call finds its values changed.
    std::vector<Variant> others;
  };
  static constexpr size_t kMaxVariants = 8;
  struct TraceContext;

  Site& site_for(nb::handle key, size_t fast_arity);
  void next_generation(Site& s);
  // A site whose values changed takes the variant they match, or a new
  // one to trace (false: it has kMaxVariants already, and NumPy runs the
  // call). A float that changed to another is reported to the package
  // (Callbacks.float_changed), which makes its place an input after the
  // backoff, as it does float arguments.
  bool match_values(Site& s, PathRoots& roots);
  // Reads each capture from its source; false when one is gone (retrace).
  // A path that begins as the one before it resumes from where that one
  // was at the end of their common steps: a model's weights,
  // p["layers"][i][name], are one lookup each, not three.
  bool refresh(Site& s, PathRoots& roots);
  Status trace(Site& s, TraceContext& ctx, trace::Tracer& t);
  // The call run by NumPy, counted.
  nb::object numpy_runs(nb::args args, nb::kwargs kwargs);
  // A call the site breaks on, run as compiled segments over its `arrays`;
  // the arrays it read that were not captures become captures (a new
  // generation); its writes made here, as a compiled call's are.
  nb::object run_segmented(Site& s, nb::args args, nb::kwargs kwargs, nb::handle arrays, nb::handle captures, nb::handle sources);
  // A compiled call's results: its writes made into the call's inputs
  // (`input(i)`, i < num_inputs: its arrays, captures after its own), the
  // results built from the others.
  nb::object results(const Site& s, std::vector<ir::Tensor>& outputs, size_t num_inputs, const InputFn& input);
  // The results of `spec` from their arrays, once its writes are made:
  // built here where they are arrays alone, by calls.results where they
  // hold numbers or the call's own arrays.
  nb::object build(const ResultSpec& spec, std::vector<nb::object>& results, size_t num_inputs, const InputFn& input);

  std::shared_ptr<runtime::Jit> jit_;
  nb::object fn_;
  std::string name_;
  nb::object flatten_, trace_, results_, eager_, segmented_, still_raises_;
  nb::object helpers_;   // the function's Callbacks: whether its floats are inputs
  nb::object args_root_;       // arguments.ARGS: the root of a path from the call's arguments
  nb::object instance_types_;  // arguments.INSTANCE_TYPES, for the C++ walk
  nb::object segments_;  // the segmented runs after graph breaks: their stats and breaks
  std::vector<std::unique_ptr<Site>> sites_;
  std::vector<Site*> by_arity_;  // the fast path: all arguments NumPy arrays, by count
  nb::dict by_key_;             // the other calls: flatten's key -> index in sites_
  TreeSites<Site> tree_sites_;  // the signatures of their calls met so far -> their sites
  uint64_t retries_ = 0;
  uint64_t value_changes_ = 0;     // calls that found a watched value changed
  uint64_t unmatched_values_ = 0;  // of those, calls NumPy ran: no variant matched, and no room for one
  uint64_t numpy_runs_ = 0;  // calls run whole by NumPy (numpy_runs)
};

void bind_function(nb::module_& m);

}  // namespace shapejit::python
