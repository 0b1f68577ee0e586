#include "backends/fallback.h"
#include "core/support/faults.h"

namespace shapejit::backends {

namespace {

class FallbackKernel final : public Kernel {
 public:
  // `primary` null: the backend could not compile the graph, for `reason`.
  FallbackKernel(std::unique_ptr<Kernel> primary, std::unique_ptr<Kernel> reference, std::string reason)
      : primary_(std::move(primary)), reference_(std::move(reference)), reason_(std::move(reason)) {}

  Status run(const RunContext& ctx, std::span<const DLTensor* const> args, std::span<int64_t> symbols, std::span<ir::Tensor> outputs) override {
    if (!primary_) return reference_->run(ctx, args, symbols, outputs);
    Status s = primary_->run(ctx, args, symbols, outputs);
    if (s.code() != Code::kUseReference) return s;
    const std::string why = s.message();
    if (!why.empty()) ctx.warn("shapejit: " + why + "; the call runs on the reference interpreter");
    Status r = reference_->run(ctx, args, symbols, outputs);
    if (!r.is_ok() && !why.empty()) return r.with_context(why + "; and on the reference interpreter");
    return r;
  }
  size_t code_bytes() const override { return (primary_ ? primary_->code_bytes() : 0) + reference_->code_bytes() + sizeof(*this); }
  const std::string& fallback_reason() const override { return reason_; }
  const CompilePhases* phases() const override { return primary_ ? primary_->phases() : nullptr; }

 private:
  std::unique_ptr<Kernel> primary_;
  std::unique_ptr<Kernel> reference_;
  std::string reason_;
};

}  // namespace

WithFallback::WithFallback(std::unique_ptr<Backend> primary)
    : primary_(std::move(primary)),
      reference_(make_reference_backend()),
      device_(primary_->device()) {}

namespace {

Status injected(support::Fault f) {
  return Status(Code::kInternal, std::string(support::fault_name(f)) + " failed (fault injected)");
}

}  // namespace

Expected<std::unique_ptr<Kernel>> WithFallback::compile_reference(const ir::SpecializedGraphPtr& graph) {
  if (support::fault(support::Fault::kFallback)) return injected(support::Fault::kFallback);
  return primary_->from_host(SJ_TRY(reference_->compile(graph, {})));
}

Expected<std::unique_ptr<Kernel>> WithFallback::compile(const ir::SpecializedGraphPtr& graph, const CompileRequest& request) {
  Expected<std::unique_ptr<Kernel>> compiled =
      support::fault(support::Fault::kCompile) ? injected(support::Fault::kCompile) : primary_->compile(graph, request);
  if (!compiled.is_ok()) {
    if (request.image) request.image->clear();
    if (request.quick) return compiled;
  }
  return wrap(std::move(compiled), graph);
}

Expected<std::unique_ptr<Kernel>> WithFallback::load(const ir::SpecializedGraphPtr& graph, std::string_view image, const CompileContext& context) {
  // A load that fails is the cache's miss, not a fallback: it compiles next.
  if (support::fault(support::Fault::kLoad)) return injected(support::Fault::kLoad);
  std::unique_ptr<Kernel> loaded = SJ_TRY(primary_->load(graph, image, context));
  return wrap(std::move(loaded), graph);
}

Expected<std::unique_ptr<Kernel>> WithFallback::wrap(Expected<std::unique_ptr<Kernel>> compiled, const ir::SpecializedGraphPtr& graph) {
  // A kernel that never defers (the reference's own among them) needs no
  // reference beside it, nor a call in between.
  if (compiled.is_ok() && !compiled.value()->may_use_reference()) return compiled;
  std::unique_ptr<Kernel> reference = SJ_TRY(compile_reference(graph));
  if (!compiled.is_ok()) {
    return std::unique_ptr<Kernel>(new FallbackKernel(nullptr, std::move(reference), compiled.status().message()));
  }
  return std::unique_ptr<Kernel>(new FallbackKernel(std::move(compiled).value(), std::move(reference), {}));
}

}  // namespace shapejit::backends
