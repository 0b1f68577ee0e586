#include "backends/cpu/kernel.h"

#include <cblas.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <set>

#include "backends/cpu/arena.h"
#include "backends/cpu/attention.h"
#include "backends/cpu/compact.h"
#include "backends/cpu/huge_pages.h"
#include "backends/cpu/lines.h"
#include "backends/cpu/matmul_plan.h"
#include "backends/cpu/products.h"
#include "backends/cpu/tile_choice.h"
#include "backends/frozen.h"
#include "backends/loops/run_steps.h"
#include "core/sym/expr_table.h"

namespace shapejit::backends::cpu {

namespace {

using loops::Buffer;
using loops::LoopProgram;
using sym::Expr;

// Outer iterations per task: enough work that a task outweighs its
// scheduling, a sleeping thread woken included (a decode step's copies of
// its 256 KB caches are not worth splitting).
constexpr int64_t kWorkPerTask = 1 << 17;
// A matmul's epilogue runs in the task that made its block of rows when the
// block fits in this much of the core's cache.
constexpr int64_t kEpilogueInCacheBytes = 256 << 10;
// A temporary sized by a data-dependent count is placed in the call's arena
// at the count's bound up to this size (no allocation when the count is
// known), and taken from the pool at the count beyond it.
constexpr size_t kAtBoundBytes = size_t{256} << 10;
// Freed buffers the pool keeps for reuse, for all CPU devices of the
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

class CpuKernel final : public Kernel {
 public:
  CpuKernel(LoopProgram p, std::vector<BoundStep> steps, std::shared_ptr<pool::BlockPool> pool, CompilePhases phases)
      : p_(std::move(p)),
        plan_(p_),
        steps_(std::move(steps)),
        pool_(std::move(pool)),
        arena_(temp_lifetimes(p_)),
        may_defer_(p_.may_defer()),
        phases_(phases) {
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
    weights_ = std::make_unique<RecurringInputs>(std::move(product_inputs));
  }
  bool may_use_reference() const override { return may_defer_; }

  Status run(const RunContext& ctx, std::span<const DLTensor* const> args, std::span<int64_t> symbols, std::span<ir::Tensor> outputs) override;
  size_t code_bytes() const override { return code_bytes_ + sizeof(*this); }
  const CompilePhases* phases() const override { return &phases_; }

 private:
  class Call;

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
  loops::RunPlan plan_;
  std::vector<BoundStep> steps_;  // per step: its code (loop and attention steps)
  size_t local_bufs_ = 0, local_syms_ = 0;  // the most a step's function reads
  size_t code_bytes_ = 0;
  std::shared_ptr<pool::BlockPool> pool_;
  ArenaPlanner arena_;
  bool may_defer_;  // LoopProgram::may_defer
  CompilePhases phases_;
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
  // huge pages (HugePageBacking).
  std::unique_ptr<RecurringInputs> weights_;
};

// One call of a CpuKernel: its buffers and what it evaluated, and how the
// device runs each kind of step (loops/run_steps.h).
class CpuKernel::Call final : public loops::StepRunner {
 public:
  // `local_syms`: room for the symbols a step's function reads.
  Call(const CpuKernel& k, std::span<const DLTensor* const> args, std::span<ir::Tensor> outputs, int64_t* local_syms)
      : k_(k), p_(k.p_), args_(args), outputs_(outputs), bufs_(p_.buffers.size() + k.local_bufs_), local_bufs_(bufs_.data() + p_.buffers.size()),
        local_syms_(local_syms) {}

  Status place(std::span<const int64_t> values) override;
  Status allocate(int buffer, std::span<const int64_t> values) override;
  Expected<int64_t> count(size_t s, std::span<const int64_t> values) override;
  void recount(std::span<const int64_t> values) override { k_.table_.evaluate(values, evaluated_); }
  Status fill(size_t s, int epilogue, std::span<const int64_t> values) override;
  Status loops(size_t s, std::span<const int64_t> values) override;
  Status matmul(size_t s, int epilogue, std::span<const int64_t> values) override;
  Status scan(size_t s, std::span<const int64_t> values) override;
  Status scatter(size_t s, std::span<const int64_t> values) override;
  Status attention(size_t s, std::span<const int64_t> values) override;

