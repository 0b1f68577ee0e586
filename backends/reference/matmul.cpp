// NumPy matmul: batch dims broadcast, a 1-D operand is promoted to a matrix
// and its dim removed from the result.
#include "backends/reference/kernels.h"
#include "core/ir/strided.h"

namespace shapejit::backends::reference {

using ir::Tensor;

namespace {

// The operand as a matrix stack: a vector becomes a row (lhs) or a column (rhs).
void as_matrix(const Tensor& t, bool lhs, std::vector<int64_t>& shape, std::vector<int64_t>& strides) {
  shape = t.shape();
  strides = t.strides();
  if (t.rank() == 1) {
    if (lhs) {
      shape.insert(shape.begin(), 1);
      strides.insert(strides.begin(), 0);
    } else {
      shape.push_back(1);
      strides.push_back(0);
    }
  }
}

template <typename T>
Tensor matmul(const NodeCtx& c, const Tensor& a, const Tensor& b) {
  std::vector<int64_t> sa, ta, sb, tb;
  as_matrix(a, true, sa, ta);
  as_matrix(b, false, sb, tb);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  std::vector<int64_t> batch;
  {
    std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
    size_t r = std::max(ba.size(), bb.size());
    batch.assign(r, 1);
    for (size_t i = 0; i < r; ++i) {
      int64_t da = i + ba.size() >= r ? ba[i + ba.size() - r] : 1;
      int64_t db = i + bb.size() >= r ? bb[i + bb.size() - r] : 1;
      batch[i] = da == 1 ? db : da;
    }
  }
  std::vector<int64_t> full = batch;
  full.push_back(m);
  full.push_back(n);
  Tensor out = Tensor::empty(c.type.dtype, full);
  auto bsa = ir::broadcast_strides(std::vector<int64_t>(sa.begin(), sa.end() - 2), std::vector<int64_t>(ta.begin(), ta.end() - 2), batch);
  auto bsb = ir::broadcast_strides(std::vector<int64_t>(sb.begin(), sb.end() - 2), std::vector<int64_t>(tb.begin(), tb.end() - 2), batch);
  std::vector<int64_t> bso(out.strides().begin(), out.strides().end() - 2);
  const int64_t am = ta[ta.size() - 2], ak = ta.back(), bk = tb[tb.size() - 2], bn = tb.back();
  const int64_t om = out.strides()[full.size() - 2], on = out.strides().back();
  const T* pa = a.ptr<T>();
  const T* pb = b.ptr<T>();
  T* po = out.ptr<T>();
  ir::for_each_offset<3>(batch, {bsa.data(), bsb.data(), bso.data()}, [&](const std::array<int64_t, 3>& o) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if constexpr (std::is_floating_point_v<T>) {
          double acc = 0;
          for (int64_t p = 0; p < k; ++p) acc += double(pa[o[0] + i * am + p * ak]) * double(pb[o[1] + p * bk + j * bn]);
          po[o[2] + i * om + j * on] = static_cast<T>(acc);
        } else {
          uint64_t acc = 0;
          for (int64_t p = 0; p < k; ++p) acc += static_cast<uint64_t>(pa[o[0] + i * am + p * ak]) * static_cast<uint64_t>(pb[o[1] + p * bk + j * bn]);
          po[o[2] + i * om + j * on] = static_cast<T>(acc);
        }
      }
    }
  });
  // Drop the promoted dims: the dense result reinterprets as the inferred shape.
  std::vector<int64_t> shape = c.out_shape();
  return out.view(shape, Tensor::dense_strides(shape));
}

}  // namespace

Expected<Tensor> run_matmul(const NodeCtx& c) {
  const Tensor& a = c.tensor(0);
  const Tensor& b = c.tensor(1);
  return ir::visit_dtype(a.dtype(), [&]<typename T>() -> Expected<Tensor> {
    if constexpr (std::is_same_v<T, bool>) return c.error("no bool matmul");
    else return matmul<T>(c, a, b);
  });
}

}  // namespace shapejit::backends::reference
