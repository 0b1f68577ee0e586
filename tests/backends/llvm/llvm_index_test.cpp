// The LLVM backend against the reference interpreter on what reads at
// computed indices: layout ops folded into indexing, broadcasts, and
// gathers with their range errors (tests/support/llvm_agreement.h).
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <sstream>

#include "backends/llvm/codegen.h"
#include "backends/loops/lower.h"
#include "bench/bench_util.h"

#include "tests/support/decode_cases.h"
#include "tests/support/llvm_agreement.h"

#ifdef SHAPEJIT_HAVE_LLVM

namespace shapejit {
namespace {

using namespace llvm_test;

TEST(Llvm, LayoutOpsFoldIntoIndexing) {
  std::mt19937 rng(8);
  auto g = [](const std::string& node, const std::string& shape) {
    return R"({"inputs": [{"name": "x", "dtype": "f32", "shape": )" + shape + R"(}],
      "nodes": [{"op": "exp", "in": ["x"], "out": "e"}, )" + node + R"(, {"op": "mul", "in": ["v", 2], "out": "y"}],
      "outputs": ["y", "v"]})";
  };
  const std::vector<std::string> nodes = {
      R"({"op": "reshape", "in": ["e", 6, -1], "out": "v"})",
      R"({"op": "reshape", "in": ["e", 2, 3, 4, 5], "out": "v"})",
      R"({"op": "permute", "in": ["e"], "out": "v", "attrs": {"perm": [2, 0, 1]}})",
      R"({"op": "transpose", "in": ["e"], "out": "v", "attrs": {"dim0": 0, "dim1": 2}})",
      R"({"op": "expand", "in": ["e", 3, -1, -1, -1], "out": "v"})",
      R"({"op": "slice", "in": ["e", 1, 20, 3], "out": "v", "attrs": {"dim": 2}})",
      R"({"op": "slice", "in": ["e", -2, 100, 1], "out": "v", "attrs": {"dim": 1}})",
      R"({"op": "concat", "in": ["e", "x", "e"], "out": "v", "attrs": {"dim": 1}})",
      R"({"op": "unsqueeze", "in": ["e"], "out": "v", "attrs": {"dim": 1}})",
      R"({"op": "squeeze", "in": ["e"], "out": "v", "attrs": {"dims": [0]}})",
  };
  for (const std::string& n : nodes) {
    bool squeeze = n.find("squeeze\"") != std::string::npos && n.find("unsqueeze") == std::string::npos;
    std::vector<int64_t> s = squeeze ? std::vector<int64_t>{1, 4, 5} : std::vector<int64_t>{6, 4, 5};
    expect_agrees(g(n, shape_str(s)), {random_tensor(DType::kF32, s, rng)}, n);
    Tensor strided = random_tensor(DType::kF32, {s[2], s[1], s[0]}, rng).view(s, {1, s[0], s[0] * s[1]});
    expect_agrees(g(n, shape_str(s)), {strided}, n + " strided");
  }
  // Squeezing a dim that a slice cut to one: its size is an expression the
  // env proves 1, not the literal 1 (numpy's x[-1] from Python).
  expect_agrees(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n", 4, 5]}],
      "nodes": [{"op": "exp", "in": ["x"], "out": "e"},
                {"op": "slice", "in": ["e", -1, 4611686018427387904, 1], "out": "s", "attrs": {"dim": 0}},
                {"op": "slice", "in": ["s", 0, 4611686018427387904, 2], "out": "t", "attrs": {"dim": 1}},
                {"op": "squeeze", "in": ["t"], "out": "y", "attrs": {"dims": [0]}}], "outputs": ["y"]})",
                {random_tensor(DType::kF32, {3, 4, 5}, rng)}, "squeeze of a slice to one");
  // Reshape of a reshape of a computed value: the index unravels.
  expect_agrees(R"({"inputs": [{"name": "x", "dtype": "i64", "shape": [4, 6]}],
      "nodes": [{"op": "neg", "in": ["x"], "out": "n"}, {"op": "reshape", "in": ["n", 3, 8], "out": "r"},
                {"op": "transpose", "in": ["r"], "out": "t", "attrs": {"dim0": 0, "dim1": 1}},
                {"op": "reshape", "in": ["t", 2, 12], "out": "y"}], "outputs": ["y"]})",
                {random_tensor(DType::kI64, {4, 6}, rng)}, "reshape chain");
}

