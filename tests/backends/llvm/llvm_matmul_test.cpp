// The LLVM backend's matmuls against the reference interpreter: NumPy's
// shapes, BLAS operands read in place by strides, epilogues on blocks of
// rows, and attention fused into one tiled step (tests/backends/
// llvm_agreement.h says the tolerance).
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "backends/frozen.h"
#include "backends/loops/lower.h"
#include "backends/cpu/huge_pages.h"
#include "bench/bench_util.h"

#include "tests/support/decode_cases.h"
#include "tests/support/llvm_agreement.h"

#ifdef SHAPEJIT_HAVE_LLVM

namespace shapejit {
namespace {

using namespace llvm_test;

TEST(Llvm, MatmulLikeNumPy) {
  std::mt19937 rng(7);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{5}, {5}},       {{3, 5}, {5}},          {{5}, {5, 4}},       {{3, 5}, {5, 4}}, {{2, 3, 5}, {5, 4}},
      {{2, 1, 3, 5}, {4, 5, 6}}, {{3, 0}, {0, 4}}, {{0, 5}, {5, 4}}, {{1, 1}, {1, 1}},  {{33, 65}, {65, 17}}};
  for (const char* t : kNumeric) {
    for (const auto& [a, b] : cases) {
      expect_agrees(one_op("matmul", {{t, a}, {t, b}}), {random_tensor(dt(t), a, rng), random_tensor(dt(t), b, rng)},
                    std::string("matmul ") + t + shape_str(a) + shape_str(b), 1e-4, 1e-5);
    }
  }
  // A transposed operand and a fused epilogue.
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n", 16]}, {"name": "w", "dtype": "f32", "shape": [24, 16]},
      {"name": "b", "dtype": "f32", "shape": [24]}],
    "nodes": [{"op": "transpose", "in": ["w"], "out": "wt", "attrs": {"dim0": 0, "dim1": 1}},
              {"op": "matmul", "in": ["x", "wt"], "out": "h"}, {"op": "add", "in": ["h", "b"], "out": "hb"},
              {"op": "gelu", "in": ["hb"], "out": "y"}], "outputs": ["y"]})";
  expect_agrees(g, {random_tensor(DType::kF32, {9, 16}, rng), random_tensor(DType::kF32, {24, 16}, rng), random_tensor(DType::kF32, {24}, rng)},
                "matmul epilogue", 1e-4, 1e-5);
}

// A pointwise step right after a matmul over the product's shape runs on
// each block of rows as BLAS finishes it (MatmulStep::epilogue): sizes 0
// and 1, batches (broadcast too), many row blocks across threads, the
// product read twice, kept as an output, read at another index (not an
// epilogue then), and an epilogue whose gather fails its bounds check.
TEST(Llvm, MatmulEpiloguesRunOnTheirRowBlocks) {
  std::mt19937 rng(17);
  const std::string mlp = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["b", "m", "k"]}, {"name": "w", "dtype": "f32", "shape": ["k", "n"]},
      {"name": "c", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "matmul", "in": ["x", "w"], "out": "h"}, {"op": "add", "in": ["h", "c"], "out": "hb"},
              {"op": "gelu", "in": ["hb"], "out": "y"}], "outputs": ["y"]})";
  for (const auto& [b, m, k, n] : std::vector<std::array<int64_t, 4>>{
           {1, 1, 1, 1}, {2, 3, 5, 7}, {0, 3, 4, 5}, {2, 0, 4, 5}, {2, 3, 0, 5}, {2, 3, 4, 0}, {3, 300, 40, 70}, {1, 257, 64, 33},
           {1, 20, 128, 300}, {1, 20, 0, 300}, {1, 600, 16, 300}}) {  // few rows, many columns: blocks of columns on 2+ threads; then blocks past the cache
    expect_agrees(mlp, {random_tensor(DType::kF32, {b, m, k}, rng), random_tensor(DType::kF32, {k, n}, rng), random_tensor(DType::kF32, {n}, rng)},
                  "mlp " + shape_str({b, m, k, n}), 1e-4, 1e-5);
  }
  const bench::Specialized sg = bench::specialize(mlp, {{3, 300, 40}, {40, 70}, {70}}, true);
  const backends::loops::LoopProgram program = std::move(backends::loops::lower(*sg.graph)).value();
  EXPECT_NE(program.dump().find("epilogue next"), std::string::npos) << program.dump();
  // The epilogue runs interleaved with its product: what it writes lives
  // from the product's step on, so that the arena never places it over
  // what the product still reads.
  const auto life = backends::loops::buffer_lifetimes(program);
  for (size_t s = 0; s + 1 < program.steps.size(); ++s) {
    if (program.steps[s].kind != backends::loops::Step::Kind::kMatmul || !program.steps[s].matmul.epilogue) continue;
    for (const auto& ph : program.steps[s + 1].loops.phases) {
      for (const auto& st : ph.stores) EXPECT_EQ(life[st.buffer].first, static_cast<int>(s)) << program.dump();
    }
  }

  // Broadcast batches, the product read twice and kept, a residual.
  const std::string twice = R"({"inputs": [{"name": "a", "dtype": "f32", "shape": [2, 1, "m", 6]}, {"name": "w", "dtype": "f32", "shape": [3, 6, 5]},
      {"name": "r", "dtype": "f32", "shape": [2, 3, "m", 5]}],
    "nodes": [{"op": "matmul", "in": ["a", "w"], "out": "h"}, {"op": "mul", "in": ["h", "h"], "out": "hh"},
              {"op": "add", "in": ["hh", "r"], "out": "y"}], "outputs": ["y", "h"]})";
  for (int64_t m : {1, 4, 150}) {
    expect_agrees(twice, {random_tensor(DType::kF32, {2, 1, m, 6}, rng), random_tensor(DType::kF32, {3, 6, 5}, rng), random_tensor(DType::kF32, {2, 3, m, 5}, rng)},
                  "broadcast batch m=" + std::to_string(m), 1e-4, 1e-5);
  }
  // The product at its transposed index: a plain step after the matmul.
  const std::string transposed = R"({"inputs": [{"name": "a", "dtype": "f32", "shape": ["n", "n"]}],
    "nodes": [{"op": "matmul", "in": ["a", "a"], "out": "h"}, {"op": "transpose", "in": ["h"], "out": "ht", "attrs": {"dim0": 0, "dim1": 1}},
              {"op": "sub", "in": ["h", "ht"], "out": "y"}], "outputs": ["y"]})";
  for (int64_t n : {1, 9, 130}) expect_agrees(transposed, {random_tensor(DType::kF32, {n, n}, rng)}, "h - h^T n=" + std::to_string(n), 1e-4, 1e-5);
  const std::string lowered = std::move(backends::loops::lower(*bench::specialize(transposed, {{9, 9}}, true).graph)).value().dump();
  EXPECT_EQ(lowered.find("epilogue next"), std::string::npos) << lowered;
  // An epilogue with a gather: an index out of range is the reference's error.
  const std::string gather = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["t", 8]}, {"name": "w", "dtype": "f32", "shape": [8, 4]},
      {"name": "table", "dtype": "f32", "shape": [10, 4]}, {"name": "ids", "dtype": "i64", "shape": ["t"]}],
    "nodes": [{"op": "matmul", "in": ["x", "w"], "out": "h"}, {"op": "embedding", "in": ["table", "ids"], "out": "e"},
              {"op": "add", "in": ["h", "e"], "out": "y"}], "outputs": ["y"]})";
  for (int64_t bad : {3, 10}) {
    std::vector<double> ids(200, 1.0);
    ids[150] = static_cast<double>(bad);
    expect_agrees(gather, {random_tensor(DType::kF32, {200, 8}, rng), random_tensor(DType::kF32, {8, 4}, rng), random_tensor(DType::kF32, {10, 4}, rng),
                           from_values(DType::kI64, {200}, ids)},
                  "gather epilogue, id " + std::to_string(bad), 1e-4, 1e-5);
  }
}

