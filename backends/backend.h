// The backend interface: compile a graph under a specialization into a
// kernel, and run it. Backends know nothing of the recompile policy: a
// Specialization says which symbols are constants, which have ranges, and
// which facts the guards ensure; that is all a backend may assume.
#pragma once

#include <dlpack/dlpack.h>

#include <memory>
#include <span>
#include <string>

#include "jit/ir/graph.h"
#include "jit/ir/tensor.h"
#include "jit/support/status.h"
#include "jit/sym/shape_env.h"

namespace shapejit::backends {

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
  virtual Expected<std::unique_ptr<Kernel>> compile(const ir::Graph& graph, const sym::Specialization& spec) = 0;
};

std::unique_ptr<Backend> make_reference_backend();

#ifdef SHAPEJIT_HAVE_LLVM
// The LLVM ORC CPU backend (backends/llvm); an error when the JIT cannot
// start on this host. `opt_level` is the config's compile.opt_level.
Expected<std::unique_ptr<Backend>> make_llvm_backend(int opt_level);
#endif

}  // namespace shapejit::backends
