#include "backends/cpu/tile_choice.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/row_product.h"
#include "backends/cpu/simd.h"
#include "core/support/clock.h"

namespace shapejit::backends::cpu {

namespace {

using support::Clock;
using support::ms_since;

// The best of `runs` runs of `run` (`madds` multiply-adds each), in G a second.
template <typename F>
double best_rate(double madds, int runs, F&& run) {
  double best = 0;
  for (int i = 0; i < runs; ++i) {
    const Clock::time_point t0 = Clock::now();
    run();
    best = std::max(best, madds / ms_since(t0) * 1e-6);
  }
  return best;
}

#if defined(__x86_64__)

// Twelve chains of FMAs of one vector type, independent of each other, so
// that the pipes, not the latency, set the pace; named variables, so that
// GCC keeps them in registers, each from a value of its own, so that it
// cannot compute one chain for all twelve.
constexpr int64_t kFmaLoops = 1 << 17;

volatile float sink;  // what the chains computed, so that they are computed

#define SJ_FMA_CHAINS(V, set1, fmadd, first)                                                                              \
  const float s = sink;                                                                                                  \
  const V x = set1(s), y = set1(0.999f);                                                                                 \
  V c0 = set1(s + 1), c1 = set1(s + 2), c2 = set1(s + 3), c3 = set1(s + 4), c4 = set1(s + 5), c5 = set1(s + 6);          \
  V c6 = set1(s + 7), c7 = set1(s + 8), c8 = set1(s + 9), c9 = set1(s + 10), c10 = set1(s + 11), c11 = set1(s + 12);     \
  for (int64_t i = 0; i < kFmaLoops; ++i) {                                                                              \
    c0 = fmadd(c0, y, x), c1 = fmadd(c1, y, x), c2 = fmadd(c2, y, x), c3 = fmadd(c3, y, x), c4 = fmadd(c4, y, x);         \
    c5 = fmadd(c5, y, x), c6 = fmadd(c6, y, x), c7 = fmadd(c7, y, x), c8 = fmadd(c8, y, x), c9 = fmadd(c9, y, x);         \
    c10 = fmadd(c10, y, x), c11 = fmadd(c11, y, x);                                                                      \
  }                                                                                                                      \
  sink = first(c0) + first(c1) + first(c2) + first(c3) + first(c4) + first(c5) + first(c6) + first(c7) + first(c8) +    \
         first(c9) + first(c10) + first(c11);

SJ_AVX2 void fma256() { SJ_FMA_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_cvtss_f32) }
SJ_AVX512 void fma512() { SJ_FMA_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_cvtss_f32) }
#undef SJ_FMA_CHAINS

#endif

// A block of rows times B in panels, in L2, as one thread's share of a
// product runs (112 rows: 8 of AVX-512's tiles, about 19 of AVX2's), by
// each family in turn, five rounds: the best of each, in G multiply-adds a
// second. Interleaved, so that a neighbour's load on a shared machine
// weighs on both.
void tile_rates(bool avx512, double& avx2_rate, double& avx512_rate) {
  constexpr int64_t m = 112, n = 128, k = 256, repeats = 8, rounds = 5;
  std::vector<float> a(static_cast<size_t>(m * k), 0.5f), b(static_cast<size_t>(k * n), 0.25f), c(static_cast<size_t>(m * n));
  std::vector<float> packed(static_cast<size_t>(packed_size<float>(k, n)));
  pack<float>(k, n, b.data(), n, 1, packed.data(), 0, k);
  auto rate = [&](TileFamily family) {
    return best_rate(static_cast<double>(m * n * k * repeats), 1, [&] {
      for (int64_t r = 0; r < repeats; ++r) multiply_by(family, m, n, k, a.data(), k, 1, packed.data(), c.data(), n, false);
    });
  };
  rate(TileFamily::kAvx2);  // warm: the caches, and a core's 512-bit units
  if (avx512) rate(TileFamily::kAvx512);
  for (int round = 0; round < rounds; ++round) {
    avx2_rate = std::max(avx2_rate, rate(TileFamily::kAvx2));
    if (avx512) avx512_rate = std::max(avx512_rate, rate(TileFamily::kAvx512));
  }
}

