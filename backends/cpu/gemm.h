// The CPU backend's own matrix product, for hosts with AVX2 and FMA.
//
// OpenBLAS, called once per block of rows (the backend's threads are TBB's),
// packs its own copy of B in every block, packs A as well, and writes C
// twice when beta is 0 (a pass of zeros, then the product), all of it
// repeated per block. Here B is packed once per product, into panels of kPanel columns
// that every block of rows (every thread) reads; A is read in place, one
// element at a time broadcast across a vector; C is never zeroed first
// (the first slice of k stores, the others add).
//
// The loops are GotoBLAS's: for each slice of k (a packed B panel of at most
// kDepth rows stays in L1), for each block of kBlockRows rows of A (in L2),
// for each panel, a kRows x kPanel tile of C held in 12 vector registers
// (6 rows of two vectors) takes a multiply-add per element of the slice.
// Where the process chose AVX-512's tiles (tile_choice.h), a tile of 14
// rows takes two panels at once, a zmm vector each, in 28 registers.
// Rows past a multiple of kRows take a narrower tile of the same code
// (less work than a whole one), columns past a multiple of kPanel are
// stored through a small buffer: nothing is padded.
#pragma once

#include <cstdint>

#include "backends/cpu/tile_choice.h"

namespace shapejit::backends::cpu {

// Whether this CPU has what the kernels are compiled for (x86-64 with AVX2
// and FMA); where it has not, products go to BLAS.
bool gemm_available();

// Columns per packed panel: two vectors of T.
template <typename T>
constexpr int64_t kPanel = 64 / static_cast<int64_t>(sizeof(T));

// Rows of a whole tile of C. A block of rows that is a multiple of it has
// no short tile, which does less work per element of k.
constexpr int64_t kTileRows = 6;

// Products of at most this many rows (three tiles) of a row-major B that
// no one packed beforehand read it where it lies (multiply_streaming): for
// so few rows, copying B into panels costs more than the products that
// read them. A B packed beforehand (frozen weights) is read as packed at
// any height, each panel's successor prefetched while its tiles run
// (cpu_kernels_bench's BM_PrepackedVsStreamedGemm).
constexpr int64_t kInPlaceRows = 3 * kTileRows;

// Elements of the packed form of a k x n matrix: panels padded with zeros
// to whole panels.
template <typename T>
int64_t packed_size(int64_t k, int64_t n) {
  return (n + kPanel<T> - 1) / kPanel<T> * kPanel<T> * k;
}

// Rows [first, last) of every panel of B (k x n, element (p, j) at
// b[p * row + j * col]) into `out`, laid out for a product of type T
// (multiply<T>): panel q's row p at out[(q * k + p) * kPanel<T>]. Any
// strides: a transposed B is gathered. Threads split B by its rows, so
// that each reads whole rows of a row-major B in order (split by panels,
// each would read 256 bytes of a row, a row apart). The panels keep B's
// element type S, which may be the other float type (a float32 weight in a
// float64 product, a cast folded into the operand): the tiles convert it
// as they load it, and a float panel is half the bytes of a widened one.
template <typename T, typename S>
void pack(int64_t k, int64_t n, const S* b, int64_t row, int64_t col, S* out, int64_t first, int64_t last);

// C (m x n, row stride ldc) = A B, or += when `accumulate`. A is m x k,
// element (i, p) at a[i * a_row + p * a_col] (a transposed A is read in
// place too: a tile's rows are then adjacent); `packed` is B as pack<T>()
// wrote it, from its panel 0: a block of B's columns starting at panel q
// passes that panel's address (packed + q * k * kPanel<T>).
template <typename T, typename S>
void multiply(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* packed, T* c, int64_t ldc,
              bool accumulate);
// The same product by `family`'s tiles, whichever the process runs (the
// probe's, tile_choice.h); AVX2's where the host lacks AVX-512F.
template <typename T, typename S>
void multiply_by(TileFamily family, int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* packed, T* c,
                 int64_t ldc, bool accumulate);

// The same product from B in place (element (p, j) at b[p * b_row +
// j * b_col]), for a block of few rows, which reads B once: for so few
// rows, packing all of B first costs as much as the products. Up to three
// tiles' rows of a row-major B, its whole panels are
// read where they lie, in bands of rows of k, the next band prefetched
// while the tiles take one; otherwise each panel is packed just before its
// tiles take it, into a buffer of the calling thread's. A B of the other
// float type (S) is read in place up to two tiles' rows, converted as the
// tiles load it; past that it is packed as it is, a group of panels at a
// time (each of B's rows is then read a few lines at once), and converted
// as the tiles load the panels.
template <typename T, typename S>
void multiply_streaming(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* b, int64_t b_row, int64_t b_col,
                        T* c, int64_t ldc, bool accumulate);

}  // namespace shapejit::backends::cpu
