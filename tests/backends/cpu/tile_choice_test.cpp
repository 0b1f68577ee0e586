// The choice of the GEMM's tiles (backends/cpu/tile_choice.h): the rule
// on figures as the probe would measure them on each kind of core, what
// SHAPEJIT_CPU_TILES forces, and the probe on this host.
#include "backends/cpu/tile_choice.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/cpu/gemm.h"
#include "backends/cpu/row_product.h"

namespace shapejit::backends::cpu {
namespace {

// G multiply-adds a second as the probe reads them on one core of each kind.
TileProbe zen4() { return {.avx512 = true, .measured = true, .fma256 = 67, .fma512 = 67, .tile256 = 62, .tile512 = 60}; }   // 512-bit FMA as two halves
TileProbe zen5() { return {.avx512 = true, .measured = true, .fma256 = 67, .fma512 = 135, .tile256 = 59, .tile512 = 118}; }  // full width
TileProbe avx2_only() { return {.avx512 = false, .measured = true, .fma256 = 60}; }

TEST(TileChoice, FullWidth512BitFmaWithFasterTilesChoosesAvx512) {
  const TileChoice c = choose_tiles(zen5(), nullptr);
  EXPECT_EQ(c.family, TileFamily::kAvx512);
  EXPECT_NE(c.why.find("measured: 512-bit FMAs 2.01x the 256-bit ones, AVX-512's tiles 2.00x AVX2's"), std::string::npos) << c.why;
}

TEST(TileChoice, HalfWidth512BitFmaKeepsAvx2) {
  EXPECT_EQ(choose_tiles(zen4(), nullptr).family, TileFamily::kAvx2);
  TileProbe p = zen4();
  p.tile512 = 1.2 * p.tile256;  // a tile that measured faster by chance is not enough: the FMAs are not full width
  EXPECT_EQ(choose_tiles(p, nullptr).family, TileFamily::kAvx2);
}

TEST(TileChoice, FullWidthFmaWithTilesNoFasterKeepsAvx2) {
  TileProbe p = zen5();
  p.tile512 = 1.02 * p.tile256;
  EXPECT_EQ(choose_tiles(p, nullptr).family, TileFamily::kAvx2);
}

TEST(TileChoice, NoAvx512FKeepsAvx2AndSaysWhy) {
  const TileChoice c = choose_tiles(avx2_only(), nullptr);
  EXPECT_EQ(c.family, TileFamily::kAvx2);
  EXPECT_EQ(c.why, "no AVX-512F");
}

TEST(TileChoice, AnUnmeasuredProbeKeepsAvx2UnlessForced) {
  const TileProbe unmeasured{.avx512 = true};
  EXPECT_EQ(choose_tiles(unmeasured, nullptr).family, TileFamily::kAvx2);
  EXPECT_EQ(choose_tiles(unmeasured, nullptr).why, "an unoptimized build: not measured");
  EXPECT_EQ(choose_tiles(unmeasured, "avx512").family, TileFamily::kAvx512);
  EXPECT_FALSE(full_width_512(unmeasured));
}

TEST(TileChoice, TheEnvironmentForcesAFamilyTheHostHas) {
  EXPECT_EQ(choose_tiles(zen5(), "avx2").family, TileFamily::kAvx2);
  EXPECT_EQ(choose_tiles(zen5(), "avx2").why, "SHAPEJIT_CPU_TILES=avx2");
  EXPECT_EQ(choose_tiles(zen4(), "avx512").family, TileFamily::kAvx512);
  EXPECT_EQ(choose_tiles(zen4(), "").family, TileFamily::kAvx2);  // set but empty: measured
  const TileChoice none = choose_tiles(avx2_only(), "avx512");
  EXPECT_EQ(none.family, TileFamily::kAvx2);
  EXPECT_EQ(none.why, "SHAPEJIT_CPU_TILES=avx512, but this CPU has no AVX-512F; no AVX-512F");
  const TileChoice typo = choose_tiles(zen5(), "AVX512");
  EXPECT_EQ(typo.family, TileFamily::kAvx512);  // measured
  EXPECT_EQ(typo.why.rfind("SHAPEJIT_CPU_TILES=\"AVX512\" is neither avx2 nor avx512, so measured instead; measured: ", 0), 0u) << typo.why;
}

TEST(TileChoice, TheProbeMeasuresWhatTheHostHas) {
  if (!gemm_available()) GTEST_SKIP() << "no AVX2 and FMA on this host: products go to BLAS, nothing to measure";
  const TileProbe p = measure_tiles();
  EXPECT_GT(p.fma256, 0);
  EXPECT_GT(p.tile256, 0);
  EXPECT_EQ(p.avx512, row_product_available());
  EXPECT_EQ(p.fma512 > 0, p.avx512);
  EXPECT_EQ(p.tile512 > 0, p.avx512);
  // A tile does no more multiply-adds than the FMAs alone can.
  EXPECT_LT(p.tile256, 1.2 * p.fma256);
  if (p.avx512) {
    EXPECT_LT(p.tile512, 1.2 * p.fma512);
  }
  EXPECT_TRUE(p.measured);
#if defined(__OPTIMIZE__)
  EXPECT_LT(p.ms, 1000);  // unoptimized, the tiles alone take seconds
#endif
  // The process's choice follows the rule on its own probe, and use_tiles
  // overrides it.
  const TileChoice& chosen = tile_choice();
  EXPECT_EQ(chosen.family, choose_tiles(chosen.probe, std::getenv("SHAPEJIT_CPU_TILES")).family) << chosen.why;
  const TileFamily was = tiles_in_use();
  EXPECT_TRUE(use_tiles(TileFamily::kAvx2));
  EXPECT_EQ(tiles_in_use(), TileFamily::kAvx2);
  EXPECT_EQ(use_tiles(TileFamily::kAvx512), p.avx512);
  use_tiles(was);
}

}  // namespace
}  // namespace shapejit::backends::cpu
