// The LLVM backend: a graph lowered to loops (backends/loops), JIT-compiled
// with ORC, run with TBB across cores; float matmuls on the backend's own
// GEMM (gemm.h), or OpenBLAS for a matrix-vector product and on hosts
// without AVX2 (matmul_plan.h: how a product splits into blocks;
// products.h: a block's product on either).
//
// A kernel runs its steps in order on the caller's inputs and outputs and on
// temporaries; outputs and each call's arena of temporaries come from the
// process's BlockPool, so a kernel called again faults in no new memory.
// Threads are TBB's only: matmuls split into blocks of rows (and columns),
// each a single-threaded product (OpenBLAS's own threads would spin
// against TBB's on the same cores); attention into tiles of queries. When
// generated code reports a failed check (a gather index out of range, an integer to a
// negative power, max over an empty axis), the kernel hands the call to the
// reference interpreter (backends/fallback.h), which reports the same error
// in its own words.
#include <cblas.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <type_traits>

#include "backends/backend.h"
#include "backends/frozen.h"
#include "backends/llvm/attention.h"
#include "backends/llvm/compact.h"
#include "backends/llvm/gemm.h"
#include "backends/llvm/lines.h"
#include "backends/llvm/matmul_plan.h"
#include "backends/llvm/products.h"
#include "backends/llvm/session.h"
#include "backends/llvm/steps.h"
#include "backends/pool/arena.h"
#include "backends/pool/block_pool.h"
#include "backends/pool/huge_pages.h"
#include "backends/loops/lower.h"
#include "core/support/hash.h"
#include "core/sym/expr_table.h"

namespace shapejit::backends::llvm {

namespace {

using loops::Buffer;
using loops::LoopProgram;
using sym::Expr;

// Outer iterations per task: enough work that a task outweighs its
// scheduling, a sleeping thread woken included. At 1 << 15, the copies of
// a decode step's 256 KB caches (the peers' decoder at a cache of 1024)
// were split in two and took 12-15 us each on two cores, against 6.3 on
// one: the call took 47 us on two cores, 32 on one; now 31 on two.
constexpr int64_t kWorkPerTask = 1 << 17;
// A matmul's epilogue runs in the task that made its block of rows when the
// block fits in this much of the core's cache.
constexpr int64_t kEpilogueInCacheBytes = 256 << 10;
// A temporary sized by a data-dependent count is placed in the call's arena
// at the count's bound up to this size (no allocation when the count is
// known), and taken from the pool at the count beyond it.
constexpr size_t kAtBoundBytes = size_t{256} << 10;
// Freed buffers the pool keeps for reuse, for all LLVM backends of the
// process together.
constexpr size_t kPoolRetainedBytes = size_t{512} << 20;

std::shared_ptr<pool::BlockPool> process_pool() {
  static const std::shared_ptr<pool::BlockPool> pool = pool::BlockPool::host(kPoolRetainedBytes);
  return pool;
}

// A dense tensor over a block of the pool (outputs).
ir::Tensor pooled(pool::BlockPool& pool, ir::DType dtype, std::vector<int64_t> shape) {
  const size_t bytes = ir::Tensor::dense_bytes(dtype, shape);
  return ir::Tensor::over(dtype, std::move(shape), pool.take(bytes));
}

// A step's function with the arguments it reads, gathered for one call.
struct StepCall {
  StepFn fn = nullptr;
  char* const* bufs = nullptr;
  const int64_t* syms = nullptr;
  int32_t operator()(int64_t begin, int64_t end) const { return fn(bufs, syms, begin, end); }
  explicit operator bool() const { return fn != nullptr; }
};

class LlvmKernel final : public Kernel {
 public:
  LlvmKernel(LoopProgram p, std::vector<BoundStep> steps, std::shared_ptr<pool::BlockPool> pool, CompilePhases phases)
      : p_(std::move(p)),
        steps_(std::move(steps)),
        pool_(std::move(pool)),
        arena_(temp_lifetimes(p_)),
        may_defer_(p_.may_defer()),
        phases_(phases) {
    const std::vector<std::pair<int, int>> life = loops::buffer_lifetimes(p_);
    for (size_t i = 0; i < p_.buffers.size(); ++i) {
      const Buffer& b = p_.buffers[i];
      if (b.kind == Buffer::Kind::kInput || std::none_of(b.shape.begin(), b.shape.end(), [&](const Expr& d) { return p_.is_data_dependent(d); })) continue;
      if (life[i].first >= 0) sized_later_.push_back({static_cast<int>(i), life[i].first});
    }
    std::set<const cache::Artifact*> distinct;
    for (const BoundStep& b : steps_) {
      local_bufs_ = std::max(local_bufs_, b.buffers.size());
      local_syms_ = std::max(local_syms_, b.symbols.size());
      if (b.code && distinct.insert(b.code.get()).second) code_bytes_ += b.code->code_bytes();
    }
    // What each call evaluates, in one table: the temporaries' dims, the
    // loop steps' extents and work, the products' shapes.
    auto add = [&](const std::vector<Expr>& es, std::vector<int>& out) {
      for (const Expr& e : es) out.push_back(table_.add(e));
    };
    temp_dims_.resize(p_.buffers.size());
    for (size_t i = 0; i < p_.buffers.size(); ++i) {
      if (p_.buffers[i].kind == Buffer::Kind::kTemp) add(p_.buffers[i].shape, temp_dims_[i]);
    }
    step_slots_.resize(p_.steps.size());
    for (size_t s = 0; s < p_.steps.size(); ++s) {
      const loops::Step& st = p_.steps[s];
      StepSlots& slots = step_slots_[s];
      if (s < steps_.size()) add(steps_[s].offsets, slots.offsets);
      if (st.kind == loops::Step::Kind::kMatmul) add(st.matmul.shape_exprs(), slots.matmul);
      if (st.kind != loops::Step::Kind::kLoops) continue;
      add(st.loops.outer_extents, slots.extents);
      add(st.loops.empty_if_zero, slots.empty_if_zero);
      slots.work = table_.add(st.loops.work_per_row);
    }
    std::vector<int> product_inputs;  // what products read as B
    for (const loops::Step& st : p_.steps) {
      if (st.kind != loops::Step::Kind::kMatmul) continue;
      const Buffer& b = p_.buffers[st.matmul.b.buffer];
      if (b.kind == Buffer::Kind::kInput && std::find(product_inputs.begin(), product_inputs.end(), b.index) == product_inputs.end()) {
        product_inputs.push_back(b.index);
      }
    }
    weights_ = std::make_unique<pool::RecurringInputs>(std::move(product_inputs));
  }
  bool may_use_reference() const override { return may_defer_; }

