// Row-major iteration over a shape, tracking one element offset per operand
// from that operand's strides (0 for a broadcast dim). The reference
// interpreter's loops are all built on it. Also the span of offsets a
// strided tensor reads.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/support/status.h"

namespace shapejit::ir {

template <size_t N, typename F>
void for_each_offset(const std::vector<int64_t>& shape, std::array<const int64_t*, N> strides, F&& f) {
  const size_t rank = shape.size();
  for (int64_t d : shape) {
    if (d == 0) return;
  }
  std::array<int64_t, N> off{};
  if (rank == 0) {
    f(off);
    return;
  }
  std::vector<int64_t> idx(rank, 0);
  const size_t last = rank - 1;
  const int64_t inner = shape[last];
  for (;;) {
    for (int64_t i = 0; i < inner; ++i) {
      f(off);
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][last];
    }
    for (size_t k = 0; k < N; ++k) off[k] -= strides[k][last] * inner;
    size_t d = last;
    for (;;) {
      if (d == 0) return;
      --d;
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (idx[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
  }
}

// Strides of an operand of shape `shape` (strides `strides`) read at the
// broadcast shape `out`: aligned from the right, 0 where the operand has no
// dim or a dim of size 1.
inline std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                                              const std::vector<int64_t>& out) {
  SJ_CHECK(shape.size() <= out.size(), "broadcast to a smaller rank");
  std::vector<int64_t> s(out.size(), 0);
  size_t shift = out.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) s[i + shift] = shape[i] == 1 ? 0 : strides[i];
  return s;
}

// The lowest and highest element offsets, from the first element, that a
// tensor of `shape` and `strides` (negative and zero ones too) reads: the
// elements lie in [lo, hi]. Dims of size 0 add nothing (the caller decides
// what an empty tensor spans).
struct OffsetSpan {
  int64_t lo = 0, hi = 0;
};
inline OffsetSpan offset_span(std::span<const int64_t> shape, std::span<const int64_t> strides) {
  OffsetSpan s;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) continue;
    (strides[d] < 0 ? s.lo : s.hi) += strides[d] * (shape[d] - 1);
  }
  return s;
}

}  // namespace shapejit::ir
