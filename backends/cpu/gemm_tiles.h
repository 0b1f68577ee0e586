// The GEMM's tiles (gemm.h): a block of C's rows (+)= A's rows times one
// or two panels of B, held in registers through a slice of k. Internal to
// gemm.cpp, whose loops run them: AVX2's 6 x 16 tile (tile, tiles) and
// AVX-512's 14 x 32 (wide_tile), each behind its family (Avx2Tiles,
// Avx512Tiles), which the loops take as a template parameter. Only
// functions compiled for the family's instructions call them, where the
// host has them (gemm_available(), tile_choice.h).
#pragma once

#if defined(__x86_64__)

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "backends/cpu/gemm.h"
#include "backends/cpu/simd.h"

namespace shapejit::backends::cpu::tiling {

// Rows of a tile of C (kTileRows): 6 rows of two vectors are 12 of the 16
// registers, beside B's two vectors and the broadcast element of A.
constexpr int kRows = static_cast<int>(kTileRows);
// Rows of AVX-512's tile: 14 rows of two vectors are 28 of the 32.
constexpr int kWideRows = 14;
// Bytes of a cache line.
constexpr int64_t kLine = 64;

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
// can be (15 rows are 5 + 5 + 5): for B read in place (in_place),
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

// What a step of the tiles prefetches (its first tile, a row of it for
// each row of k it takes): from `at` (null: nothing), rows `row` bytes
// apart, and a second panel `gap` bytes after the first (AVX-512's pairs).
struct Ahead {
  const char* at = nullptr;
  int64_t row = 0, gap = 0;
};

// A vector of AVX-512's lanes of T from S where they lie (load_as's); a
// float product of double panels runs AVX2's tiles (Avx512Tiles).
template <typename T, typename S>
SJ_AVX512 inline typename Simd512<T>::V load_wide(const S* p) {
  if constexpr (std::is_same_v<T, S>) {
    return Simd512<T>::loadu(p);
  } else {
    static_assert(std::is_same_v<T, double>, "float from double: AVX2's tiles");
    // The masked form, with every lane: the plain one's undefined source
    // trips GCC 12's -Wmaybe-uninitialized.
    return _mm512_maskz_cvtps_pd(0xFF, _mm256_loadu_ps(p));
  }
}

// AVX-512's tile (tile_choice.h): C[R x width] (+)= A[R x kc] times two
// adjacent panels of B, the second `second` elements after the first (the
// next packed panel, or B's next columns where it lies), each panel one
// zmm vector wide; width up to two panels. R <= kWideRows: 2R accumulators,
// two vectors of B and the broadcast element of A are at most 31 of the 32
// registers. A's rows are read from five bases three rows apart, so that
// each row's address is a base and one of three offsets. With kAhead, it
// prefetches the pair of panels the product takes next, as tile does.
template <typename T, typename S, int R, bool kAhead>
SJ_AVX512 void wide_tile(int64_t kc, const T* a, int64_t a_row, int64_t a_col, const S* panel, int64_t step, int64_t second, T* c,
                         int64_t ldc, bool add, int64_t width, Ahead ahead) {
  using W = Simd512<T>;
  using V = typename W::V;
  constexpr int64_t L = W::kLanes;
  static_assert(L == kPanel<T>, "a panel is one zmm vector");
  V c0a = W::zero(), c0b = c0a, c1a = c0a, c1b = c0a, c2a = c0a, c2b = c0a, c3a = c0a, c3b = c0a, c4a = c0a, c4b = c0a, c5a = c0a,
    c5b = c0a, c6a = c0a, c6b = c0a, c7a = c0a, c7b = c0a, c8a = c0a, c8b = c0a, c9a = c0a, c9b = c0a, c10a = c0a, c10b = c0a,
    c11a = c0a, c11b = c0a, c12a = c0a, c12b = c0a, c13a = c0a, c13b = c0a;
  const T* a0 = a;
  const T* a3 = a + 3 * a_row;
  const T* a6 = a + 6 * a_row;
  const T* a9 = a + 9 * a_row;
  const T* a12 = a + 12 * a_row;
  const int64_t a_row2 = 2 * a_row;
#define SJ_WIDE_ROW(r, base, offset)            \
  if constexpr (R > r) {                        \
    const V x = W::splat(base + offset);        \
    c##r##a = W::fma(x, b0, c##r##a);           \
    c##r##b = W::fma(x, b1, c##r##b);           \
  }
#define SJ_WIDE_ROWS(r0, r1, r2, base) SJ_WIDE_ROW(r0, base, 0) SJ_WIDE_ROW(r1, base, a_row) SJ_WIDE_ROW(r2, base, a_row2)
  for (int64_t p = 0; p < kc; ++p, panel += step, a0 += a_col, a3 += a_col, a6 += a_col, a9 += a_col, a12 += a_col) {
    if constexpr (kAhead) {
      const char* other = ahead.at + ahead.gap;
      prefetch_row<T, S>(other, 0);
      prefetch_row<T, S>(ahead.at, ahead.row);
    }
    const V b0 = load_wide<T>(panel), b1 = load_wide<T>(panel + second);
    SJ_WIDE_ROWS(0, 1, 2, a0)
    SJ_WIDE_ROWS(3, 4, 5, a3)
    SJ_WIDE_ROWS(6, 7, 8, a6)
    SJ_WIDE_ROWS(9, 10, 11, a9)
    SJ_WIDE_ROW(12, a12, 0)
    SJ_WIDE_ROW(13, a12, a_row)
  }
#undef SJ_WIDE_ROWS
#undef SJ_WIDE_ROW
  const V rows[kWideRows][2] = {{c0a, c0b}, {c1a, c1b}, {c2a, c2b},   {c3a, c3b},   {c4a, c4b},   {c5a, c5b},   {c6a, c6b},
                                {c7a, c7b}, {c8a, c8b}, {c9a, c9b}, {c10a, c10b}, {c11a, c11b}, {c12a, c12b}, {c13a, c13b}};
  const typename W::Mask m0 = W::first(std::min(width, L)), m1 = W::first(std::max<int64_t>(0, width - L));
  for (int r = 0; r < R; ++r) {
    T* out = c + r * ldc;
    if (width == 2 * L) {
      W::storeu(out, add ? W::add(rows[r][0], W::loadu(out)) : rows[r][0]);
      W::storeu(out + L, add ? W::add(rows[r][1], W::loadu(out + L)) : rows[r][1]);
      continue;
    }
    W::store(out, m0, add ? W::add(rows[r][0], W::load(out, m0)) : rows[r][0]);
    W::store(out + L, m1, add ? W::add(rows[r][1], W::load(out + L, m1)) : rows[r][1]);
  }
}

template <typename T, typename S>
using WideTileFn = void (*)(int64_t, const T*, int64_t, int64_t, const S*, int64_t, int64_t, T*, int64_t, bool, int64_t, Ahead);
template <typename T, typename S, bool kAhead, int... R>
constexpr std::array<WideTileFn<T, S>, sizeof...(R) + 1> wide_table(std::integer_sequence<int, R...>) {
  return {nullptr, wide_tile<T, S, R + 1, kAhead>...};
}
template <typename T, typename S, bool kAhead>
constexpr auto kWideTiles = wide_table<T, S, kAhead>(std::make_integer_sequence<int, kWideRows>{});

// The tile families, as the loops below run them: `run` takes rows [i0,
// i1) of C times kPanels panels of B from `panel` (each row of a panel
// `step` elements after the last, the next panel `second` after it),
// `width` of their columns; the first tile prefetches what `ahead` says.
// AVX2's takes one panel (tiles: `equal` is its).
struct Avx2Tiles {
  // Rows of A per block: 96 rows of a slice are 192 KB in L2 for floats.
  static constexpr int64_t kPanels = 1, kBlockRows = 96;
  template <typename T, typename S>
  SJ_AVX2 static void run(int64_t i0, int64_t i1, int64_t kc, const T* a, int64_t a_row, int64_t a_col, const S* panel, int64_t step,
                          int64_t /*second*/, T* c, int64_t ldc, bool add, int64_t width, bool equal, Ahead ahead) {
    tiles(i0, i1, kc, a, a_row, a_col, panel, step, c, ldc, add, width, equal, ahead.at, ahead.row);
  }
};

// AVX-512's takes two panels in tiles of kWideRows rows or fewer, as equal
// in height as they can be (a short tile's few chains of multiply-adds
// would not cover an FMA's latency), and a lone last panel in AVX2's, as
// it does a float product of double panels (rare: a double weight in a
// float product; narrowing them in zmm registers takes an insert whose
// GCC 12 form warns). Its first tile prefetches the next pair of panels
// (Ahead), as AVX2's does the next panel; its blocks of rows are 8 tiles
// of 14.
struct Avx512Tiles {
  static constexpr int64_t kPanels = 2, kBlockRows = 8 * kWideRows;
  template <typename T, typename S>
  SJ_AVX512 static void run(int64_t i0, int64_t i1, int64_t kc, const T* a, int64_t a_row, int64_t a_col, const S* panel, int64_t step,
                            int64_t second, T* c, int64_t ldc, bool add, int64_t width, bool equal, Ahead ahead) {
    constexpr int64_t P = kPanel<T>;
    if (width <= P) return tiles(i0, i1, kc, a, a_row, a_col, panel, step, c, ldc, add, width, equal, ahead.at, ahead.row);
    constexpr bool kNarrowing = std::is_same_v<T, float> && std::is_same_v<S, double>;
    if (kNarrowing) {  // each panel by AVX2's
      tiles(i0, i1, kc, a, a_row, a_col, panel, step, c, ldc, add, P, equal, ahead.at, ahead.row);
      return tiles(i0, i1, kc, a, a_row, a_col, panel + second, step, c + P, ldc, add, width - P, equal);
    }
    const int64_t rows = i1 - i0, count = (rows + kWideRows - 1) / kWideRows;
    int64_t i = i0;
    for (int64_t t = 0; t < count; ++t) {
      const int64_t height = rows / count + (t < rows % count ? 1 : 0);
      if constexpr (!kNarrowing) {
        const WideTileFn<T, S> fn = ahead.at ? kWideTiles<T, S, true>[height] : kWideTiles<T, S, false>[height];
        fn(kc, a + i * a_row, a_row, a_col, panel, step, second, c + i * ldc, ldc, add, width, ahead);
        ahead.at = nullptr;
      }
      i += height;
    }
  }
};

}  // namespace shapejit::backends::cpu::tiling

#endif