  Status run(const RunContext& ctx, std::span<const DLTensor* const> args, std::span<int64_t> symbols, std::span<ir::Tensor> outputs) override;
  size_t code_bytes() const override { return code_bytes_ + sizeof(*this); }
  const CompilePhases* phases() const override { return &phases_; }

 private:
  int64_t eval(Expr e, std::span<const int64_t> values) const { return sym::evaluate(e, values); }
  // Step s's function over the call's buffers and symbols, its arguments
  // gathered into `local_bufs` and `local_syms`.
  // `evaluated` holds table_'s slots, the step's lifted offsets among them.
  StepCall call(size_t s, char* const* bufs, const int64_t* values, const std::vector<int64_t>& evaluated, char** local_bufs,
                int64_t* local_syms) const {
    const BoundStep& b = steps_[s];
    const std::vector<int>& offsets = step_slots_[s].offsets;
    b.gather(bufs, values, [&](size_t j) { return evaluated[static_cast<size_t>(offsets[j])]; }, local_bufs, local_syms);
    return StepCall{b.fn, local_bufs, local_syms};
  }
  // C = A @ B in blocks of rows; `epilogue`, when the step has one, runs on
  // each block as soon as its product is whole. False when the epilogue failed a check.
  bool matmul(const loops::MatmulStep& m, const loops::MatmulShape& shape, ir::DType dt, char* const* bufs, StepCall epilogue) const;
  // cumsum, cumprod, sort or argsort (loops::ScanStep), lines split across threads.
  void scan(const loops::ScanStep& c, char* const* bufs, std::span<const int64_t> values) const;

