#include "backends/cpu/gemm.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backends/cpu/gemm_tiles.h"
#include "backends/cpu/row_product.h"
#include "backends/cpu/simd.h"

namespace shapejit::backends::cpu {

namespace {

// Products of at most this many rows read a row-major B of the other float
// type in place, converting in registers (in_place); taller ones pack
// it converting (streaming): in place wins up to about 12 rows and
// packing past 18 (B's rows 12 KB apart, a band of them in one set of L1;
// bench/results/README.md, "Design measurements").
constexpr int64_t kConvertedInPlaceRows = 2 * kTileRows;
// A slice of k: a packed panel of kDepth rows is 32 KB (L1) for either type.
constexpr int64_t kDepth = 512;
// Products of at most kInPlaceRows rows (gemm.h) of a row-major B read it
// in place (in_place), in bands of about kBandBytes of B's rows, from
// kMinBand to kMaxBand rows.
constexpr int64_t kBandBytes = 72 << 10, kMinBand = 8, kMaxBand = 32;
// Rows of B packed across all panels before the next: a band of 1536
// floats' rows is 96 KB, in L2 while its panels take it.
constexpr int64_t kPackRows = 16;
// Panels a streamed product packs at once when it converts B's elements
// (streaming): 32 float panels of a float64 product (8 columns, 32
// bytes a row) are 1 KB of each of B's rows, 512 KB for 512 rows, in L2:
// faster than groups of 4 or 8, or of whole rows.
constexpr int64_t kConvertedPanels = 32;

}  // namespace

bool gemm_available() {
#if defined(__x86_64__)
  static const bool ok = [] {
    __builtin_cpu_init();  // in case of a call from a static constructor that runs before libgcc's
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return ok;
#else
  return false;
#endif
}

#if defined(__x86_64__)

namespace {

// A float panel from 16 contiguous columns (column j at src + j * col; the
// keys of an attention's scores): 8 x 8 blocks transposed in registers, so
// that packing does not outweigh the product that reads the panel.
SJ_AVX2 void pack_columns(int64_t k, const float* src, int64_t col, float* o) {
  int64_t p = 0;
  for (; p + 8 <= k; p += 8) {
    for (int64_t g = 0; g < 16; g += 8) {
      const float* s = src + g * col + p;
      const __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + col), r2 = _mm256_loadu_ps(s + 2 * col),
                   r3 = _mm256_loadu_ps(s + 3 * col), r4 = _mm256_loadu_ps(s + 4 * col), r5 = _mm256_loadu_ps(s + 5 * col),
                   r6 = _mm256_loadu_ps(s + 6 * col), r7 = _mm256_loadu_ps(s + 7 * col);
      const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
                   t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
                   t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
      const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE), u2 = _mm256_shuffle_ps(t1, t3, 0x44),
                   u3 = _mm256_shuffle_ps(t1, t3, 0xEE), u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
                   u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
      float* d = o + p * 16 + g;
      _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
      _mm256_storeu_ps(d + 16, _mm256_permute2f128_ps(u1, u5, 0x20));
      _mm256_storeu_ps(d + 32, _mm256_permute2f128_ps(u2, u6, 0x20));
      _mm256_storeu_ps(d + 48, _mm256_permute2f128_ps(u3, u7, 0x20));
      _mm256_storeu_ps(d + 64, _mm256_permute2f128_ps(u0, u4, 0x31));
      _mm256_storeu_ps(d + 80, _mm256_permute2f128_ps(u1, u5, 0x31));
      _mm256_storeu_ps(d + 96, _mm256_permute2f128_ps(u2, u6, 0x31));
      _mm256_storeu_ps(d + 112, _mm256_permute2f128_ps(u3, u7, 0x31));
    }
  }
  for (; p < k; ++p) {
    for (int64_t j = 0; j < 16; ++j) o[p * 16 + j] = src[j * col + p];
  }
}

// `rows` rows of a whole panel of T's width (kPanel<T> elements of S, 32
// or 64 or 128 bytes, `row` elements apart) to consecutive rows of the
// packed panel, by 32-byte moves (memcpy moves 16 bytes at a time for so
// short a copy).
template <typename T, typename S>
SJ_AVX2 void copy_rows(const S* src, int64_t row, S* out, int64_t rows) {
  constexpr int64_t kVectors = kPanel<T> * static_cast<int64_t>(sizeof(S)) / 32;
  for (int64_t p = 0; p < rows; ++p, src += row, out += kPanel<T>) {
    const __m256i* from = reinterpret_cast<const __m256i*>(src);
    __m256i* to = reinterpret_cast<__m256i*>(out);
    for (int64_t v = 0; v < kVectors; ++v) _mm256_storeu_si256(to + v, _mm256_loadu_si256(from + v));
  }
}

}  // namespace

