#include "core/sym/layout.h"

#include <algorithm>
#include <numeric>

namespace shapejit::sym {

namespace {

constexpr int kRankShift = 60;

int rank_of(uint64_t word) { return static_cast<int>(word >> kRankShift); }
int digit(uint64_t word, int i) { return static_cast<int>((word >> (4 * i)) & 0xf); }

}  // namespace

Layout Layout::permuted(std::span<const int> order) {
  const int rank = static_cast<int>(order.size());
  bool identity = true;
  for (int i = 0; i < rank; ++i) identity &= order[static_cast<size_t>(i)] == i;
  if (identity) return dense();
  if (rank > kMaxPermutedRank) return Layout();
  uint64_t word = static_cast<uint64_t>(rank) << kRankShift;
  for (int i = 0; i < rank; ++i) word |= static_cast<uint64_t>(order[static_cast<size_t>(i)]) << (4 * i);
  return Layout(word);
}

Layout Layout::of(int ndim, const int64_t* shape, const int64_t* strides) {
  if (dense().holds(ndim, shape, strides)) return dense();
  if (ndim > kMaxPermutedRank || strides == nullptr) return Layout();
  // Dims of size 1 first (any place holds them), then the others by
  // stride, largest first; ties keep their order.
  std::vector<int> order(static_cast<size_t>(ndim));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const bool ua = shape[a] == 1, ub = shape[b] == 1;
    if (ua != ub) return ua;
    return !ua && strides[a] > strides[b];
  });
  const Layout l = permuted(order);
  return l.holds(ndim, shape, strides) ? l : Layout();
}

bool Layout::holds(int ndim, const int64_t* shape, const int64_t* strides) const {
  if (is_strided()) return true;
  if (is_permuted() && rank_of(word_) != ndim) return false;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] == 0) return true;  // addresses nothing
  }
  if (strides == nullptr) return is_dense();  // DLPack's compact row-major
  // From the innermost dim out, each stride the product of the sizes inside
  // it. Unsigned: beside each other the sizes may exceed int64 only where
  // a size is 0, handled above.
  uint64_t expect = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    const int d = is_dense() ? i : digit(word_, i);
    if (shape[d] == 1) continue;
    if (static_cast<uint64_t>(strides[d]) != expect) return false;
    expect *= static_cast<uint64_t>(shape[d]);
  }
  return true;
}

std::vector<int> Layout::order(int rank) const {
  std::vector<int> out;
  if (is_strided()) return out;
  for (int i = 0; i < rank; ++i) out.push_back(is_dense() ? i : digit(word_, i));
  return out;
}

std::string Layout::str() const {
  if (is_strided()) return "strided";
  if (is_dense()) return "contiguous";
  std::string s = "contiguous in dim order (";
  const int rank = rank_of(word_);
  for (int i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(digit(word_, i));
  return s + ")";
}

}  // namespace shapejit::sym
