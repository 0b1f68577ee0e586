// Reductions (sum mean max min argmax) and normalizations (softmax,
// log_softmax, layer_norm, rms_norm): an outer loop over the kept dims and
// an inner loop over the reduced ones.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

#include "backends/reference/kernels.h"
#include "core/ir/strided.h"

namespace shapejit::backends::reference {

using ir::DType;
using ir::Op;
using ir::Tensor;

namespace {

struct Split {
  std::vector<int64_t> outer_shape, inner_shape;
  std::vector<int64_t> x_outer, x_inner;      // x's strides
  std::vector<int64_t> out_outer, out_inner;  // a same-shape output's strides
};

std::vector<int> normalize_axes(const std::vector<int64_t>& given, bool present, size_t rank) {
  std::vector<int> axes;
  if (!present) {
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
    return axes;
  }
  for (int64_t a : given) axes.push_back(static_cast<int>(a < 0 ? a + static_cast<int64_t>(rank) : a));
  std::sort(axes.begin(), axes.end());
  return axes;
}

// An empty x is walked with strides of 0: its kept axes may still be walked
// (to store each one's empty sum), and its own strides, beside a 0 dim, may be
// as large as int64 allows.
Split split(const Tensor& x, const std::vector<int>& axes, const std::vector<int64_t>* out_strides = nullptr) {
  Split s;
  const bool empty = x.numel() == 0;
  for (size_t i = 0; i < x.rank(); ++i) {
    bool inner = std::find(axes.begin(), axes.end(), static_cast<int>(i)) != axes.end();
    (inner ? s.inner_shape : s.outer_shape).push_back(x.shape()[i]);
    (inner ? s.x_inner : s.x_outer).push_back(empty ? 0 : x.strides()[i]);
    if (out_strides) (inner ? s.out_inner : s.out_outer).push_back(empty ? 0 : (*out_strides)[i]);
  }
  return s;
}

// The number of elements of a shape; beside a 0 the other dims may be as
// large as int64 allows, so a 0 anywhere is 0 and a product past int64
// (possible only then, e.g. for the axes kept when the reduced one is 0)
// saturates.
int64_t product(const std::vector<int64_t>& v) {
  if (std::find(v.begin(), v.end(), 0) != v.end()) return 0;
  int64_t n = 1;
  for (int64_t d : v) {
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  }
  return n;
}

template <typename T>
Expected<Tensor> reduce(const NodeCtx& c, const Tensor& x, const std::vector<int>& axes) {
  Tensor out = Tensor::empty(c.type.dtype, c.out_shape());
  Split s = split(x, axes);
  const int64_t count = product(s.inner_shape);
  if (count == 0 && (c.node.op == Op::kMax || c.node.op == Op::kMin)) {  // NumPy: even when the result is empty too
    return c.error("max or min over an empty axis has no identity", Detail::kValue);
  }
  const T* px = x.ptr<T>();
  T* po = out.ptr<T>();
  int64_t k = 0;
  const Op op = c.node.op;
  ir::for_each_offset<1>(s.outer_shape, {s.x_outer.data()}, [&](const std::array<int64_t, 1>& base) {
    const T* row = px + base[0];
    if (op == Op::kSum || op == Op::kMean) {
      if constexpr (std::is_floating_point_v<T>) {
        double acc = 0;
        ir::for_each_offset<1>(s.inner_shape, {s.x_inner.data()}, [&](const std::array<int64_t, 1>& o) { acc += row[o[0]]; });
        po[k++] = static_cast<T>(op == Op::kMean ? acc / static_cast<double>(count) : acc);
      } else {
        uint64_t acc = 0;
        ir::for_each_offset<1>(s.inner_shape, {s.x_inner.data()}, [&](const std::array<int64_t, 1>& o) { acc += static_cast<uint64_t>(row[o[0]]); });
        po[k++] = static_cast<T>(acc);
      }
    } else if (op == Op::kProd) {
      if constexpr (std::is_floating_point_v<T>) {
        double acc = 1;
        ir::for_each_offset<1>(s.inner_shape, {s.x_inner.data()}, [&](const std::array<int64_t, 1>& o) { acc *= row[o[0]]; });
        po[k++] = static_cast<T>(acc);
      } else {
        uint64_t acc = 1;  // wraps, as integer products do
        ir::for_each_offset<1>(s.inner_shape, {s.x_inner.data()}, [&](const std::array<int64_t, 1>& o) { acc *= static_cast<uint64_t>(row[o[0]]); });
        po[k++] = static_cast<T>(acc);
      }
    } else {
      bool first = true;
      T acc{};
      ir::for_each_offset<1>(s.inner_shape, {s.x_inner.data()}, [&](const std::array<int64_t, 1>& o) {
        T v = row[o[0]];
        if (first) {
          acc = v;
          first = false;
          return;
        }
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(acc)) return;
          if (std::isnan(v)) {
            acc = v;
            return;
          }
        }
        acc = op == Op::kMax ? (v > acc ? v : acc) : (v < acc ? v : acc);
      });
      po[k++] = acc;
    }
  });
  return out;
}

