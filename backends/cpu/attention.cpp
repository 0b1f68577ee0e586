#include "backends/cpu/attention.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/products.h"
#include "backends/cpu/query_row.h"

namespace shapejit::backends::cpu {

namespace {

using sym::Expr;

// An operand of an attention step on a call: its strides, and its offset
// for a flat batch index.
struct OperandAt {
  int64_t offset, row, col;
  std::vector<int64_t> batch;  // per batch dim: stride
  OperandAt(const loops::MatmulOperand& o, std::span<const int64_t> values)
      : offset(sym::evaluate(o.offset, values)), row(sym::evaluate(o.row_stride, values)), col(sym::evaluate(o.col_stride, values)) {
    for (const Expr& e : o.batch_strides) batch.push_back(sym::evaluate(e, values));
  }
  int64_t at(int64_t index, std::span<const int64_t> dims) const {
    int64_t r = offset;
    for (size_t d = dims.size(); d-- > 0;) {
      r += index % dims[d] * batch[d];
      index /= dims[d];
    }
    return r;
  }
};

// What an attention task works in: its tile of scores, its rows' state,
// and the tile code's arguments. The rows' accumulators are their rows of
// the output.
template <typename T>
struct AttentionScratch {
  std::vector<T> scores, state;
  std::vector<char*> tile_bufs;
  std::vector<int64_t> tile_syms;
};

// Per task (a batch matrix and kTileQ query rows): for each tile of keys,
// the GEMM writes the scores to the task's tile, the generated code turns
// them into probabilities and updates the rows' state, the rows'
// accumulators (their output rows) are rescaled, and the GEMM adds
// probabilities times values to them (the first tile's products are
// written, not added); the rows are divided by their sums at the end.
template <typename T>
bool attention(const loops::AttentionStep& a, char* const* bufs, std::span<const int64_t> values, const BoundStep& tile,
               int64_t work_per_task) {
  constexpr int64_t tq = loops::AttentionStep::kTileQ, tk = loops::AttentionStep::kTileK;
  std::vector<int64_t> dims;
  int64_t count = 1;
  for (const Expr& e : a.batch) count *= dims.emplace_back(sym::evaluate(e, values));
  const int64_t t = sym::evaluate(a.t, values), s = sym::evaluate(a.s, values), d = sym::evaluate(a.d, values), dv = sym::evaluate(a.dv, values);
  T* out = reinterpret_cast<T*>(bufs[a.out]);
  if (count == 0 || t == 0 || dv == 0) return true;
  if (s == 0) {  // softmax over no keys times no values: zeros, as the two matmuls give
    std::fill(out, out + count * t * dv, T(0));
    return true;
  }
  const OperandAt q(a.q, values), k(a.k, values), v(a.v, values);
  const T* qb = reinterpret_cast<const T*>(bufs[a.q.buffer]);
  const T* kb = reinterpret_cast<const T*>(bufs[a.k.buffer]);
  const T* vb = reinterpret_cast<const T*>(bufs[a.v.buffer]);
  const int64_t row_tiles = (t + tq - 1) / tq;
  std::atomic<int32_t> failed{0};
  auto task = [&](int64_t index) {
    const int64_t c = index / row_tiles, i0 = index % row_tiles * tq, rows = std::min(tq, t - i0);
    // The task's tile and rows' state, the thread's own from task to task
    // (nothing in a task runs another on its thread). The tile is not
    // cleared: the GEMM writes every score the tile's code reads.
    thread_local AttentionScratch<T> scratch;
    std::vector<T>& scores = scratch.scores;
    std::vector<T>& state = scratch.state;
    scores.resize(static_cast<size_t>(tq * tk));
    state.assign(static_cast<size_t>(4 * tq), T(0));
    std::fill(state.begin(), state.begin() + tq, -std::numeric_limits<T>::infinity());  // running max; sums start at 0
    // The rows' accumulators: their rows of the output, which no other
    // task writes.
    T* acc = out + (c * t + i0) * dv;
    // The tile code's buffers: the call's, with the task's tile and state
    // in place of theirs. Its symbols (gathered per block of keys): the
    // call's, with the task's own five from a.first_symbol on (the batch
    // matrix, the first row, the first key, the keys, the keys padded).
    // Only what the code reads is gathered, not a copy of the call's whole
    // tables per task.
    scratch.tile_bufs.resize(tile.buffers.size());
    for (size_t i = 0; i < tile.buffers.size(); ++i) {
      const int b = tile.buffers[i];
      scratch.tile_bufs[i] = b == a.tile    ? reinterpret_cast<char*>(scores.data())
                             : b == a.state ? reinterpret_cast<char*>(state.data())
                                            : bufs[b];
    }
    scratch.tile_syms.resize(tile.symbols.size());
    const int fs = a.first_symbol;
    int64_t own_values[5] = {c, i0, 0, 0, 0};
    const T* qm = qb + q.at(c, dims) + i0 * q.row;
    const BlasOperand oq = blas_operand(rows, d, q.row, q.col);
    // Several query rows are a matrix product, multiply's where the host
    // runs it. One (a decode step) over rows of keys and values each in
    // one piece (a cache) takes the row kernels; otherwise BLAS's
    // matrix-vector products.
    const bool own = rows > 1 && gemm_available();
    const bool row_kernels = rows == 1 && gemm_available() && q.col == 1 && k.row == 1 && v.col == 1;
    // A single query row (a decode step) has the whole tile to itself: its
    // cells are (row 0) * kTileK + key, any key below kTileQ * kTileK.
    const int64_t block = rows == 1 ? tq * tk : tk;
    for (int64_t j0 = 0; j0 < s; j0 += block) {
      const int64_t keys = std::min(block, s - j0);
      const int ld = static_cast<int>(rows == 1 ? keys : tk);
      if (d == 0) {
        std::fill(scores.begin(), scores.end(), T(0));
      } else {
        const T* kt = kb + k.at(c, dims) + j0 * k.col;
        if (row_kernels) {
          key_dots(keys, d, qm, kt, k.col, scores.data());
        } else if (own) {
          multiply_packing(rows, keys, d, qm, q.row, q.col, kt, k.row, k.col, scores.data(), ld, false);
        } else {
          const BlasOperand ok = blas_operand(d, keys, k.row, k.col);
          blas_gemm(oq.trans, ok.trans, rows, keys, d, qm, oq.ld, kt, ok.ld, T(0), scores.data(), ld);
        }
      }
      // The exp pass's cells past the keys, up to whole vectors: -inf.
      const int64_t padded = (keys + loops::AttentionStep::kKeyLanes - 1) / loops::AttentionStep::kKeyLanes * loops::AttentionStep::kKeyLanes;
      for (int64_t r = 0; r < rows; ++r) std::fill_n(scores.data() + r * ld + keys, padded - keys, -std::numeric_limits<T>::infinity());
      own_values[2] = j0;
      own_values[3] = keys;
      own_values[4] = padded;
      for (size_t i = 0; i < tile.symbols.size(); ++i) {
        const int x = tile.symbols[i];
        scratch.tile_syms[i] = x >= fs && x < fs + 5 ? own_values[x - fs] : values[x];
      }
      if (int32_t e = tile.fn(scratch.tile_bufs.data(), scratch.tile_syms.data(), i0, i0 + rows)) {
        failed = e;
        return;
      }
      // The first block writes the accumulators, so that they need no
      // clearing and no rescaling (its factors are 0, exp(-inf) from the
      // running max's start); a later one rescales them.
      const bool first = j0 == 0;
      if (!first) scale_rows(rows, dv, state.data() + 2 * tq, false, acc, dv);
      bool adds = false;
      for (int64_t r = 0; r < rows; ++r) adds |= state[3 * tq + r] != T(0);
      if (adds) {  // a tile wholly masked for these rows (causal) adds nothing
        const T* vt = vb + v.at(c, dims) + j0 * v.row;
        if (row_kernels) {
          if (first) std::fill(acc, acc + dv, T(0));
          add_weighted_rows(keys, dv, scores.data(), vt, v.row, acc);
        } else if (own) {
          multiply_packing(rows, dv, keys, scores.data(), ld, int64_t{1}, vt, v.row, v.col, acc, dv, !first);
        } else {
          const BlasOperand ov = blas_operand(keys, dv, v.row, v.col);
          blas_gemm(CblasNoTrans, ov.trans, rows, dv, keys, scores.data(), ld, vt, ov.ld, first ? T(0) : T(1), acc, static_cast<int>(dv));
        }
      } else if (first) {
        std::fill(acc, acc + rows * dv, T(0));
      }
    }
    // Each row by its sum: a multiply by the reciprocal, where a division
    // per element was half the task's own time at 16 tokens (perf). A sum
    // is 0 (every key masked) or about 1 or more (the max's own exp(0)),
    // so the reciprocal does not overflow, and a row of zeros over a sum
    // of 0 is NaN either way.
    scale_rows(rows, dv, state.data() + tq, true, acc, dv);
  };
  const int64_t tasks = count * row_tiles;
  if (count * t * s * (d + dv) < work_per_task || tasks == 1) {
    for (int64_t i = 0; i < tasks && !failed; ++i) task(i);
  } else {
    tbb::parallel_for(int64_t{0}, tasks, task);
  }
  return failed == 0;
}

}  // namespace

bool run_attention(const loops::AttentionStep& a, ir::DType dtype, char* const* bufs, std::span<const int64_t> values,
                   const BoundStep& tile, int64_t work_per_task) {
  return dtype == ir::DType::kF32 ? attention<float>(a, bufs, values, tile, work_per_task)
                                  : attention<double>(a, bufs, values, tile, work_per_task);
}

}  // namespace shapejit::backends::cpu
