// The CUDA backend: a graph lowered to loops (backends/loops, untiled),
// written as CUDA C (codegen.cpp), compiled by NVRTC to a cubin for the
// GPU's architecture (PTX for the newest NVRTC knows when it does not know
// the GPU's), loaded with cuModuleLoadData, launched with cuLaunchKernel on
// the call's stream. Float matmuls are cuBLAS calls; their epilogues are the
// fused pointwise kernel that follows.
//
// Memory: inputs and outputs are kDLCUDA tensors of the first GPU. Outputs,
// temporaries and the split reductions' workspace come from a caching
// allocator (BlockPool over cuMemAlloc), one pool per stream, so a block
// freed by one call is reused only in that stream's order.
//
// What the GPU cannot do, the CPU does, with the data copied (never a
// crash): the kernel returns use_reference (backends/fallback.h) for a
// runtime check that failed (an index out of range; the reference
// interpreter then reports it in its words), a reduction over an empty axis
// and a kernel that failed to launch (with the reason, for the log); a graph
// that does not compile runs the same way. `from_host` stages the reference
// kernel: inputs copied to the host, outputs back to the device.
#include <algorithm>
#include <cstring>
#include <utility>
#include <map>
#include <mutex>
#include <optional>

#include "backends/backend.h"
#include "backends/cuda/codegen.h"
#include "backends/cuda/driver.h"
#include "backends/cuda/nvrtc.h"
#include "backends/loops/lower.h"
#include "backends/loops/run_steps.h"
#include "backends/pool/block_pool.h"
#include "core/ir/strided.h"

namespace shapejit::backends {

namespace cuda {
namespace {

using loops::LoopProgram;
using sym::Expr;

// Freed blocks each stream's pool keeps for reuse.
constexpr size_t kPoolRetainedBytes = size_t{1} << 30;
// Rows at most this long take a warp each; longer ones a block.
constexpr int64_t kWarpRowMax = 256;
// Fewer rows than SMs, each at least this long: a split reduction.
constexpr int64_t kSplitRowMin = 1 << 16;
constexpr int64_t kSplitPart = 1 << 14;  // elements per part, at least

const Device* g_device = nullptr;  // the pool's allocator needs it without a closure

void* device_alloc(size_t bytes) {
  if (!g_device->bind().is_ok()) return nullptr;
  CUdeviceptr p = 0;
  return g_device->cu->cuMemAlloc(&p, bytes) == CUDA_SUCCESS ? reinterpret_cast<void*>(p) : nullptr;
}
void device_free(void* p) {
  if (g_device->bind().is_ok()) g_device->cu->cuMemFree(reinterpret_cast<CUdeviceptr>(p));
}

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// What a backend's kernels share: the device, cuBLAS, the pools.
struct Shared {
  const Device* dev = nullptr;
  const Cublas* blas = nullptr;  // null: matmuls are loops
  cublasHandle_t handle = nullptr;
  std::mutex blas_mu;  // a handle serves one stream at a time
  std::mutex mu;       // pools
  std::map<CUstream, std::shared_ptr<pool::BlockPool>> pools;