template <typename T>
Expected<Tensor> argmax(const NodeCtx& c, const Tensor& x, int dim) {
  Tensor out = Tensor::empty(DType::kI64, c.out_shape());
  Split s = split(x, {dim});
  const int64_t n = s.inner_shape[0], stride = s.x_inner[0];
  if (n == 0) return c.error("argmax over an empty axis", Detail::kValue);
  const T* px = x.ptr<T>();
  int64_t* po = out.ptr<int64_t>();
  int64_t k = 0;
  ir::for_each_offset<1>(s.outer_shape, {s.x_outer.data()}, [&](const std::array<int64_t, 1>& base) {
    int64_t best = 0;
    T best_v = px[base[0]];
    for (int64_t i = 1; i < n; ++i) {
      T v = px[base[0] + i * stride];
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(best_v)) break;
        if (std::isnan(v)) {
          best = i;
          break;
        }
      }
      if (v > best_v) {
        best = i;
        best_v = v;
      }
    }
    po[k++] = best;
  });
  return out;
}

template <typename T>
Tensor softmax(const NodeCtx& c, const Tensor& x, int dim) {
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  Split s = split(x, {dim}, &out.strides());
  const int64_t n = s.inner_shape[0], xs = s.x_inner[0], os = s.out_inner[0];
  const bool log_form = c.node.op == Op::kLogSoftmax;
  const T* px = x.ptr<T>();
  T* po = out.ptr<T>();
  ir::for_each_offset<2>(s.outer_shape, {s.x_outer.data(), s.out_outer.data()}, [&](const std::array<int64_t, 2>& b) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(px[b[0] + i * xs]));
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(px[b[0] + i * xs]) - m);
    for (int64_t i = 0; i < n; ++i) {
      double v = static_cast<double>(px[b[0] + i * xs]) - m;
      po[b[1] + i * os] = static_cast<T>(log_form ? v - std::log(sum) : std::exp(v) / sum);
    }
  });
  return out;
}

