// The LLVM backend: a graph lowered to loops (backends/loops), JIT-compiled
// with ORC, run with TBB across cores and OpenBLAS for float matmuls.
//
// A kernel runs its steps in order on the caller's inputs and outputs and on
// temporaries; outputs and temporaries come from the process's BlockPool, so
// a kernel called again faults in no new memory. Threads are TBB's only:
// matmuls split into per-matrix row blocks, each a single-threaded BLAS call
// (OpenBLAS's own threads would spin against TBB's on the same cores). When
// generated code reports a failed check (a gather index out of range, an integer to a
// negative power, max over an empty axis), the kernel hands the call to the
// reference interpreter (backends/fallback.h), which reports the same error
// in its own words.
#include <cblas.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <cstring>

#include "backends/backend.h"
#include "backends/llvm/session.h"
#include "backends/pool/block_pool.h"
#include "backends/loops/lower.h"

namespace shapejit::backends {

namespace {

using loops::Buffer;
using loops::LoopProgram;
using sym::Expr;

// Outer iterations per task: enough work that a task outweighs its scheduling.
constexpr int64_t kWorkPerTask = 1 << 15;
// Matmuls with fewer multiply-adds run on the calling thread; larger ones
// split into row blocks of at least kMatmulMinRows rows.
constexpr int64_t kMatmulWorkPerTask = 1 << 18;
constexpr int64_t kMatmulMinRows = 64;
// Freed buffers the pool keeps for reuse, for all LLVM backends of the
// process together.
constexpr size_t kPoolRetainedBytes = size_t{512} << 20;

std::shared_ptr<BlockPool> process_pool() {
  static const std::shared_ptr<BlockPool> pool = BlockPool::host(kPoolRetainedBytes);
  return pool;
}

// A dense tensor over a block of the pool (outputs and temporaries).
ir::Tensor pooled(BlockPool& pool, ir::DType dtype, std::vector<int64_t> shape) {
  const size_t bytes = ir::Tensor::dense_bytes(dtype, shape);
  return ir::Tensor::over(dtype, std::move(shape), pool.take(bytes));
}

class LlvmKernel final : public Kernel {
 public:
  LlvmKernel(LoopProgram p, std::unique_ptr<cpu::JitCode> code, std::shared_ptr<BlockPool> pool)
      : p_(std::move(p)), code_(std::move(code)), pool_(std::move(pool)), may_defer_(!p_.empty_checks.empty() || p_.has_checks()) {}
  bool may_use_reference() const override { return may_defer_; }

  Status run(const RunContext& ctx, std::span<const DLTensor* const> args, std::span<int64_t> symbols, std::span<ir::Tensor> outputs) override;
  size_t code_bytes() const override { return code_->code_bytes() + sizeof(*this); }

 private:
  int64_t eval(Expr e, std::span<const int64_t> values) const { return sym::evaluate(e, values); }
  // C = A @ B in blocks of rows; `epilogue`, when the step has one, runs on
  // each block as soon as BLAS wrote it. False when the epilogue failed a check.
  bool matmul(const loops::MatmulStep& m, ir::DType dt, char* const* bufs, std::span<const int64_t> values, cpu::StepFn epilogue) const;

