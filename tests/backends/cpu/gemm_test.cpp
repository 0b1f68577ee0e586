// The CPU backend's own matrix product (backends/cpu/gemm.h) against a
// plain sum in double, by each family of tiles the host has (AVX2's, and
// AVX-512's where it has AVX-512F): every tile height, panels cut short,
// slices of k, blocks of rows, each operand plain, transposed or strided,
// accumulating or not, and nothing written outside C's m x n; B of the
// product's type or of the other float type (converted), packed
// first, streamed, or read in place. And a single row times a row-major
// matrix (backends/cpu/row_product.h), against the same sum.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/row_product.h"
#include "backends/cpu/tile_choice.h"

namespace shapejit::backends {
namespace {

// A matrix of `rows` x `cols` inside a larger buffer, element (i, j) at
// data[i * row + j * col].
template <typename T>
struct Strided {
  std::vector<T> data;
  int64_t row = 0, col = 0;
  T at(int64_t i, int64_t j) const { return data[static_cast<size_t>(i * row + j * col)]; }
};

enum class Layout { kPlain, kTransposed, kStrided };

template <typename T>
Strided<T> make(int64_t rows, int64_t cols, Layout layout, std::mt19937& rng) {
  Strided<T> m;
  switch (layout) {
    case Layout::kPlain: m.row = cols + 3, m.col = 1; break;          // padded rows
    case Layout::kTransposed: m.row = 1, m.col = rows + 2; break;     // contiguous columns
    case Layout::kStrided: m.row = 2 * cols + 1, m.col = 2; break;    // neither
  }
  m.data.assign(static_cast<size_t>(std::max<int64_t>(1, rows * m.row + cols * m.col)), T(0));
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) m.data[static_cast<size_t>(i * m.row + j * m.col)] = static_cast<T>(u(rng));
  }
  return m;
}

// B's elements are of type S (converted to T as the product reads them).
template <typename T, typename S = T>
void check(int64_t m, int64_t n, int64_t k, Layout la, Layout lb, bool accumulate, std::mt19937& rng) {
  const std::string where = std::string(sizeof(T) == 4 ? "f32" : "f64") + (sizeof(S) == 4 ? " by f32" : " by f64") +
                            " m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) + " a=" + std::to_string(static_cast<int>(la)) +
                            " b=" + std::to_string(static_cast<int>(lb)) + (accumulate ? " +=" : "");
  const Strided<T> a = make<T>(m, k, la, rng);
  const Strided<S> b = make<S>(k, n, lb, rng);
  std::vector<S> packed(static_cast<size_t>(cpu::packed_size<T>(k, n)), S(7));
  // In two calls, as threads split the rows.
  cpu::pack<T>(k, n, b.data.data(), b.row, b.col, packed.data(), 0, k / 2);
  cpu::pack<T>(k, n, b.data.data(), b.row, b.col, packed.data(), k / 2, k);
  const int64_t ldc = n + 5;
  const T sentinel = T(-12345);
  std::vector<T> c(static_cast<size_t>(std::max<int64_t>(1, m * ldc)), sentinel);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = static_cast<T>(u(rng));
  }
  const std::vector<T> before = c;
  cpu::multiply(m, n, k, a.data.data(), a.row, a.col, packed.data(), c.data(), ldc, accumulate);
  // Streaming B: each panel packed as its tiles take it, or, for a few
  // rows of a row-major B, B read in place in bands of k, whose sums
  // round apart from the packed product's.
  std::vector<T> streamed = before;
  cpu::multiply_streaming(m, n, k, a.data.data(), a.row, a.col, b.data.data(), b.row, b.col, streamed.data(), ldc, accumulate);
  const double eps = sizeof(T) == 4 ? 1e-6 : 1e-14;
  for (const auto& [how, out] : {std::pair{"packed B", &c}, std::pair{"streamed B", &streamed}}) {
    int bad = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < ldc; ++j) {
        const T got = (*out)[i * ldc + j];
        if (j >= n) {
          if (got != sentinel && ++bad <= 5) ADD_FAILURE() << where << ", " << how << ": wrote (" << i << ", " << j << ") outside C";
          continue;
        }
        double want = accumulate ? static_cast<double>(before[i * ldc + j]) : 0.0, scale = std::abs(want);
        for (int64_t p = 0; p < k; ++p) {
          const double bt = static_cast<double>(static_cast<T>(b.at(p, j)));
          want += static_cast<double>(a.at(i, p)) * bt;
          scale += std::abs(static_cast<double>(a.at(i, p)) * bt);
        }
        if (std::abs(got - want) > 4 * eps * (scale + 1) && ++bad <= 5) {
          ADD_FAILURE() << where << ", " << how << ": (" << i << ", " << j << ") is " << got << ", want " << want;
        }
      }
    }
    for (size_t x = static_cast<size_t>(m * ldc); x < out->size(); ++x) ASSERT_EQ((*out)[x], sentinel) << where << ", " << how;
  }
}