// On one thread, a product's blocks of rows are whole tiles tall where the
// last tile would have at most 3 rows (512 rows: 3 x 132 + 116), and the
// last block is shorter. In an arena of one thread: heights with 2 rows
// over (128, 50) and 4 over (64, not changed), in f32 and f64, with a
// bias and gelu on each block, and a batch flattened into one product.
TEST(Llvm, MatmulBlocksOnOneThreadAreWholeTiles) {
  std::mt19937 rng(23);
  tbb::task_arena one(1);
  one.execute([&] {
    ASSERT_EQ(tbb::this_task_arena::max_concurrency(), 1);
    for (const char* t : {"f32", "f64"}) {
      const std::string mlp = std::string(R"({"inputs": [{"name": "x", "dtype": ")") + t + R"(", "shape": ["b", "m", "k"]},
          {"name": "w", "dtype": ")" + t + R"(", "shape": ["k", "n"]}, {"name": "c", "dtype": ")" + t + R"(", "shape": ["n"]}],
        "nodes": [{"op": "matmul", "in": ["x", "w"], "out": "h"}, {"op": "add", "in": ["h", "c"], "out": "hb"},
                  {"op": "gelu", "in": ["hb"], "out": "y"}], "outputs": ["y"]})";
      for (const auto& [b, m, k, n] : std::vector<std::array<int64_t, 4>>{{1, 512, 40, 36}, {1, 200, 48, 40}, {1, 256, 32, 40}, {4, 50, 32, 48}}) {
        expect_agrees(mlp, {random_tensor(dt(t), {b, m, k}, rng), random_tensor(dt(t), {k, n}, rng), random_tensor(dt(t), {n}, rng)},
                      std::string("one thread ") + t + shape_str({b, m, k, n}), 1e-4, 1e-5);
      }
    }
  });
}

// A matmul operand that is a view of a buffer goes to BLAS by its strides
// (transposed when its rows are contiguous), with no copy: attention's
// heads split from a biased projection, heads sliced from a fused qkv,
// sizes 0 and 1, and the layouts BLAS cannot take (a broadcast row, a
// non-contiguous input), which are copied dense first.
// A product with one row or one column runs as a matrix-vector product
// (row_times_matrix for a row times a row-major matrix of up to 384
// floats, gemv otherwise; gemm would pack the matrix first): each operand
// plain, transposed
// (a transpose node) or strided (a column sliced out of a wider matrix,
// then transposed), in f32 and f64.
TEST(Llvm, SingleRowsAndColumnsAreMatrixVectorProducts) {
  std::mt19937 rng(29);
  auto graph = [](const char* t, const std::string& a, const std::string& b, const std::string& nodes) {
    return std::string(R"({"inputs": [{"name": "a0", "dtype": ")") + t + R"(", "shape": )" + a + R"(}, {"name": "b0", "dtype": ")" + t +
           R"(", "shape": )" + b + R"(}], "nodes": [)" + nodes + R"(, {"op": "matmul", "in": ["a", "b"], "out": "y"}], "outputs": ["y"]})";
  };
  const std::string plain_a = R"({"op": "relu", "in": ["a0"], "out": "a"})", plain_b = R"({"op": "relu", "in": ["b0"], "out": "b"})";
  const std::string trans_a = R"({"op": "transpose", "in": ["a0"], "out": "a", "attrs": {"dim0": 0, "dim1": 1}})";
  const std::string trans_b = R"({"op": "transpose", "in": ["b0"], "out": "b", "attrs": {"dim0": 0, "dim1": 1}})";
  const std::string strided_a = R"({"op": "slice", "in": ["a0", 0, 1, 1], "out": "a1", "attrs": {"dim": 1}},
                                   {"op": "transpose", "in": ["a1"], "out": "a", "attrs": {"dim0": 0, "dim1": 1}})";
  const std::string strided_b = R"({"op": "slice", "in": ["b0", 0, 1, 1], "out": "b", "attrs": {"dim": 1}})";
  for (const char* t : {"f32", "f64"}) {
    const DType d = dt(t);
    auto check = [&](const std::string& g, std::vector<int64_t> sa, std::vector<int64_t> sb, const std::string& what) {
      expect_agrees(g, {random_tensor(d, sa, rng, -1, 1), random_tensor(d, sb, rng, -1, 1)}, std::string(t) + " " + what, 1e-4, 1e-5);
    };
    for (int64_t k : {1, 7, 300}) {
      // One row: a few columns; one pass of row_times_matrix (384 floats),
      // split across two threads at k = 300; a spilling pass (768 floats,
      // or two threads' blocks of 384); past it, each thread's block one
      // pass or more (BLAS).
      for (int64_t n : {1, 5, 130, 384, 768, 777}) {
        check(graph(t, "[1, \"k\"]", "[\"k\", \"n\"]", plain_a + ", " + plain_b), {1, k}, {k, n}, "row");
        check(graph(t, "[1, \"k\"]", "[\"n\", \"k\"]", plain_a + ", " + trans_b), {1, k}, {n, k}, "row by a transpose");
        check(graph(t, "[\"k\", 3]", "[\"k\", \"n\"]", strided_a + ", " + plain_b), {k, 3}, {k, n}, "strided row");
      }
      for (int64_t m : {2, 5, 130}) {  // one column
        check(graph(t, "[\"m\", \"k\"]", "[\"k\", 3]", plain_a + ", " + strided_b), {m, k}, {k, 3}, "strided column");
        check(graph(t, "[\"k\", \"m\"]", "[\"k\", 1]", trans_a + ", " + plain_b), {k, m}, {k, 1}, "a transpose by a column");
        check(graph(t, "[\"m\", \"k\"]", "[1, \"k\"]", plain_a + ", " + trans_b), {m, k}, {1, k}, "a column transposed");
      }
    }
  }
}

