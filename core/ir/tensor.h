// Tensor: a strided view of a buffer, owned (shared) or borrowed from a
// caller's DLTensor. Strides count elements, as in DLPack. Views (permute,
// slice, expand) share the buffer; `contiguous()` copies when needed. The
// buffer is host memory unless `device()` says otherwise (a device
// backend's outputs); only the host operations read the elements
// (`contiguous`, `copy_from`), and only on host tensors.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/ir/dtype.h"

namespace shapejit::ir {

// The largest rank of a call's inputs and outputs.
inline constexpr int kMaxRank = 64;

// Dense row-major: each stride is the product of the dims after it (a dim of
// 1 may have any stride); null strides are dense, as in DLPack, and so is a
// tensor with no elements, whatever its strides (it addresses nothing). The
// product is unsigned: beside a 0 the other dims may be as large as int64
// allows. sym::Layout::dense() answers it.
bool is_dense(int ndim, const int64_t* shape, const int64_t* strides);

// The bytes of a dense tensor of `shape` (sizes >= 0) with elements of
// `elem_size` bytes: 0 when a size is 0, whatever the others (they may be as
// large as int64 allows), and nullopt past `limit`, checked before anything
// can overflow.
std::optional<uint64_t> dense_bytes_within(size_t elem_size, std::span<const int64_t> shape, uint64_t limit);

// The bytes a tensor's elements span in memory, [begin, end), its byte
// offset and negative strides included; begin == end when it has no
// elements or no data.
struct ByteSpan {
  uintptr_t begin = 0, end = 0;
};
ByteSpan byte_span(const DLTensor& t);

class Tensor {
 public:
  Tensor() = default;
  // A new dense row-major tensor, zero-filled, 64-byte aligned. Throws
  // std::bad_alloc for a size that cannot be allocated (over 2^48 bytes).
  static Tensor empty(DType dtype, std::vector<int64_t> shape);
  // A dense row-major tensor over `buffer` (at least the tensor's bytes, not
  // zeroed), which it shares: a pooled block returns when the last view dies.
  static Tensor over(DType dtype, std::vector<int64_t> shape, std::shared_ptr<void> buffer, DLDevice device = {kDLCPU, 0});
  // Bytes of a dense tensor of this shape; throws std::bad_alloc past 2^48.
  static size_t dense_bytes(DType dtype, const std::vector<int64_t>& shape);
  // Borrows the caller's memory: the tensor must not outlive it.
  static Tensor borrow(const DLTensor& t, DType dtype);
  static std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape);

  bool defined() const { return buffer_ != nullptr || borrowed_; }
  DType dtype() const { return dtype_; }
  DLDevice device() const { return device_; }
  size_t rank() const { return shape_.size(); }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t numel() const;
  bool is_contiguous() const;
  // True when this tensor's buffer is referenced nowhere else (safe to reuse).
  bool is_unique() const { return buffer_ != nullptr && buffer_.use_count() == 1 && !borrowed_; }
  // True when this tensor views a caller's memory it does not own.
  bool borrowed() const { return borrowed_; }

  void* data() const { return static_cast<char*>(base_) + offset_ * static_cast<int64_t>(dtype_size(dtype_)); }
  template <typename T>
  T* ptr() const { return static_cast<T*>(data()); }

  // A view with other shape, strides and element offset into the same memory.
  Tensor view(std::vector<int64_t> shape, std::vector<int64_t> strides, int64_t extra_offset = 0) const;
  Tensor contiguous() const;
  // Copies `src` (same shape and dtype, any strides) into this tensor.
  void copy_from(const Tensor& src);

  // A DLTensor describing this tensor; valid while this Tensor lives.
  DLTensor dl() const;

 private:
  std::shared_ptr<void> buffer_;
  void* base_ = nullptr;
  bool borrowed_ = false;
  DLDevice device_ = {kDLCPU, 0};
  DType dtype_ = DType::kF32;
  std::vector<int64_t> shape_, strides_;
  int64_t offset_ = 0;  // elements
};

}  // namespace shapejit::ir
