#include "backends/cpu/compact.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <type_traits>

namespace shapejit::backends::cpu {

namespace {

// Elements per block: a task's share of the count and of the fill (two
// blocks a task), as a count step before counted them.
constexpr int64_t kBlock = loops::CompactStep::kBlock;

// How a mask element reads: bools as bytes (a byte other than 0 or 1 in a
// caller's bool tensor is set, not undefined behavior); floats set where
// != 0, NaN included and -0.0 not, as NumPy's nonzero.
template <typename T>
using MaskOf = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

// Copies a value by its size: masked_select moves bytes, whatever they mean.
template <size_t N>
using Bits = std::conditional_t<N == 1, uint8_t, std::conditional_t<N == 2, uint16_t, std::conditional_t<N == 4, uint32_t, uint64_t>>>;

template <typename F>
void for_blocks(int64_t blocks, F&& f) {
  if (blocks <= 1) {
    for (int64_t b = 0; b < blocks; ++b) f(b);
    return;
  }
  tbb::parallel_for(int64_t{0}, blocks, [&](int64_t b) { f(b); });
}

// The dense loops, apart from the lambdas that walk strides: their
// position and pointers stay in registers (a store through `out` could
// otherwise alias a captured one, reloaded every element).
template <typename M>
int64_t count_dense(const M* m, int64_t l0, int64_t l1) {
  int64_t n = 0, l = l0;
  if constexpr (std::is_same_v<M, uint8_t>) {
    // Bytes eight at a time: each folded to 0 or 1 and added into a lane
    // of its own, up to 255 words before the lanes are summed.
    constexpr uint64_t kLow = 0x0101010101010101ull, kEven = 0x00FF00FF00FF00FFull;
    while (l + 8 <= l1) {
      uint64_t lanes = 0;
      for (int i = 0; i < 255 && l + 8 <= l1; ++i, l += 8) {
        uint64_t w;
        std::memcpy(&w, m + l, sizeof w);
        w |= w >> 4;
        w |= w >> 2;
        w |= w >> 1;
        lanes += w & kLow;
      }
      const uint64_t pairs = (lanes & kEven) + (lanes >> 8 & kEven);  // four lanes of at most 510
      n += static_cast<int64_t>((pairs * 0x0001000100010001ull) >> 48);
    }
  }
  for (; l < l1; ++l) n += m[l] != M(0);
  return n;
}

// Where a block's writes stop: past its last set element, so that the
// loops below need no check of their position (every write lands before
// the block's end, then is overwritten or is the last).
template <typename M>
int64_t past_last_set(const M* m, int64_t l0, int64_t l1) {
  while (l1 > l0 && m[l1 - 1] == M(0)) --l1;
  return l1;
}

// Two blocks filled in one loop, element by element: each position hangs
// on the last one's, so two chains side by side keep the core twice as
// busy. `put(k, l)` writes element l at position k; each block starts at
// its prefix and stops past its last set element.
template <typename M, typename Put>
void fill_two(const M* m, int64_t a0, int64_t a1, int64_t ka, int64_t b0, int64_t b1, int64_t kb, Put put) {
  a1 = past_last_set(m, a0, a1);
  b1 = past_last_set(m, b0, b1);
  const int64_t both = std::min(a1 - a0, b1 - b0);
  for (int64_t i = 0; i < both; ++i) {
    put(ka, a0 + i);
    ka += m[a0 + i] != M(0);
    put(kb, b0 + i);
    kb += m[b0 + i] != M(0);
  }
  for (int64_t l = a0 + both; l < a1; ++l) {
    put(ka, l);
    ka += m[l] != M(0);
  }
  for (int64_t l = b0 + both; l < b1; ++l) {
    put(kb, l);
    kb += m[l] != M(0);
  }
}

}  // namespace

Compaction::Compaction(const loops::CompactStep& c, ir::DType mask_dtype, ir::DType value_dtype, const char* mask_buf,
                       const char* values_buf, const int64_t* counts, std::span<const int64_t> values)
    : op_(c.op), mask_dtype_(mask_dtype), value_dtype_(value_dtype), mask_(mask_buf), values_(values_buf), counts_(counts) {
  int64_t dense = 1;
  for (size_t d = c.shape.size(); d-- > 0;) {
    const int64_t n = sym::evaluate(c.shape[d], values), ms = sym::evaluate(c.mask_strides[d], values);
    const int64_t vs = values_ ? sym::evaluate(c.value_strides[d], values) : 0;
    shape_.insert(shape_.begin(), n);
    mask_strides_.insert(mask_strides_.begin(), ms);
    value_strides_.insert(value_strides_.begin(), vs);
    if (n != 1) dense_ &= ms == dense && (!values_ || vs == dense);
    dense *= n;  // the buffers hold these elements: no overflow
  }
  size_ = dense;
}

template <typename F>
void Compaction::walk(int64_t begin, int64_t end, F&& f) const {
  const size_t rank = shape_.size();
  int64_t coords[ir::kMaxRank + 1] = {};
  int64_t rem = begin, om = 0, ov = 0;
  for (size_t d = rank; d-- > 0;) {
    coords[d] = rem % shape_[d];
    rem /= shape_[d];
    om += coords[d] * mask_strides_[d];
    ov += coords[d] * value_strides_[d];
  }
  for (int64_t l = begin; l < end; ++l) {
    if (!f(om, ov, static_cast<const int64_t*>(coords))) return;
    for (size_t d = rank; d-- > 0;) {
      om += mask_strides_[d];
      ov += value_strides_[d];
      if (++coords[d] < shape_[d]) break;
      om -= mask_strides_[d] * shape_[d];
      ov -= value_strides_[d] * shape_[d];
      coords[d] = 0;
    }
  }
}

template <typename M>
void Compaction::count_blocks() {
  const int64_t blocks = (size_ + kBlock - 1) / kBlock;
  prefix_.assign(static_cast<size_t>(blocks) + 1, 0);
  const M* m = reinterpret_cast<const M*>(mask_);
  for_blocks(blocks, [&](int64_t b) {
    const int64_t l0 = b * kBlock, l1 = std::min(size_, l0 + kBlock);
    int64_t n = 0;
    if (dense_) {
      n = count_dense(m, l0, l1);
    } else {
      walk(l0, l1, [&](int64_t om, int64_t, const int64_t*) {
        n += m[om] != M(0);
        return true;
      });
    }
    prefix_[static_cast<size_t>(b) + 1] = n;
  });
  std::partial_sum(prefix_.begin(), prefix_.end(), prefix_.begin());
}

int64_t Compaction::count() {
  if (size_ == 0) {
    prefix_.assign(1, 0);
    return 0;
  }
  if (counts_) {
    const int64_t blocks = (size_ + kBlock - 1) / kBlock;
    prefix_.assign(static_cast<size_t>(blocks) + 1, 0);
    std::partial_sum(counts_, counts_ + blocks, prefix_.begin() + 1);
  } else {
    ir::visit_dtype(mask_dtype_, [&]<typename T>() { count_blocks<MaskOf<T>>(); });
  }
  return prefix_.back();
}

// Each block writes from its prefix. An element is written where the next
// set one goes, set or not, and the position moves on only when it is set
// (no branch on the data); a block stops once its set elements are
// written, so nothing is written past them.
template <typename M, typename V>
bool Compaction::fill_blocks(char* out, const RowsDone& done) const {
  const M* m = reinterpret_cast<const M*>(mask_);
  const int64_t rank = static_cast<int64_t>(shape_.size()), blocks = static_cast<int64_t>(prefix_.size()) - 1;
  V* o = reinterpret_cast<V*>(out);
  const V* v = reinterpret_cast<const V*>(values_);
  std::atomic<bool> ok{true};
  auto rows_done = [&](int64_t b) {
    const int64_t k0 = prefix_[static_cast<size_t>(b)], k1 = prefix_[static_cast<size_t>(b) + 1];
    if (done && k0 < k1 && ok && !done(k0, k1)) ok = false;
  };
  if (dense_ && (op_ == ir::Op::kMaskedSelect || rank == 1)) {
    for_blocks((blocks + 1) / 2, [&, m, o, v](int64_t pair) {
      const int64_t a = 2 * pair, b = std::min(a + 1, blocks - 1);
      const int64_t a0 = a * kBlock, a1 = std::min(size_, a0 + kBlock), b0 = b * kBlock, b1 = b == a ? b0 : std::min(size_, b0 + kBlock);
      const int64_t ka = prefix_[static_cast<size_t>(a)], kb = prefix_[static_cast<size_t>(b)];
      if (op_ == ir::Op::kMaskedSelect) fill_two(m, a0, a1, ka, b0, b1, kb, [o, v](int64_t k, int64_t l) { o[k] = v[l]; });
      else fill_two(m, a0, a1, ka, b0, b1, kb, [o](int64_t k, int64_t l) { o[k] = static_cast<V>(l); });
      rows_done(a);
      if (b != a) rows_done(b);
    });
    return ok;
  }
  for_blocks(blocks, [&](int64_t b) {
    int64_t k = prefix_[static_cast<size_t>(b)];
    const int64_t end = prefix_[static_cast<size_t>(b) + 1];
    if (k == end) return;
    const int64_t l0 = b * kBlock, l1 = std::min(size_, l0 + kBlock);
    if (op_ == ir::Op::kMaskedSelect) {
      walk(l0, l1, [&](int64_t om, int64_t ov, const int64_t*) {
        o[k] = v[ov];
        k += m[om] != M(0);
        return k < end;
      });
    } else {
      int64_t* idx = reinterpret_cast<int64_t*>(out);
      walk(l0, l1, [&](int64_t om, int64_t, const int64_t* coords) {
        std::copy(coords, coords + rank, idx + k * rank);
        k += m[om] != M(0);
        return k < end;
      });
    }
    rows_done(b);
  });
  return ok;
}

bool Compaction::fill(char* out, const RowsDone& done) const {
  if (prefix_.empty() || prefix_.back() == 0) return true;
  return ir::visit_dtype(mask_dtype_, [&]<typename T>() {
    using M = MaskOf<T>;
    if (op_ == ir::Op::kNonzero) return fill_blocks<M, int64_t>(out, done);
    switch (ir::dtype_size(value_dtype_)) {
      case 1: return fill_blocks<M, Bits<1>>(out, done);
      case 2: return fill_blocks<M, Bits<2>>(out, done);
      case 4: return fill_blocks<M, Bits<4>>(out, done);
      default: return fill_blocks<M, Bits<8>>(out, done);
    }
  });
}

}  // namespace shapejit::backends::cpu
