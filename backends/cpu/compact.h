// The LLVM backend's compaction routine: a compact step (loops::CompactStep:
// nonzero, masked_select) on one call. The domain is split into blocks;
// `count` counts each block's set elements across TBB's threads and sums
// them in order (the prefix each block's fill starts at), and `fill`
// writes the blocks, again across threads. Between the two the kernel
// allocates the result at the count it learned.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "backends/loops/loop_ir.h"
#include "core/ir/tensor.h"

namespace shapejit::backends::cpu {

class Compaction {
 public:
  // `values` are the call's symbol values (sizes and strides of the step);
  // `values_buf` is null for nonzero; `counts`, the blocks' counts where a
  // step before counted them (CompactStep::counts), else null.
  Compaction(const loops::CompactStep& c, ir::DType mask_dtype, ir::DType value_dtype, const char* mask_buf, const char* values_buf,
             const int64_t* counts, std::span<const int64_t> values);

  // The set elements: the result's first dim.
  int64_t count();
  // Called with each block's rows [begin, end) once they are written (a
  // compaction's epilogue, loops::CompactStep::epilogue); false stops the
  // fill.
  using RowsDone = std::function<bool(int64_t begin, int64_t end)>;
  // Writes the result into `out` (count() rows); false when `done` was.
  bool fill(char* out, const RowsDone& done = {}) const;

 private:
  // Walks [begin, end) of the domain in row-major order, calling
  // f(mask offset, value offset, coordinates) per element.
  template <typename F>
  void walk(int64_t begin, int64_t end, F&& f) const;
  template <typename M>
  void count_blocks();
  template <typename M, typename V>
  bool fill_blocks(char* out, const RowsDone& done) const;

  ir::Op op_;
  ir::DType mask_dtype_, value_dtype_;
  const char* mask_;
  const char* values_;
  const int64_t* counts_;
  std::vector<int64_t> shape_, mask_strides_, value_strides_;
  int64_t size_ = 1;
  bool dense_ = true;              // both read at the element's row-major index
  std::vector<int64_t> prefix_;    // per block, the set elements before it; then the total
};

}  // namespace shapejit::backends::cpu
