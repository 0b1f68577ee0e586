// The backend interface: compile a specialized graph into a kernel, and run
// it. Backends know nothing of the recompile policy: a SpecializedGraph says
// which symbols are constants, which have ranges, which facts the guards
// ensure, and every value's shape under them; that is all a backend may
// assume.
//
// A call's outputs arrive allocated (by `Backend::allocate`, sized by the
// specialized graph's shape functions), dense and apart from the inputs;
// a kernel writes them in place. Only data-dependent outputs are left empty
// for the kernel to allocate.
#pragma once

#include <dlpack/dlpack.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "cache/artifact.h"
#include "cache/kernel_cache.h"
#include "core/ir/specialize.h"
#include "core/ir/tensor.h"
#include "core/support/status.h"

namespace shapejit::backends {

using Log = std::function<void(const std::string&)>;

// What a call runs with besides its data.
struct RunContext {
  void* stream = nullptr;  // a CUstream for device backends (null: the default stream); CPU backends ignore it
  const Log* log = nullptr;  // warnings no call returns (a launch that failed and ran elsewhere)
  void warn(const std::string& line) const {
    if (log && *log) (*log)(line);
  }
};

// Where a compile's time went: the backend's phases, summed over the
// pieces it compiled (on several threads they add up to more than the
// compile's wall time), and what it compiled.
struct CompilePhases {
  double lower_ms = 0;     // graph to loop IR
  double emit_ms = 0;      // loop IR to the backend's IR or source
  double optimize_ms = 0;  // its optimizer
  double codegen_ms = 0;   // machine code, and linking it
  double steps_ms = 0;     // wall time finding or compiling the steps (all of the above but lowering)
  int steps = 0;           // steps with generated code
  int distinct_steps = 0;  // of them, distinct (each compiled or found once)
  int compiled_steps = 0;  // of those, compiled by this compile (the rest were in the cache)

  CompilePhases& operator+=(const CompilePhases& o) {
    lower_ms += o.lower_ms, emit_ms += o.emit_ms, optimize_ms += o.optimize_ms, codegen_ms += o.codegen_ms, steps_ms += o.steps_ms;
    steps += o.steps, distinct_steps += o.distinct_steps, compiled_steps += o.compiled_steps;
    return *this;
  }
};

class Kernel : public cache::Artifact {
 public:
  // `symbols[id]` holds each input symbol's value on this call; the kernel
  // writes the values of unbacked (data-dependent) symbols. A kernel that
  // cannot finish the call (a failed runtime check) returns
  // `use_reference(...)`: the fallback wrapper (fallback.h) runs the
  // reference interpreter instead.
  virtual Status run(const RunContext& ctx, std::span<const DLTensor* const> args, std::span<int64_t> symbols,
                     std::span<ir::Tensor> outputs) = 0;
  // Whether `run` may return use_reference (a kernel with runtime checks).
  // One that never does runs with nothing in between (backends/fallback.h).
  virtual bool may_use_reference() const { return true; }
  // Why this kernel runs on the reference interpreter instead of its
  // backend's code, when it does (empty otherwise).
  virtual const std::string& fallback_reason() const {
    static const std::string kNone;
    return kNone;
  }
  // How its compile (or load) went, where the backend measures it.
  virtual const CompilePhases* phases() const { return nullptr; }
};

// Who asks for a compile, and how: told to the backend by each call rather
// than through the thread it runs on.
struct CompileContext {
  // A background compile (compile.async): the backend keeps its work on the
  // calling thread and leaves the other cores to the calls.
  bool background = false;
  // The call site whose kernel this is (null: none), named in the notice
  // of a slow compile.
  const std::string* site = nullptr;
};

// What a compile is asked for.
struct CompileRequest {
  // The kernel compiled for a short compile rather than a fast run (LLVM at
  // O0): compile.async's stand-in for a call that would otherwise wait for
  // the full compile (runtime/stand_in.h). Unsupported where the backend
  // has no quicker tier than its own; a quick kernel has no image.
  bool quick = false;
  // Filled with the kernel's image where the backend persists kernels (see
  // `load`), left empty when this kernel has none; null: no image wanted.
  std::string* image = nullptr;
  CompileContext context;
};

// What the Jit that owns a backend lends it for compiling: the kernel
// cache, where a backend may keep the parts that kernels share (the LLVM
// backend's fused steps) under keys of their own, and how many threads a
// compile may use (compile.threads; 0: every core).
struct CompileServices {
  cache::KernelCache* cache = nullptr;
  int threads = 0;
  // A compile the backend expects to take `slow_ms` or longer is told
  // about when it starts and when it ends (the Jit logs it).
  struct Notice {
    const std::string* site = nullptr;  // CompileContext::site
    bool done = false;
    size_t nodes = 0;
    int steps = 0, distinct_steps = 0, to_compile = 0;
    double estimate_ms = 0, elapsed_ms = 0;
  };
  double slow_ms = 1000;
  std::function<void(const Notice&)> notice;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // What the generated code depends on besides the graph (CPU features, GPU
  // architecture, compiler version); part of every cache key.
  virtual std::string target() const = 0;
  // Whether kernels are specialized on the inputs being dense row-major:
  // then each entry guards the layout it was compiled for. A backend that
  // takes any strides says no, and strided calls share its entries.
  virtual bool specializes_layout() const { return true; }
  // Where its kernels read and write: inputs must be there, outputs are.
  virtual DLDevice device() const { return {kDLCPU, 0}; }
  // A dense output buffer on the device; an error when the device is out of memory.
  virtual Expected<ir::Tensor> allocate(const RunContext& ctx, ir::DType dtype, std::span<const int64_t> shape);
  // A kernel computing on the host (the reference interpreter's), made to
  // take and give this backend's memory. CPU backends return it as it is.
  virtual std::unique_ptr<Kernel> from_host(std::unique_ptr<Kernel> host) { return host; }
  // The one compile entry: the graph's kernel as `request` asks for it.
  virtual Expected<std::unique_ptr<Kernel>> compile(const ir::SpecializedGraphPtr& graph, const CompileRequest& request) = 0;
  // Called once by the Jit that owns the backend, before any compile; the
  // services outlive the backend. A backend never attached keeps what it
  // shares to itself.
  virtual void attach(const CompileServices&) {}

