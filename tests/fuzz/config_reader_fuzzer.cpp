// The config reader: any bytes give a config or an invalid-argument error;
// an accepted config writes back to JSON that reads as the same config.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "jit/policy/config.h"

using namespace shapejit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = policy::parse_config(text);
  if (!c.is_ok()) {
    if (c.status().code() != Code::kInvalidArgument) {
      std::fprintf(stderr, "config reader: %s\n", c.status().to_string().c_str());
      std::abort();
    }
    return 0;
  }
  const std::string again = policy::config_to_json(*c).dump();
  auto c2 = policy::parse_config(again);
  if (!c2.is_ok() || policy::config_to_json(*c2).dump() != again) {
    std::fprintf(stderr, "config reader: the written config does not read back: %s\n%s\n", c2.status().to_string().c_str(), again.c_str());
    std::abort();
  }
  return 0;
}
