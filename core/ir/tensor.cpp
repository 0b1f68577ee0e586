#include "core/ir/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/ir/strided.h"
#include "core/support/guarded_memory.h"
#include "core/sym/layout.h"

namespace shapejit::ir {

std::vector<int64_t> Tensor::dense_strides(const std::vector<int64_t>& shape) {
  // Unsigned, so a degenerate shape (a 0 dim beside huge ones, never used to
  // address memory) cannot overflow into undefined behaviour.
  std::vector<int64_t> s(shape.size());
  uint64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = static_cast<int64_t>(acc);
    acc *= shape[i] > 0 ? static_cast<uint64_t>(shape[i]) : 1;
  }
  return s;
}

std::optional<uint64_t> dense_bytes_within(size_t elem_size, std::span<const int64_t> shape, uint64_t limit) {
  for (int64_t d : shape) {
    if (d == 0) return 0;
  }
  uint64_t bytes = elem_size;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes) || bytes > limit) return std::nullopt;
  }
  return bytes;
}

size_t Tensor::dense_bytes(DType dtype, const std::vector<int64_t>& shape) {
  // Sizes come from callers' shapes: an impossible size is std::bad_alloc
  // (the runtime, the C API and the tool turn it into an error).
  for (int64_t d : shape) {
    if (d < 0) throw std::bad_alloc();
  }
  const std::optional<uint64_t> bytes = dense_bytes_within(dtype_size(dtype), shape, uint64_t{1} << 48);
  if (!bytes) throw std::bad_alloc();
  return static_cast<size_t>(*bytes);
}

Tensor Tensor::empty(DType dtype, std::vector<int64_t> shape) {
  const size_t bytes = dense_bytes(dtype, shape);
  if (support::guard_pages()) {
    void* p = support::guarded_alloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
    std::memset(p, 0, bytes);
    return over(dtype, std::move(shape), std::shared_ptr<void>(p, [bytes](void* q) { support::guarded_free(q, bytes); }));
  }
  size_t padded = (bytes + 63) / 64 * 64;
  if (padded == 0) padded = 64;
  void* p = std::aligned_alloc(64, padded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, padded);
  return over(dtype, std::move(shape), std::shared_ptr<void>(p, std::free));
}

Tensor Tensor::over(DType dtype, std::vector<int64_t> shape, std::shared_ptr<void> buffer, DLDevice device) {
  Tensor t;
  t.device_ = device;
  t.dtype_ = dtype;
  t.strides_ = dense_strides(shape);
  t.shape_ = std::move(shape);
  t.base_ = buffer.get();
  t.buffer_ = std::move(buffer);
  return t;
}

Tensor Tensor::borrow(const DLTensor& d, DType dtype) {
  Tensor t;
  t.borrowed_ = true;
  t.device_ = d.device;
  t.dtype_ = dtype;
  t.base_ = static_cast<char*>(d.data) + d.byte_offset;
  t.shape_.assign(d.shape, d.shape + d.ndim);
  if (d.strides) t.strides_.assign(d.strides, d.strides + d.ndim);
  else t.strides_ = dense_strides(t.shape_);
  return t;
}

int64_t Tensor::numel() const {
  uint64_t n = 1;  // bounded by allocation for owned tensors; unsigned for views
  for (int64_t d : shape_) n *= static_cast<uint64_t>(d);
  return static_cast<int64_t>(n);
}

ByteSpan byte_span(const DLTensor& t) {
  const int64_t element = (int64_t{t.dtype.bits} * t.dtype.lanes + 7) / 8;
  const std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  if (!t.data || element == 0 || std::find(shape.begin(), shape.end(), 0) != shape.end()) return {};
  const std::vector<int64_t> strides = t.strides ? std::vector<int64_t>(t.strides, t.strides + t.ndim) : Tensor::dense_strides(shape);
  const auto [lo, hi] = offset_span(shape, strides);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(t.data) + t.byte_offset + static_cast<uintptr_t>(lo * element);
  return {begin, begin + static_cast<uintptr_t>((hi - lo + 1) * element)};
}

bool is_dense(int ndim, const int64_t* shape, const int64_t* strides) { return sym::Layout::dense().holds(ndim, shape, strides); }

bool Tensor::is_contiguous() const { return is_dense(static_cast<int>(shape_.size()), shape_.data(), strides_.data()); }

Tensor Tensor::view(std::vector<int64_t> shape, std::vector<int64_t> strides, int64_t extra_offset) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.offset_ += extra_offset;
  return t;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  Tensor out = empty(dtype_, shape_);
  out.copy_from(*this);
  return out;
}

void Tensor::copy_from(const Tensor& src) {
  SJ_CHECK(src.shape_ == shape_ && src.dtype_ == dtype_, "copy between tensors of different types");
  SJ_CHECK(device_.device_type == kDLCPU && src.device_.device_type == kDLCPU, "copy_from reads host tensors only");
  if (numel() == 0) return;
  size_t esize = dtype_size(dtype_);
  if (is_contiguous() && src.is_contiguous()) {
    std::memcpy(data(), src.data(), static_cast<size_t>(numel()) * esize);
    return;
  }
  char* dst = static_cast<char*>(data());
  const char* from = static_cast<const char*>(src.data());
  for_each_offset<2>(shape_, {strides_.data(), src.strides_.data()}, [&](const std::array<int64_t, 2>& off) {
    std::memcpy(dst + off[0] * static_cast<int64_t>(esize), from + off[1] * static_cast<int64_t>(esize), esize);
  });
}

DLTensor Tensor::dl() const {
  DLTensor d{};
  d.data = data();
  d.device = device_;
  d.ndim = static_cast<int32_t>(shape_.size());
  d.dtype = to_dl(dtype_);
  d.shape = const_cast<int64_t*>(shape_.data());
  d.strides = const_cast<int64_t*>(strides_.data());
  d.byte_offset = 0;
  return d;
}

}  // namespace shapejit::ir