  // The buffers sized by a data-dependent count that step s uses first,
  // now that `values` hold the counts: a temporary placed in the arena at
  // its bound (`reserved[i]` bytes there) keeps its place where its count
  // fits, else it is taken from the pool and kept in `held` until the call
  // returns; an output of the call is allocated.
  void allocate_sized_later(size_t s, std::vector<char*>& bufs, const std::vector<size_t>& reserved, std::span<const int64_t> values,
                            std::span<ir::Tensor> outputs, std::vector<std::shared_ptr<void>>& held) const;
  // Compact step s: its count, set in `values` and `symbols`, and table_
  // evaluated again into `evaluated`; then the buffers first used here (its
  // result, its epilogue's); then the fill, with its epilogue on each
  // block's rows. False when the epilogue failed a check.
  bool compact(size_t s, std::vector<char*>& bufs, const std::vector<size_t>& reserved, std::vector<int64_t>& values, std::span<int64_t> symbols,
               std::vector<int64_t>& evaluated, std::span<ir::Tensor> outputs, std::vector<std::shared_ptr<void>>& held, char** local_bufs,
               int64_t* local_syms) const;

  // The temporaries' steps, for the arena (inputs, outputs and per-task
  // scratch are not in it).
  static std::vector<std::pair<int, int>> temp_lifetimes(const LoopProgram& p) {
    std::vector<std::pair<int, int>> life = loops::buffer_lifetimes(p);
    for (size_t i = 0; i < life.size(); ++i) {
      if (p.buffers[i].kind != Buffer::Kind::kTemp) life[i] = {-1, -1};
    }
    return life;
  }

