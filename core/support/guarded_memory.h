// Guarded host memory: a debugging mode for generated code's writes.
//
// ASan checks the C++ it compiles, never the kernels LLVM emits at run
// time, so a kernel that writes past its buffer corrupts the heap unseen
// until a later free aborts far from the cause. With SHAPEJIT_GUARD_PAGES=1
// in the environment, every host buffer of a kernel (the pool's blocks and
// Tensor::empty's) is its own mapping, ending at an inaccessible page: a
// write past the end faults in the instruction that makes it. The bytes
// between the request and the next 64 (the block stays 64-byte aligned)
// and those before the block in its first page hold a pattern that the
// free checks; a write there aborts with the block's size and the offset.
// Freed blocks are unmapped, never reused, so a write after free faults too.
#pragma once

#include <cstddef>

namespace shapejit::support {

// Whether SHAPEJIT_GUARD_PAGES is set to a value other than 0 (read once).
bool guard_pages();

// `bytes` (0 allowed), 64-byte aligned; nullptr when the mapping fails.
void* guarded_alloc(size_t bytes);
// Checks the pattern around the block, then unmaps it.
void guarded_free(void* p, size_t bytes);

}  // namespace shapejit::support