  ~Shared() {
    if (handle && dev->bind().is_ok()) blas->cublasDestroy(handle);
  }
  const Driver& cu() const { return *dev->cu; }
  pool::BlockPool& pool(CUstream s) {
    std::lock_guard<std::mutex> lock(mu);
    std::shared_ptr<pool::BlockPool>& p = pools[s];
    if (!p) p = pool::BlockPool::create(kPoolRetainedBytes, device_alloc, device_free);
    return *p;
  }
  ir::Tensor take(CUstream s, ir::DType dt, std::vector<int64_t> shape) {
    const size_t bytes = ir::Tensor::dense_bytes(dt, shape);
    return ir::Tensor::over(dt, std::move(shape), pool(s).take(bytes), {kDLCUDA, 0});
  }
};

// ---- host staging: the CPU paths ----

// A host copy of a device tensor with the same strides.
Expected<ir::Tensor> to_host(Shared& sh, const DLTensor& t, CUstream s) {
  const ir::DType dt = *ir::from_dl(t.dtype);
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  std::vector<int64_t> strides = t.strides ? std::vector<int64_t>(t.strides, t.strides + t.ndim) : ir::Tensor::dense_strides(shape);
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (numel == 0) return ir::Tensor::empty(dt, shape);
  const auto [lo, hi] = ir::offset_span(shape, strides);
  ir::Tensor span = ir::Tensor::empty(dt, {hi - lo + 1});
  const size_t es = ir::dtype_size(dt);
  const char* from = static_cast<const char*>(t.data) + t.byte_offset + lo * static_cast<int64_t>(es);
  SJ_TRY(check(sh.cu(), sh.cu().cuMemcpyDtoHAsync(span.data(), dptr(from), span.numel() * es, s), "copying an input to the host"));
  return span.view(std::move(shape), std::move(strides), -lo);
}

// Runs a host kernel on copies of the inputs; the outputs go back to the
// device. Synchronous on the stream.
Status run_on_host(Shared& sh, Kernel& host, std::span<const DLTensor* const> args, std::span<int64_t> symbols,
                   std::span<ir::Tensor> outputs, CUstream s) {
  SJ_TRY(sh.dev->bind());
  std::vector<ir::Tensor> in;
  for (const DLTensor* a : args) in.push_back(SJ_TRY(to_host(sh, *a, s)));
  SJ_TRY(check(sh.cu(), sh.cu().cuStreamSynchronize(s), "waiting for the inputs' copies"));
  std::vector<DLTensor> dl;
  std::vector<const DLTensor*> ptrs;
  for (const ir::Tensor& t : in) dl.push_back(t.dl());
  for (const DLTensor& d : dl) ptrs.push_back(&d);
  std::vector<ir::Tensor> out(outputs.size());
  SJ_TRY(host.run(RunContext{s, nullptr}, ptrs, symbols, out));
  for (size_t i = 0; i < out.size(); ++i) {
    const ir::Tensor c = out[i].contiguous();
    outputs[i] = sh.take(s, c.dtype(), c.shape());
    const size_t bytes = static_cast<size_t>(c.numel()) * ir::dtype_size(c.dtype());
    if (bytes) SJ_TRY(check(sh.cu(), sh.cu().cuMemcpyHtoDAsync(dptr(outputs[i].data()), c.data(), bytes, s), "copying an output to the device"));
  }
  return check(sh.cu(), sh.cu().cuStreamSynchronize(s), "waiting for the outputs' copies");
}

// A reference kernel run on the host for a device backend.
class StagedKernel final : public Kernel {
 public:
  StagedKernel(std::shared_ptr<Shared> sh, std::unique_ptr<Kernel> host) : sh_(std::move(sh)), host_(std::move(host)) {}
  Status run(const RunContext& ctx, std::span<const DLTensor* const> args, std::span<int64_t> symbols, std::span<ir::Tensor> outputs) override {
    return run_on_host(*sh_, *host_, args, symbols, outputs, static_cast<CUstream>(ctx.stream));
  }
  size_t code_bytes() const override { return sizeof(*this) + host_->code_bytes(); }

 private:
  std::shared_ptr<Shared> sh_;
  std::unique_ptr<Kernel> host_;
};

// ---- the compiled kernel ----

struct StepFns {
  CUfunction main = nullptr, warp = nullptr, block = nullptr;  // pointwise: main
  std::vector<CUfunction> phases;                             // split
};

class CudaKernel final : public Kernel {
 public:
  CudaKernel(std::shared_ptr<Shared> sh, LoopProgram p, CudaSource src, std::string image, CUmodule module, std::vector<StepFns> fns)
      : sh_(std::move(sh)), p_(std::move(p)), plan_(p_), src_(std::move(src)), image_(std::move(image)), module_(module), fns_(std::move(fns)),
        may_fail_(p_.has_checks()) {}
  ~CudaKernel() override {
    if (sh_->dev->bind().is_ok()) sh_->cu().cuModuleUnload(module_);
  }

  Status run(const RunContext& ctx, std::span<const DLTensor* const> args, std::span<int64_t> symbols, std::span<ir::Tensor> outputs) override;
  // The cubin (or PTX) is what the cache holds.
  size_t code_bytes() const override { return sizeof(*this) + image_.size() + src_.code.size(); }
  const std::string& image() const { return image_; }

 private:
  class Call;