template <typename T>
Tensor normalize(const NodeCtx& c, const Tensor& x, const std::vector<int>& axes) {
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  Split s = split(x, axes, &out.strides());
  const bool rms = c.node.op == Op::kRmsNorm;
  const double eps = c.node.attrs.eps;
  const int64_t count = product(s.inner_shape);
  // Absent weight or bias read as 1 and 0 through a 0-stride scalar.
  const T one = 1, zero = 0;
  std::vector<int64_t> zeros(s.inner_shape.size(), 0);
  const bool has_w = c.node.in.size() > 1, has_b = c.node.in.size() > 2;
  Tensor w = has_w ? c.tensor(1) : Tensor(), bias = has_b ? c.tensor(2) : Tensor();
  const T* pw = has_w ? w.ptr<T>() : &one;
  const T* pb = has_b ? bias.ptr<T>() : &zero;
  const std::vector<int64_t>& ws = has_w ? w.strides() : zeros;
  const std::vector<int64_t>& bs = has_b ? bias.strides() : zeros;
  const T* px = x.ptr<T>();
  T* po = out.ptr<T>();
  ir::for_each_offset<2>(s.outer_shape, {s.x_outer.data(), s.out_outer.data()}, [&](const std::array<int64_t, 2>& b) {
    double mean = 0, var = 0;
    if (!rms) {
      ir::for_each_offset<1>(s.inner_shape, {s.x_inner.data()}, [&](const std::array<int64_t, 1>& o) { mean += px[b[0] + o[0]]; });
      mean /= static_cast<double>(count);
    }
    ir::for_each_offset<1>(s.inner_shape, {s.x_inner.data()}, [&](const std::array<int64_t, 1>& o) {
      double d = px[b[0] + o[0]] - mean;
      var += d * d;
    });
    double scale = 1.0 / std::sqrt(var / static_cast<double>(count) + eps);
    ir::for_each_offset<4>(s.inner_shape, {s.x_inner.data(), s.out_inner.data(), ws.data(), bs.data()},
                           [&](const std::array<int64_t, 4>& o) {
                             double v = (px[b[0] + o[0]] - mean) * scale * pw[o[2]] + pb[o[3]];
                             po[b[1] + o[1]] = static_cast<T>(v);
                           });
  });
  return out;
}

}  // namespace

// cumsum, cumprod along `dim`, accumulating in the element type (as NumPy
// does): integers wrap.
// Integers accumulate as their unsigned kind, so that overflow wraps.
template <typename T, bool = std::is_integral_v<T>>
struct Wrapping {
  using type = T;
};
template <typename T>
struct Wrapping<T, true> {
  using type = std::make_unsigned_t<T>;
};

// x viewed as [outer, n, inner] around `dim`: outer * inner lines of n.
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
  Lines(const Tensor& x, int dim) : n(x.shape()[dim]) {
    for (int d = 0; d < dim; ++d) outer *= x.shape()[d];
    for (size_t d = static_cast<size_t>(dim) + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  }
};

template <typename T>
Tensor scan(Op op, const Tensor& x, int dim) {
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  if (x.numel() == 0) return out;  // its other dims may be huge (2^62 lines of nothing)
  const Tensor in = x.contiguous();
  const auto [outer, n, inner] = Lines(x, dim);
  const T* px = in.ptr<T>();
  T* po = out.ptr<T>();
  using Acc = typename Wrapping<T>::type;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      Acc acc = op == Op::kCumsum ? Acc(0) : Acc(1);
      T extreme{};  // cummax, cummin: the running maximum or minimum, a NaN once met
      for (int64_t k = 0; k < n; ++k) {
        const int64_t at = (o * n + k) * inner + i;
        if (op == Op::kCummax || op == Op::kCummin) {
          const T v = px[at];
          if (k == 0) extreme = v;
          else if constexpr (std::is_floating_point_v<T>) extreme = std::isnan(extreme) || std::isnan(v) ? std::numeric_limits<T>::quiet_NaN() : op == Op::kCummax ? std::max(extreme, v) : std::min(extreme, v);
          else extreme = op == Op::kCummax ? std::max(extreme, v) : std::min(extreme, v);
          po[at] = extreme;
          continue;
        }
        acc = op == Op::kCumsum ? Acc(acc + static_cast<Acc>(px[at])) : Acc(acc * static_cast<Acc>(px[at]));
        po[at] = static_cast<T>(acc);
      }
    }
  }
  return out;
}