TEST(Llvm, MatmulOperandsAreReadInPlaceByStrides) {
  std::mt19937 rng(23);
  // Products of products in f32 against the reference's f64: values in
  // [-0.5, 0.5] keep the rounding of their sums under the tolerance.
  auto random = [&](DType dt, std::vector<int64_t> shape) { return random_tensor(dt, std::move(shape), rng, -0.5, 0.5); };
  auto steps = [](const std::string& g, const std::vector<std::vector<int64_t>>& shapes) {
    const std::string dump = std::move(backends::loops::lower(*bench::specialize(g, shapes, true).graph)).value().dump();
    size_t n = 0;
    for (size_t at = dump.find("\nstep "); at != std::string::npos; at = dump.find("\nstep ", at + 1)) ++n;
    return std::make_pair(n + (dump.rfind("step ", 0) == 0), dump);
  };
  const std::string heads = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["b", "t", 32]}, {"name": "wq", "dtype": "f32", "shape": [32, 32]},
      {"name": "bq", "dtype": "f32", "shape": [32]}, {"name": "wk", "dtype": "f32", "shape": [32, 32]}, {"name": "bk", "dtype": "f32", "shape": [32]}],
    "nodes": [{"op": "sym_size", "in": ["x"], "out": "b", "attrs": {"dim": 0}}, {"op": "sym_size", "in": ["x"], "out": "t", "attrs": {"dim": 1}},
              {"op": "matmul", "in": ["x", "wq"], "out": "q0"}, {"op": "add", "in": ["q0", "bq"], "out": "q1"},
              {"op": "reshape", "in": ["q1", "b", "t", 4, 8], "out": "q2"}, {"op": "transpose", "in": ["q2"], "out": "q", "attrs": {"dim0": 1, "dim1": 2}},
              {"op": "matmul", "in": ["x", "wk"], "out": "k0"}, {"op": "add", "in": ["k0", "bk"], "out": "k1"},
              {"op": "reshape", "in": ["k1", "b", "t", 4, 8], "out": "k2"}, {"op": "transpose", "in": ["k2"], "out": "k", "attrs": {"dim0": 1, "dim1": 2}},
              {"op": "transpose", "in": ["k"], "out": "kt", "attrs": {"dim0": -1, "dim1": -2}},
              {"op": "matmul", "in": ["q", "kt"], "out": "s"}], "outputs": ["s"]})";
  for (const auto& [b, t] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 5}, {1, 0}, {0, 3}, {3, 70}}) {
    expect_agrees(heads, {random(DType::kF32, {b, t, 32}), random(DType::kF32, {32, 32}), random(DType::kF32, {32}),
                          random(DType::kF32, {32, 32}), random(DType::kF32, {32})},
                  "heads b=" + std::to_string(b) + " t=" + std::to_string(t), 1e-4, 1e-5);
  }
  // Two projections, each with its bias as its epilogue, and the scores: no copies.
  auto [n_heads, dump_heads] = steps(heads, {{2, 5, 32}, {32, 32}, {32}, {32, 32}, {32}});
  EXPECT_EQ(n_heads, 5u) << dump_heads;
  EXPECT_NE(dump_heads.find("rows:1 cols:32]"), std::string::npos) << "k^T transposed for BLAS\n" << dump_heads;

  // Heads sliced from one fused projection, then the values' product.
  const std::string qkv = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["t", 16]}, {"name": "w", "dtype": "f32", "shape": [16, 48]}],
    "nodes": [{"op": "sym_size", "in": ["x"], "out": "t", "attrs": {"dim": 0}}, {"op": "matmul", "in": ["x", "w"], "out": "p"},
              {"op": "slice", "in": ["p", 0, 16, 1], "out": "qf", "attrs": {"dim": -1}}, {"op": "reshape", "in": ["qf", "t", 2, 8], "out": "qs"},
              {"op": "transpose", "in": ["qs"], "out": "q", "attrs": {"dim0": 0, "dim1": 1}},
              {"op": "slice", "in": ["p", 16, 32, 1], "out": "kf", "attrs": {"dim": -1}}, {"op": "reshape", "in": ["kf", "t", 2, 8], "out": "ks"},
              {"op": "permute", "in": ["ks"], "out": "kt", "attrs": {"perm": [1, 2, 0]}},
              {"op": "slice", "in": ["p", 32, 48, 1], "out": "vf", "attrs": {"dim": -1}}, {"op": "reshape", "in": ["vf", "t", 2, 8], "out": "vs"},
              {"op": "transpose", "in": ["vs"], "out": "v", "attrs": {"dim0": 0, "dim1": 1}},
              {"op": "matmul", "in": ["q", "kt"], "out": "s"}, {"op": "matmul", "in": ["s", "v"], "out": "y"}], "outputs": ["y"]})";
  for (int64_t t : {1, 2, 9, 100}) {
    expect_agrees(qkv, {random(DType::kF32, {t, 16}), random(DType::kF32, {16, 48})}, "qkv t=" + std::to_string(t), 1e-4, 1e-5);
  }
  auto [n_qkv, dump_qkv] = steps(qkv, {{9, 16}, {16, 48}});
  EXPECT_EQ(n_qkv, 3u) << dump_qkv;

  // Size-1 dims, static: strides that never matter.
  const std::string ones = R"({"inputs": [{"name": "a", "dtype": "f32", "shape": [1, 3]}, {"name": "b", "dtype": "f32", "shape": [1, 1]},
      {"name": "c", "dtype": "f32", "shape": [3, 1]}],
    "nodes": [{"op": "transpose", "in": ["a"], "out": "at", "attrs": {"dim0": 0, "dim1": 1}}, {"op": "matmul", "in": ["at", "b"], "out": "p"},
              {"op": "transpose", "in": ["c"], "out": "ct", "attrs": {"dim0": 0, "dim1": 1}}, {"op": "matmul", "in": ["ct", "p"], "out": "y"},
              {"op": "matmul", "in": ["p", "ct"], "out": "z"}], "outputs": ["y", "z"]})";
  expect_agrees(ones, {random(DType::kF32, {1, 3}), random(DType::kF32, {1, 1}), random(DType::kF32, {3, 1})},
                "size-1 dims", 1e-4, 1e-5);

  // Layouts BLAS cannot take: a broadcast row, and a non-contiguous input
  // (its strides arrive per call); f64 transposed on both sides too.
  const std::string bcast = R"({"inputs": [{"name": "v", "dtype": "f32", "shape": ["k"]}, {"name": "x", "dtype": "f32", "shape": ["m", "k"]}],
    "nodes": [{"op": "sym_size", "in": ["v"], "out": "k", "attrs": {"dim": 0}}, {"op": "unsqueeze", "in": ["v"], "out": "v1", "attrs": {"dim": 0}},
              {"op": "expand", "in": ["v1", "k", "k"], "out": "w"}, {"op": "matmul", "in": ["x", "w"], "out": "y"}], "outputs": ["y"]})";
  expect_agrees(bcast, {random(DType::kF32, {6}), random(DType::kF32, {4, 6})}, "broadcast operand", 1e-4, 1e-5);
  const std::string tt = R"({"inputs": [{"name": "a", "dtype": "f64", "shape": ["k", "m"]}, {"name": "b", "dtype": "f64", "shape": ["n", "k"]}],
    "nodes": [{"op": "transpose", "in": ["a"], "out": "at", "attrs": {"dim0": 0, "dim1": 1}},
              {"op": "transpose", "in": ["b"], "out": "bt", "attrs": {"dim0": 0, "dim1": 1}}, {"op": "matmul", "in": ["at", "bt"], "out": "y"}],
    "outputs": ["y"]})";
  expect_agrees(tt, {random(DType::kF64, {7, 5}), random(DType::kF64, {3, 7})}, "both transposed", 1e-4, 1e-5);
  expect_agrees(tt, {random(DType::kF64, {128, 20}), random(DType::kF64, {300, 128})}, "both transposed, blocks of columns", 1e-4, 1e-5);
  Tensor strided_a = random(DType::kF64, {5, 14}).view({7, 5}, {2, 14});
  expect_agrees(tt, {strided_a, random(DType::kF64, {3, 7})}, "non-contiguous input", 1e-4, 1e-5);
}

