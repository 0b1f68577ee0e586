// The checks a call's arguments get, in one place.
//
// The hit path trusts the GuardTree, which reads each argument's dtype,
// device, rank, shape and strides and compares them with an entry's: all
// it needs first is that every argument is there (check_present). A call
// that no entry takes may be malformed, so the miss path checks all of it
// before anything reads a size (check_args). A graph the caller holds must
// also take the call's arguments (check_graph_inputs).
#pragma once

#include <dlpack/dlpack.h>

#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "core/ir/graph.h"
#include "core/support/status.h"

namespace shapejit::runtime {

using Args = std::span<const DLTensor* const>;

inline Status check_present(Args args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == nullptr) return invalid("input " + std::to_string(i) + " is null");
  }
  return Status::ok();
}

// Each argument: present, of a rank, dtype and device the backend takes,
// with a shape that is there, not negative, and spans less than 2^62 bytes,
// and data where it holds any element.
Status check_args(Args args, const backends::Backend& backend);

// The held graph's inputs and the call's arguments: as many, and of the
// same dtypes.
Status check_graph_inputs(const std::vector<ir::InputSpec>& inputs, Args args);

// Input specs for a call traced from scratch, whose arguments passed
// check_args: every dim a fresh symbol.
std::vector<ir::InputSpec> dynamic_inputs(Args args);

}  // namespace shapejit::runtime