// sort, argsort along `dim`: ascending, NaNs last, equal elements in their
// order (argsort's indices stable; NumPy's default sort leaves their order
// unspecified). Each line's indices are ordered by (value, index).
template <typename T>
Tensor order(Op op, const Tensor& x, int dim) {
  Tensor out = Tensor::empty(op == Op::kArgsort ? DType::kI64 : x.dtype(), x.shape());
  if (x.numel() == 0) return out;  // as scan's
  const Tensor in = x.contiguous();
  const auto [outer, n, inner] = Lines(x, dim);
  const T* px = in.ptr<T>();
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const auto at = [&](int64_t k) { return px[(o * n + k) * inner + i]; };
      std::iota(idx.begin(), idx.end(), int64_t{0});
      std::sort(idx.begin(), idx.end(), [&](int64_t p, int64_t q) {
        const T a = at(p), b = at(q);
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(a) || std::isnan(b)) return std::isnan(a) == std::isnan(b) ? p < q : std::isnan(b);
        }
        return a < b || (!(b < a) && p < q);
      });
      for (int64_t k = 0; k < n; ++k) {
        const int64_t dst = (o * n + k) * inner + i;
        if (op == Op::kArgsort) out.ptr<int64_t>()[dst] = idx[static_cast<size_t>(k)];
        else out.ptr<T>()[dst] = at(idx[static_cast<size_t>(k)]);
      }
    }
  }
  return out;
}

Expected<Tensor> run_reduction(const NodeCtx& c) {
  const Tensor& x = c.tensor(0);
  const ir::Attrs& a = c.node.attrs;
  if (c.node.op == Op::kSort || c.node.op == Op::kArgsort) {
    const int dim = static_cast<int>(a.dim < 0 ? a.dim + static_cast<int64_t>(x.rank()) : a.dim);
    return ir::visit_dtype(x.dtype(), [&]<typename T>() -> Expected<Tensor> { return order<T>(c.node.op, x, dim); });
  }
  if (c.node.op == Op::kCumsum || c.node.op == Op::kCumprod || c.node.op == Op::kCummax || c.node.op == Op::kCummin) {
    const int dim = static_cast<int>(a.dim < 0 ? a.dim + static_cast<int64_t>(x.rank()) : a.dim);
    return ir::visit_dtype(x.dtype(), [&]<typename T>() -> Expected<Tensor> {
      if constexpr (std::is_same_v<T, bool>) return c.error("takes numeric tensors");
      else return scan<T>(c.node.op, x, dim);
    });
  }
  if (c.node.op == Op::kArgmax) {
    int dim = static_cast<int>(a.dim < 0 ? a.dim + static_cast<int64_t>(x.rank()) : a.dim);
    return ir::visit_dtype(x.dtype(), [&]<typename T>() { return argmax<T>(c, x, dim); });
  }
  std::vector<int> axes = normalize_axes(a.axes, a.has(ir::kAttrAxes), x.rank());
  return ir::visit_dtype(x.dtype(), [&]<typename T>() { return reduce<T>(c, x, axes); });
}

Expected<Tensor> run_normalization(const NodeCtx& c) {
  const Tensor& x = c.tensor(0);
  const ir::Attrs& a = c.node.attrs;
  auto floats = [&](auto&& fn) -> Expected<Tensor> {
    if (x.dtype() == DType::kF32) return fn.template operator()<float>();
    if (x.dtype() == DType::kF64) return fn.template operator()<double>();
    return c.error("takes float tensors");
  };
  if (c.node.op == Op::kSoftmax || c.node.op == Op::kLogSoftmax) {
    int dim = static_cast<int>(a.dim < 0 ? a.dim + static_cast<int64_t>(x.rank()) : a.dim);
    return floats([&]<typename T>() { return softmax<T>(c, x, dim); });
  }
  std::vector<int> axes = normalize_axes(a.axes, true, x.rank());
  return floats([&]<typename T>() { return normalize<T>(c, x, axes); });
}

}  // namespace shapejit::backends::reference
