#include "backends/backend.h"

#include <algorithm>

namespace shapejit::backends {

Expected<ir::Tensor> Backend::allocate(const RunContext&, ir::DType dtype, std::span<const int64_t> shape) {
  return ir::Tensor::empty(dtype, std::vector<int64_t>(shape.begin(), shape.end()));
}

Status prepare_outputs(Backend& backend, const RunContext& ctx, const ir::SpecializedGraph& graph, std::span<const DLTensor* const> args,
                       std::span<const int64_t> symbols, std::vector<ir::Tensor>& outputs) {
  outputs.resize(graph.outputs.size());
  const DLDevice device = backend.device();
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const ir::OutputType& type = graph.outputs[i];
    ir::Tensor& out = outputs[i];
    if (type.data_dependent) {
      out = ir::Tensor();
      continue;
    }
    int64_t shape[ir::kMaxRank];  // specialize() bounds output ranks
    const size_t rank = type.shape.size();
    for (size_t d = 0; d < rank; ++d) shape[d] = type.shape[d].run([&](int32_t id, int32_t) { return symbols[id]; });
    bool reuse = out.is_unique() && out.device().device_type == device.device_type && out.dtype() == type.dtype && out.is_contiguous() &&
                 std::equal(out.shape().begin(), out.shape().end(), shape, shape + rank);
    // Kernels assume their outputs are apart from their inputs: an earlier
    // output passed back in is not written over.
    for (size_t a = 0; reuse && a < args.size(); ++a) reuse = args[a]->data != out.data();
    if (!reuse) out = SJ_TRY(backend.allocate(ctx, type.dtype, std::span<const int64_t>(shape, rank)));
  }
  return Status::ok();
}

}  // namespace shapejit::backends