  LoopProgram p_;
  std::vector<BoundStep> steps_;  // per step: its code (loop and attention steps)
  size_t local_bufs_ = 0, local_syms_ = 0;  // the most a step's function reads
  size_t code_bytes_ = 0;
  std::shared_ptr<pool::BlockPool> pool_;
  pool::ArenaPlanner arena_;
  bool may_defer_;  // LoopProgram::may_defer
  CompilePhases phases_;
  // Buffers sized by a data-dependent count, with the first step that
  // uses them: allocated there, once the compact steps before it ran.
  std::vector<std::pair<int, int>> sized_later_;
  // The expressions a call evaluates (core/sym/expr_table.h), and where
  // each use finds its value: per temporary its dims; per step its
  // product's shape (MatmulStep::shape_exprs) or its loops' extents,
  // empty_if_zero and work per row, and its code's lifted offsets
  // (BoundStep::offsets).
  sym::ExprTable table_;
  std::vector<std::vector<int>> temp_dims_;
  struct StepSlots {
    std::vector<int> matmul, extents, empty_if_zero, offsets;
    int work = -1;
  };
  std::vector<StepSlots> step_slots_;
  // The inputs products read as B: those that recur (weights) are put on
  // huge pages (pool::HugePageBacking).
  std::unique_ptr<pool::RecurringInputs> weights_;
};

Status LlvmKernel::run(const RunContext&, std::span<const DLTensor* const> args, std::span<int64_t> symbols, std::span<ir::Tensor> outputs) {
  if (!weights_->empty()) {
    // Frozen weights are read as the panels made from them, not in place.
    std::vector<pool::HugePageBacking::Range> due = weights_->observe(args);
    std::erase_if(due, [](const pool::HugePageBacking::Range& r) { return FrozenMemory::process().frozen(r.data, r.bytes); });
    if (!due.empty()) {
      pool::HugePageBacking::process().request(due);
    } else {
      pool::HugePageBacking::process().work();
    }
  }
  // The symbols, then room for a step's own (what its function reads):
  // one allocation a call, as for the buffers below.
  std::vector<int64_t> values = loops::symbol_values(p_, args, symbols);
  const size_t num_values = values.size();
  values.resize(num_values + local_syms_);
  int64_t* local_syms = values.data() + num_values;
  // The checks, all but those on data-dependent sizes, which wait for the
  // end: a step whose check fails does nothing (its loops are empty), and
  // the reference interpreter then runs the call.
  if (p_.check_fails(values, false)) return use_reference();
  std::vector<int64_t> evaluated;  // table_'s slots, evaluated again when a count is known
  table_.evaluate(values, evaluated);
  auto gather = [&](const std::vector<int>& slots, std::vector<int64_t>& out) -> std::span<const int64_t> {
    out.resize(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) out[i] = evaluated[slots[i]];
    return out;
  };
  std::vector<int64_t> gathered, gathered_too;
  // Temporaries: one block of the pool per call (the arena), sized by the
  // shape functions on this call's symbols, where a temporary whose last
  // step has run leaves its bytes to later ones (pool/arena.h). Dense sizes
  // are at most 2^48 bytes each (Tensor::dense_bytes), so their sum cannot
  // overflow; a block too large to allocate is std::bad_alloc, as one
  // temporary too large always was.
  // The buffers, then room for a step's own (what its function reads).
  std::vector<char*> bufs(p_.buffers.size() + local_bufs_);
  char** local_bufs = bufs.data() + p_.buffers.size();
  // A temporary sized by a count is placed at the count's bound where that
  // is at most kAtBoundBytes (reserved), else taken when the count is known.
  std::vector<int64_t> bounds;
  if (!sized_later_.empty()) {
    bounds = values;
    for (const auto& [count, bound] : p_.count_bounds) bounds[count] = eval(bound, bounds);
  }
  std::vector<size_t> bytes(p_.buffers.size(), 0), reserved(p_.buffers.size(), 0);
  std::vector<int64_t> shape;  // each temporary's in turn
  for (size_t i = 0; i < p_.buffers.size(); ++i) {
    const Buffer& b = p_.buffers[i];
    if (b.kind != Buffer::Kind::kTemp) continue;
    const bool later = std::any_of(sized_later_.begin(), sized_later_.end(), [&](const auto& x) { return x.first == static_cast<int>(i); });
    shape.clear();
    if (later) {
      for (const Expr& d : b.shape) shape.push_back(eval(d, bounds));
    } else {
      gather(temp_dims_[i], shape);
    }
    bytes[i] = ir::Tensor::dense_bytes(b.dtype, shape);
    if (later) reserved[i] = bytes[i] = bytes[i] <= kAtBoundBytes ? bytes[i] : 0;
  }
  const pool::ArenaPlanner::Placement placed = arena_.place(bytes);
  const std::vector<size_t>& at = placed.at;
  const std::shared_ptr<void> arena = placed.bytes ? pool_->take(placed.bytes) : nullptr;
  for (size_t i = 0; i < p_.buffers.size(); ++i) {
    const Buffer& b = p_.buffers[i];
    switch (b.kind) {
      case Buffer::Kind::kInput: bufs[i] = static_cast<char*>(args[b.index]->data) + args[b.index]->byte_offset; break;
      case Buffer::Kind::kOutput: bufs[i] = static_cast<char*>(outputs[b.index].data()); break;  // allocated by the caller
      case Buffer::Kind::kTemp: bufs[i] = static_cast<char*>(arena.get()) + at[i]; break;
      case Buffer::Kind::kScratch: bufs[i] = nullptr; break;  // per task, placed by its step's runner
    }
  }
  std::vector<std::shared_ptr<void>> held;  // temporaries sized by a count
  std::atomic<int32_t> failed{0};
  for (size_t s = 0; s < p_.steps.size(); ++s) {
    const loops::Step& step = p_.steps[s];
    if (step.kind == loops::Step::Kind::kCompact) {
      if (!compact(s, bufs, reserved, values, symbols, evaluated, outputs, held, local_bufs, local_syms)) return use_reference();
      if (step.compact.epilogue) ++s;
      continue;
    }
    allocate_sized_later(s, bufs, reserved, values, outputs, held);
    if (step.kind == loops::Step::Kind::kMatmul) {
      const loops::MatmulShape shape = loops::MatmulShape::evaluated(step.matmul, gather(step_slots_[s].matmul, gathered));
      const StepCall epilogue = step.matmul.epilogue ? call(++s, bufs.data(), values.data(), evaluated, local_bufs, local_syms) : StepCall{};
      if (!matmul(step.matmul, shape, p_.buffers[step.matmul.c].dtype, bufs.data(), epilogue)) return use_reference();
      continue;
    }
    if (step.kind == loops::Step::Kind::kScan) {
      scan(step.scan, bufs.data(), values);
      continue;
    }
    if (step.kind == loops::Step::Kind::kScatter) {
      const loops::ScatterStep& c = step.scatter;
      if (!run_scatter(c, p_.buffers[c.in].dtype, p_.buffers[c.index].dtype, bufs[c.in], bufs[c.index], bufs[c.values], bufs[c.out], eval(c.outer, values),
                       eval(c.n, values), eval(c.m, values), eval(c.inner, values), kWorkPerTask)) {
        return use_reference();
      }
      continue;
    }
    if (step.kind == loops::Step::Kind::kAttention) {
      const loops::AttentionStep& a = step.attention;
      const bool ok = run_attention(a, p_.buffers[a.out].dtype, bufs.data(), values, steps_[s], kMatmulWorkPerTask);
      if (!ok) return use_reference();
      continue;
    }
    const StepSlots& slots = step_slots_[s];
    const std::optional<int64_t> outer = loops::outer_rows(gather(slots.extents, gathered), gather(slots.empty_if_zero, gathered_too));
    if (!outer) return runtime_error("llvm: " + step.label + ": a loop runs more than 2^63 - 1 times");
    const int64_t rows = *outer;
    if (rows == 0) continue;
    const StepCall fn = call(s, bufs.data(), values.data(), evaluated, local_bufs, local_syms);
    const int64_t work = std::max<int64_t>(1, evaluated[slots.work]);
    const int64_t grain = std::max<int64_t>(1, kWorkPerTask / work);
    if (rows <= grain) {
      failed |= fn(0, rows);
    } else {
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, grain), [&](const tbb::blocked_range<int64_t>& r) {
        if (int32_t e = fn(r.begin(), r.end())) failed = e;
      });
    }
    if (failed) return use_reference();
  }
  if (p_.check_fails(values, true)) return use_reference();
  return Status::ok();
}