// The process's tile family set to `f` while it lives, then back.
class UsingTiles {
 public:
  explicit UsingTiles(cpu::TileFamily f) : was_(cpu::tiles_in_use()), ok_(cpu::use_tiles(f)) {}
  ~UsingTiles() { cpu::use_tiles(was_); }
  bool ok() const { return ok_; }

 private:
  cpu::TileFamily was_;
  bool ok_;
};

template <typename T, typename S = T>
void sweep() {
  std::mt19937 rng(23);
  const Layout layouts[] = {Layout::kPlain, Layout::kTransposed, Layout::kStrided};
  // Rows: each tile height, a last 1 or 2 taken with the whole tile
  // before it as a tile of 4 or 5 and one of 3 (7, 8, 13, 14, 19, 20),
  // equal heights for B in place (13 to 15, 18), past a block of 96;
  // columns: panels whole and cut short; k: none, one, the transposed
  // pack's 8 and its tail, past a slice of 512.
  for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 13, 14, 15, 18, 19, 101}) {
    for (int64_t n : {1, 7, 8, 16, 17, 40}) {
      for (int64_t k : {0, 1, 8, 11, 37}) {
        for (Layout la : layouts) {
          for (Layout lb : layouts) check<T, S>(m, n, k, la, lb, (m + n + k) % 2 == 1, rng);
        }
      }
    }
  }
  for (Layout lb : layouts) {
    check<T, S>(20, 33, 1100, Layout::kPlain, lb, false, rng);  // three slices of k
    check<T, S>(20, 33, 1100, Layout::kTransposed, lb, true, rng);
    check<T, S>(14, 40, 300, Layout::kPlain, lb, lb == Layout::kStrided, rng);  // B in place: bands of 32 rows, a panel cut short
    check<T, S>(18, 1000, 37, Layout::kTransposed, lb, false, rng);           // bands of 18 (f32) or 9 rows, the last short
  }
  check<T, S>(200, 64, 40, Layout::kPlain, Layout::kTransposed, false, rng);  // blocks of rows
  if constexpr (!std::is_same_v<T, S>) {
    // A converted B streams in groups of panels: several groups, the last
    // short and its last panel cut short, over two slices of k.
    for (int64_t m : {13, 20, 40}) {
      for (int64_t n : {256, 515}) check<T, S>(m, n, 600, Layout::kPlain, Layout::kPlain, m == 20, rng);
    }
  }
}

TEST(Gemm, AgreesWithASumInDouble) {
  const UsingTiles avx2(cpu::TileFamily::kAvx2);
  ASSERT_TRUE(avx2.ok());
  sweep<float>();
  sweep<double>();
  sweep<double, float>();
  sweep<float, double>();
}

// AVX-512's tiles (tile_choice.h): every height to 14 and past it (15 is
// 8 + 7, 29 is 10 + 10 + 9), past a block of 112; pairs of panels whole,
// cut short in either vector, and a lone last panel whole or cut short (16
// floats or 8 doubles a panel); the same depths and layouts; packed,
// streamed and in place.
template <typename T, typename S = T>
void wide_sweep() {
  std::mt19937 rng(29);
  const Layout layouts[] = {Layout::kPlain, Layout::kTransposed, Layout::kStrided};
  for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 18, 28, 29, 113}) {
    for (int64_t n : {1, 8, 9, 16, 17, 24, 31, 32, 33, 40, 48}) {
      for (int64_t k : {0, 1, 11, 37}) {
        for (Layout la : layouts) {
          for (Layout lb : layouts) check<T, S>(m, n, k, la, lb, (m + n + k) % 2 == 1, rng);
        }
      }
    }
  }
  for (Layout lb : layouts) {
    check<T, S>(20, 70, 1100, Layout::kPlain, lb, false, rng);  // three slices of k
    check<T, S>(14, 96, 300, Layout::kPlain, lb, true, rng);    // B in place, in bands
  }
  check<T, S>(250, 100, 40, Layout::kPlain, Layout::kTransposed, false, rng);  // blocks of rows
  if constexpr (!std::is_same_v<T, S>) {
    for (int64_t n : {256, 515}) check<T, S>(20, n, 600, Layout::kPlain, Layout::kPlain, true, rng);  // groups of panels
  }
}