 private:
  int64_t eval(Expr e, std::span<const int64_t> values) const { return sym::evaluate(e, values); }
  std::span<const int64_t> gather(const std::vector<int>& slots, std::vector<int64_t>& out) const {
    out.resize(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) out[i] = evaluated_[slots[i]];
    return out;
  }
  // Step s's function over the call's buffers and symbols, its arguments
  // gathered into the call's room for them (`evaluated_` holds the step's
  // lifted offsets).
  StepCall call(size_t s, std::span<const int64_t> values) {
    const BoundStep& b = k_.steps_[s];
    const std::vector<int>& offsets = k_.step_slots_[s].offsets;
    b.gather(bufs_.data(), values.data(), [&](size_t j) { return evaluated_[static_cast<size_t>(offsets[j])]; }, local_bufs_, local_syms_);
    return StepCall{b.fn, local_bufs_, local_syms_};
  }

  const CpuKernel& k_;
  const LoopProgram& p_;
  std::span<const DLTensor* const> args_;
  std::span<ir::Tensor> outputs_;
  std::vector<char*> bufs_;  // the buffers, then room for a step's own (what its function reads)
  char** local_bufs_;
  int64_t* local_syms_;
  std::vector<int64_t> evaluated_;  // table_'s slots, evaluated again when a count is known
  std::vector<int64_t> gathered_, gathered_too_;
  std::vector<size_t> reserved_;  // per temporary sized by a count: its bytes in the arena, at its bound
  std::shared_ptr<void> arena_;
  std::vector<std::shared_ptr<void>> held_;  // temporaries sized by a count, past their place in the arena
  std::optional<Compaction> compaction_;  // the compact step counted and not yet filled
};

Status CpuKernel::run(const RunContext&, std::span<const DLTensor* const> args, std::span<int64_t> symbols, std::span<ir::Tensor> outputs) {
  if (!weights_->empty()) {
    // Frozen weights are read as the panels made from them, not in place.
    std::vector<HugePageBacking::Range> due = weights_->observe(args);
    std::erase_if(due, [](const HugePageBacking::Range& r) { return FrozenMemory::process().frozen(r.data, r.bytes); });
    if (!due.empty()) {
      HugePageBacking::process().request(due);
    } else {
      HugePageBacking::process().work();
    }
  }
  // The symbols, then room for a step's own (what its function reads):
  // one allocation a call, as for the buffers.
  std::vector<int64_t> values = loops::symbol_values(p_, args, symbols);
  const size_t num_values = values.size();
  values.resize(num_values + local_syms_);
  Call call(*this, args, outputs, values.data() + num_values);
  return loops::run_steps(p_, plan_, call, std::span<int64_t>(values.data(), num_values), symbols);
}

// Temporaries: one block of the pool per call (the arena), sized by the
// shape functions on this call's symbols, where a temporary whose last step
// has run leaves its bytes to later ones (arena.h). Dense sizes are at most
// 2^48 bytes each (Tensor::dense_bytes), so their sum cannot overflow; a
// block too large to allocate is std::bad_alloc, as one temporary too large
// always was. A temporary sized by a count is placed at the count's bound
// where that is at most kAtBoundBytes (reserved), else taken when the count
// is known.
Status CpuKernel::Call::place(std::span<const int64_t> values) {
  k_.table_.evaluate(values, evaluated_);
  std::vector<int64_t> bounds;
  if (!k_.plan_.sized_later().empty()) {
    bounds.assign(values.begin(), values.end());
    for (const auto& [count, bound] : p_.count_bounds) bounds[count] = eval(bound, bounds);
  }
  std::vector<size_t> bytes(p_.buffers.size(), 0);
  reserved_.assign(p_.buffers.size(), 0);
  std::vector<int64_t> shape;  // each temporary's in turn
  for (size_t i = 0; i < p_.buffers.size(); ++i) {
    const Buffer& b = p_.buffers[i];
    if (b.kind != Buffer::Kind::kTemp) continue;
    const bool later = k_.plan_.is_sized_later(static_cast<int>(i));
    shape.clear();
    if (later) {
      for (const Expr& d : b.shape) shape.push_back(eval(d, bounds));
    } else {
      gather(k_.temp_dims_[i], shape);
    }
    bytes[i] = ir::Tensor::dense_bytes(b.dtype, shape);
    if (later) reserved_[i] = bytes[i] = bytes[i] <= kAtBoundBytes ? bytes[i] : 0;
  }
  const ArenaPlanner::Placement placed = k_.arena_.place(bytes);
  arena_ = placed.bytes ? k_.pool_->take(placed.bytes) : nullptr;
  for (size_t i = 0; i < p_.buffers.size(); ++i) {
    const Buffer& b = p_.buffers[i];
    switch (b.kind) {
      case Buffer::Kind::kInput: bufs_[i] = static_cast<char*>(args_[b.index]->data) + args_[b.index]->byte_offset; break;
      case Buffer::Kind::kOutput: bufs_[i] = static_cast<char*>(outputs_[b.index].data()); break;  // allocated by the caller
      case Buffer::Kind::kTemp: bufs_[i] = static_cast<char*>(arena_.get()) + placed.at[i]; break;
      case Buffer::Kind::kScratch: bufs_[i] = nullptr; break;  // per task, placed by its step's runner
    }
  }
  return Status::ok();
}

// A temporary placed in the arena at its bound keeps its place where its
// count fits, else it is taken from the pool and held until the call
// returns; an output of the call is allocated.
Status CpuKernel::Call::allocate(int i, std::span<const int64_t> values) {
  const Buffer& b = p_.buffers[i];
  std::vector<int64_t> shape;
  for (const Expr& d : b.shape) shape.push_back(eval(d, values));
  const size_t bytes = ir::Tensor::dense_bytes(b.dtype, shape);
  if (b.kind == Buffer::Kind::kOutput) {
    outputs_[b.index] = pooled(*k_.pool_, b.dtype, std::move(shape));
    bufs_[i] = static_cast<char*>(outputs_[b.index].data());
  } else if (bytes > reserved_[i]) {  // not placed at its bound (or past it: a size not monotone in the count)
    bufs_[i] = static_cast<char*>(held_.emplace_back(k_.pool_->take(bytes)).get());
  }
  return Status::ok();
}

Expected<int64_t> CpuKernel::Call::count(size_t s, std::span<const int64_t> values) {
  const loops::CompactStep& c = p_.steps[s].compact;
  const ir::DType value_dtype = c.values >= 0 ? p_.buffers[c.values].dtype : ir::DType::kI64;
  compaction_.emplace(c, p_.buffers[c.mask].dtype, value_dtype, bufs_[c.mask], c.values >= 0 ? bufs_[c.values] : nullptr,
                      c.counts >= 0 ? reinterpret_cast<const int64_t*>(bufs_[c.counts]) : nullptr, values);
  return compaction_->count();
}

// The fill, with its epilogue on each block's rows.
Status CpuKernel::Call::fill(size_t s, int epilogue, std::span<const int64_t> values) {
  const loops::CompactStep& c = p_.steps[s].compact;
  bool ok;
  if (epilogue < 0) {
    ok = compaction_->fill(bufs_[c.out]);
  } else {
    const StepCall fn = call(static_cast<size_t>(epilogue), values);
    ok = compaction_->fill(bufs_[c.out], [&](int64_t begin, int64_t end) { return fn(begin, end) == 0; });
  }
  compaction_.reset();
  return ok ? Status::ok() : use_reference();
}

Status CpuKernel::Call::loops(size_t s, std::span<const int64_t> values) {
  const StepSlots& slots = k_.step_slots_[s];
  const std::optional<int64_t> outer = loops::outer_rows(gather(slots.extents, gathered_), gather(slots.empty_if_zero, gathered_too_));
  if (!outer) return runtime_error("llvm: " + p_.steps[s].label + ": a loop runs more than 2^63 - 1 times");
  const int64_t rows = *outer;
  if (rows == 0) return Status::ok();
  const StepCall fn = call(s, values);
  const int64_t work = std::max<int64_t>(1, evaluated_[slots.work]);
  const int64_t grain = std::max<int64_t>(1, kWorkPerTask / work);
  std::atomic<int32_t> failed{0};
  if (rows <= grain) {
    failed |= fn(0, rows);
  } else {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, grain), [&](const tbb::blocked_range<int64_t>& r) {
      if (int32_t e = fn(r.begin(), r.end())) failed = e;
    });
  }
  return failed ? use_reference() : Status::ok();
}

