// WithFallback: a backend, and the reference interpreter wherever it cannot
// go. The one place where shapejit falls back, so that what a backend
// cannot do is never a crash and never a wrong answer:
//   - a graph the backend cannot compile runs on the reference interpreter
//     (the kernel says why: Kernel::fallback_reason; the runtime logs it);
//   - a call the backend's kernel cannot finish (it returns use_reference:
//     a failed runtime check, a reduction over an empty axis, a launch that
//     failed) runs on the reference, which reports errors in its own words,
//     identical across backends; a reason that comes with it is logged;
//   - the eager path runs the reference kernel (compile_reference).
// Reference kernels run on the backend's memory through Backend::from_host.
// A kernel that says it never defers (Kernel::may_use_reference) is returned
// as it is: no reference kernel beside it, no call in between.
#pragma once

#include "backends/backend.h"

namespace shapejit::backends {

class WithFallback final : public Backend {
 public:
  explicit WithFallback(std::unique_ptr<Backend> primary);

  Backend& primary() { return *primary_; }
  const char* name() const override { return primary_->name(); }
  std::string target() const override { return primary_->target(); }
  bool specializes_layout() const override { return primary_->specializes_layout(); }
  DLDevice device() const override { return device_; }
  Expected<ir::Tensor> allocate(const RunContext& ctx, ir::DType dtype, std::span<const int64_t> shape) override {
    return primary_->allocate(ctx, dtype, shape);
  }
  std::unique_ptr<Kernel> from_host(std::unique_ptr<Kernel> host) override { return primary_->from_host(std::move(host)); }
  void attach(const CompileServices& s) override { primary_->attach(s); }

  // The primary's kernel, or the reference where it fails; a quick
  // compile's failure is an error, not a fallback, and a fallback has no
  // image (nothing to keep).
  Expected<std::unique_ptr<Kernel>> compile(const ir::SpecializedGraphPtr& graph, const CompileRequest& request) override;
  bool persists() const override { return primary_->persists(); }
  Expected<std::unique_ptr<Kernel>> load(const ir::SpecializedGraphPtr& graph, std::string_view image, const CompileContext& context) override;
  // The reference interpreter's kernel, on the backend's memory.
  Expected<std::unique_ptr<Kernel>> compile_reference(const ir::SpecializedGraphPtr& graph);

 private:
  std::unique_ptr<Backend> primary_;
  std::unique_ptr<Backend> reference_;
  // The primary's kernel (or its failure), with the reference beside it
  // when it may need one.
  Expected<std::unique_ptr<Kernel>> wrap(Expected<std::unique_ptr<Kernel>> compiled, const ir::SpecializedGraphPtr& graph);

  DLDevice device_;  // the primary's, read once (every call asks)
};

}  // namespace shapejit::backends