#endif

namespace {

// Rows [p0, p1) of B's panel q (kPanel<T> columns) to `o`, the panel's row
// p at o[p * kPanel<T>], in B's own type S.
template <typename T, typename S>
void pack_rows(int64_t n, const S* b, int64_t row, int64_t col, int64_t q, int64_t p0, int64_t p1, S* o) {
  constexpr int64_t P = kPanel<T>;
  const int64_t j0 = q * P, width = std::min(P, n - j0);
  const S* src = b + j0 * col;
  if (col == 1) {
#if defined(__x86_64__)
    if (width == P && gemm_available()) return copy_rows<T>(src + p0 * row, row, o + p0 * P, p1 - p0);
#endif
    for (int64_t p = p0; p < p1; ++p) {
      std::copy(src + p * row, src + p * row + width, o + p * P);
      std::fill(o + p * P + width, o + (p + 1) * P, S(0));
    }
    return;
  }
#if defined(__x86_64__)
  if constexpr (std::is_same_v<T, float> && std::is_same_v<S, float>) {
    if (row == 1 && width == P && gemm_available()) return pack_columns(p1 - p0, src + p0, col, o + p0 * P);
  }
#endif
  // Any other strides (a transposed B has contiguous columns): down each
  // column.
  for (int64_t j = 0; j < P; ++j) {
    for (int64_t p = p0; p < p1; ++p) o[p * P + j] = j < width ? src[p * row + j * col] : S(0);
  }
}

// Rows [first, last) of panels [q0, q1) of B, the panel q's row p at
// out[((q - q0) * depth + p) * kPanel]. A row-major B is read in bands of
// rows across the panels, row after row: panel by panel, each row's few
// bytes lay a row's stride from the last (6 KB for 1536 floats), past what
// the prefetchers follow.
template <typename T, typename S>
void pack_panels(int64_t n, int64_t depth, const S* b, int64_t row, int64_t col, int64_t q0, int64_t q1, S* out, int64_t first,
                 int64_t last) {
  constexpr int64_t P = kPanel<T>;
  if (col != 1) {
    for (int64_t q = q0; q < q1; ++q) pack_rows<T>(n, b, row, col, q, first, last, out + (q - q0) * depth * P);
    return;
  }
  for (int64_t p0 = first; p0 < last; p0 += kPackRows) {
    const int64_t p1 = std::min(last, p0 + kPackRows);
    for (int64_t q = q0; q < q1; ++q) pack_rows<T>(n, b, row, col, q, p0, p1, out + (q - q0) * depth * P);
  }
}

}  // namespace

template <typename T, typename S>
void pack(int64_t k, int64_t n, const S* b, int64_t row, int64_t col, S* out, int64_t first, int64_t last) {
  pack_panels<T>(n, k, b, row, col, int64_t{0}, (n + kPanel<T> - 1) / kPanel<T>, out, first, last);
}

#if defined(__x86_64__)