// Row-major C = A @ B per batch, in blocks of rows; a broadcast batch dim
// reads matrix 0. B's buffer may hold the other float type (a cast folded
// into the operand). The epilogue, when the step has one, runs on each block
// as soon as its product is whole.
Status CpuKernel::Call::matmul(size_t s, int epilogue_step, std::span<const int64_t> values) {
  const loops::MatmulStep& mm = p_.steps[s].matmul;
  const loops::MatmulShape shape = loops::MatmulShape::evaluated(mm, gather(k_.step_slots_[s].matmul, gathered_));
  const StepCall epilogue = epilogue_step >= 0 ? call(static_cast<size_t>(epilogue_step), values) : StepCall{};
  const ir::DType dt = p_.buffers[mm.c].dtype;
  const int64_t n = shape.n, k = shape.k;
  if (shape.m == 0 || n == 0) return Status::ok();
  const ir::DType bt = p_.buffers[mm.b.buffer].dtype;
  const int64_t es = static_cast<int64_t>(ir::dtype_size(dt)), bs = static_cast<int64_t>(ir::dtype_size(bt));
  const MatmulPlan plan = plan_matmul(shape, static_cast<size_t>(es), bt != dt, std::max(1, tbb::this_task_arena::max_concurrency()));
  char* const* bufs = bufs_.data();
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
  return failed == 0 ? Status::ok() : use_reference();
}

