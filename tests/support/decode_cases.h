// The graphs a decode step with a key/value cache makes, shared by the
// backends' tests, which check each against the reference interpreter:
// grouped-query heads (np.repeat or np.tile of the kv heads, read by the
// scores' and the values' products) and a block update of two dims (the
// cache's row within its slab, as the Python front end traces
// `cache[:b, pos:pos + n] = x`), on edge shapes (0, 1, the whole array).
#pragma once

#include <array>
#include <random>
#include <string>
#include <vector>

#include "tests/support/test_util.h"

namespace shapejit::testing {

struct DecodeCase {
  std::string graph, what;
  std::vector<ir::Tensor> inputs;
};

// q [b, 6, t, 8] against kv [b, s, kv_heads, 8] made 6 heads: "repeat"
// (head i reads kv head i // 3) or "tile" (i % 2); scores, then their
// product with the same heads as values.
inline std::string grouped_heads_graph(const std::string& group, const std::string& kv_heads) {
  const std::string grouped = group == "repeat"
      ? R"({"op": "unsqueeze", "in": ["kv"], "out": "u", "attrs": {"dim": 3}}, {"op": "expand", "in": ["u", "b", "s", "h", 3, 8], "out": "e"},)"
      : R"({"op": "unsqueeze", "in": ["kv"], "out": "u", "attrs": {"dim": 2}}, {"op": "expand", "in": ["u", "b", "s", 3, "h", 8], "out": "e"},)";
  return R"({"inputs": [{"name": "q", "dtype": "f32", "shape": ["b", 6, "t", 8]}, {"name": "kv", "dtype": "f32", "shape": ["b", "s", )" +
         kv_heads + R"(, 8]}],
    "nodes": [{"op": "sym_size", "in": ["kv"], "out": "b", "attrs": {"dim": 0}}, {"op": "sym_size", "in": ["kv"], "out": "s", "attrs": {"dim": 1}},
              {"op": "sym_size", "in": ["kv"], "out": "h", "attrs": {"dim": 2}}, )" + grouped + R"(
              {"op": "reshape", "in": ["e", "b", "s", 6, 8], "out": "r"}, {"op": "transpose", "in": ["r"], "out": "k", "attrs": {"dim0": 1, "dim1": 2}},
              {"op": "transpose", "in": ["k"], "out": "kt", "attrs": {"dim0": -1, "dim1": -2}},
              {"op": "matmul", "in": ["q", "kt"], "out": "scores"}, {"op": "matmul", "in": ["scores", "k"], "out": "y"}],
    "outputs": ["y"]})";
}

// x [n, m, 3] with the block v [r, c, 3] written at (i, p), the sizes of
// the input `at` [i, p] (a position passed as an int is a size): the row's
// update (a concat along dim 1) inside the slab's (along dim 0); with
// `inner_is_output`, the row is an output too.
inline std::string block_update_graph(bool inner_is_output) {
  return R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n", "m", 3]}, {"name": "v", "dtype": "f32", "shape": ["r", "c", 3]},
                        {"name": "at", "dtype": "f32", "shape": ["i", "p"]}],
    "nodes": [{"op": "sym_size", "in": ["v"], "out": "r", "attrs": {"dim": 0}}, {"op": "sym_size", "in": ["v"], "out": "c", "attrs": {"dim": 1}},
              {"op": "sym_size", "in": ["at"], "out": "i0", "attrs": {"dim": 0}}, {"op": "sym_size", "in": ["at"], "out": "p0", "attrs": {"dim": 1}},
              {"op": "sym_add", "in": ["i0", "r"], "out": "j"}, {"op": "sym_add", "in": ["p0", "c"], "out": "q"},
              {"op": "slice", "in": ["x", 0, "i0", 1], "out": "above", "attrs": {"dim": 0}},
              {"op": "slice", "in": ["x", "i0", "j", 1], "out": "slab", "attrs": {"dim": 0}},
              {"op": "slice", "in": ["x", "j", 4611686018427387904, 1], "out": "below", "attrs": {"dim": 0}},
              {"op": "slice", "in": ["slab", 0, "p0", 1], "out": "left", "attrs": {"dim": 1}},
              {"op": "slice", "in": ["slab", "q", 4611686018427387904, 1], "out": "right", "attrs": {"dim": 1}},
              {"op": "concat", "in": ["left", "v", "right"], "out": "row", "attrs": {"dim": 1}},
              {"op": "concat", "in": ["above", "row", "below"], "out": "y", "attrs": {"dim": 0}}],
    "outputs": [)" + std::string(inner_is_output ? R"("y", "row")" : R"("y")") + "]}";
}

