// The LLVM backend's inline math (backends/llvm/fast_math.h): exp, tanh,
// float erf and gelu, each held to its ulp bound against the C library over
// the whole range, and at NaN, infinities, signed zeros and subnormals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "tests/support/llvm_agreement.h"

#ifdef SHAPEJIT_HAVE_LLVM

namespace shapejit {
namespace {

using namespace llvm_test;


// exp is inline arithmetic (backends/llvm/fast_math.h), not libm: within
// 2 ulp over the whole range, subnormal results, overflow, NaN and the
// masked positions of a softmax.
TEST(Llvm, ExpIsWithinTwoUlpEverywhere) {
  auto check = [&]<typename T>(const char* name, double lo, double hi) {
    std::vector<double> xs = {0.0, -0.0, 1.0, -1.0, 1e-30, -1e30, 1e30, std::numeric_limits<double>::infinity(),
                              -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()};
    for (int i = 0; i <= 20000; ++i) xs.push_back(lo + (hi - lo) * i / 20000.0);
    const int64_t n = static_cast<int64_t>(xs.size());
    Outcome got = run_with(one_op("exp", {{name, {n}}}), {from_values(dt(name), {n}, xs)}, R"({"compile": {"backend": "llvm"}})");
    ASSERT_TRUE(got.status.is_ok()) << got.status.to_string();
    EXPECT_EQ(got.fallbacks, 0u);
    const T* y = got.out[0].ptr<T>();
    for (int64_t i = 0; i < n; ++i) {
      const T x = static_cast<T>(xs[i]), want = std::exp(x);
      SCOPED_TRACE(std::string(name) + " exp(" + std::to_string(x) + ")");
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(y[i]));
      } else if (std::isinf(want) || want == 0) {
        EXPECT_EQ(y[i], want);
      } else if (want < std::numeric_limits<T>::min()) {  // subnormal: the spacing is fixed
        EXPECT_NEAR(y[i], want, 2 * std::numeric_limits<T>::denorm_min());
      } else {
        EXPECT_LE(std::fabs(y[i] - want), 2 * std::numeric_limits<T>::epsilon() * want);
      }
    }
  };
  check.operator()<float>("f32", -104.5, 89.5);
  check.operator()<double>("f64", -746, 710);
  // A row masked but for one position, and a row masked everywhere.
  std::vector<float> logits = {-1e30f, 2.0f, -1e30f, -1e30f, -1e30f, -1e30f, -1e30f, -1e30f};
  expect_agrees(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [2, 4]}],
                   "nodes": [{"op": "softmax", "in": ["x"], "out": "y"}], "outputs": ["y"]})",
                {from_values(DType::kF32, {2, 4}, logits)}, "masked softmax");
}

// tanh, float erf and gelu are inline arithmetic too (fast_math.h), held to
// their ulp bounds against the C library in double: every 4093rd float bit
// pattern (all signs, subnormals, infinities and NaNs among them), and for
// double a log-spaced sweep of both signs.
template <typename T>
double ulps(T got, double want) {
  const T w = static_cast<T>(want);
  if (std::isnan(want)) return std::isnan(got) ? 0 : 1e9;
  if (std::isinf(w)) return got == w ? 0 : 1e9;
  const double spacing = std::fabs(w) < std::numeric_limits<T>::min()
                             ? std::numeric_limits<T>::denorm_min()
                             : std::fabs(double(std::nextafter(w, std::numeric_limits<T>::infinity())) - double(w));
  return std::fabs(double(got) - want) / spacing;
}

std::vector<double> float_sweep() {
  std::vector<double> xs;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4093) {
    const uint32_t u = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &u, sizeof f);
    xs.push_back(f);
  }
  for (float f : {0.0f, -0.0f, 0.875f, -0.875f, 2.0f, 4.0f, 10.0f, -10.0f, 9.5f, 1e-45f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity()}) {
    xs.push_back(f);
    xs.push_back(std::nextafter(f, 0.0f));
  }
  return xs;
}

std::vector<double> double_sweep() {
  std::vector<double> xs = {0.0, -0.0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN(), 4.9e-324, 1e308};
  for (int i = 0; i <= 200000; ++i) {
    const double m = std::pow(10.0, -320.0 + 323.0 * i / 200000.0);
    xs.push_back(m);
    xs.push_back(-m);
  }
  return xs;
}

