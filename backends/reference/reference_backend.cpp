// The reference backend: "compiling" infers the graph's shapes under the
// specialization once; running interprets the graph node by node. It is the
// correctness oracle for every other backend and the runtime's eager path.
#include "backends/backend.h"
#include "backends/reference/kernels.h"

namespace shapejit::backends {

namespace {
thread_local void* t_stream = nullptr;
}  // namespace

void* current_stream() { return t_stream; }
StreamScope::StreamScope(void* stream) : saved_(t_stream) { t_stream = stream; }
StreamScope::~StreamScope() { t_stream = saved_; }

namespace {

class ReferenceKernel final : public Kernel {
 public:
  ReferenceKernel(ir::Graph graph, std::vector<ir::ValueType> types) : graph_(std::move(graph)), types_(std::move(types)) {}

  Status run(std::span<const DLTensor* const> args, std::span<int64_t> symbols, std::span<ir::Tensor> outputs) override {
    return reference::interpret(graph_, types_, args, symbols, outputs);
  }

  size_t code_bytes() const override {
    size_t bytes = sizeof(*this);
    for (const ir::Node& n : graph_.nodes) bytes += sizeof(n) + n.in.size() * sizeof(ir::Operand);
    for (const ir::ValueType& t : types_) bytes += sizeof(t) + (t.shape.size() + t.aux.size()) * sizeof(sym::Expr);
    return bytes;
  }

 private:
  ir::Graph graph_;
  std::vector<ir::ValueType> types_;
};

class ReferenceBackend final : public Backend {
 public:
  const char* name() const override { return "reference"; }
  std::string target() const override { return "reference-v1"; }
  bool specializes_layout() const override { return false; }

  Expected<std::unique_ptr<Kernel>> compile(const ir::Graph& graph, const sym::Specialization& spec) override {
    sym::ShapeEnv env = sym::ShapeEnv::from_specialization(spec);
    std::vector<ir::ValueType> types = SJ_TRY(ir::infer(graph, env, nullptr));
    return std::unique_ptr<Kernel>(new ReferenceKernel(graph, std::move(types)));
  }
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace shapejit::backends