void LlvmKernel::allocate_sized_later(size_t s, std::vector<char*>& bufs, const std::vector<size_t>& reserved, std::span<const int64_t> values,
                                      std::span<ir::Tensor> outputs, std::vector<std::shared_ptr<void>>& held) const {
  for (const auto& [i, first] : sized_later_) {
    if (first != static_cast<int>(s)) continue;
    const Buffer& b = p_.buffers[i];
    std::vector<int64_t> shape;
    for (const Expr& d : b.shape) shape.push_back(eval(d, values));
    const size_t bytes = ir::Tensor::dense_bytes(b.dtype, shape);
    if (b.kind == Buffer::Kind::kOutput) {
      outputs[b.index] = pooled(*pool_, b.dtype, std::move(shape));
      bufs[i] = static_cast<char*>(outputs[b.index].data());
    } else if (bytes > reserved[i]) {  // not placed at its bound (or past it: a size not monotone in the count)
      bufs[i] = static_cast<char*>(held.emplace_back(pool_->take(bytes)).get());
    }
  }
}

bool LlvmKernel::compact(size_t s, std::vector<char*>& bufs, const std::vector<size_t>& reserved, std::vector<int64_t>& values,
                         std::span<int64_t> symbols, std::vector<int64_t>& evaluated, std::span<ir::Tensor> outputs,
                         std::vector<std::shared_ptr<void>>& held, char** local_bufs, int64_t* local_syms) const {
  const loops::CompactStep& c = p_.steps[s].compact;
  const ir::DType value_dtype = c.values >= 0 ? p_.buffers[c.values].dtype : ir::DType::kI64;
  Compaction compaction(c, p_.buffers[c.mask].dtype, value_dtype, bufs[c.mask], c.values >= 0 ? bufs[c.values] : nullptr,
                        c.counts >= 0 ? reinterpret_cast<const int64_t*>(bufs[c.counts]) : nullptr, values);
  const int64_t count = compaction.count();
  values[c.count] = count;
  symbols[c.count] = count;
  table_.evaluate(values, evaluated);  // the count is known now
  allocate_sized_later(s, bufs, reserved, values, outputs, held);
  if (!c.epilogue) return compaction.fill(bufs[c.out]);
  const StepCall epilogue = call(s + 1, bufs.data(), values.data(), evaluated, local_bufs, local_syms);
  return compaction.fill(bufs[c.out], [&](int64_t begin, int64_t end) { return epilogue(begin, end) == 0; });
}