// A dynamic kernel's views divide indices by sizes read at run time; the
// division by such a divisor, the same on every iteration, is a multiply
// by a magic number (codegen.cpp, udiv_invariant). Its arithmetic, as the
// emitted code does it (the high half of x * magic from four 32-bit
// products), against the CPU's division, at the edges of 32 and 64 bits.
TEST(Llvm, DivisionByAnInvariantIsExact) {
  auto divide = [](uint64_t x, uint64_t d) {
    const auto magic = static_cast<uint64_t>(backends::llvm::shapejit_udiv_magic(static_cast<int64_t>(d)));
    const int l = d <= 1 ? 0 : 64 - __builtin_clzll(d - 1);
    const int shift1 = l == 0 ? 0 : 1, shift2 = l - shift1;
    const uint64_t xl = x & 0xffffffff, xh = x >> 32, ml = magic & 0xffffffff, mh = magic >> 32;
    const uint64_t u = xh * ml + (xl * ml >> 32), v = xl * mh + (u & 0xffffffff);
    const uint64_t high = xh * mh + (u >> 32) + (v >> 32);
    return (high + ((x - high) >> shift1)) >> shift2;
  };
  std::mt19937_64 rng(12);
  std::vector<uint64_t> divisors = {1, 2, 3, 5, 7, 12, 32, 33, 384, 1000, 65535, 65537};
  for (int b : {31, 32, 33, 47, 62}) {
    for (int64_t delta : {-1, 0, 1}) divisors.push_back((uint64_t{1} << b) + static_cast<uint64_t>(delta));
  }
  divisors.push_back((uint64_t{1} << 63) - 1);
  for (int i = 0; i < 200; ++i) divisors.push_back(rng() >> (1 + rng() % 63));
  for (uint64_t d : divisors) {
    if (d == 0) continue;
    std::vector<uint64_t> xs = {0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, 0xffffffff, uint64_t{1} << 32, (uint64_t{1} << 63) - 1,
                                (uint64_t{1} << 63) - 1 - (((uint64_t{1} << 63) - 1) % d)};
    for (int i = 0; i < 200; ++i) xs.push_back(rng() >> (1 + rng() % 63));
    for (uint64_t x : xs) {
      if (x >= uint64_t{1} << 63) continue;  // indices and sizes are int64, nonnegative here
      ASSERT_EQ(divide(x, d), x / d) << x << " / " << d;
    }
  }
}

