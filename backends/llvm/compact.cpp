#include "backends/llvm/compact.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <numeric>
#include <type_traits>

namespace shapejit::backends::llvm {

namespace {

// Elements per block: a task's share of the count and of the fill.
constexpr int64_t kBlock = int64_t{1} << 15;

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

}  // namespace

Compaction::Compaction(const loops::CompactStep& c, ir::DType mask_dtype, ir::DType value_dtype, const char* mask_buf,
                       const char* values_buf, std::span<const int64_t> values)
    : op_(c.op), mask_dtype_(mask_dtype), value_dtype_(value_dtype), mask_(mask_buf), values_(values_buf) {
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
      for (int64_t l = l0; l < l1; ++l) n += m[l] != M(0);
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
  ir::visit_dtype(mask_dtype_, [&]<typename T>() { count_blocks<MaskOf<T>>(); });
  return prefix_.back();
}

// Each block writes from its prefix. An element is written where the next
// set one goes, set or not, and the position moves on only when it is set
// (no branch on the data); a block stops once its set elements are
// written, so nothing is written past them.
template <typename M, typename V>
void Compaction::fill_blocks(char* out) const {
  const M* m = reinterpret_cast<const M*>(mask_);
  const int64_t rank = static_cast<int64_t>(shape_.size());
  for_blocks(static_cast<int64_t>(prefix_.size()) - 1, [&](int64_t b) {
    int64_t k = prefix_[static_cast<size_t>(b)];
    const int64_t end = prefix_[static_cast<size_t>(b) + 1];
    if (k == end) return;
    const int64_t l0 = b * kBlock, l1 = std::min(size_, l0 + kBlock);
    if (op_ == ir::Op::kMaskedSelect) {
      V* o = reinterpret_cast<V*>(out);
      const V* v = reinterpret_cast<const V*>(values_);
      if (dense_) {
        for (int64_t l = l0; l < l1 && k < end; ++l) {
          o[k] = v[l];
          k += m[l] != M(0);
        }
        return;
      }
      walk(l0, l1, [&](int64_t om, int64_t ov, const int64_t*) {
        o[k] = v[ov];
        k += m[om] != M(0);
        return k < end;
      });
      return;
    }
    int64_t* o = reinterpret_cast<int64_t*>(out);
    if (dense_ && rank == 1) {
      for (int64_t l = l0; l < l1 && k < end; ++l) {
        o[k] = l;
        k += m[l] != M(0);
      }
      return;
    }
    walk(l0, l1, [&](int64_t om, int64_t, const int64_t* coords) {
      std::copy(coords, coords + rank, o + k * rank);
      k += m[om] != M(0);
      return k < end;
    });
  });
}

void Compaction::fill(char* out) const {
  if (prefix_.empty() || prefix_.back() == 0) return;
  ir::visit_dtype(mask_dtype_, [&]<typename T>() {
    using M = MaskOf<T>;
    if (op_ == ir::Op::kNonzero) return fill_blocks<M, int64_t>(out);
    switch (ir::dtype_size(value_dtype_)) {
      case 1: return fill_blocks<M, Bits<1>>(out);
      case 2: return fill_blocks<M, Bits<2>>(out);
      case 4: return fill_blocks<M, Bits<4>>(out);
      default: return fill_blocks<M, Bits<8>>(out);
    }
  });
}

}  // namespace shapejit::backends::llvm