  LoopProgram p_;
  std::unique_ptr<cpu::JitCode> code_;
  std::shared_ptr<BlockPool> pool_;
  bool may_defer_;  // empty-axis checks, or steps with runtime checks
};

Status LlvmKernel::run(const RunContext&, std::span<const DLTensor* const> args, std::span<int64_t> symbols, std::span<ir::Tensor> outputs) {
  const std::vector<int64_t> values = loops::symbol_values(p_, args, symbols);
  for (const LoopProgram::EmptyCheck& c : p_.empty_checks) {
    if (eval(c.rows, values) != 0 && eval(c.count, values) == 0) return use_reference();
  }
  std::vector<char*> bufs(p_.buffers.size());
  std::vector<ir::Tensor> temps(p_.num_temps);
  for (size_t i = 0; i < p_.buffers.size(); ++i) {
    const Buffer& b = p_.buffers[i];
    switch (b.kind) {
      case Buffer::Kind::kInput: bufs[i] = static_cast<char*>(args[b.index]->data) + args[b.index]->byte_offset; break;
      case Buffer::Kind::kOutput: bufs[i] = static_cast<char*>(outputs[b.index].data()); break;  // allocated by the caller
      case Buffer::Kind::kTemp: {
        std::vector<int64_t> shape;
        for (const Expr& d : b.shape) shape.push_back(eval(d, values));
        temps[b.index] = pooled(*pool_, b.dtype, std::move(shape));
        bufs[i] = static_cast<char*>(temps[b.index].data());
        break;
      }
    }
  }
  std::atomic<int32_t> failed{0};
  for (size_t s = 0; s < p_.steps.size(); ++s) {
    const loops::Step& step = p_.steps[s];
    if (step.kind == loops::Step::Kind::kMatmul) {
      cpu::StepFn epilogue = step.matmul.epilogue ? code_->steps()[++s] : nullptr;
      if (!matmul(step.matmul, p_.buffers[step.matmul.c].dtype, bufs.data(), values, epilogue)) return use_reference();
      continue;
    }
    const std::optional<int64_t> outer = loops::outer_rows(step.loops, values);
    if (!outer) return runtime_error("llvm: " + step.label + ": a loop runs more than 2^63 - 1 times");
    const int64_t rows = *outer;
    if (rows == 0) continue;
    cpu::StepFn fn = code_->steps()[s];
    const int64_t work = std::max<int64_t>(1, eval(step.loops.work_per_row, values));
    const int64_t grain = std::max<int64_t>(1, kWorkPerTask / work);
    if (rows <= grain) {
      failed |= fn(bufs.data(), values.data(), 0, rows);
    } else {
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, grain), [&](const tbb::blocked_range<int64_t>& r) {
        if (int32_t e = fn(bufs.data(), values.data(), r.begin(), r.end())) failed = e;
      });
    }
    if (failed) return use_reference();
  }
  return Status::ok();
}

// How BLAS reads a row-major operand of `rows` x `cols` with these strides:
// transposed when its rows are the contiguous ones (lowering saw to it that
// rows or columns are). The leading dimension of a single row is never
// read, but BLAS still wants it at least the row's width.
struct BlasOperand {
  CBLAS_TRANSPOSE trans;
  int ld;
};
BlasOperand blas_operand(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  if (col_stride == 1 || cols == 1) return {CblasNoTrans, static_cast<int>(rows <= 1 ? std::max<int64_t>(cols, 1) : row_stride)};
  return {CblasTrans, static_cast<int>(col_stride)};
}