// The encoder's attention output, [heads, tokens, head size] permuted and
// reshaped into [tokens, width] with every size symbolic: a copy that
// divides each element's index by the head size, of sizes 1, powers of two
// and odd ones.
TEST(Llvm, AReshapeOfAPermutedViewWithSymbolicSizesAgrees) {
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["h", "t", "d"]}],
    "nodes": [{"op": "sym_size", "in": ["x"], "out": "h", "attrs": {"dim": 0}}, {"op": "sym_size", "in": ["x"], "out": "t", "attrs": {"dim": 1}},
              {"op": "sym_size", "in": ["x"], "out": "d", "attrs": {"dim": 2}}, {"op": "sym_mul", "in": ["h", "d"], "out": "w"},
              {"op": "permute", "in": ["x"], "out": "p", "attrs": {"perm": [1, 0, 2]}}, {"op": "reshape", "in": ["p", "t", "w"], "out": "r"},
              {"op": "mul", "in": ["r", 2.0], "out": "y"}], "outputs": ["y"]})";
  // The reshape itself materialized: as an output, as a product's operand
  // (attention's heads merged before the output projection), and as a
  // concat's operand (its store shifted). These loop over the permuted
  // view's dims (pointwise_step's merged run).
  const std::string sizes = R"({"op": "sym_size", "in": ["x"], "out": "h", "attrs": {"dim": 0}}, {"op": "sym_size", "in": ["x"], "out": "t", "attrs": {"dim": 1}},
              {"op": "sym_size", "in": ["x"], "out": "d", "attrs": {"dim": 2}}, {"op": "sym_mul", "in": ["h", "d"], "out": "w"},
              {"op": "exp", "in": ["x"], "out": "e"}, {"op": "permute", "in": ["e"], "out": "p", "attrs": {"perm": [1, 0, 2]}},
              {"op": "reshape", "in": ["p", "t", "w"], "out": "r"})";
  const std::string direct = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["h", "t", "d"]}, {"name": "m", "dtype": "f32", "shape": ["w", 3]}],
    "nodes": [)" + sizes + R"(, {"op": "matmul", "in": ["r", "m"], "out": "y"},
              {"op": "concat", "in": ["r", "r"], "out": "c", "attrs": {"dim": 0}}], "outputs": ["r", "y", "c"]})";
  std::mt19937 rng(5);
  for (const auto& [h, t, d] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {12, 3, 32}, {12, 5, 33}, {5, 2, 7}, {3, 4, 1}, {1, 6, 64}, {7, 1, 100}, {2, 0, 5}}) {
    const std::string what = "h, t, d = " + std::to_string(h) + ", " + std::to_string(t) + ", " + std::to_string(d);
    const Tensor x = random_tensor(DType::kF32, {h, t, d}, rng);
    expect_agrees(g, {x}, what);
    expect_agrees(direct, {x, random_tensor(DType::kF32, {h * d, 3}, rng)}, what + ", the reshape materialized", 1e-4);
  }
  // A non-contiguous input: x a transposed view.
  const Tensor base = random_tensor(DType::kF32, {6, 4, 3}, rng);
  expect_agrees(direct, {base.view({3, 4, 6}, {1, 3, 12}), random_tensor(DType::kF32, {18, 3}, rng)}, "a strided x", 1e-4);
}

// The reshape materialized on its own loops over the permuted view's dims:
// no element's index is divided by the head size.
TEST(Llvm, AMergingReshapeLoopsOverItsOperandsDims) {
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["b", "h", "t", "d"]}],
    "nodes": [{"op": "sym_size", "in": ["x"], "out": "b", "attrs": {"dim": 0}}, {"op": "sym_size", "in": ["x"], "out": "t", "attrs": {"dim": 2}},
              {"op": "sym_size", "in": ["x"], "out": "h", "attrs": {"dim": 1}}, {"op": "sym_size", "in": ["x"], "out": "d", "attrs": {"dim": 3}},
              {"op": "sym_mul", "in": ["h", "d"], "out": "w"}, {"op": "exp", "in": ["x"], "out": "e"},
              {"op": "permute", "in": ["e"], "out": "p", "attrs": {"perm": [0, 2, 1, 3]}},
              {"op": "reshape", "in": ["p", "b", "t", "w"], "out": "r"}], "outputs": ["r"]})";
  const bench::Specialized sg = bench::specialize(g, {{2, 12, 16, 32}}, /*dynamic=*/true);
  Expected<backends::loops::LoopProgram> p = backends::loops::lower(*sg.graph, {});
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  const std::string dump = p->dump(false);
  std::istringstream lines(dump);
  int accesses = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("load ") == std::string::npos && line.find("store ") == std::string::npos) continue;
    ++accesses;
    EXPECT_EQ(line.find("//"), std::string::npos) << dump;
    EXPECT_EQ(line.find('%'), std::string::npos) << dump;
  }
  EXPECT_EQ(accesses, 2) << dump;
  std::mt19937 rng(6);
  expect_agrees(g, {random_tensor(DType::kF32, {2, 12, 16, 32}, rng)}, "2 x 12 x 16 x 32");
}