std::atomic<int> override_{-1};  // use_tiles': -1 for none

}  // namespace

const char* family_name(TileFamily f) {
  switch (f) {
    case TileFamily::kAvx2: return "avx2";
    case TileFamily::kAvx512: return "avx512";
  }
  return "avx2";
}

TileProbe measure_tiles() {
  TileProbe p;
  const Clock::time_point t0 = Clock::now();
#if defined(__x86_64__)
  if (gemm_available()) {
    p.avx512 = row_product_available();  // AVX2, FMA and AVX-512F
    p.measured = true;
    constexpr double kMadds256 = 12.0 * 8 * kFmaLoops, kMadds512 = 12.0 * 16 * kFmaLoops;
    if (p.avx512) fma512();  // the first 512-bit instructions may run slower while the core powers its units up
    p.fma256 = best_rate(kMadds256, 3, fma256);
    if (p.avx512) p.fma512 = best_rate(kMadds512, 3, fma512);
    tile_rates(p.avx512, p.tile256, p.tile512);
  }
#endif
  p.ms = ms_since(t0);
  return p;
}

TileChoice choose_tiles(const TileProbe& probe, const char* forced) {
  TileChoice c;
  c.probe = probe;
  char figures[160];
  std::snprintf(figures, sizeof figures, "512-bit FMAs %.2fx the 256-bit ones, AVX-512's tiles %.2fx AVX2's",
                probe.fma256 > 0 ? probe.fma512 / probe.fma256 : 0.0, probe.tile256 > 0 ? probe.tile512 / probe.tile256 : 0.0);
  std::string note;
  if (forced && *forced) {
    if (std::strcmp(forced, "avx2") == 0) {
      c.why = "SHAPEJIT_CPU_TILES=avx2";
      return c;
    }
    if (std::strcmp(forced, "avx512") == 0) {
      if (probe.avx512) {
        c.family = TileFamily::kAvx512;
        c.why = "SHAPEJIT_CPU_TILES=avx512";
        return c;
      }
      note = "SHAPEJIT_CPU_TILES=avx512, but this CPU has no AVX-512F; ";
    } else {
      note = "SHAPEJIT_CPU_TILES=\"" + std::string(forced) + "\" is neither avx2 nor avx512, so measured instead; ";
    }
  }
  if (!probe.avx512) {
    c.why = note + "no AVX-512F";
    return c;
  }
  if (!probe.measured) {
    c.why = note + "an unoptimized build: not measured";
    return c;
  }
  if (full_width_512(probe) && probe.tile512 >= kTileGain * probe.tile256) c.family = TileFamily::kAvx512;
  c.why = note + "measured: " + figures;
  return c;
}

const TileChoice& tile_choice() {
  static const TileChoice choice = [] {
#if defined(__OPTIMIZE__)
    return choose_tiles(measure_tiles(), std::getenv("SHAPEJIT_CPU_TILES"));
#else
    TileProbe unmeasured;
    unmeasured.avx512 = row_product_available();  // AVX2, FMA and AVX-512F
    return choose_tiles(unmeasured, std::getenv("SHAPEJIT_CPU_TILES"));
#endif
  }();
  return choice;
}

TileFamily tiles_in_use() {
  const int forced = override_.load(std::memory_order_relaxed);
  return forced >= 0 ? static_cast<TileFamily>(forced) : tile_choice().family;
}

bool use_tiles(TileFamily f) {
  if (f == TileFamily::kAvx512 && !row_product_available()) return false;
  override_.store(static_cast<int>(f), std::memory_order_relaxed);
  return true;
}

}  // namespace shapejit::backends::cpu