// Row-major C = A @ B per batch; a broadcast batch dim reads matrix 0. B's
// buffer may hold the other float type (a cast folded into the operand).
bool LlvmKernel::matmul(const loops::MatmulStep& mm, const loops::MatmulShape& shape, ir::DType dt, char* const* bufs, StepCall epilogue) const {
  const int64_t n = shape.n, k = shape.k;
  if (shape.m == 0 || n == 0) return true;
  const ir::DType bt = p_.buffers[mm.b.buffer].dtype;
  const int64_t es = static_cast<int64_t>(ir::dtype_size(dt)), bs = static_cast<int64_t>(ir::dtype_size(bt));
  const MatmulPlan plan = plan_matmul(shape, static_cast<size_t>(es), bt != dt, std::max(1, tbb::this_task_arena::max_concurrency()));
  PackedB packed;
  const bool b_is_input = p_.buffers[mm.b.buffer].kind == Buffer::Kind::kInput;
  if (packs_b_once(shape, plan, static_cast<size_t>(bs), b_is_input)) {
    const int64_t b_offset = plan.flat ? shape.b_offset : shape.offsets(0, mm.batch.size()).second;
    packed = pack_b(shape, plan, dt, bt, bufs[mm.b.buffer] + b_offset * bs, b_is_input);
  }
  std::atomic<int32_t> failed{0};
  // The epilogue's rows are C's, flattened over the batch: it runs on a
  // block of rows once its product is whole, in the task while they are
  // in cache when the block is small enough to be, else after the product.
  const bool in_task = epilogue && plan.col_blocks == 1 && plan.rows_per_task * n * es <= kEpilogueInCacheBytes;
  auto finish = [&](int64_t begin, int64_t end) {
    if (int32_t e = epilogue(begin, end)) failed = e;
  };
  auto task = [&](int64_t t) {
    const int64_t c = t / (plan.row_blocks * plan.col_blocks), r0 = t / plan.col_blocks % plan.row_blocks * plan.rows_per_task;
    const int64_t j0 = t % plan.col_blocks * plan.cols_per_task;
    const int64_t rows = std::min(plan.rows_total - r0, plan.rows_per_task), cols = std::min(n - j0, plan.cols_per_task);
    const auto [ao, bo] = plan.flat ? std::make_pair(shape.a_offset, shape.b_offset) : shape.offsets(c, mm.batch.size());
    const char* a = bufs[mm.a.buffer] + (ao + r0 * shape.a_row) * es;
    const char* b = bufs[mm.b.buffer] + (bo + j0 * shape.b_col) * bs;
    char* out = bufs[mm.c] + ((c * plan.rows_total + r0) * n + j0) * es;
    if (k == 0) {
      for (int64_t r = 0; r < rows; ++r) std::memset(out + r * n * es, 0, static_cast<size_t>(cols * es));
    } else {
      with_types(dt, bt, [&](auto t, auto s) {
        using T = decltype(t);
        using S = decltype(s);
        product(rows, cols, k, reinterpret_cast<const T*>(a), reinterpret_cast<const S*>(b), reinterpret_cast<T*>(out), n, shape, plan.own,
                packed.panels ? reinterpret_cast<const S*>(packed.panels) + j0 * k : nullptr);
      });
    }
    if (in_task) finish(c * plan.rows_total + r0, c * plan.rows_total + r0 + rows);
  };
  if (plan.parallel) {
    tbb::parallel_for(int64_t{0}, plan.tasks(), task);
  } else {  // a decode step's products: threads would cost more than they save
    for (int64_t t = 0; t < plan.tasks(); ++t) task(t);
  }
  if (epilogue && !in_task) {
    const int64_t total = plan.matrices * plan.rows_total, grain = std::max<int64_t>(1, kWorkPerTask / n);
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, total, grain), [&](const tbb::blocked_range<int64_t>& r) { finish(r.begin(), r.end()); });
  }
  return failed == 0;
}

void LlvmKernel::scan(const loops::ScanStep& c, char* const* bufs, std::span<const int64_t> values) const {
  run_lines(c, p_.buffers[c.in].dtype, bufs[c.in], bufs[c.out], eval(c.outer, values), eval(c.n, values), eval(c.inner, values), kWorkPerTask);
}

// What an image records of the loop program it was compiled from: the hash
// of its dump without the steps' labels (which name graph values, and
// graphs that differ only in names share kernels).
std::string program_stamp(const LoopProgram& p) { return Hasher().add_str(p.dump(false)).finish().hex(); }