// The same update, then what a decode step reads of its cache after
// writing its row, `cache[:b, :pos + n]`: x[:j, :q + past] with (j, q) the
// block's far corner. With past = 0 nothing after the block is read, and
// the update need not copy the parts of x below and right of it.
inline std::string block_read_graph(int past) {
  std::string g = block_update_graph(false);
  g.replace(g.rfind(R"(}],)"), std::string::npos, R"(},
              {"op": "sym_add", "in": ["q", )" + std::to_string(past) + R"(], "out": "qe"},
              {"op": "slice", "in": ["y", 0, "j", 1], "out": "ya", "attrs": {"dim": 0}},
              {"op": "slice", "in": ["ya", 0, "qe", 1], "out": "w", "attrs": {"dim": 1}}],
    "outputs": ["w"]})");
  return g;
}

inline std::vector<DecodeCase> decode_cases(std::mt19937& rng) {
  std::vector<DecodeCase> out;
  auto random = [&](std::vector<int64_t> shape) { return random_tensor(ir::DType::kF32, std::move(shape), rng, -0.5, 0.5); };
  for (const std::string group : {"repeat", "tile"}) {
    const std::string g = grouped_heads_graph(group, "2");
    for (const auto& [b, t, s] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {1, 1, 37}, {2, 5, 9}, {1, 0, 4}, {0, 3, 3}, {1, 3, 0}, {3, 2, 130}}) {
      out.push_back({g, group + " b=" + std::to_string(b) + " t=" + std::to_string(t) + " s=" + std::to_string(s),
                     {random({b, 6, t, 8}), random({b, s, 2, 8})}});
    }
    // A kv head count left symbolic: the heads cannot split, and are copied.
    out.push_back({grouped_heads_graph(group, "\"h\""), group + ", kv heads symbolic", {random({2, 6, 3, 8}), random({2, 7, 2, 8})}});
  }
  // (n, m), (r, c), (i, p): a block inside, at each edge, the whole array,
  // empty blocks and arrays, a block that ends at the last column.
  const std::vector<std::array<int64_t, 6>> blocks = {{8, 16, 1, 2, 3, 5}, {8, 16, 1, 2, 0, 0}, {8, 16, 1, 2, 7, 14}, {4, 5, 4, 5, 0, 0},
                                                      {8, 16, 0, 2, 3, 5}, {8, 16, 2, 0, 3, 5}, {1, 1, 1, 1, 0, 0},  {0, 4, 0, 1, 0, 2},
                                                      {8, 16, 1, 1, 3, 15}};
  auto block_case = [&](const std::string& graph, const std::string& what, const std::array<int64_t, 6>& b) {
    const auto& [n, m, r, c, i, p] = b;
    out.push_back({graph,
                   what + " block " + std::to_string(r) + "x" + std::to_string(c) + " at " + std::to_string(i) + "," + std::to_string(p) + " of " +
                       std::to_string(n) + "x" + std::to_string(m),
                   {random({n, m, 3}), random({r, c, 3}), ir::Tensor::empty(ir::DType::kF32, {i, p})}});
  };
  for (const std::array<int64_t, 6>& b : blocks) {
    for (bool inner_is_output : {false, true}) block_case(block_update_graph(inner_is_output), inner_is_output ? "inner an output," : "update,", b);
    for (const int past : {0, 1}) block_case(block_read_graph(past), "read back to " + std::to_string(past) + " past the", b);
  }
  return out;
}

}  // namespace shapejit::testing