  int64_t eval(Expr e, std::span<const int64_t> values) const {
    for (int id : sym::symbols_of(e)) {
      if (id >= static_cast<int>(values.size())) return -1;  // depends on a loop variable: not a host value
    }
    return sym::evaluate(e, values);
  }
  Status launch(CUfunction f, int64_t gx, int64_t gy, std::vector<uint64_t>& words, CUstream s, const std::string& what) const {
    void* params[] = {words.data()};
    const auto x = static_cast<unsigned>(std::clamp<int64_t>(gx, 1, INT32_MAX)), y = static_cast<unsigned>(std::clamp<int64_t>(gy, 1, 65535));
    return check(sh_->cu(), sh_->cu().cuLaunchKernel(f, x, y, 1, kBlock, 1, 1, 0, s, params, nullptr), "launching " + what);
  }
  Status loop_step(size_t k, std::vector<uint64_t>& words, std::span<const int64_t> values, CUstream s) const;
  Status matmul(const loops::MatmulStep& mm, char* const* bufs, std::span<const int64_t> values, CUstream s) const;

  std::shared_ptr<Shared> sh_;
  LoopProgram p_;
  loops::RunPlan plan_;
  CudaSource src_;
  std::string image_;
  CUmodule module_;
  std::vector<StepFns> fns_;
  bool may_fail_;  // reads the error flag back
};

// One call of a CudaKernel on its stream: the kernels' parameter words
// (codegen.h: b[NB], s[NS], err, rows, splits, ws), the temporaries, the
// error flag; and how the backend runs each kind of step (loops/run_steps.h).
// An epilogue is the pointwise kernel after its product or compaction.
class CudaKernel::Call final : public loops::StepRunner {
 public:
  Call(const CudaKernel& k, std::span<const DLTensor* const> args, std::span<ir::Tensor> outputs, CUstream s)
      : k_(k), p_(k.p_), args_(args), outputs_(outputs), s_(s), words_(static_cast<size_t>(k.src_.num_buffers + k.src_.num_symbols + 4), 0),
        temps_(p_.num_temps) {}

  Status place(std::span<const int64_t> values) override;
  Status allocate(int buffer, std::span<const int64_t> values) override;
  Expected<int64_t> count(size_t k, std::span<const int64_t> values) override;
  void recount(std::span<const int64_t> values) override {
    for (size_t i = 0; i < values.size() && i < static_cast<size_t>(k_.src_.num_symbols); ++i) {
      words_[static_cast<size_t>(k_.src_.num_buffers) + i] = static_cast<uint64_t>(values[i]);
    }
  }
  Status fill(size_t k, int epilogue, std::span<const int64_t> values) override;
  Status loops(size_t k, std::span<const int64_t> values) override { return k_.loop_step(k, words_, values, s_); }
  Status matmul(size_t k, int epilogue, std::span<const int64_t> values) override {
    SJ_TRY(k_.matmul(p_.steps[k].matmul, reinterpret_cast<char* const*>(words_.data()), values, s_));
    return epilogue < 0 ? Status::ok() : k_.loop_step(static_cast<size_t>(epilogue), words_, values, s_);
  }
  // Lowered off for this backend (lower_options): a graph with one is unsupported.
  Status scan(size_t, std::span<const int64_t>) override { return internal_error("cuda: a scan step reached the kernel"); }
  Status scatter(size_t, std::span<const int64_t>) override { return internal_error("cuda: a scatter step reached the kernel"); }
  Status attention(size_t, std::span<const int64_t>) override { return internal_error("cuda: an attention step reached the kernel"); }
  Status finish() override;

 private:
  int64_t blocks(const loops::CompactStep& c, std::span<const int64_t> values) const;

