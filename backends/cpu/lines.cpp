// The LLVM backend's line routines (loops::ScanStep, loops::ScatterStep):
// cumsum, cumprod, cummax, cummin, sort and argsort along one dim, and the
// scatters (index_put, index_add, index_mul, index_max, index_min),
// run as library code, not generated code.
#include "backends/cpu/lines.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

namespace shapejit::backends::cpu {

namespace {

// Lines [o0, o1) of a scan viewed as [outer, n, inner]: row k of each is
// row k - 1 combined with the input's row k, so the inner loop runs along
// contiguous elements. Integers wrap.
// Integers accumulate as their unsigned kind, so that overflow wraps.
template <typename T, bool = std::is_integral_v<T>>
struct Wrapping {
  using type = T;
};
template <typename T>
struct Wrapping<T, true> {
  using type = std::make_unsigned_t<T>;
};

// One element combined into a running one: add and multiply wrap in
// integers; maximum and minimum give a NaN once either is one.
template <typename T>
T combined(ir::Op op, T acc, T v) {
  using Acc = typename Wrapping<T>::type;
  if (op == ir::Op::kCumsum || op == ir::Op::kIndexAdd) return static_cast<T>(static_cast<Acc>(acc) + static_cast<Acc>(v));
  if (op == ir::Op::kCumprod || op == ir::Op::kIndexMul) return static_cast<T>(static_cast<Acc>(acc) * static_cast<Acc>(v));
  // cummax, cummin, index_max, index_min
  const bool max = op == ir::Op::kCummax || op == ir::Op::kIndexMax;
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(acc) || std::isnan(v)) return std::numeric_limits<T>::quiet_NaN();
  }
  return max ? (acc < v ? v : acc) : (v < acc ? v : acc);
}

template <typename T>
void scan_lines(ir::Op op, const T* in, T* out, int64_t o0, int64_t o1, int64_t n, int64_t inner) {
  using Acc = typename Wrapping<T>::type;
  const bool sum = op == ir::Op::kCumsum, product = op == ir::Op::kCumprod;
  for (int64_t o = o0; o < o1; ++o) {
    const T* x = in + o * n * inner;
    T* y = out + o * n * inner;
    for (int64_t k = 0; k < n; ++k, x += inner, y += inner) {
      if (k == 0) {
        std::copy(x, x + inner, y);
        continue;
      }
      const T* prev = y - inner;
      // The sum and product spelled out, so that their inner loops vectorize.
      if (sum) {
        for (int64_t i = 0; i < inner; ++i) y[i] = static_cast<T>(static_cast<Acc>(prev[i]) + static_cast<Acc>(x[i]));
      } else if (product) {
        for (int64_t i = 0; i < inner; ++i) y[i] = static_cast<T>(static_cast<Acc>(prev[i]) * static_cast<Acc>(x[i]));
      } else {
        for (int64_t i = 0; i < inner; ++i) y[i] = combined(op, prev[i], x[i]);
      }
    }
  }
}

// sort or argsort of lines [l0, l1) of a [outer, n, inner] view (line l is
// outer l / inner, inner l % inner): each line gathered with its indices,
// ordered by (value, index), NaNs last, so equal values keep their order,
// and written back: its values, or its indices.
template <typename T>
void sort_lines(ir::Op op, const T* in, char* out, int64_t l0, int64_t l1, int64_t n, int64_t inner) {
  std::vector<std::pair<T, int64_t>> line(static_cast<size_t>(n));
  const auto before = [](const std::pair<T, int64_t>& p, const std::pair<T, int64_t>& q) {
    if constexpr (std::is_floating_point_v<T>) {
      const bool np = std::isnan(p.first), nq = std::isnan(q.first);
      if (np || nq) return np == nq ? p.second < q.second : nq;
    }
    return p.first < q.first || (!(q.first < p.first) && p.second < q.second);
  };
  for (int64_t l = l0; l < l1; ++l) {
    const int64_t base = (l / inner) * n * inner + l % inner;
    for (int64_t k = 0; k < n; ++k) line[static_cast<size_t>(k)] = {in[base + k * inner], k};
    std::sort(line.begin(), line.end(), before);
    for (int64_t k = 0; k < n; ++k) {
      if (op == ir::Op::kArgsort) reinterpret_cast<int64_t*>(out)[base + k * inner] = line[static_cast<size_t>(k)].second;
      else reinterpret_cast<T*>(out)[base + k * inner] = line[static_cast<size_t>(k)].first;
    }
  }
}

