// The LLVM backend: a graph lowered to loops (backends/loops), each loop
// step compiled with ORC (steps.h: the step compiler, session.h: the JIT),
// and the program run on the CPU device (backends/cpu/kernel.h).
#include <chrono>
#include <memory>

#include "backends/backend.h"
#include "backends/cpu/kernel.h"
#include "backends/llvm/session.h"
#include "backends/llvm/steps.h"
#include "backends/loops/lower.h"
#include "core/support/hash.h"

namespace shapejit::backends::llvm {

namespace {

using loops::LoopProgram;

// What an image records of the loop program it was compiled from: the hash
// of its dump without the steps' labels (which name graph values, and
// graphs that differ only in names share kernels).
std::string program_stamp(const LoopProgram& p) { return Hasher().add_str(p.dump(false)).finish().hex(); }

class LlvmBackend final : public Backend {
 public:
  explicit LlvmBackend(int opt_level) : target_(jit_target(opt_level)), steps_(opt_level, target_) {
    if (opt_level > 0) quick_steps_ = std::make_unique<StepCompiler>(0, jit_target(0));
  }
  const char* name() const override { return "llvm"; }
  std::string target() const override { return target_; }
  void attach(const CompileServices& s) override {
    steps_.attach(s);
    if (quick_steps_) quick_steps_->attach(s);
  }

  Expected<ir::Tensor> allocate(const RunContext&, ir::DType dtype, std::span<const int64_t> shape) override {
    return device_.allocate(dtype, shape);
  }

  // A quick compile is at O0, its steps cached under O0's target.
  Expected<std::unique_ptr<Kernel>> compile(const ir::SpecializedGraphPtr& graph, const CompileRequest& request) override {
    if (request.quick && !quick_steps_) return no_quick_tier();
    CompilePhases phases;
    LoopProgram p = SJ_TRY(lower(*graph, phases));
    if (request.image) *request.image = request.quick ? std::string() : program_stamp(p);
    return make_kernel(std::move(p), *graph, phases, request.quick ? *quick_steps_ : steps_, request.context);
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
  Expected<std::unique_ptr<Kernel>> load(const ir::SpecializedGraphPtr& graph, std::string_view image, const CompileContext& context) override {
    CompilePhases phases;
    LoopProgram p = SJ_TRY(lower(*graph, phases));
    if (image != program_stamp(p)) return Status(Code::kUnsupported, "llvm: the image is of another loop program");
    return make_kernel(std::move(p), *graph, phases, steps_, context);
  }

 private:
  static Expected<LoopProgram> lower(const ir::SpecializedGraph& graph, CompilePhases& phases) {
    const auto t0 = std::chrono::steady_clock::now();
    Expected<LoopProgram> p = loops::lower(graph);
    phases.lower_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return p;
  }
  Expected<std::unique_ptr<Kernel>> make_kernel(LoopProgram p, const ir::SpecializedGraph& graph, CompilePhases& phases, StepCompiler& compiler,
                                                const CompileContext& context) {
    std::vector<BoundStep> steps = SJ_TRY(compiler.bind(p, graph.graph->nodes.size(), phases, context));
    return device_.kernel(std::move(p), std::move(steps), phases);
  }

  std::string target_;
  StepCompiler steps_;
  std::unique_ptr<StepCompiler> quick_steps_;  // quick compiles', at O0; none when the backend's level is O0
  cpu::Device device_;
};

}  // namespace

}  // namespace shapejit::backends::llvm

namespace shapejit::backends {

Expected<std::unique_ptr<Backend>> make_llvm_backend(int opt_level) {
  SJ_TRY(llvm::jit_available());
  return std::unique_ptr<Backend>(new llvm::LlvmBackend(opt_level));
}

}  // namespace shapejit::backends
