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
      : sh_(std::move(sh)), p_(std::move(p)), src_(std::move(src)), image_(std::move(image)), module_(module), fns_(std::move(fns)),
        may_fail_(p_.has_checks()) {
    const std::vector<std::pair<int, int>> life = loops::buffer_lifetimes(p_);
    for (size_t i = 0; i < p_.buffers.size(); ++i) {
      const loops::Buffer& b = p_.buffers[i];
      const bool later = std::any_of(b.shape.begin(), b.shape.end(), [&](const Expr& d) { return p_.is_data_dependent(d); });
      if (b.kind != loops::Buffer::Kind::kInput && later && life[i].first >= 0) sized_later_.push_back({static_cast<int>(i), life[i].first});
    }
  }
  ~CudaKernel() override {
    if (sh_->dev->bind().is_ok()) sh_->cu().cuModuleUnload(module_);
  }

  Status run(const RunContext& ctx, std::span<const DLTensor* const> args, std::span<int64_t> symbols, std::span<ir::Tensor> outputs) override;
  // The cubin (or PTX) is what the cache holds.
  size_t code_bytes() const override { return sizeof(*this) + image_.size() + src_.code.size(); }
  const std::string& image() const { return image_; }

 private:
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
  Status loop_step(size_t k, std::vector<uint64_t>& words, std::span<const int64_t> values, CUstream s);
  // Compact step k: its blocks' counts read back, their prefix sum written
  // over them, the count set in `values`, `symbols` and the kernels'
  // symbols, the buffers first used here allocated, then the fill.
  Status compact(size_t k, std::vector<uint64_t>& words, std::vector<int64_t>& values, std::span<int64_t> symbols, std::span<ir::Tensor> outputs,
                 std::vector<ir::Tensor>& temps, CUstream s);
  // Allocates the buffers sized by a data-dependent count whose first step is `k`.
  void allocate_sized_later(size_t k, std::vector<uint64_t>& words, std::span<const int64_t> values, std::span<ir::Tensor> outputs,
                            std::vector<ir::Tensor>& temps, CUstream s) const;
  Status matmul(const loops::MatmulStep& mm, char* const* bufs, std::span<const int64_t> values, CUstream s);
  Status run_device(std::span<const DLTensor* const> args, std::vector<int64_t>& values, std::span<int64_t> symbols,
                    std::span<ir::Tensor> outputs, CUstream s, bool& failed_check);

  std::shared_ptr<Shared> sh_;
  LoopProgram p_;
  CudaSource src_;
  std::string image_;
  CUmodule module_;
  std::vector<StepFns> fns_;
  bool may_fail_;  // reads the error flag back
  std::vector<std::pair<int, int>> sized_later_;  // (buffer, first step): sized by a data-dependent count
};

Status CudaKernel::run(const RunContext& ctx, std::span<const DLTensor* const> args, std::span<int64_t> symbols, std::span<ir::Tensor> outputs) {
  const CUstream s = static_cast<CUstream>(ctx.stream);
  SJ_TRY(sh_->dev->bind());
  std::vector<int64_t> values = loops::symbol_values(p_, args, symbols);
  // The checks on data-dependent sizes wait for the end (as the LLVM backend's).
  if (p_.check_fails(values, false)) return use_reference();
  bool failed_check = false;
  Status st = run_device(args, values, symbols, outputs, s, failed_check);
  if (!st.is_ok()) return use_reference("cuda: " + st.message());
  return failed_check || p_.check_fails(values, true) ? use_reference() : st;
}

Status CudaKernel::run_device(std::span<const DLTensor* const> args, std::vector<int64_t>& values, std::span<int64_t> symbols,
                              std::span<ir::Tensor> outputs, CUstream s, bool& failed_check) {
  const Driver& cu = sh_->cu();
  // Args: b[NB], s[NS], err, rows, splits, ws (codegen.h).
  std::vector<uint64_t> words(static_cast<size_t>(src_.num_buffers + src_.num_symbols + 4), 0);
  std::vector<ir::Tensor> temps(p_.num_temps);
  for (size_t i = 0; i < p_.buffers.size(); ++i) {
    const loops::Buffer& b = p_.buffers[i];
    void* at = nullptr;
    const bool later = std::any_of(sized_later_.begin(), sized_later_.end(), [&](const auto& x) { return x.first == static_cast<int>(i); });
    if (later) continue;  // allocated at its first step
    switch (b.kind) {
      case loops::Buffer::Kind::kInput: at = static_cast<char*>(args[b.index]->data) + args[b.index]->byte_offset; break;
      case loops::Buffer::Kind::kOutput: at = outputs[b.index].data(); break;  // allocated by the caller
      case loops::Buffer::Kind::kTemp: {
        std::vector<int64_t> shape;
        for (const Expr& d : b.shape) shape.push_back(eval(d, values));
        temps[b.index] = sh_->take(s, b.dtype, std::move(shape));
        at = temps[b.index].data();
        break;
      }
      case loops::Buffer::Kind::kScratch: break;  // attention steps only, which this backend does not lower
    }
    words[i] = reinterpret_cast<uint64_t>(at);
  }
  for (size_t i = 0; i < values.size(); ++i) words[src_.num_buffers + i] = static_cast<uint64_t>(values[i]);
  const size_t err_at = static_cast<size_t>(src_.num_buffers + src_.num_symbols);
  std::shared_ptr<void> err;
  if (may_fail_) {
    err = sh_->pool(s).take(sizeof(int));
    SJ_TRY(check(cu, cu.cuMemsetD8Async(dptr(err.get()), 0, sizeof(int), s), "clearing the error flag"));
    words[err_at] = reinterpret_cast<uint64_t>(err.get());
  }
  for (size_t k = 0; k < p_.steps.size(); ++k) {
    if (p_.steps[k].kind == loops::Step::Kind::kCompact) {
      SJ_TRY(compact(k, words, values, symbols, outputs, temps, s));
      continue;
    }
    allocate_sized_later(k, words, values, outputs, temps, s);
    if (p_.steps[k].kind == loops::Step::Kind::kMatmul) {
      SJ_TRY(matmul(p_.steps[k].matmul, reinterpret_cast<char* const*>(words.data()), values, s));
    } else {
      SJ_TRY(loop_step(k, words, values, s));
    }
  }
  if (may_fail_) {
    int flag = 0;
    SJ_TRY(check(cu, cu.cuMemcpyDtoHAsync(&flag, dptr(err.get()), sizeof flag, s), "reading the error flag"));
    SJ_TRY(check(cu, cu.cuStreamSynchronize(s), "waiting for a kernel with checks"));
    failed_check = flag != 0;
  }
  return Status::ok();
}