TEST(Gemm, WideTilesAgreeWithASumInDouble) {
  const UsingTiles avx512(cpu::TileFamily::kAvx512);
  if (!avx512.ok()) GTEST_SKIP() << "no AVX-512F on this host: only AVX2's tiles run here (Gemm.AgreesWithASumInDouble)";
  wide_sweep<float>();
  wide_sweep<double>();
  wide_sweep<double, float>();
  wide_sweep<float, double>();  // AVX2's tiles, by the wide family's loops
}

TEST(Gemm, PackedPanelsAreZeroPastTheColumns) {
  const int64_t k = 9, n = 21;  // two float panels, the second 5 wide
  // B row-major, and transposed (its columns contiguous, as an attention's
  // keys: a panel cut short is gathered one element at a time). The
  // transposed buffer holds a column past n, of 2s, that must not be read.
  std::vector<float> b(static_cast<size_t>(k * (n + 1)), 1.0f);
  for (int64_t p = 0; p < k; ++p) b[static_cast<size_t>(n * k + p)] = 2.0f;
  for (const bool transposed : {false, true}) {
    std::vector<float> packed(static_cast<size_t>(cpu::packed_size<float>(k, n)), -1.0f);
    cpu::pack<float>(k, n, b.data(), transposed ? 1 : n, transposed ? k : 1, packed.data(), 0, k);
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t j = 0; j < cpu::kPanel<float>; ++j) {
        EXPECT_EQ(packed[(k + p) * cpu::kPanel<float> + j], j < n - cpu::kPanel<float> ? 1.0f : 0.0f)
            << (transposed ? "transposed, " : "") << "row " << p << ", column " << j;
      }
    }
  }
}

// One row (its elements a_col apart) times B (rows b_row apart) into c,
// beside a sum in double; c's elements past n must keep their sentinel.
template <typename T>
void check_row(int64_t n, int64_t k, int64_t a_col, int64_t b_pad, bool accumulate, std::mt19937& rng) {
  const std::string where = std::string(sizeof(T) == 4 ? "f32" : "f64") + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                            " a_col=" + std::to_string(a_col) + " b_row=n+" + std::to_string(b_pad) + (accumulate ? " +=" : "");
  std::uniform_real_distribution<double> u(-1, 1);
  const int64_t b_row = n + b_pad;
  std::vector<T> a(static_cast<size_t>(k * a_col)), b(static_cast<size_t>(k * b_row));
  for (T& x : a) x = static_cast<T>(u(rng));
  for (T& x : b) x = static_cast<T>(u(rng));
  const T sentinel = T(-12345);
  std::vector<T> c(static_cast<size_t>(n + 40), sentinel);
  for (int64_t j = 0; j < n; ++j) c[j] = static_cast<T>(u(rng));
  const std::vector<T> before = c;
  cpu::row_times_matrix(n, k, a.data(), a_col, b.data(), b_row, c.data(), accumulate);
  const double eps = sizeof(T) == 4 ? 1e-6 : 1e-14;
  int bad = 0;
  for (int64_t j = 0; j < n; ++j) {
    double want = accumulate ? static_cast<double>(before[j]) : 0.0, scale = std::abs(want);
    for (int64_t p = 0; p < k; ++p) {
      const double t = static_cast<double>(a[p * a_col]) * static_cast<double>(b[p * b_row + j]);
      want += t;
      scale += std::abs(t);
    }
    if (std::abs(c[j] - want) > 4 * eps * (scale + 1) && ++bad <= 5) ADD_FAILURE() << where << ": c[" << j << "] is " << c[j] << ", want " << want;
  }
  for (size_t x = static_cast<size_t>(n); x < c.size(); ++x) ASSERT_EQ(c[x], sentinel) << where << ": wrote c[" << x << "]";
}

// Widths: less than a vector, a vector and one more, one pass whole (384
// floats, 192 doubles) and one column past it (a spilling pass), a
// spilling pass whole and cut short, one column past it (passes, equal),
// several passes with a last vector cut short; depths around the accumulator
// sets' rows (1 to 8 at a time).
TEST(Gemm, RowTimesMatrixAgreesWithASumInDouble) {
  if (!cpu::row_product_available()) GTEST_SKIP() << "no AVX-512 on this host: single rows go to BLAS";
  std::mt19937 rng(41);
  for (int64_t n : {1, 5, 8, 9, 16, 17, 40, 100, 192, 193, 384, 385, 400, 767, 768, 769, 777, 4099}) {
    for (int64_t k : {1, 2, 3, 7, 8, 9, 37, 300}) {
      const bool accumulate = (n + k) % 2 == 1;
      const int64_t a_col = k % 3 == 0 ? 3 : 1, b_pad = n % 2 == 0 ? 0 : 5;
      check_row<float>(n, k, a_col, b_pad, accumulate, rng);
      check_row<double>(n, k, a_col, b_pad, !accumulate, rng);
    }
  }
}

}  // namespace
}  // namespace shapejit::backends