namespace {

using tiling::Ahead;
using tiling::Avx2Tiles;
using tiling::Avx512Tiles;
using tiling::kLine;

// The loops below run a family of tiles (F, gemm_tiles.h) over blocks of
// rows, slices of k and steps of F::kPanels panels.
template <typename F, typename T, typename S>
SJ_AVX2 void multiply_packed(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* packed, T* c, int64_t ldc,
                             bool accumulate) {
  constexpr int64_t P = kPanel<T>, W = F::kPanels * P;
  const int64_t slices = (k + kDepth - 1) / kDepth, depth = (k + slices - 1) / slices;
  for (int64_t p0 = 0; p0 < k; p0 += depth) {
    const int64_t kc = std::min(depth, k - p0);
    const bool add = accumulate || p0 > 0;
    for (int64_t i0 = 0; i0 < m; i0 += F::kBlockRows) {
      const int64_t i1 = std::min(m, i0 + F::kBlockRows);
      for (int64_t j0 = 0; j0 < n; j0 += W) {
        // The panel the loops take next: this slice's next one, else its
        // first for the next block of rows, else the next slice's first.
        const S* next = j0 + W < n ? packed + (j0 + W) * k + p0 * P : i1 < m ? packed + p0 * P : p0 + kc < k ? packed + (p0 + kc) * P : nullptr;
        const Ahead ahead{reinterpret_cast<const char*>(next), P * static_cast<int64_t>(sizeof(S)), k * P * static_cast<int64_t>(sizeof(S))};
        F::template run<T, S>(i0, i1, kc, a + p0 * a_col, a_row, a_col, packed + j0 * k + p0 * P, P, k * P, c + j0, ldc, add,
                              std::min(W, n - j0), false, ahead);
      }
    }
  }
}

// The lines of a block of B's rows (`rows` rows of `width` bytes from
// `first`, `stride` bytes apart), prefetched in B's order in `shares`
// shares, one before each panel's tiles, so that the loads of the next
// block overlap the multiply-adds of this one.
class RowPrefetch {
 public:
  RowPrefetch(const void* first, int64_t stride, int64_t rows, int64_t width, int64_t shares)
      : row_(static_cast<const char*>(first)), stride_(stride), row_lines_((width + kLine - 1) / kLine), left_(rows * row_lines_),
        share_((left_ + shares - 1) / shares) {}
  void share() {
    for (int64_t i = 0; i < share_ && left_ > 0; ++i, --left_) {
      _mm_prefetch(row_ + in_row_ * kLine, _MM_HINT_T1);
      if (++in_row_ == row_lines_) in_row_ = 0, row_ += stride_;
    }
  }