// A dim whose extent is an expression that a guard found to be 1 (a slice
// of the middle element, as np.median takes it) broadcasts: it is read at
// index 0, not at the output's index (which read past it, the differential
// fuzzer's finding: x + x[(n - 1) // 2:(n - 1) // 2 + 1] was wrong).
TEST(Llvm, AnExpressionDimOfOneBroadcasts) {
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "sym_size", "in": ["x"], "out": "n", "attrs": {"dim": 0}}, {"op": "sym_sub", "in": ["n", 1], "out": "m"},
              {"op": "sym_floordiv", "in": ["m", 2], "out": "h"}, {"op": "sym_add", "in": ["h", 1], "out": "h1"},
              {"op": "slice", "in": ["x", "h", "h1", 1], "out": "mid", "attrs": {"dim": 0}},
              {"op": "add", "in": ["x", "mid"], "out": "y"},
              {"op": "expand", "in": ["mid", "n"], "out": "e"}, {"op": "mul", "in": ["e", 2.0], "out": "z"}],
    "outputs": ["y", "z"]})";
  std::mt19937 rng(3);
  for (int64_t n : {2, 3, 5, 8}) expect_agrees(g, {random_tensor(DType::kF32, {n}, rng)}, "n = " + std::to_string(n));
}

// The loop program of `graph` at x [8, 16, 3], v [1, 2, 3], at [3, 5], and
// how many steps it has.
std::pair<size_t, std::string> block_steps(const std::string& graph) {
  std::string dump = std::move(backends::loops::lower(*bench::specialize(graph, {{8, 16, 3}, {1, 2, 3}, {3, 5}}, true).graph)).value().dump();
  size_t steps = 0;
  for (size_t at = dump.find("step "); at != std::string::npos; at = dump.find("step ", at + 1)) ++steps;
  return {steps, std::move(dump)};
}

// x[i:j, p:q] = v as the Python front end traces it: the row's update
// (a concat along dim 1) inside the slab's (along dim 0). The inner concat
// is read by nothing else, so the outer one's steps write its pieces where
// they lie: a step per piece (3 + 2: the slab's row is the inner concat's
// 3), no temporary. (Llvm.DecodeCasesAgree checks the values, with the
// inner concat an output too.)
TEST(Llvm, ABlockUpdateOfTwoDimsIsWrittenInOnePass) {
  const auto [steps, dump] = block_steps(testing::block_update_graph(false));
  EXPECT_EQ(dump.find(": temp "), std::string::npos) << dump;
  EXPECT_EQ(steps, 5u) << dump;
}

// The update read back only up to the block's far corner, as a decode step
// reads its cache after writing a row: the parts below and right of the
// block are not copied (3 of the 5 pieces, and the read). One column
// more is read when past = 1, and the part right of the block is copied
// (Llvm.DecodeCasesAgree checks the values of both).
TEST(Llvm, AnUpdateReadUpToItsBlockCopiesNothingAfterIt) {
  const auto [read_to_block, dump] = block_steps(testing::block_read_graph(0));
  EXPECT_EQ(read_to_block, 4u) << dump;
  const auto [read_past_it, dump_past] = block_steps(testing::block_read_graph(1));
  EXPECT_EQ(read_past_it, 5u) << dump_past;
}