// Columns [c0, c1) of a scatter over [outer, n, inner] (column c is outer
// c / inner, inner c % inner), each index in order: a column's elements
// meet the rows in the order of the index, so a repeated index keeps its
// last row (index_put) or combines them all (index_add, index_mul,
// index_max, index_min).
template <typename T>
void scatter_columns(ir::Op op, const int64_t* ids, const T* values, T* out, int64_t c0, int64_t c1, int64_t n, int64_t m, int64_t inner) {
  using Acc = typename Wrapping<T>::type;
  for (int64_t c = c0; c < c1;) {
    const int64_t o = c / inner, i0 = c % inner, i1 = std::min(inner, i0 + (c1 - c));
    for (int64_t k = 0; k < m; ++k) {
      T* y = out + (o * n + ids[k]) * inner;
      const T* v = values + (o * m + k) * inner;
      if (op == ir::Op::kIndexPut) {
        std::copy(v + i0, v + i1, y + i0);
      } else if (op == ir::Op::kIndexAdd) {
        for (int64_t i = i0; i < i1; ++i) y[i] = static_cast<T>(static_cast<Acc>(y[i]) + static_cast<Acc>(v[i]));
      } else {
        for (int64_t i = i0; i < i1; ++i) y[i] = combined(op, y[i], v[i]);
      }
    }
    c += i1 - i0;
  }
}

}  // namespace

bool run_scatter(const loops::ScatterStep& c, ir::DType dtype, ir::DType index_dtype, const char* in, const char* index, const char* values,
                 char* out, int64_t outer, int64_t n, int64_t m, int64_t inner, int64_t work_per_task) {
  std::vector<int64_t> ids(static_cast<size_t>(m));
  ir::visit_dtype(index_dtype, [&]<typename I>() {
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      for (int64_t k = 0; k < m; ++k) ids[static_cast<size_t>(k)] = static_cast<int64_t>(reinterpret_cast<const I*>(index)[k]);
    }
  });
  if (outer > 0 && inner > 0 && std::any_of(ids.begin(), ids.end(), [&](int64_t i) { return i < 0 || i >= n; })) return false;
  const size_t bytes = static_cast<size_t>(outer * n * inner) * ir::dtype_size(dtype);
  if (bytes > 0) std::memcpy(out, in, bytes);
  if (outer == 0 || inner == 0 || m == 0) return true;
  const int64_t columns = outer * inner, grain = std::max<int64_t>(1, work_per_task / m);
  ir::visit_dtype(dtype, [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      // index_put of bool (index_add of bool is not an op): the bytes.
      const auto* v = reinterpret_cast<const uint8_t*>(values);
      auto* y = reinterpret_cast<uint8_t*>(out);
      scatter_columns(ir::Op::kIndexPut, ids.data(), v, y, 0, columns, n, m, inner);
    } else {
      const T* v = reinterpret_cast<const T*>(values);
      T* y = reinterpret_cast<T*>(out);
      if (columns <= grain) return scatter_columns(c.op, ids.data(), v, y, 0, columns, n, m, inner);
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, columns, grain),
                        [&](const tbb::blocked_range<int64_t>& r) { scatter_columns(c.op, ids.data(), v, y, r.begin(), r.end(), n, m, inner); });
    }
  });
  return true;
}

void run_lines(const loops::ScanStep& c, ir::DType in_dtype, const char* in_buf, char* out_buf, int64_t outer, int64_t n, int64_t inner,
               int64_t work_per_task) {
  if (outer == 0 || n == 0 || inner == 0) return;
  if (c.op == ir::Op::kSort || c.op == ir::Op::kArgsort) {
    const int64_t lines = outer * inner, grain = std::max<int64_t>(1, work_per_task / (8 * n));
    ir::visit_dtype(in_dtype, [&]<typename T>() {
      const T* in = reinterpret_cast<const T*>(in_buf);
      if (lines <= grain) return sort_lines(c.op, in, out_buf, 0, lines, n, inner);
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, lines, grain),
                        [&](const tbb::blocked_range<int64_t>& r) { sort_lines(c.op, in, out_buf, r.begin(), r.end(), n, inner); });
    });
    return;
  }
  const int64_t grain = std::max<int64_t>(1, work_per_task / (n * inner));
  ir::visit_dtype(in_dtype, [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* in = reinterpret_cast<const T*>(in_buf);
      T* out = reinterpret_cast<T*>(out_buf);
      if (outer <= grain) return scan_lines(c.op, in, out, 0, outer, n, inner);
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, outer, grain),
                        [&](const tbb::blocked_range<int64_t>& r) { scan_lines(c.op, in, out, r.begin(), r.end(), n, inner); });
    }
  });
}

}  // namespace shapejit::backends::cpu