  const CudaKernel& k_;
  const LoopProgram& p_;
  std::span<const DLTensor* const> args_;
  std::span<ir::Tensor> outputs_;
  CUstream s_;
  std::vector<uint64_t> words_;
  std::vector<ir::Tensor> temps_;
  std::shared_ptr<void> err_;
};

Status CudaKernel::run(const RunContext& ctx, std::span<const DLTensor* const> args, std::span<int64_t> symbols, std::span<ir::Tensor> outputs) {
  SJ_TRY(sh_->dev->bind());
  std::vector<int64_t> values = loops::symbol_values(p_, args, symbols);
  Call call(*this, args, outputs, static_cast<CUstream>(ctx.stream));
  const Status st = loops::run_steps(p_, plan_, call, values, symbols);
  if (!st.is_ok() && st.code() != Code::kUseReference) return use_reference("cuda: " + st.message());
  return st;
}

Status CudaKernel::Call::place(std::span<const int64_t> values) {
  const Driver& cu = k_.sh_->cu();
  for (size_t i = 0; i < p_.buffers.size(); ++i) {
    const loops::Buffer& b = p_.buffers[i];
    void* at = nullptr;
    if (k_.plan_.is_sized_later(static_cast<int>(i))) continue;  // allocated at its first step
    switch (b.kind) {
      case loops::Buffer::Kind::kInput: at = static_cast<char*>(args_[b.index]->data) + args_[b.index]->byte_offset; break;
      case loops::Buffer::Kind::kOutput: at = outputs_[b.index].data(); break;  // allocated by the caller
      case loops::Buffer::Kind::kTemp: {
        std::vector<int64_t> shape;
        for (const Expr& d : b.shape) shape.push_back(k_.eval(d, values));
        temps_[b.index] = k_.sh_->take(s_, b.dtype, std::move(shape));
        at = temps_[b.index].data();
        break;
      }
      case loops::Buffer::Kind::kScratch: break;  // attention steps only, which this backend does not lower
    }
    words_[i] = reinterpret_cast<uint64_t>(at);
  }
  for (size_t i = 0; i < values.size(); ++i) words_[k_.src_.num_buffers + i] = static_cast<uint64_t>(values[i]);
  if (k_.may_fail_) {
    const size_t err_at = static_cast<size_t>(k_.src_.num_buffers + k_.src_.num_symbols);
    err_ = k_.sh_->pool(s_).take(sizeof(int));
    SJ_TRY(check(cu, cu.cuMemsetD8Async(dptr(err_.get()), 0, sizeof(int), s_), "clearing the error flag"));
    words_[err_at] = reinterpret_cast<uint64_t>(err_.get());
  }
  return Status::ok();
}

Status CudaKernel::Call::finish() {
  if (!k_.may_fail_) return Status::ok();
  const Driver& cu = k_.sh_->cu();
  int flag = 0;
  SJ_TRY(check(cu, cu.cuMemcpyDtoHAsync(&flag, dptr(err_.get()), sizeof flag, s_), "reading the error flag"));
  SJ_TRY(check(cu, cu.cuStreamSynchronize(s_), "waiting for a kernel with checks"));
  return flag != 0 ? use_reference() : Status::ok();
}

Status CudaKernel::loop_step(size_t k, std::vector<uint64_t>& words, std::span<const int64_t> values, CUstream s) const {
  const loops::LoopStep& st = p_.steps[k].loops;
  const StepPlan& plan = src_.steps[k];
  const std::string& what = p_.steps[k].label;
  const size_t base = static_cast<size_t>(src_.num_buffers + src_.num_symbols);
  const std::optional<int64_t> outer = loops::outer_rows(st, values);
  if (!outer) return runtime_error("cuda: " + what + ": a loop runs more than 2^63 - 1 times");
  const int64_t rows = *outer;
  if (rows == 0) return Status::ok();
  int64_t longest = 0;
  for (const loops::Phase& ph : st.phases) {
    Expr e = 1;
    for (const Expr& x : ph.extents) e = e * x;
    const int64_t n = eval(e, values);
    longest = std::max(longest, n < 0 ? kWarpRowMax + 1 : n);
  }
  const int64_t sms = sh_->dev->sms;
  words[base + 1] = static_cast<uint64_t>(rows);
  if (plan.kind == StepPlan::Kind::kPointwise) {
    if (longest == 0) return Status::ok();
    const bool flat = rows > 1 && longest < 4 * kBlock;
    words[base + 2] = flat ? 1 : 0;
    if (flat) return launch(fns_[k].main, std::min((rows * longest + kBlock - 1) / kBlock, 8 * sms), 1, words, s, what);
    return launch(fns_[k].main, std::min((longest + 4 * kBlock - 1) / (4 * kBlock), 8 * sms), rows, words, s, what);
  }
  if (rows < sms && longest >= kSplitRowMin) {
    const int64_t splits = std::max<int64_t>(1, std::min(longest / kSplitPart, 4 * sms / rows));
    words[base + 2] = static_cast<uint64_t>(splits);
    std::shared_ptr<void> ws = sh_->pool(s).take(static_cast<size_t>(std::max(1, plan.slots) * rows * splits) * 16);
    words[base + 3] = reinterpret_cast<uint64_t>(ws.get());
    for (size_t p = 0; p < fns_[k].phases.size(); ++p) {
      SJ_TRY(launch(fns_[k].phases[p], rows * splits, 1, words, s, what + ", phase " + std::to_string(p)));
    }
    return Status::ok();  // `ws` returns to the stream's pool: later work on it is ordered after these kernels
  }
  words[base + 2] = 1;
  if (longest <= kWarpRowMax) return launch(fns_[k].warp, std::min((rows + 7) / 8, 32 * sms), 1, words, s, what);
  return launch(fns_[k].block, std::min(rows, 8 * sms), 1, words, s, what);
}

Status CudaKernel::Call::allocate(int i, std::span<const int64_t> values) {
  const loops::Buffer& b = p_.buffers[i];
  std::vector<int64_t> shape;
  for (const Expr& d : b.shape) shape.push_back(k_.eval(d, values));
  ir::Tensor& t = b.kind == loops::Buffer::Kind::kOutput ? outputs_[b.index] : temps_[b.index];
  t = k_.sh_->take(s_, b.dtype, std::move(shape));
  words_[i] = reinterpret_cast<uint64_t>(t.data());
  return Status::ok();
}

// The blocks a compaction's mask is counted and filled in, on this call.
int64_t CudaKernel::Call::blocks(const loops::CompactStep& c, std::span<const int64_t> values) const {
  int64_t size = 1;
  for (const Expr& d : c.shape) size *= k_.eval(d, values);  // the mask's elements: no overflow
  return (size + loops::CompactStep::kBlock - 1) / loops::CompactStep::kBlock;
}

// A compaction's blocks' counts read back, their prefix sum written over
// them: each block's start.
Expected<int64_t> CudaKernel::Call::count(size_t k, std::span<const int64_t> values) {
  const Driver& cu = k_.sh_->cu();
  const loops::CompactStep& c = p_.steps[k].compact;
  const int64_t blocks = this->blocks(c, values);
  std::vector<int64_t> counts(static_cast<size_t>(blocks));
  const CUdeviceptr at = static_cast<CUdeviceptr>(words_[c.counts]);
  const size_t bytes = counts.size() * sizeof(int64_t);
  int64_t total = 0;
  if (blocks > 0) {
    SJ_TRY(check(cu, cu.cuMemcpyDtoHAsync(counts.data(), at, bytes, s_), "reading a compaction's counts"));
    SJ_TRY(check(cu, cu.cuStreamSynchronize(s_), "waiting for a compaction's counts"));
    for (int64_t& n : counts) total += std::exchange(n, total);  // each block's start
    SJ_TRY(check(cu, cu.cuMemcpyHtoDAsync(at, counts.data(), bytes, s_), "writing a compaction's starts"));
  }
  // The starts go from host memory the driver copied before returning; the
  // counts' vector may go.
  return total;
}

Status CudaKernel::Call::fill(size_t k, int epilogue, std::span<const int64_t> values) {
  const loops::CompactStep& c = p_.steps[k].compact;
  if (values[c.count] > 0) {
    SJ_TRY(k_.launch(k_.fns_[k].main, std::min(blocks(c, values), 8 * static_cast<int64_t>(k_.sh_->dev->sms)), 1, words_, s_, p_.steps[k].label));
  }
  return epilogue < 0 ? Status::ok() : k_.loop_step(static_cast<size_t>(epilogue), words_, values, s_);
}

// Row-major C = A @ B as column-major C^T = B^T A^T, strided-batched.
Status CudaKernel::matmul(const loops::MatmulStep& mm, char* const* bufs, std::span<const int64_t> values, CUstream s) const {
  const Driver& cu = sh_->cu();
  const ir::DType dt = p_.buffers[mm.c].dtype;
  const loops::MatmulShape shape(mm, values);
  const int64_t m = shape.m, n = shape.n, k = shape.k, count = shape.count;
  const size_t nb = mm.batch.size();
  const int64_t es = static_cast<int64_t>(ir::dtype_size(dt));
  if (m == 0 || n == 0 || count == 0) return Status::ok();
  if (k == 0) return check(cu, cu.cuMemsetD8Async(dptr(bufs[mm.c]), 0, static_cast<size_t>(count * m * n * es), s), "zeroing a matmul");
  if (std::max({m, n, k}) > INT32_MAX) return unsupported("cuda: a matmul dim over 2^31 (cuBLAS takes int)");
  // cuBLAS's batch: the trailing batch dims that one strided batch covers
  // (attention's [batch, heads] in one call); the dims before them a loop.
  const size_t first = shape.strided_batch_start(INT32_MAX);
  int64_t inner = 1;
  for (size_t d = first; d < nb; ++d) inner *= shape.batch[d];
  const int64_t outer = count / inner;
  const int64_t sa = nb ? shape.a_stride[nb - 1] : 0, sb = nb ? shape.b_stride[nb - 1] : 0;
  std::lock_guard<std::mutex> lock(sh_->blas_mu);
  if (sh_->blas->cublasSetStream(sh_->handle, s) != CUBLAS_STATUS_SUCCESS) return internal_error("cuda: cublasSetStream failed");
  for (int64_t o = 0; o < outer; ++o) {
    const auto [ao, bo] = shape.offsets(o, first);
    const char* a = bufs[mm.a.buffer] + ao * es;  // dense: lowered without strided operands
    const char* b = bufs[mm.b.buffer] + bo * es;
    char* c = bufs[mm.c] + o * inner * m * n * es;
    const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k), B = static_cast<int>(inner);
    cublasStatus_t r;
    if (dt == ir::DType::kF32) {
      const float one = 1, zero = 0;
      r = sh_->blas->cublasSgemmStridedBatched(sh_->handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, reinterpret_cast<const float*>(b), N, sb,
                                               reinterpret_cast<const float*>(a), K, sa, &zero, reinterpret_cast<float*>(c), N, m * n, B);
    } else {
      const double one = 1, zero = 0;
      r = sh_->blas->cublasDgemmStridedBatched(sh_->handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, reinterpret_cast<const double*>(b), N,
                                               sb, reinterpret_cast<const double*>(a), K, sa, &zero, reinterpret_cast<double*>(c), N, m * n, B);
    }
    if (r != CUBLAS_STATUS_SUCCESS) return internal_error("cuda: cuBLAS gemm failed (status " + std::to_string(static_cast<int>(r)) + ")");
  }
  return Status::ok();
}

// ---- the backend ----

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(std::shared_ptr<Shared> sh) : sh_(std::move(sh)) {
    const Device& d = *sh_->dev;
    const std::vector<int> archs = nvrtc_archs();
    // A cubin for the GPU when NVRTC knows it; else PTX for the newest
    // architecture below it, which the driver compiles on load.
    cubin_ = std::find(archs.begin(), archs.end(), d.arch) != archs.end();
    arch_ = d.arch;
    if (!cubin_) {
      for (int a : archs) {
        if (a <= d.arch) arch_ = a;
      }
    }
    int blas_version = 0;
    if (sh_->blas) sh_->blas->cublasGetVersion(sh_->handle, &blas_version);
    target_ = "cuda " + std::string(cubin_ ? "sm_" : "compute_") + std::to_string(arch_) + " (" + d.name + ") nvrtc " + nvrtc_version() +
              " driver " + std::to_string(d.driver_version) + " cublas " + std::to_string(blas_version);
  }