 private:
  const char* row_;
  int64_t stride_, row_lines_, left_, share_, in_row_ = 0;  // in_row_: the next line's place in its row
};

// Each slice's panels packed just before their tiles take them, into a
// buffer of the thread's: one panel at a time, in L1, when B is of the
// product's type; a group of kConvertedPanels panels when its elements are
// converted, so that each of B's rows is read kConvertedPanels * 32 bytes at
// a time, not the 32 bytes of one panel (8 floats: a quarter of a line,
// rows kilobytes apart). The panels keep B's own type, and the tiles
// convert as they load them (load_as): a float panel is half the bytes to
// write and to read again, and converting in the tile costs no more than
// loading a double. Packed one at a time, each panel's first tile
// prefetches the next panel's rows into L2 (tile), so that packing it does
// not wait on memory, row after row.
template <typename F, typename T, typename S>
SJ_AVX2 void streaming(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* b, int64_t b_row, int64_t b_col,
                       T* c, int64_t ldc, bool accumulate) {
  constexpr int64_t P = kPanel<T>, group = std::is_same_v<T, S> ? F::kPanels : kConvertedPanels;
  static_assert(group % F::kPanels == 0, "a group is whole steps of the tiles");
  thread_local std::vector<S> panels(static_cast<size_t>(kDepth * P * group));
  const int64_t slices = (k + kDepth - 1) / kDepth, depth = (k + slices - 1) / slices, count = (n + P - 1) / P;
  for (int64_t p0 = 0; p0 < k; p0 += depth) {
    const int64_t kc = std::min(depth, k - p0);
    const bool add = accumulate || p0 > 0;
    const S* slice = b + p0 * b_row;
    for (int64_t q0 = 0; q0 < count; q0 += group) {
      const int64_t q1 = std::min(count, q0 + group);
      pack_panels<T>(n, kc, slice, b_row, b_col, q0, q1, panels.data(), 0, kc);
      // While the tiles take this group, the next group's lines of the
      // slice are prefetched.
      const int64_t next_bytes =
          group > F::kPanels && b_col == 1 && q1 < count ? std::min(n - q1 * P, group * P) * static_cast<int64_t>(sizeof(S)) : 0;
      RowPrefetch next(slice + q1 * P, b_row * static_cast<int64_t>(sizeof(S)), kc, next_bytes, (q1 - q0 + F::kPanels - 1) / F::kPanels);
      for (int64_t q = q0; q < q1; q += F::kPanels) {
        next.share();
        const int64_t j0 = q * P;
        // One step of the tiles at a time: its first tile prefetches the
        // next step's rows where B lies (this slice's next, else the next
        // slice's first), so that packing them reads L2.
        Ahead ahead;
        if (group == F::kPanels && b_col == 1) {
          const S* at = q + F::kPanels < count ? slice + (q + F::kPanels) * P : p0 + kc < k ? slice + kc * b_row : nullptr;
          ahead = {reinterpret_cast<const char*>(at), b_row * static_cast<int64_t>(sizeof(S)), P * static_cast<int64_t>(sizeof(S))};
        }
        F::template run<T, S>(0, m, kc, a + p0 * a_col, a_row, a_col, panels.data() + (q - q0) * kc * P, P, kc * P, c + j0, ldc, add,
                              std::min(F::kPanels * P, n - j0), false, ahead);
      }
    }
  }
}

// B's whole panels read where B lies (row-major: b_col 1), in bands of a
// few rows of k; while the tiles take one band, the next is prefetched,
// line after line, in B's order, which the prefetcher also follows. A
// streamed panel (streaming) is read 64 bytes a row, rows kilobytes
// apart, and then copied; before its tiles prefetched the next panel into
// L2, that was misses one after another, which prefetching into L1 did
// not hide (likely because lines 6 KB apart fall in 2 of L1's 64 sets and
// evict each other). With that prefetch, streaming measured faster than
// this at 8 and 16 rows in 10 of 12 rows of two runs (by 2-20%; slower by
// 2-3% in the other two), which has not yet changed where products go.
// Columns past the last whole panel are streamed. B's elements may be of
// the other float type: the tiles convert them as they load them
// (load_as).
template <typename F, typename T, typename S>
SJ_AVX2 void in_place(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* b, int64_t b_row, T* c,
                      int64_t ldc, bool accumulate, int64_t band) {
  constexpr int64_t P = kPanel<T>, W = F::kPanels * P;
  const int64_t whole = n / P * P, steps = (whole + W - 1) / W;
  for (int64_t p0 = 0; p0 < k; p0 += band) {
    const int64_t kc = std::min(band, k - p0);
    const bool add = accumulate || p0 > 0;
    // The next band's lines.
    RowPrefetch next(b + (p0 + kc) * b_row, b_row * static_cast<int64_t>(sizeof(S)), std::min(band, k - p0 - kc),
                     whole * static_cast<int64_t>(sizeof(S)), steps);
    for (int64_t j0 = 0; j0 < whole; j0 += W) {
      next.share();
      F::template run<T, S>(0, m, kc, a + p0 * a_col, a_row, a_col, b + p0 * b_row + j0, b_row, P, c + j0, ldc, add,
                            std::min(W, whole - j0), true, Ahead{});
    }
  }
  if (whole < n) streaming<F>(m, n - whole, k, a, a_row, a_col, b + whole, b_row, int64_t{1}, c + whole, ldc, accumulate);
}

// The loops above by the family the process runs (tile_choice.h).
template <typename T, typename S>
void multiply_streamed(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* b, int64_t b_row, int64_t b_col,
                       T* c, int64_t ldc, bool accumulate) {
  const bool wide = tiles_in_use() == TileFamily::kAvx512;
  const int64_t in_place_rows = std::is_same_v<T, S> ? kInPlaceRows : kConvertedInPlaceRows;
  if (b_col == 1 && b_row >= n && m <= in_place_rows && n >= kPanel<T>) {  // rows one after another
    const int64_t band = std::clamp<int64_t>(kBandBytes / (b_row * static_cast<int64_t>(sizeof(S))), kMinBand, kMaxBand);
    if (wide) return in_place<Avx512Tiles>(m, n, k, a, a_row, a_col, b, b_row, c, ldc, accumulate, band);
    return in_place<Avx2Tiles>(m, n, k, a, a_row, a_col, b, b_row, c, ldc, accumulate, band);
  }
  if (wide) return streaming<Avx512Tiles>(m, n, k, a, a_row, a_col, b, b_row, b_col, c, ldc, accumulate);
  streaming<Avx2Tiles>(m, n, k, a, a_row, a_col, b, b_row, b_col, c, ldc, accumulate);
}

}  // namespace

