// Which family of tiles the device's GEMM runs (gemm.h), chosen by
// measuring once per process.
//
//   avx2    6 x 16 floats (6 x 8 doubles): 12 accumulators in 16 ymm
//           registers, one panel of B at a time.
//   avx512  14 x 32 floats (14 x 16 doubles): 28 accumulators in 32 zmm
//           registers, two adjacent panels of B at a time (the panels are
//           the same for both: packing, frozen weights and their images do
//           not depend on the choice).
//
// A core that runs a 512-bit FMA as two halves (Zen 4) does no more
// multiply-adds a cycle with zmm registers than with ymm; one with
// full-width 512-bit units (Zen 5, Intel's servers since Skylake-SP) does
// twice as many. Neither a CPU's family nor its name tells which reliably
// (a VM hides its model: LLVM's host CPU reads "unknown" on some), so the
// process measures: the throughput of independent 256-bit and 512-bit FMAs
// on one thread, and of both families' tiles on a packed panel in L2, a few
// milliseconds in all, once. AVX-512's tiles are chosen where 512-bit FMAs
// do at least kFullWidth times the 256-bit ones (full-width units) and the
// tiles at least kTileGain times AVX2's; elsewhere AVX2's, which reach
// about as many multiply-adds a cycle on a core whose 512-bit FMAs run as
// two halves (Zen 4; bench/results/README.md, 2026-12-03).
//
// SHAPEJIT_CPU_TILES=avx2|avx512 forces the choice (avx512 only where the
// host has AVX-512F; elsewhere it says so and keeps AVX2's).
#pragma once

#include <string>

namespace shapejit::backends::cpu {

enum class TileFamily { kAvx2, kAvx512 };

const char* family_name(TileFamily f);

// What the probe measured, in G multiply-adds a second on one thread (0:
// not measured, as on a host without the instructions).
struct TileProbe {
  bool avx512 = false;  // the host has AVX-512F
  bool measured = false;  // false: an unoptimized build's (tile_choice), no figures
  double fma256 = 0, fma512 = 0;    // 12 independent chains of FMAs
  double tile256 = 0, tile512 = 0;  // each family's product on a packed panel in L2
  double ms = 0;                    // the probe's own time
};

struct TileChoice {
  TileFamily family = TileFamily::kAvx2;
  TileProbe probe;
  std::string why;  // the rule that chose it, with the figures
};

constexpr double kFullWidth = 1.5;
constexpr double kTileGain = 1.05;

// Whether the probe found full-width 512-bit FMA units (kFullWidth).
inline bool full_width_512(const TileProbe& p) { return p.avx512 && p.measured && p.fma512 >= kFullWidth * p.fma256; }

// The rule: `probe`'s figures, unless `forced` (SHAPEJIT_CPU_TILES's value;
// null when unset) names a family the host has.
TileChoice choose_tiles(const TileProbe& probe, const char* forced);

// Measures (a few milliseconds; the GEMM's tiles only where the host has
// AVX2 and FMA).
TileProbe measure_tiles();

// This process's choice: measured on the first call, then kept. An
// unoptimized build (the sanitizers' CI stage) does not measure: its
// kernels' times say nothing of a release build's, and measuring them
// takes seconds, in every process; it runs AVX2's tiles unless forced.
const TileChoice& tile_choice();

// The family the GEMM runs now: tile_choice()'s, or use_tiles'.
TileFamily tiles_in_use();
// Runs `f`'s tiles from now on, for tests and benchmarks that compare the
// two; false (nothing changes) where the host lacks its instructions.
bool use_tiles(TileFamily f);

}  // namespace shapejit::backends::cpu
