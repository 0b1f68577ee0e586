// How the LLVM backend's matmul step splits a product into tasks (blocks
// of rows, and of columns when the rows make fewer blocks than threads),
// and the B that all its tasks share: panels kept for frozen weights, or
// packed once for the call (products.h does each block's product).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "backends/loops/loop_ir.h"
#include "core/ir/dtype.h"

namespace shapejit::backends::cpu {

// Matmuls with fewer multiply-adds run on the calling thread; larger ones
// split into row blocks of about kMatmulMinRows rows or more, and into
// column blocks of at least kMatmulMinCols when the rows make fewer blocks
// than threads. multiply packs B once for all blocks, so it takes up
// to kMatmulBlocksPerThread blocks per thread (the threads finish together,
// and a short block's product is still in cache for its epilogue); BLAS
// packs B per block, so it takes one.
constexpr int64_t kMatmulWorkPerTask = 1 << 18;
constexpr int64_t kMatmulMinRows = 48;
constexpr int64_t kMatmulBlocksPerThread = 4;
constexpr int64_t kMatmulMinCols = 64;
// A product of so few rows that it reads B once (a decode step's) is
// bound by memory, not by its multiply-adds: a B of at least
// kSharedStreamBytes is split by columns across the threads, which stream
// it faster together than one does.
constexpr int64_t kSharedStreamBytes = 256 << 10;

// How a product splits into tasks: each matrix (or the flattened batch) in
// blocks of rows, and in blocks of columns too when there are fewer row
// blocks than threads.
struct MatmulPlan {
  bool flat;  // a batch sharing one B, run as one product of count * m rows
  bool own;   // on the backend's GEMM, not BLAS
  bool parallel;  // enough work to split across threads
  int64_t rows_total, matrices;  // rows per product, products
  int64_t rows_per_task, cols_per_task, row_blocks, col_blocks;
  int64_t tasks() const { return matrices * row_blocks * col_blocks; }
};

// `converts`: B's elements are of the other float type (products.h), which
// only the backend's GEMM reads.
MatmulPlan plan_matmul(const loops::MatmulShape& shape, size_t element_bytes, bool converts, int64_t threads);

// B packed once for every task, when one B serves them all (one product,
// or a batch flattened into one): kept across calls when it is an input in
// frozen memory (a layer's weights; a single row then reads the panels as
// one stream), else packed for this call when its blocks are too tall to
// stream it. Null where each task reads or packs
// its own (a batch of distinct Bs, BLAS, short blocks).
struct PackedB {
  std::shared_ptr<const void> frozen;  // keeps frozen panels alive for the call
  const char* panels = nullptr;
};

// Whether the tasks share a PackedB (pack_b). A single row takes kept
// panels only of a B large enough to be read from L3 or memory
// (kSharedStreamBytes): a small one, in cache, costs less read where it
// lies than the panels' lookup.
bool packs_b_once(const loops::MatmulShape& shape, const MatmulPlan& plan, size_t element_bytes, bool b_is_input);

// Calls f(T{}, S{}) for a product of type `dt` whose B holds `bt`.
template <typename F>
void with_types(ir::DType dt, ir::DType bt, F&& f) {
  const bool f32 = dt == ir::DType::kF32, b_f32 = bt == ir::DType::kF32;
  if (f32) b_f32 ? f(float{}, float{}) : f(float{}, double{});
  else b_f32 ? f(double{}, float{}) : f(double{}, double{});
}

// B's panels for every task (packs_b_once said so), from `b`, B's first
// element; null panels where none are kept and its blocks stream B.
PackedB pack_b(const loops::MatmulShape& shape, const MatmulPlan& plan, ir::DType dt, ir::DType bt, const char* b, bool b_is_input);

}  // namespace shapejit::backends::cpu
