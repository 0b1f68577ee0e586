// Layout: how a compiled entry may assume an input's elements lie. An
// entry reads the strides of the call (strided), or assumes a dense
// row-major array (dense), or a dense array whose dims are permuted
// (permuted: `W.T` of a row-major W, a Fortran-order array, heads swapped
// with positions). Dense and permuted layouts give every stride as an
// expression of the dims, so that the lowering sees which dim is the
// contiguous one (a product reads a transposed B in place, as BLAS's
// transB does) where a strided one sees only symbols.
//
// A layout is one word, hashed into the specialization and compared by a
// guard: 0 strided, 1 dense, and a permutation as its dims, outermost
// first, in 4-bit digits under the rank in the top 4 bits. The words of
// strided and dense are the bools this replaced, so no kernel's key moved.
#pragma once

#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace shapejit::sym {

class Layout {
 public:
  // Ranks a permutation is kept for; a larger one is strided or dense.
  static constexpr int kMaxPermutedRank = 15;

  Layout() = default;  // strided
  static Layout dense() { return Layout(1); }
  // Dense in `order`: order[0] the outermost dim (the largest stride),
  // order.back() the innermost (stride 1). The identity is dense().
  static Layout permuted(std::span<const int> order);
  static Layout from_word(uint64_t word) { return Layout(word); }
  // The most specific layout that a tensor of `shape` and `strides` has:
  // dense, else dense in another order of its dims, else strided. Dims of
  // size 1 may have any stride, and an empty tensor is dense.
  static Layout of(int ndim, const int64_t* shape, const int64_t* strides);

  // Whether a tensor of `shape` and `strides` lies so. Allocates nothing.
  bool holds(int ndim, const int64_t* shape, const int64_t* strides) const;

  bool is_strided() const { return word_ == 0; }
  bool is_dense() const { return word_ == 1; }
  bool is_permuted() const { return word_ > 1; }
  // The dims from outermost to innermost (dense: 0 .. rank - 1); empty
  // when strided.
  std::vector<int> order(int rank) const;
  uint64_t word() const { return word_; }
  // "strided", "contiguous", "contiguous in dim order (1, 0)".
  std::string str() const;
  auto operator<=>(const Layout&) const = default;

 private:
  explicit Layout(uint64_t word) : word_(word) {}
  uint64_t word_ = 0;
};

}  // namespace shapejit::sym