class LlvmBackend final : public Backend {
 public:
  explicit LlvmBackend(int opt_level) : target_(jit_target(opt_level)), steps_(opt_level, target_) {
    openblas_set_num_threads(1);  // TBB splits matmuls; see the top of this file
    if (opt_level > 0) quick_steps_ = std::make_unique<StepCompiler>(0, jit_target(0));
  }
  const char* name() const override { return "llvm"; }
  std::string target() const override { return target_; }
  void attach(const CompileServices& s) override {
    steps_.attach(s);
    if (quick_steps_) quick_steps_->attach(s);
  }

  Expected<ir::Tensor> allocate(const RunContext&, ir::DType dtype, std::span<const int64_t> shape) override {
    return pooled(*pool_, dtype, std::vector<int64_t>(shape.begin(), shape.end()));
  }

  Expected<std::unique_ptr<Kernel>> compile(const ir::SpecializedGraphPtr& graph) override {
    CompilePhases phases;
    LoopProgram p = SJ_TRY(lower(*graph, phases));
    return make_kernel(std::move(p), graph->graph->nodes.size(), phases, steps_);
  }
  // At O0, its steps cached under O0's target.
  Expected<std::unique_ptr<Kernel>> compile_quick(const ir::SpecializedGraphPtr& graph) override {
    if (!quick_steps_) return Backend::compile_quick(graph);
    CompilePhases phases;
    LoopProgram p = SJ_TRY(lower(*graph, phases));
    return make_kernel(std::move(p), graph->graph->nodes.size(), phases, *quick_steps_);
  }

  // A kernel's image is the hash of its loop program alone: its steps'
  // code are parts of the cache of their own (steps.h), shared with other
  // kernels. A load lowers the graph again (deterministic and cheap: no
  // LLVM IR), checks the hash, and finds each step in the cache, which
  // compiles a step that its tiers lost. The cache's key is the graph's
  // dataflow, blind to the order of independent nodes, while the steps
  // follow the program's order: a program of another order is another
  // kernel, and its image a miss.
  bool persists() const override { return true; }
  Expected<std::unique_ptr<Kernel>> compile_image(const ir::SpecializedGraphPtr& graph, std::string& image) override {
    CompilePhases phases;
    LoopProgram p = SJ_TRY(lower(*graph, phases));
    image = program_stamp(p);
    return make_kernel(std::move(p), graph->graph->nodes.size(), phases, steps_);
  }
  Expected<std::unique_ptr<Kernel>> load(const ir::SpecializedGraphPtr& graph, std::string_view image) override {
    CompilePhases phases;
    LoopProgram p = SJ_TRY(lower(*graph, phases));
    if (image != program_stamp(p)) return Status(Code::kUnsupported, "llvm: the image is of another loop program");
    return make_kernel(std::move(p), graph->graph->nodes.size(), phases, steps_);
  }

 private:
  static Expected<LoopProgram> lower(const ir::SpecializedGraph& graph, CompilePhases& phases) {
    const auto t0 = std::chrono::steady_clock::now();
    Expected<LoopProgram> p = loops::lower(graph);
    phases.lower_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return p;
  }
  Expected<std::unique_ptr<Kernel>> make_kernel(LoopProgram p, size_t nodes, CompilePhases& phases, StepCompiler& compiler) {
    std::vector<BoundStep> steps = SJ_TRY(compiler.bind(p, nodes, phases));
    return std::unique_ptr<Kernel>(new LlvmKernel(std::move(p), std::move(steps), pool_, phases));
  }

  std::string target_;
  StepCompiler steps_;
  std::unique_ptr<StepCompiler> quick_steps_;  // compile_quick's, at O0; none when the backend's level is O0
  std::shared_ptr<pool::BlockPool> pool_ = process_pool();
};

}  // namespace

}  // namespace shapejit::backends::llvm

namespace shapejit::backends {

Expected<std::unique_ptr<Backend>> make_llvm_backend(int opt_level) {
  SJ_TRY(llvm::jit_available());
  return std::unique_ptr<Backend>(new llvm::LlvmBackend(opt_level));
}

}  // namespace shapejit::backends
