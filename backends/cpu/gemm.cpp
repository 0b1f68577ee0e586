#include "backends/cpu/gemm.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backends/cpu/simd.h"

namespace shapejit::backends::cpu {

namespace {

// Products of at most this many rows read a row-major B of the other float
// type in place, converting in registers (in_place_avx2); taller ones pack
// it converting (streaming_avx2): in place wins up to about 12 rows and
// packing past 18 (B's rows 12 KB apart, a band of them in one set of L1;
// bench/results/README.md, "Design measurements").
constexpr int64_t kConvertedInPlaceRows = 2 * kTileRows;
// A slice of k: a packed panel of kDepth rows is 32 KB (L1) for either type.
constexpr int64_t kDepth = 512;
// Rows of A per block: 96 rows of a slice are 192 KB in L2 for floats.
constexpr int64_t kBlockRows = 96;
// Rows of a tile of C (kTileRows): 6 rows of two vectors are 12 of the 16
// registers, beside B's two vectors and the broadcast element of A.
constexpr int kRows = static_cast<int>(kTileRows);
// Products of at most kInPlaceRows rows (gemm.h) of a row-major B read it
// in place (in_place_avx2), in bands of about kBandBytes of B's rows, from
// kMinBand to kMaxBand rows.
constexpr int64_t kBandBytes = 72 << 10, kMinBand = 8, kMaxBand = 32;
// Rows of B packed across all panels before the next: a band of 1536
// floats' rows is 96 KB, in L2 while its panels take it.
constexpr int64_t kPackRows = 16;
// Panels a streamed product packs at once when it converts B's elements
// (streaming_avx2): 32 float panels of a float64 product (8 columns, 32
// bytes a row) are 1 KB of each of B's rows, 512 KB for 512 rows, in L2:
// faster than groups of 4 or 8, or of whole rows.
constexpr int64_t kConvertedPanels = 32;
// Bytes of a cache line.
constexpr int64_t kLine = 64;

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

// A vector of T from lanes of S where they lie, converted when they differ
// (B read in place in the other float type).
template <typename T, typename S>
SJ_AVX2 inline typename Simd<T>::V load_as(const S* p) {
  if constexpr (std::is_same_v<T, S>) {
    return Simd<T>::loadu(p);
  } else if constexpr (std::is_same_v<T, double>) {
    return _mm256_cvtps_pd(_mm_loadu_ps(p));
  } else {
    return _mm256_set_m128(_mm256_cvtpd_ps(_mm256_loadu_pd(p + 4)), _mm256_cvtpd_ps(_mm256_loadu_pd(p)));
  }
}

// One row of the next panel (kPanel<T> elements of S: 32, 64 or 128 bytes,
// packed or where B lies, so not always within one line) prefetched into
// L2, and `ahead` moved `row` bytes on, to the next.
template <typename T, typename S>
SJ_AVX2 inline void prefetch_row(const char*& ahead, int64_t row) {
  constexpr int64_t kBytes = kPanel<T> * static_cast<int64_t>(sizeof(S));
  for (int64_t o = 0; o < kBytes; o += kLine) _mm_prefetch(ahead + o, _MM_HINT_T1);
  _mm_prefetch(ahead + kBytes - 1, _MM_HINT_T1);
  ahead += row;
}

// Keeps two vectors in registers where they are: an empty asm that takes
// and gives them back, so that the compiler cannot load them again.
template <typename V>
SJ_AVX2 inline void in_registers(V& x, V& y) {
  asm("" : "+x"(x), "+x"(y));
}

// C[R x width] (+)= A[R x kc] B-panel[kc x kPanel]. A's element (r, p) is
// at a[r * a_row + p * a_col]; the panel's row p at panel[p * step] (a
// packed panel's rows are kPanel apart, B's own rows b_row). The
// accumulators are named variables, not an array: GCC keeps an array of
// vectors in memory across the loop.
//
// A tile of R <= 3 rows has 2R chains of multiply-adds, fewer than the 8 it
// takes to cover an FMA's latency (4 cycles) on two pipes: alone, tiles of
// 1 to 4 rows would all take 4 cycles per element of k, so that 61 to 64
// tokens cost the same (and 63 no less than 64). Its odd elements of k go
// to the accumulators of rows 3 to 5, which it does not use, and the two
// halves are added at the end. Each step's two vectors of B are loaded
// into registers once (in_registers): GCC would fold a load into every
// multiply-add that reads it, one load of B per row, and a tile of 2 or 3
// rows would cost what one of 4 does. So a tile's time follows its rows.
//
// With kAhead, the tile prefetches the panel the product takes next, from
// `ahead` (its rows `ahead_row` bytes apart), a row of it for each row of
// this one it takes: its lines reach L2 while this panel's multiply-adds
// run, where the prefetcher alone left each panel's first tile waiting on
// memory (a forward pass reads 42 MB of weights, past L3).
template <typename T, typename S, int R, bool kAhead>
SJ_AVX2 void tile(int64_t kc, const T* a, int64_t a_row, int64_t a_col, const S* panel, int64_t step, T* c, int64_t ldc, bool add,
                  int64_t width, const char* ahead, int64_t ahead_row) {
  using Vec = Simd<T>;
  using V = typename Vec::V;
  constexpr int64_t L = kPanel<T> / 2;  // lanes
  constexpr bool kSplitK = R <= kRows / 2;
  V c00 = Vec::zero(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00,
    c51 = c00;
  const T* a0 = a;
  const T* a3 = a + 3 * a_row;
  const int64_t a_row2 = 2 * a_row;
#define SJ_ROW(r, acc, base, offset, b0, b1) \
  if constexpr (R > r) {                      \
    const V x = Vec::splat(base + offset);      \
    c##acc##0 = Vec::fma(x, b0, c##acc##0);     \
    c##acc##1 = Vec::fma(x, b1, c##acc##1);     \
  }
  int64_t p = 0;
  if constexpr (kSplitK) {
    for (; p + 1 < kc; p += 2, panel += 2 * step, a0 += 2 * a_col) {
      const T* odd = a0 + a_col;
      if constexpr (kAhead) {
        prefetch_row<T, S>(ahead, ahead_row);
        prefetch_row<T, S>(ahead, ahead_row);
      }
      {
        V b0 = load_as<T>(panel), b1 = load_as<T>(panel + L);
        in_registers(b0, b1);
        SJ_ROW(0, 0, a0, 0, b0, b1)
        SJ_ROW(1, 1, a0, a_row, b0, b1)
        SJ_ROW(2, 2, a0, a_row2, b0, b1)
      }
      {
        V e0 = load_as<T>(panel + step), e1 = load_as<T>(panel + step + L);
        in_registers(e0, e1);
        SJ_ROW(0, 3, odd, 0, e0, e1)
        SJ_ROW(1, 4, odd, a_row, e0, e1)
        SJ_ROW(2, 5, odd, a_row2, e0, e1)
      }
    }
  }
  for (; p < kc; ++p, panel += step, a0 += a_col, a3 += a_col) {
    if constexpr (kAhead) prefetch_row<T, S>(ahead, ahead_row);
    const V b0 = load_as<T>(panel), b1 = load_as<T>(panel + L);
    SJ_ROW(0, 0, a0, 0, b0, b1)
    SJ_ROW(1, 1, a0, a_row, b0, b1)
    SJ_ROW(2, 2, a0, a_row2, b0, b1)
    if constexpr (!kSplitK) {
      SJ_ROW(3, 3, a3, 0, b0, b1)
      SJ_ROW(4, 4, a3, a_row, b0, b1)
      SJ_ROW(5, 5, a3, a_row2, b0, b1)
    }
  }
#undef SJ_ROW
  if constexpr (kSplitK) {
    c00 = Vec::add(c00, c30), c01 = Vec::add(c01, c31), c10 = Vec::add(c10, c40), c11 = Vec::add(c11, c41), c20 = Vec::add(c20, c50),
    c21 = Vec::add(c21, c51);
  }
  const V rows[kRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  for (int r = 0; r < R; ++r) {
    T* out = c + r * ldc;
    if (width == 2 * L) {
      Vec::storeu(out, add ? Vec::add(rows[r][0], Vec::loadu(out)) : rows[r][0]);
      Vec::storeu(out + L, add ? Vec::add(rows[r][1], Vec::loadu(out + L)) : rows[r][1]);
      continue;
    }
    alignas(32) T t[2 * L];
    Vec::storeu(t, rows[r][0]);
    Vec::storeu(t + L, rows[r][1]);
    for (int64_t j = 0; j < width; ++j) out[j] = add ? out[j] + t[j] : t[j];
  }
}

template <typename T, typename S>
using TileFn = void (*)(int64_t, const T*, int64_t, int64_t, const S*, int64_t, T*, int64_t, bool, int64_t, const char*, int64_t);
template <typename T, typename S, bool kAhead>
constexpr TileFn<T, S> kTiles[kRows + 1] = {nullptr,
                                            tile<T, S, 1, kAhead>,
                                            tile<T, S, 2, kAhead>,
                                            tile<T, S, 3, kAhead>,
                                            tile<T, S, 4, kAhead>,
                                            tile<T, S, 5, kAhead>,
                                            tile<T, S, 6, kAhead>};

// Rows [i0, i1) of C times one panel (`panel`, kc of its rows): whole
// tiles, but a last 1 or 2 rows and the whole tile before them are a tile
// of 4 or 5 and one of 3 (13 rows are 6 + 4 + 3, not 6 + 6 + 1): a short
// split-k tile carries a whole tile's fixed costs, and two mid-sized tiles
// cost less than a whole one and a short one, so that each row more costs
// more. A last 3 rows stay a tile (6 + 3 costs less than 5 + 4).
//
// With `equal`, more than 7 rows are tiles of heights as equal as they
// can be (15 rows are 5 + 5 + 5): for B read in place (in_place_avx2),
// where split-k tiles read two of B's rows at once, no tile is short.
//
// Unless `ahead` is null, the first tile prefetches from it, rows
// `ahead_row` bytes apart (tile).
template <typename T, typename S>
SJ_AVX2 void tiles(int64_t i0, int64_t i1, int64_t kc, const T* a, int64_t a_row, int64_t a_col, const S* panel, int64_t step, T* c,
                   int64_t ldc, bool add, int64_t width, bool equal = false, const char* ahead = nullptr, int64_t ahead_row = 0) {
  const int64_t rows = i1 - i0, rest = rows % kRows;
  int64_t i = i0;
  auto run = [&](int64_t height) {
    const TileFn<T, S> fn = ahead ? kTiles<T, S, true>[height] : kTiles<T, S, false>[height];
    fn(kc, a + i * a_row, a_row, a_col, panel, step, c + i * ldc, ldc, add, width, ahead, ahead_row);
    ahead = nullptr;
    i += height;
  };
  if (equal && rows > kRows + 1) {
    const int64_t count = (rows + kRows - 1) / kRows;
    for (int64_t t = 0; t < count; ++t) run(rows / count + (t < rows % count ? 1 : 0));
    return;
  }
  const int64_t whole = rows / kRows - (rows > kRows && (rest == 1 || rest == 2) ? 1 : 0);
  for (int64_t t = 0; t < whole; ++t) run(kRows);
  const int64_t left = i1 - i;
  if (left > kRows) run(left - 3);
  if (i < i1) run(i1 - i);
}

template <typename T, typename S>
SJ_AVX2 void multiply_avx2(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* packed, T* c, int64_t ldc,
                           bool accumulate) {
  constexpr int64_t P = kPanel<T>;
  const int64_t slices = (k + kDepth - 1) / kDepth, depth = (k + slices - 1) / slices;
  for (int64_t p0 = 0; p0 < k; p0 += depth) {
    const int64_t kc = std::min(depth, k - p0);
    const bool add = accumulate || p0 > 0;
    for (int64_t i0 = 0; i0 < m; i0 += kBlockRows) {
      const int64_t i1 = std::min(m, i0 + kBlockRows);
      for (int64_t j0 = 0; j0 < n; j0 += P) {
        // The panel the loops take next: this slice's next one, else its
        // first for the next block of rows, else the next slice's first.
        const S* next = j0 + P < n ? packed + (j0 + P) * k + p0 * P : i1 < m ? packed + p0 * P : p0 + kc < k ? packed + (p0 + kc) * P : nullptr;
        tiles(i0, i1, kc, a + p0 * a_col, a_row, a_col, packed + j0 * k + p0 * P, P, c + j0, ldc, add, std::min(P, n - j0), false,
              reinterpret_cast<const char*>(next), P * static_cast<int64_t>(sizeof(S)));
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
template <typename T, typename S>
SJ_AVX2 void streaming_avx2(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* b, int64_t b_row,
                            int64_t b_col, T* c, int64_t ldc, bool accumulate) {
  constexpr int64_t P = kPanel<T>, group = std::is_same_v<T, S> ? 1 : kConvertedPanels;
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
      const int64_t next_bytes = group > 1 && b_col == 1 && q1 < count ? std::min(n - q1 * P, group * P) * static_cast<int64_t>(sizeof(S)) : 0;
      RowPrefetch next(slice + q1 * P, b_row * static_cast<int64_t>(sizeof(S)), kc, next_bytes, q1 - q0);
      for (int64_t q = q0; q < q1; ++q) {
        next.share();
        const int64_t j0 = q * P;
        // One panel at a time: its first tile prefetches the next panel's
        // rows where B lies (this slice's next, else the next slice's
        // first), so that packing it reads L2.
        const S* ahead = nullptr;
        if (group == 1 && b_col == 1) ahead = q + 1 < count ? slice + (q + 1) * P : p0 + kc < k ? slice + kc * b_row : nullptr;
        tiles(0, m, kc, a + p0 * a_col, a_row, a_col, panels.data() + (q - q0) * kc * P, P, c + j0, ldc, add, std::min(P, n - j0), false,
              reinterpret_cast<const char*>(ahead), b_row * static_cast<int64_t>(sizeof(S)));
      }
    }
  }
}

// B's whole panels read where B lies (row-major: b_col 1), in bands of a
// few rows of k; while the tiles take one band, the next is prefetched,
// line after line, in B's order, which the prefetcher also follows. A
// streamed panel (streaming_avx2) is read 64 bytes a row, rows kilobytes
// apart, and then copied; before its tiles prefetched the next panel into
// L2, that was misses one after another, which prefetching into L1 did
// not hide (likely because lines 6 KB apart fall in 2 of L1's 64 sets and
// evict each other). With that prefetch, streaming measured faster than
// this at 8 and 16 rows in 10 of 12 rows of two runs (by 2-20%; slower by
// 2-3% in the other two), which has not yet changed where products go.
// Columns past the last whole panel are streamed. B's elements may be of
// the other float type: the tiles convert them as they load them
// (load_as).
template <typename T, typename S>
SJ_AVX2 void in_place_avx2(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* b, int64_t b_row, T* c,
                           int64_t ldc, bool accumulate, int64_t band) {
  constexpr int64_t P = kPanel<T>;
  const int64_t whole = n / P * P, panels = whole / P;
  for (int64_t p0 = 0; p0 < k; p0 += band) {
    const int64_t kc = std::min(band, k - p0);
    const bool add = accumulate || p0 > 0;
    // The next band's lines.
    RowPrefetch next(b + (p0 + kc) * b_row, b_row * static_cast<int64_t>(sizeof(S)), std::min(band, k - p0 - kc),
                     whole * static_cast<int64_t>(sizeof(S)), panels);
    for (int64_t j0 = 0; j0 < whole; j0 += P) {
      next.share();
      tiles(0, m, kc, a + p0 * a_col, a_row, a_col, b + p0 * b_row + j0, b_row, c + j0, ldc, add, P, true);
    }
  }
  if (whole < n) streaming_avx2(m, n - whole, k, a, a_row, a_col, b + whole, b_row, int64_t{1}, c + whole, ldc, accumulate);
}

}  // namespace

#endif

template <typename T, typename S>
void multiply_streaming(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* b, int64_t b_row, int64_t b_col,
                        T* c, int64_t ldc, bool accumulate) {
#if defined(__x86_64__)
  if (k > 0 && gemm_available()) {
    const int64_t in_place_rows = std::is_same_v<T, S> ? kInPlaceRows : kConvertedInPlaceRows;
    if (b_col == 1 && b_row >= n && m <= in_place_rows && n >= kPanel<T>) {  // rows one after another
      const int64_t band = std::clamp<int64_t>(kBandBytes / (b_row * static_cast<int64_t>(sizeof(S))), kMinBand, kMaxBand);
      return in_place_avx2(m, n, k, a, a_row, a_col, b, b_row, c, ldc, accumulate, band);
    }
    return streaming_avx2(m, n, k, a, a_row, a_col, b, b_row, b_col, c, ldc, accumulate);
  }
#endif
  std::vector<S> packed(static_cast<size_t>(packed_size<T>(k, n)));
  pack<T>(k, n, b, b_row, b_col, packed.data(), 0, k);
  multiply(m, n, k, a, a_row, a_col, packed.data(), c, ldc, accumulate);
}

template <typename T, typename S>
void multiply(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* packed, T* c, int64_t ldc,
              bool accumulate) {
  if (k == 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    }
    return;
  }
#if defined(__x86_64__)
  if (gemm_available()) return multiply_avx2(m, n, k, a, a_row, a_col, packed, c, ldc, accumulate);
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
  template void multiply_streaming<T, S>(int64_t, int64_t, int64_t, const T*, int64_t, int64_t, const S*, int64_t, int64_t, T*, int64_t, \
                                         bool);
SJ_PACKING(float, float)
SJ_PACKING(double, double)
SJ_PACKING(double, float)
SJ_PACKING(float, double)
#undef SJ_PACKING

}  // namespace shapejit::backends::cpu
