// One query row's attention products (backends/cpu/query_row.h) against
// plain sums in double: heads of every width from 1 to past 8 vectors (a
// masked last vector, each chunk of the values' rows), key counts that are
// and are not whole groups, rows apart by more than their width, float and
// double; nothing is written past the scores or the accumulators. And
// the runner's row scaling (scale_rows), by factors and by their
// reciprocals, on rows of every width to past 8 vectors.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/query_row.h"

namespace shapejit::backends {
namespace {

template <typename T>
void check(int64_t keys, int64_t d, int64_t stride, std::mt19937& rng) {
  const std::string where = std::string(sizeof(T) == 4 ? "f32" : "f64") + " keys=" + std::to_string(keys) + " d=" + std::to_string(d) +
                            " stride=" + std::to_string(stride);
  std::uniform_real_distribution<double> u(-1, 1);
  auto random = [&](size_t n) {
    std::vector<T> v(n);
    for (T& x : v) x = static_cast<T>(u(rng));
    return v;
  };
  // The rows lie `stride` apart; what lies between them is read by no one.
  const std::vector<T> q = random(static_cast<size_t>(d)), k = random(static_cast<size_t>(keys * stride + 1)),
                       v = random(static_cast<size_t>(keys * stride + 1)), w = random(static_cast<size_t>(keys));
  const T sentinel = T(-12345);
  std::vector<T> s(static_cast<size_t>(keys + 9), sentinel);
  cpu::key_dots(keys, d, q.data(), k.data(), stride, s.data());
  std::vector<T> acc = random(static_cast<size_t>(d));
  const std::vector<T> before = acc;
  acc.resize(static_cast<size_t>(d + 9), sentinel);
  cpu::add_weighted_rows(keys, d, w.data(), v.data(), stride, acc.data());
  const double eps = sizeof(T) == 4 ? 1e-6 : 1e-14;
  int bad = 0;
  for (int64_t j = 0; j < keys; ++j) {
    double want = 0, scale = 0;
    for (int64_t p = 0; p < d; ++p) {
      want += static_cast<double>(q[p]) * static_cast<double>(k[j * stride + p]);
      scale += std::abs(static_cast<double>(q[p]) * static_cast<double>(k[j * stride + p]));
    }
    if (std::abs(s[j] - want) > 4 * eps * (scale + 1) && ++bad <= 5) ADD_FAILURE() << where << ": score " << j << " is " << s[j] << ", want " << want;
  }
  for (size_t j = static_cast<size_t>(keys); j < s.size(); ++j) ASSERT_EQ(s[j], sentinel) << where << ": wrote score " << j;
  for (int64_t x = 0; x < d; ++x) {
    double want = before[x], scale = std::abs(want);
    for (int64_t j = 0; j < keys; ++j) {
      want += static_cast<double>(w[j]) * static_cast<double>(v[j * stride + x]);
      scale += std::abs(static_cast<double>(w[j]) * static_cast<double>(v[j * stride + x]));
    }
    if (std::abs(acc[x] - want) > 4 * eps * (scale + 1) && ++bad <= 5) ADD_FAILURE() << where << ": value " << x << " is " << acc[x] << ", want " << want;
  }
  for (size_t x = static_cast<size_t>(d); x < acc.size(); ++x) ASSERT_EQ(acc[x], sentinel) << where << ": wrote value " << x;
}

template <typename T>
void sweep() {
  std::mt19937 rng(41);
  for (int64_t d = 1; d <= 70; ++d) {
    for (int64_t keys : {0, 1, 3, 7, 8, 9, 17, 64, 131}) check<T>(keys, d, d + (d % 3 == 0 ? 5 : 0), rng);
  }
  for (int64_t d : {16, 64, 128, 200}) check<T>(1025, d, d, rng);
}

TEST(QueryRow, AgreesWithSumsInDouble) {
  if (!cpu::gemm_available()) GTEST_SKIP() << "the host has no AVX2 and FMA";
  sweep<float>();
  sweep<double>();
}

// Rows `stride` apart scaled in place: each element of row r times f[r] (or
// its reciprocal), exactly as a scalar multiply rounds it; the elements
// between the rows and after the last are not touched.
template <typename T>
void check_scaling(int64_t rows, int64_t n, int64_t stride, bool reciprocal, std::mt19937& rng) {
  const std::string where = std::string(sizeof(T) == 4 ? "f32" : "f64") + " rows=" + std::to_string(rows) + " n=" + std::to_string(n) +
                            (reciprocal ? " reciprocal" : "");
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<T> x(static_cast<size_t>(rows * stride + 9)), f(static_cast<size_t>(rows));
  for (T& e : x) e = static_cast<T>(u(rng));
  for (T& e : f) e = static_cast<T>(u(rng));
  if (rows > 1) f[1] = T(0);  // a row whose keys were all masked: its sum is 0
  const std::vector<T> before = x;
  cpu::scale_rows(rows, n, f.data(), reciprocal, x.data(), stride);
  for (int64_t r = 0; r < rows; ++r) {
    const T by = reciprocal ? T(1) / f[r] : f[r];
    for (int64_t i = 0; i < stride && r * stride + i < static_cast<int64_t>(x.size()); ++i) {
      const size_t at = static_cast<size_t>(r * stride + i);
      const T want = i < n ? before[at] * by : before[at];
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(x[at])) << where << ": row " << r << " element " << i;
      } else {
        ASSERT_EQ(x[at], want) << where << ": row " << r << " element " << i;
      }
    }
  }
  for (size_t at = static_cast<size_t>(rows * stride); at < x.size(); ++at) ASSERT_EQ(x[at], before[at]) << where << ": wrote past the rows";
}

template <typename T>
void scaling_sweep() {
  std::mt19937 rng(7);
  for (int64_t n = 0; n <= 70; ++n) {
    for (bool reciprocal : {false, true}) {
      check_scaling<T>(1, n, n, reciprocal, rng);
      check_scaling<T>(5, n, n + 3, reciprocal, rng);
    }
  }
}

TEST(QueryRow, ScalesRowsAsScalarMultipliesDo) {
  scaling_sweep<float>();
  scaling_sweep<double>();
}

}  // namespace
}  // namespace shapejit::backends