// The worst error seen in ulps, and the cases past `bound` (the first five
// reported by the caller).
struct UlpTally {
  double bound;
  double worst = 0;
  int failures = 0;
  // Records `u`; true when it is past the bound and among the first five so.
  bool report(double u) {
    worst = std::max(worst, u);
    return u > bound && failures++ < 5;
  }
  void expect_none(const std::string& what, int64_t n, const std::string& property) const {
    EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << n << " past " << bound << " ulp";
    ::testing::Test::RecordProperty(property, std::to_string(worst));
  }
};

// Runs `op` (attrs `attrs`) over `xs` and checks each result against
// `want` within `bound` ulps; from |x| >= `tail` on, within 1e-4 relative
// or a few steps of the smallest subnormal instead (gelu's negative tail,
// values below 0.004 that the differential tests' atol 1e-6 would pass
// whole: rounding the float argument moves erfc(z) by 2 z^2 ulps there,
// and the last values are subnormal).
template <typename T>
void expect_within_ulps(const char* op, const char* attrs, const std::vector<double>& xs, double (*want)(double), double bound,
                        double tail = std::numeric_limits<double>::infinity()) {
  const char* name = std::is_same_v<T, float> ? "f32" : "f64";
  const int64_t n = static_cast<int64_t>(xs.size());
  Outcome got = run_with(one_op(op, {{name, {n}}}, "", attrs), {from_values(dt(name), {n}, xs)}, R"({"compile": {"backend": "llvm"}})");
  ASSERT_TRUE(got.status.is_ok()) << got.status.to_string();
  EXPECT_EQ(got.fallbacks, 0u);
  const T* y = got.out[0].ptr<T>();
  UlpTally tally{bound};
  for (int64_t i = 0; i < n; ++i) {
    const T x = static_cast<T>(xs[i]);
    const double w = want(double(x)), e = ulps<T>(y[i], w);
    const double diff = std::fabs(double(y[i]) - w);
    if (std::fabs(double(x)) >= tail && (diff <= 1e-4 * std::fabs(w) || diff <= 16 * std::numeric_limits<T>::denorm_min())) continue;
    if (tally.report(e)) ADD_FAILURE() << op << " " << name << "(" << x << ") = " << y[i] << ", want " << want(double(x)) << ": " << e << " ulp";
  }
  tally.expect_none(std::string(op) + " " + name, n, std::string(op) + "_" + name + (*attrs ? "_tanh" : "") + "_worst_ulp");
}

double gelu_erf(double x) { return 0.5 * x * std::erfc(-x * 0.7071067811865476); }
double gelu_tanh(double x) {
  const double y = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  return 0.5 * x * (y < 0 ? 2 * std::exp(2 * y) / (1 + std::exp(2 * y)) : 1 + std::tanh(y));  // 1 + tanh(y) without cancellation
}

TEST(Llvm, TanhErfAndGeluAreWithinTheirUlpBoundsEverywhere) {
  // The bit-pattern sweep has about 4,000 floats per binade; [-4, 4],
  // where these functions do not saturate, is also swept in steps of 1e-5,
  // 12 to 50 times as densely from 0.5 to 4 (a first one-branch gelu at
  // 7.0 ulp in the bit-pattern sweep reached 8.5 in a sweep of [-3, 3] in
  // steps of 3e-6).
  std::vector<double> fs = float_sweep();
  const std::vector<double> ds = double_sweep();
  for (int i = -400000; i <= 400000; ++i) fs.push_back(static_cast<float>(i * 1e-5));
  expect_within_ulps<float>("tanh", "", fs, [](double x) { return std::tanh(x); }, 3);
  expect_within_ulps<double>("tanh", "", ds, [](double x) { return std::tanh(x); }, 4);
  expect_within_ulps<float>("erf", "", fs, [](double x) { return std::erf(x); }, 3);
  // gelu in float: its argument's rounding moves the result by a few ulps
  // more; the tanh form's by the most (y = k (x + c x^3) rounded, then
  // exp(-2|y|) multiplies y's error by 2|y|: 14 ulp seen near x = -3 in a
  // sweep 10 times this dense, 1e-6 relative).
  expect_within_ulps<float>("gelu", "", fs, gelu_erf, 8, 3);
  expect_within_ulps<float>("gelu", R"({"approximate": "tanh"})", fs, gelu_tanh, 16, 3);
  expect_within_ulps<double>("gelu", R"({"approximate": "tanh"})", ds, gelu_tanh, 6, 3);
}