// Row-major C = A @ B per batch; a broadcast batch dim reads matrix 0.
bool LlvmKernel::matmul(const loops::MatmulStep& mm, ir::DType dt, char* const* bufs, std::span<const int64_t> values, cpu::StepFn epilogue) const {
  const loops::MatmulShape shape(mm, values);
  const int64_t m = shape.m, n = shape.n, k = shape.k, count = shape.count;
  if (m == 0 || n == 0) return true;
  std::atomic<int32_t> failed{0};
  const size_t es = ir::dtype_size(dt);
  // Tasks: each batch matrix in blocks of rows, a block tall enough for
  // BLAS to run as a matrix product (a row alone is a memory-bound
  // matrix-vector product), at most a few blocks per thread.
  const int64_t threads = std::max(1, tbb::this_task_arena::max_concurrency());
  const int64_t work = m * n * std::max<int64_t>(k, 1) * count;
  int64_t rows_per_task = m;
  if (work >= kMatmulWorkPerTask) rows_per_task = std::min(m, std::max(kMatmulMinRows, (m * count + 4 * threads - 1) / (4 * threads)));
  const int64_t blocks = (m + rows_per_task - 1) / rows_per_task;
  auto task = [&](int64_t t) {
    const int64_t c = t / blocks, r0 = t % blocks * rows_per_task, rows = std::min(m - r0, rows_per_task);
    const auto [ao, bo] = shape.offsets(c, mm.batch.size());
    const char* a = bufs[mm.a.buffer] + (ao + r0 * shape.a_row) * static_cast<int64_t>(es);
    const char* b = bufs[mm.b.buffer] + bo * static_cast<int64_t>(es);
    char* out = bufs[mm.c] + (c * m + r0) * n * static_cast<int64_t>(es);
    // The epilogue's rows are C's, flattened over the batch.
    auto finish = [&] {
      if (epilogue) {
        if (int32_t e = epilogue(bufs, values.data(), c * m + r0, c * m + r0 + rows)) failed = e;
      }
    };
    if (k == 0) {
      std::memset(out, 0, static_cast<size_t>(rows * n) * es);
      finish();
      return;
    }
    const BlasOperand oa = blas_operand(rows, k, shape.a_row, shape.a_col), ob = blas_operand(k, n, shape.b_row, shape.b_col);
    const int ldc = static_cast<int>(n);
    if (dt == ir::DType::kF32) {
      cblas_sgemm(CblasRowMajor, oa.trans, ob.trans, static_cast<int>(rows), static_cast<int>(n), static_cast<int>(k), 1.0f,
                  reinterpret_cast<const float*>(a), oa.ld, reinterpret_cast<const float*>(b), ob.ld, 0.0f, reinterpret_cast<float*>(out), ldc);
    } else {
      cblas_dgemm(CblasRowMajor, oa.trans, ob.trans, static_cast<int>(rows), static_cast<int>(n), static_cast<int>(k), 1.0,
                  reinterpret_cast<const double*>(a), oa.ld, reinterpret_cast<const double*>(b), ob.ld, 0.0, reinterpret_cast<double*>(out), ldc);
    }
    finish();
  };
  const int64_t tasks = count * blocks;
  if (work < kMatmulWorkPerTask) {  // a decode step's products: threads would cost more than they save
    for (int64_t t = 0; t < tasks; ++t) task(t);
  } else {
    tbb::parallel_for(int64_t{0}, tasks, task);
  }
  return failed == 0;
}

class LlvmBackend final : public Backend {
 public:
  explicit LlvmBackend(int opt_level) : opt_level_(opt_level), target_(cpu::jit_target(opt_level)) {
    openblas_set_num_threads(1);  // TBB splits matmuls; see the top of this file
  }
  const char* name() const override { return "llvm"; }
  std::string target() const override { return target_; }

  Expected<ir::Tensor> allocate(const RunContext&, ir::DType dtype, std::span<const int64_t> shape) override {
    return pooled(*pool_, dtype, std::vector<int64_t>(shape.begin(), shape.end()));
  }

  Expected<std::unique_ptr<Kernel>> compile(const ir::SpecializedGraphPtr& graph) override {
    LoopProgram p = SJ_TRY(loops::lower(*graph));
    std::unique_ptr<cpu::JitCode> code = SJ_TRY(cpu::jit_compile(p, opt_level_));
    return std::unique_ptr<Kernel>(new LlvmKernel(std::move(p), std::move(code), pool_));
  }

  // The image is the relocatable object ORC linked; a load lowers the graph
  // again (the loop program is deterministic and cheap: no LLVM IR) and
  // links the object.
  bool persists() const override { return true; }
  Expected<std::unique_ptr<Kernel>> compile_image(const ir::SpecializedGraphPtr& graph, std::string& image) override {
    LoopProgram p = SJ_TRY(loops::lower(*graph));
    std::unique_ptr<cpu::JitCode> code = SJ_TRY(cpu::jit_compile(p, opt_level_, &image));
    return std::unique_ptr<Kernel>(new LlvmKernel(std::move(p), std::move(code), pool_));
  }
  Expected<std::unique_ptr<Kernel>> load(const ir::SpecializedGraphPtr& graph, std::string_view image) override {
    LoopProgram p = SJ_TRY(loops::lower(*graph));
    std::unique_ptr<cpu::JitCode> code = SJ_TRY(cpu::jit_load(p, image));
    return std::unique_ptr<Kernel>(new LlvmKernel(std::move(p), std::move(code), pool_));
  }

 private:
  int opt_level_;
  std::string target_;
  std::shared_ptr<BlockPool> pool_ = process_pool();
};

}  // namespace

Expected<std::unique_ptr<Backend>> make_llvm_backend(int opt_level) {
  SJ_TRY(cpu::jit_available());
  return std::unique_ptr<Backend>(new LlvmBackend(opt_level));
}

}  // namespace shapejit::backends
