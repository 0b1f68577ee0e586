// Artifact: what the kernel cache holds. The cache knows an artifact's size
// and nothing else of it; backends' kernels are artifacts (backend.h).
#pragma once

#include <cstddef>

namespace shapejit::cache {

class Artifact {
 public:
  virtual ~Artifact() = default;
  // Bytes it holds (code and constants): what the cache bounds.
  virtual size_t code_bytes() const = 0;
};

}  // namespace shapejit::cache
