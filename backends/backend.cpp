#include "backends/backend.h"

namespace shapejit::backends {

Expected<ir::Tensor> Backend::allocate(const RunContext&, ir::DType dtype, std::span<const int64_t> shape) {
  return ir::Tensor::empty(dtype, std::vector<int64_t>(shape.begin(), shape.end()));
}

}  // namespace shapejit::backends
