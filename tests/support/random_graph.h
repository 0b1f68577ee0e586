// Random graphs for property tests: 1-20 ops over inputs whose dims are all
// symbols, with random concrete shapes (0, 1 and broadcasts included). The
// generator tracks each value's concrete shape so every op it emits is well
// typed for the inputs it also returns.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "core/ir/tensor.h"

namespace shapejit::testing {

struct RandomGraph {
  std::string json;
  std::vector<ir::Tensor> inputs;
  int num_ops = 0;
};

RandomGraph random_graph(std::mt19937& rng, int max_ops);

}  // namespace shapejit::testing