// cumsum, cumprod, sort or argsort (loops::ScanStep), lines split across threads.
Status CpuKernel::Call::scan(size_t s, std::span<const int64_t> values) {
  const loops::ScanStep& c = p_.steps[s].scan;
  run_lines(c, p_.buffers[c.in].dtype, bufs_[c.in], bufs_[c.out], eval(c.outer, values), eval(c.n, values), eval(c.inner, values), kWorkPerTask);
  return Status::ok();
}

Status CpuKernel::Call::scatter(size_t s, std::span<const int64_t> values) {
  const loops::ScatterStep& c = p_.steps[s].scatter;
  const bool ok = run_scatter(c, p_.buffers[c.in].dtype, p_.buffers[c.index].dtype, bufs_[c.in], bufs_[c.index], bufs_[c.values], bufs_[c.out],
                              eval(c.outer, values), eval(c.n, values), eval(c.m, values), eval(c.inner, values), kWorkPerTask);
  return ok ? Status::ok() : use_reference();
}

Status CpuKernel::Call::attention(size_t s, std::span<const int64_t> values) {
  const loops::AttentionStep& a = p_.steps[s].attention;
  const bool ok = run_attention(a, p_.buffers[a.out].dtype, bufs_.data(), values, k_.steps_[s], kMatmulWorkPerTask);
  return ok ? Status::ok() : use_reference();
}

}  // namespace

Device::Device() : pool_(process_pool()) {
  openblas_set_num_threads(1);
  tile_choice();  // the probe, once, before any kernel runs beside it
}

ir::Tensor Device::allocate(ir::DType dtype, std::span<const int64_t> shape) const {
  return pooled(*pool_, dtype, std::vector<int64_t>(shape.begin(), shape.end()));
}

std::unique_ptr<Kernel> Device::kernel(loops::LoopProgram p, std::vector<BoundStep> steps, const CompilePhases& phases) const {
  return std::make_unique<CpuKernel>(std::move(p), std::move(steps), pool_, phases);
}

}  // namespace shapejit::backends::cpu