TEST(Llvm, GathersAndTheirRangeErrors) {
  std::mt19937 rng(9);
  for (const char* it : {"i32", "i64"}) {
    Tensor table = random_tensor(DType::kF32, {10, 7}, rng);
    Tensor ids = from_values(dt(it), {2, 3}, std::vector<int>{0, 9, 3, 3, 1, 0});
    expect_agrees(one_op("embedding", {{"f32", {10, 7}}, {it, {2, 3}}}), {table, ids}, std::string("embedding ") + it);
    Tensor idx = from_values(dt(it), {4}, std::vector<int>{2, 0, 2, 6});
    expect_agrees(one_op("index_select", {{"f32", {10, 7}}, {it, {4}}}, "", R"({"dim": 1})"), {table, idx}, std::string("index_select ") + it);
    Tensor bad = from_values(dt(it), {2}, std::vector<int>{1, 10});
    expect_agrees(one_op("index_select", {{"f32", {10, 7}}, {it, {2}}}, "", R"({"dim": 0})"), {table, bad}, "index out of range");
    Tensor neg = from_values(dt(it), {1, 1}, std::vector<int>{-1});
    expect_agrees(one_op("embedding", {{"f32", {10, 7}}, {it, {1, 1}}}), {table, neg}, "negative id");
    // An empty result reads no index, but the indices are still checked
    // (NumPy: np.zeros((0, 0))[[0]] is an IndexError); within range, it is empty.
    Tensor empty = Tensor::empty(DType::kF32, {0, 0});
    Tensor zero = from_values(dt(it), {1}, std::vector<int>{0});
    const std::string gather_empty = one_op("index_select", {{"f32", {0, 0}}, {it, {1}}}, "", R"({"dim": 0})");
    expect_agrees(gather_empty, {empty, zero}, "an index into an empty dim");
    const Status s = run_with(gather_empty, {empty, zero}, R"({"compile": {"backend": "llvm"}})").status;
    EXPECT_EQ(s.detail(), Detail::kIndex) << s.to_string();
    Tensor wide = Tensor::empty(DType::kF32, {3, 0});
    expect_agrees(one_op("index_select", {{"f32", {3, 0}}, {it, {1}}}, "", R"({"dim": 0})"), {wide, zero}, "an empty row gathered");
  }
  // Only the gather's shape is read (x[[0]][...] = 1 is traced so): no step
  // gathers, and its indices are checked all the same, by the reference.
  const std::string shape_only = R"({"inputs": [{"name": "t", "dtype": "f32", "shape": ["r", "c"]}, {"name": "i", "dtype": "i64", "shape": [1]}],
      "nodes": [{"op": "index_select", "in": ["t", "i"], "out": "g", "attrs": {"dim": 0}},
                {"op": "sym_size", "in": ["g"], "out": "n", "attrs": {"dim": 0}}, {"op": "sym_size", "in": ["g"], "out": "m", "attrs": {"dim": 1}},
                {"op": "full", "in": ["n", "m"], "out": "y", "attrs": {"value": 1, "dtype": "f32"}}], "outputs": ["y"]})";
  const Tensor row_of_nothing = Tensor::empty(DType::kF32, {1, 0});
  expect_agrees(shape_only, {row_of_nothing, from_values(DType::kI64, {1}, std::vector<int>{0})}, "a gather's shape alone");
  expect_agrees(shape_only, {row_of_nothing, from_values(DType::kI64, {1}, std::vector<int>{3})}, "a gather's shape alone, out of range");
  // A gather folded into a reduction's step (an embedding feeding a
  // layer_norm, as a BERT embedding does): its bounds check still defers.
  const std::string gather_norm = R"({"inputs": [{"name": "t", "dtype": "f32", "shape": [10, 7]}, {"name": "i", "dtype": "i64", "shape": [2, 3]}],
      "nodes": [{"op": "embedding", "in": ["t", "i"], "out": "e"}, {"op": "layer_norm", "in": ["e"], "out": "y"}], "outputs": ["y"]})";
  Tensor table = random_tensor(DType::kF32, {10, 7}, rng);
  expect_agrees(gather_norm, {table, from_values(DType::kI64, {2, 3}, std::vector<int>{0, 9, 3, 3, 1, 0})}, "gather into a norm");
  expect_agrees(gather_norm, {table, from_values(DType::kI64, {2, 3}, std::vector<int>{0, 90, 3, 3, 1, 0})}, "gather into a norm, out of range");
}

