// NumPy .npy files (format versions 1.0 to 3.0), little-endian f4 f8 i4 i8
// and b1, C or Fortran order. A malformed or truncated file is an error that
// names the file and what is wrong.
#pragma once

#include <string>

#include "core/ir/tensor.h"
#include "core/support/status.h"

namespace shapejit::tools {

Expected<ir::Tensor> parse_npy(const std::string& bytes, const std::string& name);
Expected<ir::Tensor> read_npy(const std::string& path);
std::string format_npy(const ir::Tensor& t);
Status write_npy(const std::string& path, const ir::Tensor& t);

}  // namespace shapejit::tools