  const char* name() const override { return "cuda"; }
  std::string target() const override { return target_; }
  DLDevice device() const override { return {kDLCUDA, 0}; }
  std::unique_ptr<Kernel> from_host(std::unique_ptr<Kernel> host) override { return std::make_unique<StagedKernel>(sh_, std::move(host)); }
  Expected<ir::Tensor> allocate(const RunContext& ctx, ir::DType dtype, std::span<const int64_t> shape) override {
    SJ_TRY(sh_->dev->bind());
    ir::Tensor t = sh_->take(static_cast<CUstream>(ctx.stream), dtype, std::vector<int64_t>(shape.begin(), shape.end()));
    if (t.numel() > 0 && t.data() == nullptr) return runtime_error("cuda: out of device memory for an output");
    return t;
  }

  // No quicker tier: NVRTC has one level.
  Expected<std::unique_ptr<Kernel>> compile(const ir::SpecializedGraphPtr& graph, const CompileRequest& request) override {
    if (request.quick) return no_quick_tier();
    std::unique_ptr<Kernel> k = SJ_TRY(make(graph, std::nullopt));
    if (request.image) *request.image = static_cast<const CudaKernel&>(*k).image();
    return k;
  }

  // The image is the cubin (or PTX) NVRTC made; a load lowers the graph
  // and writes its CUDA C again (cheap: the source names the functions),
  // and hands the image to the driver without NVRTC.
  bool persists() const override { return true; }
  Expected<std::unique_ptr<Kernel>> load(const ir::SpecializedGraphPtr& graph, std::string_view image, const CompileContext&) override {
    return make(graph, std::string(image));
  }

