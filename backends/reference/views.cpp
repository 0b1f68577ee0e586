// View ops as views where strides allow (permute, transpose, expand,
// slice, squeeze, unsqueeze, reshape of dense data), copies otherwise;
// concat; creation (full, arange); gathers and data-dependent selections.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backends/reference/kernels.h"
#include "core/ir/strided.h"

namespace shapejit::backends::reference {

using ir::DType;
using ir::Op;
using ir::Tensor;

namespace {

int norm_axis(int64_t d, size_t rank) { return static_cast<int>(d < 0 ? d + static_cast<int64_t>(rank) : d); }

Tensor concat(const NodeCtx& c, const std::vector<int64_t>& shape) {
  Tensor out = Tensor::empty(c.type.dtype, shape);
  if (out.numel() == 0) return out;  // its strides may be past int64 times anything (a huge dim beside a 0)
  int dim = norm_axis(c.node.attrs.dim, shape.size());
  int64_t at = 0;
  for (size_t i = 0; i < c.node.in.size(); ++i) {
    const Tensor& t = c.tensor(i);
    Tensor dst = out.view(t.shape(), out.strides(), at * out.strides()[dim]);
    dst.copy_from(t);
    at += t.shape()[dim];
  }
  return out;
}

Tensor full(const NodeCtx& c, const std::vector<int64_t>& shape) {
  Tensor out = Tensor::empty(c.type.dtype, shape);
  const ir::Scalar& v = c.node.attrs.value;
  ir::visit_dtype(out.dtype(), [&]<typename T>() {
    T x = v.is_float ? from_double<T>(v.f) : static_cast<T>(v.i);
    T* p = out.ptr<T>();
    for (int64_t i = 0; i < out.numel(); ++i) p[i] = x;
  });
  return out;
}

Tensor arange(const NodeCtx& c, const std::vector<int64_t>& shape) {
  Tensor out = Tensor::empty(c.type.dtype, shape);
  const int64_t start = c.eval(c.type.aux[0]), step = c.eval(c.type.aux[1]);
  ir::visit_dtype(out.dtype(), [&]<typename T>() {
    T* p = out.ptr<T>();
    // start + i*step lies between start and stop, though i*step alone may
    // not fit int64 (arange(-2**63, 2**63 - 1, 2**62)): wrapping arithmetic.
    for (int64_t i = 0; i < shape[0]; ++i) p[i] = static_cast<T>(static_cast<int64_t>(static_cast<uint64_t>(start) + static_cast<uint64_t>(i) * static_cast<uint64_t>(step)));
  });
  return out;
}

}  // namespace

Expected<Tensor> run_view(const NodeCtx& c) {
  const std::vector<int64_t> shape = c.out_shape();
  const ir::Attrs& a = c.node.attrs;
  if (c.node.op == Op::kConcat) return concat(c, shape);
  if (c.node.op == Op::kFull) return full(c, shape);
  if (c.node.op == Op::kArange) return arange(c, shape);
  const Tensor& x = c.tensor(0);
  const auto& st = x.strides();
  switch (c.node.op) {
    case Op::kReshape: {
      Tensor dense = x.contiguous();
      return dense.view(shape, Tensor::dense_strides(shape));
    }
    case Op::kPermute: {
      std::vector<int64_t> s;
      for (int64_t p : a.perm) s.push_back(st[norm_axis(p, x.rank())]);
      return x.view(shape, s);
    }
    case Op::kTranspose: {
      std::vector<int64_t> s = st;
      std::swap(s[norm_axis(a.dim0, x.rank())], s[norm_axis(a.dim1, x.rank())]);
      return x.view(shape, s);
    }
    case Op::kExpand: {
      std::vector<int64_t> s = ir::broadcast_strides(x.shape(), st, shape);
      return x.view(shape, s);
    }
    case Op::kSlice: {
      int d = norm_axis(a.dim, x.rank());
      const int64_t start = c.eval(c.type.aux[0]), step = c.eval(c.type.aux[1]);
      // A dim of one element keeps its stride: step may be as large as
      // int64 allows (x[0:3:2**63-1]) and is only a stride past one element.
      std::vector<int64_t> s = st;
      if (shape[d] > 1) s[d] *= step;
      return x.view(shape, s, shape[d] > 0 && x.numel() > 0 ? start * st[d] : 0);
    }
    case Op::kSqueeze:
    case Op::kUnsqueeze: {
      // Dims of size 1 carry no stride information: dense strides of the
      // new shape are valid wherever the non-1 dims keep their order.
      std::vector<int64_t> s;
      for (size_t i = 0; i < x.rank(); ++i) {
        if (x.shape()[i] != 1) s.push_back(st[i]);
      }
      std::vector<int64_t> out_strides(shape.size(), 0);
      size_t k = 0;
      for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] != 1) out_strides[i] = s[k++];
      }
      return x.view(shape, out_strides);
    }
    SJ_POINTWISE_OPS(SJ_OP_CASE)
    SJ_ALONG_AXES_OPS(SJ_OP_CASE)
    case Op::kMatmul:
    SJ_INDEXING_OPS(SJ_OP_CASE)
    SJ_SYM_OPS(SJ_OP_CASE) break;
  }
  return c.error("no reference kernel");
}