  // Kernels that outlive the process (the disk and remote tiers). A backend
  // that persists compiles to an image (an object file, a cubin) beside the
  // kernel, and `load` turns the image back into the same kernel, for the
  // same graph, without compiling it again. The image is bytes only: the
  // cache checks its key, target and checksum before `load` sees it, and a
  // `load` error is a miss.
  virtual bool persists() const { return false; }
  // `compile` fills CompileRequest::image.
  virtual Expected<std::unique_ptr<Kernel>> load(const ir::SpecializedGraphPtr& graph, std::string_view image, const CompileContext& context) {
    return unsupported(std::string(name()) + ": kernels cannot be loaded from an image");
  }

 protected:
  // The answer to a quick compile where the backend has no quicker tier.
  Status no_quick_tier() const { return unsupported(std::string(name()) + ": no quicker compile than its own"); }
};

// The graph's size checks on the call's symbols: those before the kernel
// runs, or (`after_run`) those that read the data-dependent sizes it wrote.
inline Status check_sizes(const ir::SpecializedGraph& graph, std::span<const int64_t> symbols, bool after_run) {
  const auto symbol = [&](int32_t id, int32_t) { return symbols[id]; };
  for (const ir::SizeCheck& c : graph.size_checks) {
    if (c.after_run == after_run && !c.program.run(symbol)) {
      return Status(Code::kRuntime, c.what + " overflows int64 at this call (a size, or an integer computed from sizes)",
                    Detail::kOverflow);
    }
  }
  return Status::ok();
}

// Sizes the call's outputs from the specialized graph's shape functions:
// a tensor already in `outputs` is reused when nothing else holds it, its
// shape, dtype and device match, and no input is it; others are allocated.
// `symbols` are the call's symbol values. No allocation when all are reused.
// Inline, and over the backend's own type (the runtime's is final, so its
// calls are direct): it is on every call's path.
template <typename B>
Status prepare_outputs(B& backend, const RunContext& ctx, const ir::SpecializedGraph& graph, std::span<const DLTensor* const> args,
                       std::span<const int64_t> symbols, std::vector<ir::Tensor>& outputs) {
  SJ_TRY(check_sizes(graph, symbols, false));
  const auto symbol = [&](int32_t id, int32_t) { return symbols[id]; };
  const size_t n = graph.outputs.size();
  if (outputs.size() != n) outputs.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const ir::OutputType& type = graph.outputs[i];
    ir::Tensor& out = outputs[i];
    if (type.data_dependent) {
      out = ir::Tensor();
      continue;
    }
    int64_t shape[ir::kMaxRank];  // specialize() bounds output ranks
    const size_t rank = type.shape.size();
    for (size_t d = 0; d < rank; ++d) {
      const std::optional<int64_t> size = type.shape[d].run(symbol);
      if (!size) return Status(Code::kRuntime, "output " + std::to_string(i) + " dim " + std::to_string(d) + ": its size overflows int64 at this call", Detail::kOverflow);
      if (*size < 0) return invalid("output " + std::to_string(i) + " dim " + std::to_string(d) + ": a negative size at this call");
      shape[d] = *size;
    }
    bool reuse = out.is_unique() && out.dtype() == type.dtype && out.rank() == rank && std::equal(shape, shape + rank, out.shape().begin()) &&
                 out.is_contiguous() && out.device().device_type == backend.device().device_type;
    // Kernels assume their outputs are apart from their inputs: an earlier
    // output passed back in is not written over.
    if (reuse) {
      const void* data = out.data();
      for (const DLTensor* a : args) reuse &= a->data != data;
    }
    if (!reuse) out = SJ_TRY(backend.allocate(ctx, type.dtype, std::span<const int64_t>(shape, rank)));
  }
  return Status::ok();
}

std::unique_ptr<Backend> make_reference_backend();

#ifdef SHAPEJIT_HAVE_LLVM
// The LLVM ORC CPU backend (backends/llvm); an error when the JIT cannot
// start on this host. `opt_level` is the config's compile.opt_level.
Expected<std::unique_ptr<Backend>> make_llvm_backend(int opt_level);
#endif

#ifdef SHAPEJIT_HAVE_CUDA
// The NVRTC + CUDA driver backend (backends/cuda) on the first GPU; an
// error that says why when there is no usable GPU or driver.
Expected<std::unique_ptr<Backend>> make_cuda_backend();
#endif

}  // namespace shapejit::backends