 private:
  Expected<std::unique_ptr<Kernel>> make(const ir::SpecializedGraphPtr& graph, std::optional<std::string> loaded) {
    LoopProgram p = SJ_TRY(loops::lower(*graph, lower_options(sh_->blas != nullptr)));
    CudaSource src = SJ_TRY(emit_cuda(p));
    if (args_bytes(src) > 4000) return unsupported("cuda: the kernel parameters (" + std::to_string(args_bytes(src)) + " bytes) exceed 4 KB");
    std::string image = loaded ? std::move(*loaded) : SJ_TRY(nvrtc_compile(src.code, arch_, !cubin_));
    if (!cubin_ && (image.empty() || image.back() != '\0')) image.push_back('\0');  // PTX is a C string to the driver
    const Driver& cu = sh_->cu();
    SJ_TRY(sh_->dev->bind());
    CUmodule module = nullptr;
    if (cu.module_source) cu.module_source(image.data(), image.size(), src.code.c_str());  // the tests' mock runs the source
    SJ_TRY(check(cu, cu.cuModuleLoadData(&module, image.data()), "loading the module"));
    std::vector<StepFns> fns(src.steps.size());
    auto get = [&](CUfunction* f, const std::string& name) { return check(cu, cu.cuModuleGetFunction(f, module, name.c_str()), "finding " + name); };
    for (size_t k = 0; k < src.steps.size(); ++k) {
      const StepPlan& plan = src.steps[k];
      Status st = Status::ok();
      if (plan.kind == StepPlan::Kind::kPointwise || plan.kind == StepPlan::Kind::kCompact) st = get(&fns[k].main, plan.name);
      if (plan.kind == StepPlan::Kind::kRows) {
        st = get(&fns[k].warp, plan.name + "_w");
        if (st.is_ok()) st = get(&fns[k].block, plan.name + "_b");
        fns[k].phases.resize(static_cast<size_t>(plan.phases));
        for (int ph = 0; ph < plan.phases && st.is_ok(); ++ph) st = get(&fns[k].phases[ph], plan.name + "_p" + std::to_string(ph));
      }
      if (!st.is_ok()) {
        cu.cuModuleUnload(module);
        return st;
      }
    }
    return std::unique_ptr<Kernel>(new CudaKernel(sh_, std::move(p), std::move(src), std::move(image), module, std::move(fns)));
  }

  std::shared_ptr<Shared> sh_;
  bool cubin_ = true;
  int arch_ = 0;
  std::string target_;
};

}  // namespace
}  // namespace cuda

Expected<std::unique_ptr<Backend>> make_cuda_backend() {
  const cuda::Device* d = SJ_TRY(cuda::device());
  SJ_TRY(d->bind());
  cuda::g_device = d;
  auto sh = std::make_shared<cuda::Shared>();
  sh->dev = d;
  auto blas = cuda::cublas();
  if (blas.is_ok() && blas.value()->cublasCreate(&sh->handle) == CUBLAS_STATUS_SUCCESS) sh->blas = blas.value();
  return std::unique_ptr<Backend>(new cuda::CudaBackend(std::move(sh)));
}

}  // namespace shapejit::backends
