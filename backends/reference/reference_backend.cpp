// The reference backend: "compiling" keeps the specialized graph; running
// interprets it node by node. It is the correctness oracle for every other
// backend, the fallback of every other backend (backends/fallback.h), and
// the runtime's eager path.
#include "backends/backend.h"
#include "backends/reference/kernels.h"

namespace shapejit::backends {

namespace {

class ReferenceKernel final : public Kernel {
 public:
  explicit ReferenceKernel(ir::SpecializedGraphPtr graph) : g_(std::move(graph)) {}

  Status run(const RunContext&, std::span<const DLTensor* const> args, std::span<int64_t> symbols, std::span<ir::Tensor> outputs) override {
    return reference::interpret(*g_->graph, g_->types, args, symbols, outputs);
  }

  bool may_use_reference() const override { return false; }
  // The specialized graph is shared with its entry; this counts what the
  // kernel adds to it: the types it reads.
  size_t code_bytes() const override {
    size_t bytes = sizeof(*this);
    for (const ir::ValueType& t : g_->types) bytes += sizeof(t) + (t.shape.size() + t.aux.size()) * sizeof(sym::Expr);
    return bytes;
  }

 private:
  ir::SpecializedGraphPtr g_;
};

class ReferenceBackend final : public Backend {
 public:
  const char* name() const override { return "reference"; }
  std::string target() const override { return "reference-v1"; }
  bool specializes_layout() const override { return false; }

  Expected<std::unique_ptr<Kernel>> compile(const ir::SpecializedGraphPtr& graph, const CompileRequest& request) override {
    if (request.quick) return no_quick_tier();
    return std::unique_ptr<Kernel>(new ReferenceKernel(graph));
  }
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace shapejit::backends
