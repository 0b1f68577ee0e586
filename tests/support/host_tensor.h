// A float32 host tensor as a C caller passes it: a DLTensor over a vector,
// filled with one value.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace shapejit::testing {

struct Host {
  std::vector<float> data;
  std::vector<int64_t> shape;
  DLTensor dl{};
  Host(std::vector<int64_t> s, float fill) : shape(std::move(s)) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    data.assign(static_cast<size_t>(n), fill);
    dl.data = data.data();
    dl.device = {kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(shape.size());
    dl.dtype = {kDLFloat, 32, 1};
    dl.shape = shape.data();
  }
};

}  // namespace shapejit::testing