// Grouped-query attention repeats each key/value head for a group of query
// heads (np.repeat, an expand and a reshape): head i reads kv head i // 3,
// or i % 2 where the heads are tiled (np.tile). The product splits its
// head dim in two (kv head, repeat) and BLAS reads keys and values where
// they lie (tests/support/decode_cases.h; LlvmDecodeCases checks the values).
TEST(Llvm, RepeatedHeadsAreReadInPlaceBySplittingTheBatch) {
  for (const std::string group : {"repeat", "tile"}) {
    const std::string g = testing::grouped_heads_graph(group, "2");
    const std::string dump = std::move(backends::loops::lower(*bench::specialize(g, {{1, 6, 1, 8}, {1, 20, 2, 8}}, true).graph)).value().dump();
    EXPECT_EQ(dump.find("(matmul -> 'y')\n  outer"), std::string::npos) << group << ": a copy of the values\n" << dump;
    EXPECT_EQ(dump.find("(matmul -> 'scores')\n  outer"), std::string::npos) << group << ": a copy of the keys\n" << dump;
  }
}

// A vector times a matrix BLAS cannot read in place (a float32 table cast
// to float64 and transposed, as GPT-2's logits are under NumPy's
// promotion) is a loop nest that reads the matrix once: no dense copy.
TEST(Llvm, AVectorTimesACastMatrixReadsItOnce) {
  std::mt19937 rng(31);
  const std::string vm = R"({"inputs": [{"name": "x", "dtype": "f64", "shape": ["k"]}, {"name": "w", "dtype": "f32", "shape": ["n", "k"]}],
    "nodes": [{"op": "cast", "in": ["w"], "out": "c", "attrs": {"dtype": "f64"}}, {"op": "transpose", "in": ["c"], "out": "t", "attrs": {"dim0": 0, "dim1": 1}},
              {"op": "matmul", "in": ["x", "t"], "out": "y"}], "outputs": ["y"]})";
  const std::string mv = R"({"inputs": [{"name": "w", "dtype": "f32", "shape": ["n", "k"]}, {"name": "x", "dtype": "f64", "shape": ["k"]}],
    "nodes": [{"op": "cast", "in": ["w"], "out": "c", "attrs": {"dtype": "f64"}}, {"op": "matmul", "in": ["c", "x"], "out": "y"}], "outputs": ["y"]})";
  for (const auto& [n, k] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 5}, {300, 64}, {0, 4}, {5, 0}, {1000, 3}}) {
    const std::string what = std::to_string(n) + " x " + std::to_string(k);
    expect_agrees(vm, {random_tensor(DType::kF64, {k}, rng, -0.5, 0.5), random_tensor(DType::kF32, {n, k}, rng, -0.5, 0.5)}, "vector-matrix " + what, 1e-9, 1e-12);
    expect_agrees(mv, {random_tensor(DType::kF32, {n, k}, rng, -0.5, 0.5), random_tensor(DType::kF64, {k}, rng, -0.5, 0.5)}, "matrix-vector " + what, 1e-9, 1e-12);
  }
  for (const std::string& g : {vm, mv}) {
    const backends::loops::LoopProgram p = std::move(backends::loops::lower(*bench::specialize(g, g == vm ? std::vector<std::vector<int64_t>>{{64}, {300, 64}}
                                                                                                        : std::vector<std::vector<int64_t>>{{300, 64}, {64}}, true).graph)).value();
    ASSERT_EQ(p.steps.size(), 1u) << p.dump();
    EXPECT_EQ(p.steps[0].kind, backends::loops::Step::Kind::kLoops) << p.dump();
  }
}

