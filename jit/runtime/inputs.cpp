#include "jit/runtime/inputs.h"

#include <optional>

#include "core/ir/dtype.h"
#include "core/ir/tensor.h"

namespace shapejit::runtime {

namespace {

const char* device_name(int type) {
  switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    default: return nullptr;
  }
}

std::string device_text(DLDevice d) {
  const char* name = device_name(d.device_type);
  return (name ? std::string(name) : "device type " + std::to_string(d.device_type)) + " " + std::to_string(d.device_id);
}

}  // namespace

Status check_args(Args args, const backends::Backend& backend) {
  const DLDevice want = backend.device();
  for (size_t i = 0; i < args.size(); ++i) {
    const DLTensor* t = args[i];
    const std::string where = "input " + std::to_string(i);
    if (t == nullptr) return invalid(where + " is null");
    if (t->ndim < 0 || t->ndim > ir::kMaxRank) return invalid(where + ": rank " + std::to_string(t->ndim) + " is out of range");
    if (t->ndim > 0 && t->shape == nullptr) return invalid(where + ": shape is null");
    const std::optional<ir::DType> dtype = ir::from_dl(t->dtype);
    if (!dtype) return invalid(where + ": unsupported dtype (f32, f64, i32, i64, bool)");
    if (t->device.device_type != want.device_type || t->device.device_id != want.device_id) {
      return unsupported(where + " is on " + device_text(t->device) + "; the " + backend.name() + " backend runs on " +
                         device_text(want) + " (compile.backend chooses it)");
    }
    for (int d = 0; d < t->ndim; ++d) {
      if (t->shape[d] < 0) return invalid(where + " dim " + std::to_string(d) + " is negative");
    }
    // The bytes it spans, checked: no tensor in memory spans 2^62 bytes, and
    // one that claims to cannot be sized without overflow downstream. Huge
    // dims beside a 0 are fine: the tensor holds nothing.
    const std::span<const int64_t> shape(t->shape, static_cast<size_t>(t->ndim));
    const std::optional<uint64_t> bytes = ir::dense_bytes_within(ir::dtype_size(*dtype), shape, uint64_t{1} << 62);
    if (!bytes) return invalid(where + ": its shape spans more than 2^62 bytes");
    if (*bytes > 0 && t->data == nullptr) return invalid(where + ": data is null");
  }
  return Status::ok();
}

Status check_graph_inputs(const std::vector<ir::InputSpec>& inputs, Args args) {
  if (inputs.size() != args.size()) {
    return invalid("the graph has " + std::to_string(inputs.size()) + " inputs, the call passes " + std::to_string(args.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::optional<ir::DType> dt = ir::from_dl(args[i]->dtype);
    if (dt != inputs[i].dtype) {
      return invalid("input " + std::to_string(i) + " ('" + inputs[i].name + "'): the graph says " + ir::dtype_name(inputs[i].dtype) +
                     ", the call passes " + (dt ? ir::dtype_name(*dt) : "an unsupported dtype"));
    }
  }
  return Status::ok();
}

std::vector<ir::InputSpec> dynamic_inputs(Args args) {
  std::vector<ir::InputSpec> inputs;
  int symbol = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    ir::InputSpec spec{"in" + std::to_string(i), *ir::from_dl(args[i]->dtype), {}};
    for (int d = 0; d < args[i]->ndim; ++d) spec.shape.push_back(ir::DimSpec::symbol("s" + std::to_string(symbol++)));
    inputs.push_back(std::move(spec));
  }
  return inputs;
}

}  // namespace shapejit::runtime
