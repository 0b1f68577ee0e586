// The .npy reader of the shapejit tool: any bytes give an array or an
// invalid-argument error; an array it reads writes back byte for byte.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tools/shapejit/npy.h"

using namespace shapejit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto t = tools::parse_npy(bytes, "fuzz.npy");
  if (!t.is_ok()) {
    if (t.status().code() != Code::kInvalidArgument) {
      std::fprintf(stderr, "npy reader: %s\n", t.status().to_string().c_str());
      std::abort();
    }
    return 0;
  }
  auto t2 = tools::parse_npy(tools::format_npy(*t), "again.npy");
  const size_t n = static_cast<size_t>(t->numel()) * ir::dtype_size(t->dtype());
  if (!t2.is_ok() || t2->shape() != t->shape() || t2->dtype() != t->dtype() || (n > 0 && std::memcmp(t2->data(), t->data(), n) != 0)) {
    std::fprintf(stderr, "npy reader: the written array does not read back: %s\n", t2.status().to_string().c_str());
    std::abort();
  }
  return 0;
}