// x @ w (the graph `g`, parsed as `graph`) by `jit` against the reference.
void expect_call_agrees(runtime::Jit& jit, const std::string& g, const ir::Graph& graph, const Tensor& x, const Tensor& w, double rtol,
                        double atol) {
  testing::ArgPack p;
  p.add(x);
  p.add(w);
  std::vector<Tensor> out;
  ASSERT_TRUE(jit.call_graph("t", graph, {}, p.args(), out).is_ok());
  const auto want = testing::run_graph(g, {x, w}, R"({"compile": {"backend": "reference"}})");
  ASSERT_TRUE(want.is_ok());
  EXPECT_TRUE(testing::tensors_close(out[0], (*want)[0], rtol, atol));
}

// A matrix times a float cast of one (GPT-2's float64 stream times its
// float32 weights, under NumPy 2's promotion; the reverse as well) reads
// the uncast buffer and converts it as it packs: one step, no copy. Sizes
// 0 and 1, few rows (streamed), past a slice of k (512), more rows than
// stream (packed once, across threads), a transposed weight, a batch of
// weights, and a frozen weight whose converted panels are kept.
TEST(Llvm, AMatrixTimesACastMatrixConvertsAsItPacks) {
  std::mt19937 rng(37);
  auto graph = [](const char* x, const char* w, const std::string& how) {
    const std::string w_shape = how == "transposed" ? R"(["n", "k"])" : how == "batched" ? R"(["b", "k", "n"])" : R"(["k", "n"])";
    const std::string x_shape = how == "batched" ? R"(["b", "m", "k"])" : R"(["m", "k"])";
    return std::string(R"({"inputs": [{"name": "x", "dtype": ")") + x + R"(", "shape": )" + x_shape + R"(}, {"name": "w", "dtype": ")" + w +
           R"(", "shape": )" + w_shape + R"(}], "nodes": [{"op": "cast", "in": ["w"], "out": "c", "attrs": {"dtype": ")" + x + R"("}}, )" +
           (how == "transposed" ? R"({"op": "transpose", "in": ["c"], "out": "t", "attrs": {"dim0": 0, "dim1": 1}}, {"op": "matmul", "in": ["x", "t"], "out": "y"})"
                                : R"({"op": "matmul", "in": ["x", "c"], "out": "y"})") +
           R"(], "outputs": ["y"]})";
  };
  const std::vector<std::array<int64_t, 3>> sizes = {{1, 1, 1}, {0, 5, 7},   {3, 0, 7},    {5, 7, 0},    {2, 3, 5},
                                                     {17, 40, 9}, {19, 40, 64}, {6, 600, 70}, {130, 24, 100}, {1, 64, 300}};
  for (const auto& [x, w] : {std::pair{"f64", "f32"}, std::pair{"f32", "f64"}}) {
    const double rtol = std::string(x) == "f64" ? 1e-9 : 1e-4, atol = std::string(x) == "f64" ? 1e-12 : 1e-5;
    for (const std::string how : {"plain", "transposed", "batched"}) {
      const std::string g = graph(x, w, how);
      for (const auto& [m, k, n] : sizes) {
        const std::vector<int64_t> xs = how == "batched" ? std::vector<int64_t>{3, m, k} : std::vector<int64_t>{m, k};
        const std::vector<int64_t> ws = how == "transposed" ? std::vector<int64_t>{n, k} : how == "batched" ? std::vector<int64_t>{3, k, n}
                                                                                                          : std::vector<int64_t>{k, n};
        expect_agrees(g, {random_tensor(dt(x), xs, rng), random_tensor(dt(w), ws, rng)},
                      std::string(x) + " times " + w + " " + how + shape_str(xs) + shape_str(ws), rtol, atol);
      }
      const backends::loops::LoopProgram p = std::move(backends::loops::lower(*bench::specialize(
          g, how == "batched" ? std::vector<std::vector<int64_t>>{{3, 20, 64}, {3, 64, 48}}
                              : std::vector<std::vector<int64_t>>{{20, 64}, how == "transposed" ? std::vector<int64_t>{48, 64} : std::vector<int64_t>{64, 48}},
          true).graph)).value();
      ASSERT_EQ(p.steps.size(), 1u) << how << "\n" << p.dump();
      ASSERT_EQ(p.steps[0].kind, backends::loops::Step::Kind::kMatmul) << how << "\n" << p.dump();
      EXPECT_EQ(p.buffers[p.steps[0].matmul.b.buffer].dtype, dt(w)) << how << "\n" << p.dump();
    }
  }
  // Frozen: the converted panels are made once and serve every tall call.
  backends::FrozenMemory& frozen = backends::FrozenMemory::process();
  const std::string g = graph("f64", "f32", "plain");
  const ir::Graph parsed = testing::graph_from(g);
  const Tensor w = random_tensor(DType::kF32, {40, 48}, rng);
  auto jit = runtime::Jit::create(R"({"compile": {"backend": "llvm"}, "policy": {"mode": "always_dynamic"}})");
  ASSERT_TRUE(jit.is_ok()) << jit.status().to_string();
  const DLTensor wd = w.dl();
  const DLTensor* wp[] = {&wd};
  const size_t made = frozen.stats().made;
  ASSERT_TRUE(frozen.freeze(wp).is_ok());
  for (int64_t m : {200, 5, 300}) {
    SCOPED_TRACE("frozen, m=" + std::to_string(m));
    expect_call_agrees(**jit, g, parsed, random_tensor(DType::kF64, {m, 40}, rng), w, 1e-9, 1e-12);
  }
  EXPECT_EQ(frozen.stats().made, made + 1);
  ASSERT_TRUE(frozen.thaw(wp).is_ok());
}