namespace {

// The ids of a 1-d index tensor, each within [0, limit), or NumPy's
// IndexError at the first that is not.
Expected<std::vector<int64_t>> indices_within(const NodeCtx& c, const Tensor& idx, int64_t limit) {
  std::vector<int64_t> ids;
  ir::visit_dtype(idx.dtype(), [&]<typename I>() {
    ir::for_each_offset<1>(idx.shape(), {idx.strides().data()}, [&](const std::array<int64_t, 1>& o) {
      ids.push_back(static_cast<int64_t>(idx.ptr<I>()[o[0]]));
    });
  });
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= limit) {
      return c.error("index " + std::to_string(ids[i]) + " at position " + std::to_string(i) + " is out of range [0, " + std::to_string(limit) + ")",
                     Detail::kIndex);
    }
  }
  return ids;
}

}  // namespace

Expected<Tensor> run_indexing(const NodeCtx& c) {
  const std::vector<int64_t> shape = c.out_shape();
  const Tensor& x = c.tensor(0);
  switch (c.node.op) {
    case Op::kIndexSelect:
    case Op::kEmbedding: {
      const Tensor& idx = c.tensor(1);
      const int dim = c.node.op == Op::kEmbedding ? 0 : norm_axis(c.node.attrs.dim, x.rank());
      const std::vector<int64_t> ids = SJ_TRY(indices_within(c, idx, x.shape()[dim]));
      Tensor out = Tensor::empty(x.dtype(), shape);
      // Each selected slice of x, copied to its place in out.
      std::vector<int64_t> slice_shape = x.shape();
      slice_shape.erase(slice_shape.begin() + dim);
      std::vector<int64_t> xs = x.strides();
      xs.erase(xs.begin() + dim);
      std::vector<int64_t> os = out.strides();
      int64_t out_step = 0;
      if (c.node.op == Op::kIndexSelect) {
        out_step = os[dim];
        os.erase(os.begin() + dim);
      } else {
        os.erase(os.begin(), os.begin() + static_cast<int64_t>(idx.rank()));
        out_step = shape.back();  // ids flatten row-major over the leading dims
      }
      for (size_t i = 0; i < ids.size(); ++i) {
        Tensor src = x.view(slice_shape, xs, ids[i] * x.strides()[dim]);
        Tensor dst = out.view(slice_shape, os, static_cast<int64_t>(i) * out_step);
        dst.copy_from(src);
      }
      return out;
    }
    case Op::kIndexPut:
    case Op::kIndexAdd:
    case Op::kIndexMul:
    case Op::kIndexMax:
    case Op::kIndexMin: {
      // A copy of x, then each index in order: index_put's slice k replaces
      // the slice at index[k] (a repeated index keeps its last), the others
      // combine with it (integers wrap; a NaN wins a maximum or minimum).
      const Tensor& idx = c.tensor(1);
      const Tensor& v = c.tensor(2);
      const int dim = norm_axis(c.node.attrs.dim, x.rank());
      const std::vector<int64_t> ids = SJ_TRY(indices_within(c, idx, x.shape()[dim]));
      Tensor out = Tensor::empty(x.dtype(), shape);
      out.copy_from(x);
      std::vector<int64_t> slice_shape = x.shape();
      slice_shape.erase(slice_shape.begin() + dim);
      std::vector<int64_t> os = out.strides(), vs = v.strides();
      const int64_t out_step = os[dim], value_step = vs[dim];
      os.erase(os.begin() + dim);
      vs.erase(vs.begin() + dim);
      for (size_t i = 0; i < ids.size(); ++i) {
        Tensor dst = out.view(slice_shape, os, ids[i] * out_step);
        const Tensor src = v.view(slice_shape, vs, static_cast<int64_t>(i) * value_step);
        if (c.node.op == Op::kIndexPut) {
          dst.copy_from(src);
          continue;
        }
        ir::visit_dtype(x.dtype(), [&]<typename T>() {
          if constexpr (!std::is_same_v<T, bool>) {
            T* pd = dst.ptr<T>();
            const T* ps = src.ptr<T>();
            ir::for_each_offset<2>(slice_shape, {dst.strides().data(), src.strides().data()}, [&](const std::array<int64_t, 2>& o) {
              T& y = pd[o[0]];
              const T v = ps[o[1]];
              if (c.node.op == Op::kIndexMax || c.node.op == Op::kIndexMin) {
                bool nan = false;
                if constexpr (std::is_floating_point_v<T>) nan = std::isnan(y) || std::isnan(v);
                if (nan) {
                  y = std::numeric_limits<T>::quiet_NaN();
                } else {
                  y = c.node.op == Op::kIndexMax ? std::max(y, v) : std::min(y, v);
                }
              } else if constexpr (std::is_integral_v<T>) {  // index_add, index_mul
                using U = std::make_unsigned_t<T>;
                y = static_cast<T>(c.node.op == Op::kIndexAdd ? static_cast<U>(y) + static_cast<U>(v) : static_cast<U>(y) * static_cast<U>(v));
              } else {
                y = c.node.op == Op::kIndexAdd ? y + v : y * v;
              }
            });
          }
        });
      }
      return out;
    }
    case Op::kNonzero: {
      std::vector<int64_t> coords;
      int64_t count = 0;
      const size_t rank = x.rank();
      std::vector<int64_t> idx(rank, 0);
      ir::visit_dtype(x.dtype(), [&]<typename T>() {
        const T* p = x.ptr<T>();
        int64_t linear = 0;
        const int64_t total = x.numel();
        for (; linear < total; ++linear) {
          int64_t rem = linear, off = 0;
          for (size_t d = rank; d-- > 0;) {
            idx[d] = rem % x.shape()[d];
            rem /= x.shape()[d];
            off += idx[d] * x.strides()[d];
          }
          if (p[off] != T(0)) {
            coords.insert(coords.end(), idx.begin(), idx.end());
            ++count;
          }
        }
      });
      c.symbols[c.type.shape[0].symbol_id()] = count;
      Tensor out = Tensor::empty(DType::kI64, {count, static_cast<int64_t>(rank)});
      if (!coords.empty()) std::memcpy(out.data(), coords.data(), coords.size() * sizeof(int64_t));
      return out;
    }
    case Op::kMaskedSelect: {
      const Tensor& mask = c.tensor(1);
      std::vector<int64_t> bshape;
      for (const sym::Expr& d : c.type.aux) bshape.push_back(c.eval(d));
      auto sx = ir::broadcast_strides(x.shape(), x.strides(), bshape);
      auto sm = ir::broadcast_strides(mask.shape(), mask.strides(), bshape);
      std::vector<int64_t> picked;
      ir::for_each_offset<2>(bshape, {sx.data(), sm.data()}, [&](const std::array<int64_t, 2>& o) {
        if (mask.ptr<bool>()[o[1]]) picked.push_back(o[0]);
      });
      const int64_t count = static_cast<int64_t>(picked.size());
      c.symbols[c.type.shape[0].symbol_id()] = count;
      Tensor out = Tensor::empty(x.dtype(), {count});
      size_t esize = ir::dtype_size(x.dtype());
      for (int64_t i = 0; i < count; ++i) {
        std::memcpy(static_cast<char*>(out.data()) + i * esize, static_cast<const char*>(x.data()) + picked[i] * static_cast<int64_t>(esize), esize);
      }
      return out;
    }
    SJ_POINTWISE_OPS(SJ_OP_CASE)
    SJ_ALONG_AXES_OPS(SJ_OP_CASE)
    case Op::kMatmul:
    SJ_VIEW_OPS(SJ_OP_CASE)
    case Op::kConcat:
    case Op::kFull:
    case Op::kArange:
    SJ_SYM_OPS(SJ_OP_CASE) break;
  }
  return c.error("no reference kernel");
}

}  // namespace shapejit::backends::reference