// index_put and index_add (a scatter step, run as a routine): the
// reference's values by hand first, then the backend against it along each
// dim, every dtype, repeated indices, computed and strided operands, empty
// ones, and an index out of range (the reference's error, nothing written).
TEST(Llvm, ScattersAgreeAndTheirRangeErrors) {
  const std::string put = one_op("index_put", {{"f32", {4}}, {"i64", {3}}, {"f32", {3}}}, "", R"({"dim": 0})");
  const std::string add = one_op("index_add", {{"f32", {4}}, {"i64", {3}}, {"f32", {3}}}, "", R"({"dim": 0})");
  const Tensor zeros = from_values(DType::kF32, {4}, std::vector<float>{0, 0, 0, 0});
  const Tensor at = from_values(DType::kI64, {3}, std::vector<int>{1, 3, 1});
  const Tensor v = from_values(DType::kF32, {3}, std::vector<float>{1, 2, 3});
  for (const char* backend : {"reference", "llvm"}) {
    const std::string config = std::string(R"({"compile": {"backend": ")") + backend + "\"}}";
    const Outcome p = run_with(put, {zeros, at, v}, config), a = run_with(add, {zeros, at, v}, config);
    ASSERT_TRUE(p.status.is_ok() && a.status.is_ok()) << backend;
    EXPECT_TRUE(testing::tensors_close(p.out[0], from_values(DType::kF32, {4}, std::vector<float>{0, 3, 0, 2}), 0, 0)) << backend << ": the last of a repeated index";
    EXPECT_TRUE(testing::tensors_close(a.out[0], from_values(DType::kF32, {4}, std::vector<float>{0, 4, 0, 2}), 0, 0)) << backend << ": every one added";
  }
  std::mt19937 rng(10);
  const std::vector<int64_t> xs = {4, 5, 6};
  for (const char* op : {"index_put", "index_add", "index_mul", "index_max", "index_min"}) {
    for (const char* dtype : kAll) {
      if (std::string(op) != "index_put" && std::string(dtype) == "bool") continue;
      for (int dim = 0; dim < 3; ++dim) {
        for (const char* it : {"i32", "i64"}) {
          std::vector<int64_t> vs = xs;
          vs[static_cast<size_t>(dim)] = 7;
          std::vector<int> ids(7);
          for (int& i : ids) i = static_cast<int>(rng() % static_cast<unsigned>(xs[static_cast<size_t>(dim)]));
          const std::string attrs = R"({"dim": )" + std::to_string(dim) + "}";
          const std::string what = std::string(op) + " " + dtype + " dim " + std::to_string(dim) + " " + it;
          const Tensor x = random_tensor(dt(dtype), xs, rng), values = random_tensor(dt(dtype), vs, rng);
          const Tensor idx = from_values(dt(it), {7}, ids);
          expect_agrees(one_op(op, {{dtype, xs}, {it, {7}}, {dtype, vs}}, "", attrs), {x, idx, values}, what);
          // x transposed in memory, the values computed (a chain folded into their buffer).
          const Tensor strided = random_tensor(dt(dtype), {6, 5, 4}, rng).view(xs, {1, 4, 20});
          const std::string computed = R"({"inputs": [{"name": "x", "dtype": ")" + std::string(dtype) + R"(", "shape": )" + shape_str(xs) +
                                       R"(}, {"name": "i", "dtype": ")" + it + R"(", "shape": [7]}, {"name": "v", "dtype": ")" + dtype +
                                       R"(", "shape": )" + shape_str(vs) + R"(}],
              "nodes": [{"op": "where", "in": ["v", "v", "v"], "out": "w"}, {"op": ")" + op + R"(", "in": ["x", "i", "w"], "out": "y", "attrs": )" +
                                       attrs + R"(}], "outputs": ["y"]})";
          expect_agrees(computed, {strided, idx, values}, what + ", strided and computed");
        }
      }
    }
  }
  // The combining scatters by hand: each repeated index combined in turn, a NaN winning a maximum and a minimum.
  const Tensor start = from_values(DType::kF64, {3}, std::vector<double>{2, 2, 2});
  const Tensor where = from_values(DType::kI64, {4}, std::vector<int>{0, 0, 2, 1});
  const Tensor with = from_values(DType::kF64, {4}, std::vector<double>{3, -1, NAN, 5});
  const std::vector<std::pair<const char*, std::vector<double>>> combined = {
      {"index_mul", {-6, 10, NAN}}, {"index_max", {3, 5, NAN}}, {"index_min", {-1, 2, NAN}}};
  for (const auto& [op, want] : combined) {
    for (const char* backend : {"reference", "llvm"}) {
      const Outcome o = run_with(one_op(op, {{"f64", {3}}, {"i64", {4}}, {"f64", {4}}}, "", R"({"dim": 0})"), {start, where, with},
                                 std::string(R"({"compile": {"backend": ")") + backend + "\"}}");
      ASSERT_TRUE(o.status.is_ok()) << op << " " << backend << ": " << o.status.to_string();
      EXPECT_TRUE(testing::tensors_close(o.out[0], from_values(DType::kF64, {3}, want), 0, 0)) << op << " " << backend;
    }
  }
  // No index; nothing to scatter into; an index out of range or negative.
  expect_agrees(one_op("index_add", {{"f32", {4, 3}}, {"i64", {0}}, {"f32", {0, 3}}}, "", R"({"dim": 0})"),
                {random_tensor(DType::kF32, {4, 3}, rng), Tensor::empty(DType::kI64, {0}), Tensor::empty(DType::kF32, {0, 3})}, "no index");
  expect_agrees(one_op("index_put", {{"f32", {0, 3}}, {"i64", {2}}, {"f32", {0, 2}}}, "", R"({"dim": 1})"),
                {Tensor::empty(DType::kF32, {0, 3}), from_values(DType::kI64, {2}, std::vector<int>{2, 0}), Tensor::empty(DType::kF32, {0, 2})}, "empty rows");
  for (const int bad : {4, -1}) {
    const std::string g = one_op("index_put", {{"f32", {4, 3}}, {"i64", {2}}, {"f32", {2, 3}}}, "", R"({"dim": 0})");
    const std::vector<Tensor> in = {random_tensor(DType::kF32, {4, 3}, rng), from_values(DType::kI64, {2}, std::vector<int>{1, bad}),
                                    random_tensor(DType::kF32, {2, 3}, rng)};
    expect_agrees(g, in, "index " + std::to_string(bad));
    const Status s = run_with(g, in, R"({"compile": {"backend": "llvm"}})").status;
    EXPECT_EQ(s.detail(), Detail::kIndex) << s.to_string();
  }
  // Large: the columns split across threads, a repeated index still in order.
  std::vector<int> many(3000);
  for (size_t k = 0; k < many.size(); ++k) many[k] = static_cast<int>(k % 17);
  expect_agrees(one_op("index_add", {{"f64", {17, 2048}}, {"i64", {3000}}, {"f64", {3000, 2048}}}, "", R"({"dim": 0})"),
                {random_tensor(DType::kF64, {17, 2048}, rng), from_values(DType::kI64, {3000}, many), random_tensor(DType::kF64, {3000, 2048}, rng)},
                "large", 1e-9, 1e-9);
  expect_agrees(one_op("index_put", {{"f32", {17, 2048}}, {"i64", {3000}}, {"f32", {3000, 2048}}}, "", R"({"dim": 0})"),
                {random_tensor(DType::kF32, {17, 2048}, rng), from_values(DType::kI64, {3000}, many), random_tensor(DType::kF32, {3000, 2048}, rng)},
                "large put");
}

}  // namespace
}  // namespace shapejit

#endif  // SHAPEJIT_HAVE_LLVM
