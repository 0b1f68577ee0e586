// The backend interface: compile a graph under a specialization into a
// kernel, and run it. Backends know nothing of the recompile policy: a
// Specialization says which symbols are constants, which have ranges, and
// which facts the guards ensure; that is all a backend may assume.
#pragma once

#include <dlpack/dlpack.h>

#include <functional>
#include <memory>
#include <span>
#include <string>

#include "jit/ir/graph.h"
#include "jit/ir/tensor.h"
#include "jit/support/status.h"
#include "jit/sym/shape_env.h"

namespace shapejit::backends {

// The stream of the call being run: a CUstream for device backends (null:
// the default stream), ignored by CPU backends. CallSite::call sets it for
// the call's duration on the calling thread.
void* current_stream();
class StreamScope {
 public:
  explicit StreamScope(void* stream);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  void* saved_;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // `symbols[id]` holds each input symbol's value on this call; the kernel
  // writes the values of unbacked (data-dependent) symbols. `outputs[i]` is
  // allocated by the caller when its shape is known before running (from
  // the shape functions), else left empty for the kernel to allocate.
  virtual Status run(std::span<const DLTensor* const> args, std::span<int64_t> symbols,
                     std::span<ir::Tensor> outputs) = 0;
  // Bytes the kernel holds (code and constants): what the cache bounds.
  virtual size_t code_bytes() const = 0;
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
  // A kernel of the reference interpreter (host memory), made to run on
  // this backend's device: what the runtime runs for a graph the backend
  // cannot compile, or a site that runs eagerly. CPU backends return it.
  virtual std::unique_ptr<Kernel> host_fallback(std::unique_ptr<Kernel> host) { return host; }
  // Where warnings that no call returns go (a launch that failed and ran
  // on the CPU instead); the Jit points it at its log.
  virtual void set_log(std::function<void(const std::string&)> sink) {}
  virtual Expected<std::unique_ptr<Kernel>> compile(const ir::Graph& graph, const sym::Specialization& spec) = 0;
};

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