// x ** e for a whole e from -1 to 4 is multiplications, not pow's call
// (StepEmitter::float_pow): over the sweeps, signed zeros, infinities and
// NaN (NaN ** 0 is 1), within 2 ulp of the power in long double, and
// within 1 for e in 0, 1, 2 and -1. Those are IEEE's correctly rounded
// product and quotient; the 1 is the reference's: near a tie the long
// double power itself rounds the other way (5.9601885661621047e-151 ** 2),
// as glibc's pow and powf do near the ends of the range. 2.5 still goes to
// pow.
TEST(Llvm, PowerByASmallWholeNumberIsMultipliedWithinTwoUlp) {
  auto check = [&]<typename T>(const char* name, const std::vector<double>& xs) {
    const int64_t n = static_cast<int64_t>(xs.size());
    for (const double e : {0.0, 1.0, 2.0, 3.0, 4.0, -1.0, 2.5}) {
      const std::string literal = std::to_string(e);
      Outcome got = run_with(one_op("pow", {{name, {n}}}, literal), {from_values(dt(name), {n}, xs)}, R"({"compile": {"backend": "llvm"}})");
      ASSERT_TRUE(got.status.is_ok()) << got.status.to_string();
      EXPECT_EQ(got.fallbacks, 0u);
      const T* y = got.out[0].ptr<T>();
      const bool exact = e == 0 || e == 1 || e == 2 || e == -1;
      UlpTally tally{exact ? 1.0 : 2.0};
      for (int64_t i = 0; i < n; ++i) {
        const T x = static_cast<T>(xs[i]);
        // In long double: glibc's pow and powf are not correctly rounded
        // near the ends of the range, where x * x is.
        const double want = static_cast<double>(std::pow(static_cast<long double>(x), static_cast<long double>(e)));
        const double u = ulps<T>(y[i], want);
        if (tally.report(u)) ADD_FAILURE() << name << " " << x << " ** " << e << " = " << y[i] << ", want " << want << ": " << u << " ulp";
      }
      tally.expect_none(std::string("pow ") + name + " " + literal, n, std::string("pow_") + name + "_" + literal + "_worst_ulp");
    }
  };
  check.operator()<float>("f32", float_sweep());
  check.operator()<double>("f64", double_sweep());
}

// softmax and attention take exp of x - max <= 0 from a cheaper exp
// (emit_exp_nonpositive): rows [x, 0] give exp(x) / (1 + exp(x)) at x, held
// within 3 ulp (exp's 2 and the division's rounding; in double, the
// expected value's own rounding too) from 0 down past the last subnormal;
// -inf gives 0 and NaN NaN.
TEST(Llvm, SoftmaxExpIsWithinItsUlpBoundDownToSubnormals) {
  auto check = [&]<typename T>(const char* name, double lo) {
    std::vector<double> xs = {0.0, -0.0, -1e-30, -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()};
    for (int i = 0; i <= 40000; ++i) xs.push_back(lo * i / 40000.0);
    const int64_t n = static_cast<int64_t>(xs.size());
    std::vector<double> rows;
    for (double x : xs) rows.insert(rows.end(), {x, 0.0});
    Outcome got = run_with(R"({"inputs": [{"name": "x", "dtype": ")" + std::string(name) + R"(", "shape": ["n", 2]}],
                               "nodes": [{"op": "softmax", "in": ["x"], "out": "y"}], "outputs": ["y"]})",
                           {from_values(dt(name), {n, 2}, rows)}, R"({"compile": {"backend": "llvm"}})");
    ASSERT_TRUE(got.status.is_ok()) << got.status.to_string();
    EXPECT_EQ(got.fallbacks, 0u);
    const T* y = got.out[0].ptr<T>();
    UlpTally tally{3};
    for (int64_t i = 0; i < n; ++i) {
      const double x = static_cast<T>(xs[i]), e = std::exp(x), want = std::isnan(x) ? x : e / (1 + e);
      const double u = ulps<T>(y[2 * i], want);
      if (tally.report(u)) ADD_FAILURE() << name << " softmax([" << x << ", 0])[0] = " << y[2 * i] << ", want " << want << ": " << u << " ulp";
    }
    tally.expect_none(std::string("softmax exp ") + name, n, std::string("softmax_exp_") + name + "_worst_ulp");
  };
  check.operator()<float>("f32", -110);
  check.operator()<double>("f64", -750);
}

}  // namespace
}  // namespace shapejit

#endif  // SHAPEJIT_HAVE_LLVM