// The key/value cache's graphs against the reference (tests/support/decode_cases.h).
TEST(Llvm, DecodeCasesAgree) {
  std::mt19937 rng(29);
  for (const testing::DecodeCase& c : testing::decode_cases(rng)) expect_agrees(c.graph, c.inputs, c.what, 1e-4, 1e-5);
}

// A weight in frozen memory (backends/frozen.h) is packed for the GEMM on
// the first call and read packed on later ones, by every kernel that takes
// it; thawed and rewritten, it is read anew. Short products (which stream
// B otherwise), tall ones in blocks across threads, a transposed weight,
// f64.
TEST(Llvm, FrozenWeightsArePackedOnceAndReadAnewWhenThawed) {
  std::mt19937 rng(41);
  backends::FrozenMemory& frozen = backends::FrozenMemory::process();
  for (const char* t : kFloats) {
    for (const bool transposed : {false, true}) {
      const std::string w_shape = transposed ? "[48, 40]" : "[40, 48]";
      const std::string g = std::string(R"({"inputs": [{"name": "x", "dtype": ")") + t + R"(", "shape": ["m", 40]},
          {"name": "w", "dtype": ")" + t + R"(", "shape": )" + w_shape + R"(}], "nodes": [)" +
                            (transposed ? R"({"op": "transpose", "in": ["w"], "out": "wt", "attrs": {"dim0": 0, "dim1": 1}},
                                             {"op": "matmul", "in": ["x", "wt"], "out": "y"}])"
                                        : R"({"op": "matmul", "in": ["x", "w"], "out": "y"}])") +
                            R"(, "outputs": ["y"]})";
      const ir::Graph graph = testing::graph_from(g);
      const DType d = dt(t);
      Tensor w = random_tensor(d, transposed ? std::vector<int64_t>{48, 40} : std::vector<int64_t>{40, 48}, rng);
      auto jit = runtime::Jit::create(R"({"compile": {"backend": "llvm"}, "policy": {"mode": "always_dynamic"}})");
      ASSERT_TRUE(jit.is_ok()) << jit.status().to_string();
      const DLTensor wd = w.dl();
      const DLTensor* wp[] = {&wd};
      const size_t made = frozen.stats().made;
      const size_t on_huge_pages = backends::cpu::HugePageHeap::process()->stats().blocks;
      for (int round = 0; round < 2; ++round) {
        ASSERT_TRUE(frozen.freeze(wp).is_ok());
        for (int64_t m : {5, 200, 1, 5}) {
          SCOPED_TRACE(std::string(t) + (transposed ? " transposed" : "") + " m=" + std::to_string(m) + " round " + std::to_string(round));
          expect_call_agrees(**jit, g, graph, random_tensor(d, {m, 40}, rng), w, 1e-4, 1e-5);
        }
        // One packed copy per freeze for all calls and every height (a
        // single row reads the panels too).
        EXPECT_EQ(frozen.stats().made, made + round + 1);
        // The panels lie in the huge-page heap (read from memory each call).
        EXPECT_EQ(backends::cpu::HugePageHeap::process()->stats().blocks, on_huge_pages + 1);
        // Thawed, the panels go; the weight is then rewritten in place.
        ASSERT_TRUE(frozen.thaw(wp).is_ok());
        EXPECT_EQ(backends::cpu::HugePageHeap::process()->stats().blocks, on_huge_pages);
        const Tensor fresh = random_tensor(d, w.shape(), rng);
        std::memcpy(w.data(), fresh.data(), static_cast<size_t>(w.numel()) * ir::dtype_size(d));
      }
      EXPECT_FALSE(frozen.any());
    }
  }
}

// A weight passed as an input (not frozen) that comes back to an address
// it had before is put on huge pages (cpu::HugePageBacking), once: two
// weights in turn (a kernel called once per layer) are asked for on their
// second calls, and not again on their third. The products agree with the
// reference throughout. A frozen weight, read as its panels, is not asked
// for. (Rows of 2 and 7: one kernel; a single row would be an entry of its
// own, watching its own inputs.)
TEST(Llvm, RecurringWeightsAreBackedByHugePagesOnce) {
  if (std::getenv("SHAPEJIT_HUGE_PAGES")) GTEST_SKIP() << "SHAPEJIT_HUGE_PAGES is set";
  std::mt19937 rng(43);
  constexpr double kAtol = 1e-4;  // sums of 1024 products near 0, in float
  const std::string g = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["m", 1024]}, {"name": "w", "dtype": "f32", "shape": [1024, 768]}],
    "nodes": [{"op": "matmul", "in": ["x", "w"], "out": "y"}], "outputs": ["y"]})";
  const ir::Graph graph = testing::graph_from(g);
  auto jit = runtime::Jit::create(R"({"compile": {"backend": "llvm"}, "policy": {"mode": "always_dynamic"}})");
  ASSERT_TRUE(jit.is_ok()) << jit.status().to_string();
  backends::cpu::HugePageBacking& backing = backends::cpu::HugePageBacking::process();
  // 3 MiB each: at least one whole 2 MiB extent, however they lie.
  const Tensor w1 = random_tensor(DType::kF32, {1024, 768}, rng), w2 = random_tensor(DType::kF32, {1024, 768}, rng);
  std::vector<size_t> asked = {backing.stats().asked};
  for (int call = 0; call < 6; ++call) {
    expect_call_agrees(**jit, g, graph, random_tensor(DType::kF32, {call % 3 == 2 ? 7 : 2, 1024}, rng), call % 2 ? w2 : w1, 1e-4, kAtol);
    asked.push_back(backing.stats().asked);
  }
  if (!backing.stats().asking) GTEST_SKIP() << "no huge pages here: MADV_COLLAPSE failed " << backends::cpu::HugePageBacking::kMaxFailuresInARow << " times";
  EXPECT_EQ(asked[1], asked[0]);  // w1 first
  EXPECT_EQ(asked[2], asked[1]);  // w2 first
  EXPECT_GT(asked[3], asked[2]);  // w1 again
  EXPECT_GT(asked[4], asked[3]);  // w2 again
  EXPECT_EQ(asked[6], asked[4]);  // both once
  const Tensor w3 = random_tensor(DType::kF32, {1024, 768}, rng);
  const DLTensor w3d = w3.dl();
  const DLTensor* w3p[] = {&w3d};
  ASSERT_TRUE(backends::FrozenMemory::process().freeze(w3p).is_ok());
  for (int call = 0; call < 3; ++call) expect_call_agrees(**jit, g, graph, random_tensor(DType::kF32, {2, 1024}, rng), w3, 1e-4, kAtol);
  EXPECT_EQ(backing.stats().asked, asked[6]);
  ASSERT_TRUE(backends::FrozenMemory::process().thaw(w3p).is_ok());
}