Status CudaKernel::loop_step(size_t k, std::vector<uint64_t>& words, std::span<const int64_t> values, CUstream s) {
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

void CudaKernel::allocate_sized_later(size_t k, std::vector<uint64_t>& words, std::span<const int64_t> values, std::span<ir::Tensor> outputs,
                                      std::vector<ir::Tensor>& temps, CUstream s) const {
  for (const auto& [i, first] : sized_later_) {
    if (first != static_cast<int>(k)) continue;
    const loops::Buffer& b = p_.buffers[i];
    std::vector<int64_t> shape;
    for (const Expr& d : b.shape) shape.push_back(eval(d, values));
    ir::Tensor& t = b.kind == loops::Buffer::Kind::kOutput ? outputs[b.index] : temps[b.index];
    t = sh_->take(s, b.dtype, std::move(shape));
    words[i] = reinterpret_cast<uint64_t>(t.data());
  }
}

Status CudaKernel::compact(size_t k, std::vector<uint64_t>& words, std::vector<int64_t>& values, std::span<int64_t> symbols,
                           std::span<ir::Tensor> outputs, std::vector<ir::Tensor>& temps, CUstream s) {
  const Driver& cu = sh_->cu();
  const loops::CompactStep& c = p_.steps[k].compact;
  int64_t size = 1;
  for (const Expr& d : c.shape) size *= eval(d, values);  // the mask's elements: no overflow
  const int64_t blocks = (size + loops::CompactStep::kBlock - 1) / loops::CompactStep::kBlock;
  std::vector<int64_t> counts(static_cast<size_t>(blocks));
  const CUdeviceptr at = static_cast<CUdeviceptr>(words[c.counts]);
  const size_t bytes = counts.size() * sizeof(int64_t);
  int64_t total = 0;
  if (blocks > 0) {
    SJ_TRY(check(cu, cu.cuMemcpyDtoHAsync(counts.data(), at, bytes, s), "reading a compaction's counts"));
    SJ_TRY(check(cu, cu.cuStreamSynchronize(s), "waiting for a compaction's counts"));
    for (int64_t& n : counts) total += std::exchange(n, total);  // each block's start
    SJ_TRY(check(cu, cu.cuMemcpyHtoDAsync(at, counts.data(), bytes, s), "writing a compaction's starts"));
  }
  values[c.count] = total;
  symbols[c.count] = total;
  if (c.count < src_.num_symbols) words[static_cast<size_t>(src_.num_buffers + c.count)] = static_cast<uint64_t>(total);
  allocate_sized_later(k, words, values, outputs, temps, s);
  if (total == 0) return Status::ok();
  SJ_TRY(launch(fns_[k].main, std::min(blocks, 8 * static_cast<int64_t>(sh_->dev->sms)), 1, words, s, p_.steps[k].label));
  // The starts go from host memory the driver copied before returning; the
  // counts' vector may go.
  return Status::ok();
}

// Row-major C = A @ B as column-major C^T = B^T A^T, strided-batched.
Status CudaKernel::matmul(const loops::MatmulStep& mm, char* const* bufs, std::span<const int64_t> values, CUstream s) {
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

  Expected<std::unique_ptr<Kernel>> compile(const ir::SpecializedGraphPtr& graph) override { return make(graph, std::nullopt); }

  // The image is the cubin (or PTX) NVRTC made; a load lowers the graph
  // and writes its CUDA C again (cheap: the source names the functions),
  // and hands the image to the driver without NVRTC.
  bool persists() const override { return true; }
  Expected<std::unique_ptr<Kernel>> compile_image(const ir::SpecializedGraphPtr& graph, std::string& image) override {
    std::unique_ptr<Kernel> k = SJ_TRY(make(graph, std::nullopt));
    image = static_cast<const CudaKernel&>(*k).image();
    return k;
  }
  Expected<std::unique_ptr<Kernel>> load(const ir::SpecializedGraphPtr& graph, std::string_view image) override {
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