#endif

template <typename T, typename S>
void multiply_streaming(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* b, int64_t b_row, int64_t b_col,
                        T* c, int64_t ldc, bool accumulate) {
#if defined(__x86_64__)
  if (k > 0 && gemm_available()) return multiply_streamed(m, n, k, a, a_row, a_col, b, b_row, b_col, c, ldc, accumulate);
#endif
  std::vector<S> packed(static_cast<size_t>(packed_size<T>(k, n)));
  pack<T>(k, n, b, b_row, b_col, packed.data(), 0, k);
  multiply(m, n, k, a, a_row, a_col, packed.data(), c, ldc, accumulate);
}

template <typename T, typename S>
void multiply(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* packed, T* c, int64_t ldc,
              bool accumulate) {
  multiply_by(tiles_in_use(), m, n, k, a, a_row, a_col, packed, c, ldc, accumulate);
}

template <typename T, typename S>
void multiply_by(TileFamily family, int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* packed, T* c,
                 int64_t ldc, bool accumulate) {
  if (k == 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    }
    return;
  }
#if defined(__x86_64__)
  if (gemm_available()) {
    if (family == TileFamily::kAvx512 && row_product_available()) {
      return multiply_packed<Avx512Tiles>(m, n, k, a, a_row, a_col, packed, c, ldc, accumulate);
    }
    return multiply_packed<Avx2Tiles>(m, n, k, a, a_row, a_col, packed, c, ldc, accumulate);
  }
#endif
  constexpr int64_t P = kPanel<T>;  // the same product, one element at a time
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T s = accumulate ? c[i * ldc + j] : T(0);
      for (int64_t p = 0; p < k; ++p) s += a[i * a_row + p * a_col] * static_cast<T>(packed[(j / P * k + p) * P + j % P]);
      c[i * ldc + j] = s;
    }
  }
}

#define SJ_PACKING(T, S)                                                                                                      \
  template void pack<T, S>(int64_t, int64_t, const S*, int64_t, int64_t, S*, int64_t, int64_t);                                 \
  template void multiply<T, S>(int64_t, int64_t, int64_t, const T*, int64_t, int64_t, const S*, T*, int64_t, bool);             \
  template void multiply_by<T, S>(TileFamily, int64_t, int64_t, int64_t, const T*, int64_t, int64_t, const S*, T*, int64_t, bool); \
  template void multiply_streaming<T, S>(int64_t, int64_t, int64_t, const T*, int64_t, int64_t, const S*, int64_t, int64_t, T*, int64_t, \
                                         bool);
SJ_PACKING(float, float)
SJ_PACKING(double, double)
SJ_PACKING(double, float)
SJ_PACKING(float, double)
#undef SJ_PACKING

}  // namespace shapejit::backends::cpu