// softmax(f(q @ k^T)) @ v as one tiled step (AttentionStep): an encoder's
// padding bias, a decoder's causal `where` over a cache (finite and -inf
// fills, rows masked whole), sizes 0 and 1 and across the tiles' edges
// (64 queries, 256 keys), f64, a mask whose gather fails, and the graphs
// that must not fuse (the probabilities kept, the scores read elsewhere,
// softmax over another axis).
TEST(Llvm, AttentionFusesIntoOneTiledStep) {
  std::mt19937 rng(31);
  auto random = [&](DType dt, std::vector<int64_t> shape, double lo = -1, double hi = 1) { return random_tensor(dt, std::move(shape), rng, lo, hi); };
  auto lowered = [](const std::string& g, const std::vector<std::vector<int64_t>>& shapes) {
    return std::move(backends::loops::lower(*bench::specialize(g, shapes, true).graph)).value().dump();
  };
  // Encoder: q, k, v [b, h, t, 8], a [b, 1, 1, t] bias from the padding mask.
  const std::string encoder = R"({"inputs": [{"name": "q", "dtype": "f32", "shape": ["b", 2, "t", 8]}, {"name": "k", "dtype": "f32", "shape": ["b", 2, "t", 8]},
      {"name": "v", "dtype": "f32", "shape": ["b", 2, "t", 8]}, {"name": "mask", "dtype": "f32", "shape": ["b", 1, 1, "t"]}],
    "nodes": [{"op": "transpose", "in": ["k"], "out": "kt", "attrs": {"dim0": -1, "dim1": -2}}, {"op": "matmul", "in": ["q", "kt"], "out": "s"},
              {"op": "mul", "in": ["s", 0.35355339059327373], "out": "s1"}, {"op": "sub", "in": ["mask", 1.0], "out": "m1"},
              {"op": "mul", "in": ["m1", 1e9], "out": "bias"}, {"op": "add", "in": ["s1", "bias"], "out": "s2"},
              {"op": "softmax", "in": ["s2"], "out": "p", "attrs": {"dim": -1}}, {"op": "matmul", "in": ["p", "v"], "out": "y"}], "outputs": ["y"]})";
  for (const auto& [b, t] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 5}, {1, 0}, {0, 4}, {2, 63}, {1, 64}, {1, 65}, {1, 257}, {2, 300}}) {
    std::vector<double> mask(static_cast<size_t>(b * t), 1.0);
    for (int64_t r = 0; r < b; ++r) {
      for (int64_t x = t - r * t / 3; x < t; ++x) mask[static_cast<size_t>(r * t + x)] = 0;  // padding at the end
    }
    expect_agrees(encoder, {random(DType::kF32, {b, 2, t, 8}), random(DType::kF32, {b, 2, t, 8}), random(DType::kF32, {b, 2, t, 8}),
                            from_values(DType::kF32, {b, 1, 1, t}, mask)},
                  "encoder b=" + std::to_string(b) + " t=" + std::to_string(t), 1e-4, 1e-5);
  }
  EXPECT_NE(lowered(encoder, {{2, 2, 70, 8}, {2, 2, 70, 8}, {2, 2, 70, 8}, {2, 1, 1, 70}}).find("attention into"), std::string::npos);

  // Decoder: new positions t over a cache of p, causal by `where`.
  // The fill is an input: JSON has no -inf.
  auto decoder = [](const std::string& dt) {
    return R"({"inputs": [{"name": "q", "dtype": ")" + dt + R"(", "shape": [1, 2, "t", 4]}, {"name": "kc", "dtype": ")" + dt + R"(", "shape": [1, 2, "p", 4]},
        {"name": "kn", "dtype": ")" + dt + R"(", "shape": [1, 2, "t", 4]}, {"name": "v", "dtype": ")" + dt + R"(", "shape": [1, 2, "s", 4]},
        {"name": "fill", "dtype": ")" + dt + R"(", "shape": [1]}],
      "nodes": [{"op": "sym_size", "in": ["q"], "out": "t", "attrs": {"dim": 2}}, {"op": "sym_size", "in": ["kc"], "out": "p", "attrs": {"dim": 2}},
                {"op": "concat", "in": ["kc", "kn"], "out": "k", "attrs": {"dim": 2}}, {"op": "transpose", "in": ["k"], "out": "kt", "attrs": {"dim0": -1, "dim1": -2}},
                {"op": "matmul", "in": ["q", "kt"], "out": "sc"}, {"op": "mul", "in": ["sc", 0.5], "out": "scaled"},
                {"op": "sym_add", "in": ["p", "t"], "out": "n"}, {"op": "arange", "in": ["p", "n", 1], "out": "qp"},
                {"op": "unsqueeze", "in": ["qp"], "out": "qc", "attrs": {"dim": 1}}, {"op": "arange", "in": [0, "n", 1], "out": "kp"},
                {"op": "le", "in": ["kp", "qc"], "out": "visible"}, {"op": "where", "in": ["visible", "scaled", "fill"], "out": "masked"},
                {"op": "softmax", "in": ["masked"], "out": "pr", "attrs": {"dim": -1}}, {"op": "matmul", "in": ["pr", "v"], "out": "y"}],
      "outputs": ["y"]})";
  };
  for (const auto& [t, p] : std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {1, 7}, {1, 300}, {1, 16400}, {3, 0}, {70, 0}, {64, 200}, {130, 260}}) {
    for (double fill : {-1e30, -std::numeric_limits<double>::infinity()}) {
      for (const char* dt : {"f32", "f64"}) {
        const DType d = *ir::parse_dtype(dt);
        expect_agrees(decoder(dt), {random(d, {1, 2, t, 4}), random(d, {1, 2, p, 4}), random(d, {1, 2, t, 4}), random(d, {1, 2, p + t, 4}), from_values(d, {1}, std::vector<double>{fill})},
                      std::string("decoder ") + dt + " fill " + std::to_string(fill) + " t=" + std::to_string(t) + " p=" + std::to_string(p), 1e-4, 1e-5);
      }
    }
  }
  EXPECT_NE(lowered(decoder("f32"), {{1, 2, 70, 4}, {1, 2, 9, 4}, {1, 2, 70, 4}, {1, 2, 79, 4}, {1}}).find("attention into"), std::string::npos);

  // Rows masked whole by -inf: NaN, as the softmax gives; by -1e30: uniform.
  const std::string masked = R"({"inputs": [{"name": "q", "dtype": "f32", "shape": ["t", 4]}, {"name": "k", "dtype": "f32", "shape": ["t", 4]},
      {"name": "v", "dtype": "f32", "shape": ["t", 3]}, {"name": "keep", "dtype": "bool", "shape": ["t", "t"]}, {"name": "fill", "dtype": "f32", "shape": []}],
    "nodes": [{"op": "transpose", "in": ["k"], "out": "kt", "attrs": {"dim0": 0, "dim1": 1}}, {"op": "matmul", "in": ["q", "kt"], "out": "s"},
              {"op": "where", "in": ["keep", "s", "fill"], "out": "m"}, {"op": "softmax", "in": ["m"], "out": "p", "attrs": {"dim": -1}},
              {"op": "matmul", "in": ["p", "v"], "out": "y"}], "outputs": ["y"]})";
  for (int64_t t : {3, 300}) {
    std::vector<double> keep(static_cast<size_t>(t * t));
    for (int64_t r = 0; r < t; ++r) {
      for (int64_t c = 0; c < t; ++c) keep[static_cast<size_t>(r * t + c)] = r % 2 == 0 ? 0.0 : double(c >= r || c > 260);  // even rows: all masked
    }
    expect_agrees(masked, {random(DType::kF32, {t, 4}), random(DType::kF32, {t, 4}), random(DType::kF32, {t, 3}), from_values(DType::kBool, {t, t}, keep),
                           from_values(DType::kF32, {}, std::vector<double>{-std::numeric_limits<double>::infinity()})},
                  "rows masked whole t=" + std::to_string(t), 1e-4, 1e-5);
  }

  // A gathered bias whose index is out of range: the reference's error.
  const std::string gathered = R"({"inputs": [{"name": "q", "dtype": "f32", "shape": ["t", 4]}, {"name": "k", "dtype": "f32", "shape": ["t", 4]},
      {"name": "v", "dtype": "f32", "shape": ["t", 4]}, {"name": "table", "dtype": "f32", "shape": [5, 1]}, {"name": "ids", "dtype": "i64", "shape": ["t"]}],
    "nodes": [{"op": "transpose", "in": ["k"], "out": "kt", "attrs": {"dim0": 0, "dim1": 1}}, {"op": "matmul", "in": ["q", "kt"], "out": "s"},
              {"op": "embedding", "in": ["table", "ids"], "out": "e"}, {"op": "add", "in": ["s", "e"], "out": "b"},
              {"op": "softmax", "in": ["b"], "out": "p", "attrs": {"dim": -1}}, {"op": "matmul", "in": ["p", "v"], "out": "y"}], "outputs": ["y"]})";
  for (int64_t bad : {2, 5}) {
    std::vector<double> ids(70, 1.0);
    ids[65] = static_cast<double>(bad);
    expect_agrees(gathered, {random(DType::kF32, {70, 4}), random(DType::kF32, {70, 4}), random(DType::kF32, {70, 4}), random(DType::kF32, {5, 1}),
                             from_values(DType::kI64, {70}, ids)},
                  "gathered bias id " + std::to_string(bad), 1e-4, 1e-5);
  }

  // Not attention: the probabilities kept, the scores read twice, softmax
  // over the queries.
  auto variant = [](const std::string& softmax_dim, const std::string& outputs, const std::string& extra) {
    return R"({"inputs": [{"name": "q", "dtype": "f32", "shape": ["t", 4]}, {"name": "k", "dtype": "f32", "shape": ["t", 4]}, {"name": "v", "dtype": "f32", "shape": ["t", 4]}],
      "nodes": [{"op": "transpose", "in": ["k"], "out": "kt", "attrs": {"dim0": 0, "dim1": 1}}, {"op": "matmul", "in": ["q", "kt"], "out": "s"},
                {"op": "softmax", "in": ["s"], "out": "p", "attrs": {"dim": )" + softmax_dim + R"(}}, {"op": "matmul", "in": ["p", "v"], "out": "y"})" + extra +
           R"(], "outputs": )" + outputs + "}";
  };
  const std::vector<std::string> plain = {variant("-1", R"(["y", "p"])", ""), variant("-1", R"(["y", "z"])", R"(, {"op": "exp", "in": ["s"], "out": "z"})"),
                                          variant("0", R"(["y"])", "")};
  for (const std::string& g : plain) {
    expect_agrees(g, {random(DType::kF32, {70, 4}), random(DType::kF32, {70, 4}), random(DType::kF32, {70, 4})}, "not fused", 1e-4, 1e-5);
    EXPECT_EQ(lowered(g, {{70, 4}, {70, 4}, {70, 4}}).find("attention into"), std::string::npos) << g;
  }
}

}  // namespace
}  // namespace shapejit

#endif  // SHAPEJIT_HAVE_LLVM
