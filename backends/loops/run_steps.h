// How a kernel runs its loop program's steps, the same on every device, so
// that a new kind of step is taught to the rule once and to each device's
// runner (the CPU's kernel, CUDA's) as a method:
//
//   1. the checks that need no data run first (LoopProgram::check_fails);
//   2. the device places its buffers, all but those sized by a
//      data-dependent count (RunPlan::sized_later);
//   3. the steps run in the program's order; a buffer sized by a count is
//      allocated at the first step that uses it, once the compactions before
//      it have counted; a compaction counts, its count goes into the call's
//      values and symbols, the buffers first used there are allocated, then
//      it fills;
//   4. a step's epilogue (the pointwise step after a matmul or a
//      compaction, LoopProgram's `epilogue` flags) goes to the step it
//      finishes, which runs it on its rows as they are made, or after;
//   5. the device finishes (a GPU reads its error flag), then the checks on
//      data-dependent sizes run.
//
// A failed check, at any point, is use_reference(): the fallback wrapper
// (backends/fallback.h) runs the call on the reference interpreter, which
// reports the error in its own words. A runner's method returns that when
// its step's code failed a check, an error when the device failed, or ok.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "backends/loops/loop_ir.h"
#include "core/support/status.h"

namespace shapejit::backends::loops {

// A device's part: one method per kind of step, called by run_steps. `s` is
// the step's index in the program; `values` the call's symbol values
// (symbol_values), the compactions' counts among them once counted;
// `epilogue` the index of the step's epilogue, or -1.
class StepRunner {
 public:
  virtual ~StepRunner() = default;

  // Step 2: the buffers not sized by a count, on this call's values.
  virtual Status place(std::span<const int64_t> values) = 0;
  // A buffer sized by a count, first used by the step about to run.
  virtual Status allocate(int buffer, std::span<const int64_t> values) = 0;

  // A compaction: its count, then (once the count is in `values` and the
  // buffers first used here are allocated) its fill.
  virtual Expected<int64_t> count(size_t s, std::span<const int64_t> values) = 0;
  virtual Status fill(size_t s, int epilogue, std::span<const int64_t> values) = 0;
  // `values` changed (a count is known): what the runner evaluated of them
  // is evaluated again. Called before the count's buffers are allocated.
  virtual void recount(std::span<const int64_t> values) {}

  virtual Status loops(size_t s, std::span<const int64_t> values) = 0;
  virtual Status matmul(size_t s, int epilogue, std::span<const int64_t> values) = 0;
  virtual Status scan(size_t s, std::span<const int64_t> values) = 0;
  virtual Status scatter(size_t s, std::span<const int64_t> values) = 0;
  virtual Status attention(size_t s, std::span<const int64_t> values) = 0;

  // Step 5: every step is issued; the device reports what failed.
  virtual Status finish() { return Status::ok(); }
};

// What a kernel works out once of its program for run_steps.
class RunPlan {
 public:
  explicit RunPlan(const LoopProgram& p);

  // The buffers sized by a data-dependent count (outputs and temporaries),
  // each with the first step that uses it, where it is allocated.
  const std::vector<std::pair<int, int>>& sized_later() const { return sized_later_; }
  bool is_sized_later(int buffer) const;

 private:
  std::vector<std::pair<int, int>> sized_later_;
};

// Runs `p`'s steps on `runner` by the rule above. `values`: the call's
// symbol values, written with the counts; `symbols`: the call's symbols
// (Kernel::run's), written with the counts too.
Status run_steps(const LoopProgram& p, const RunPlan& plan, StepRunner& runner, std::span<int64_t> values, std::span<int64_t> symbols);

}  // namespace shapejit::backends::loops
