// Kernel-cache tests' stand-ins for a backend: an artifact that is its own
// image, and a Maker that counts what it is asked to compile and to load.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "cache/kernel_cache.h"

namespace shapejit::testing {

struct Text final : cache::Artifact {
  explicit Text(std::string s) : text(std::move(s)) {}
  size_t code_bytes() const override { return text.size(); }
  std::string text;
};

// An image beginning "unloadable" is one the backend cannot link.
struct Counting {
  std::atomic<int> compiles{0}, loads{0};
  cache::Maker maker(const std::string& text, const std::string& target = "fake-target") {
    cache::Maker m;
    m.target = target;
    m.compile = [this, text](std::string* image) -> Expected<std::unique_ptr<cache::Artifact>> {
      ++compiles;
      if (image) *image = text;
      return std::unique_ptr<cache::Artifact>(new Text(text));
    };
    m.load = [this](std::string_view image) -> Expected<std::unique_ptr<cache::Artifact>> {
      ++loads;
      if (image.rfind("unloadable", 0) == 0) return internal_error("the backend cannot link it");
      return std::unique_ptr<cache::Artifact>(new Text(std::string(image)));
    };
    return m;
  }
};

inline std::string text_of(const Expected<cache::Found>& f) {
  return f.is_ok() ? static_cast<const Text&>(*f->artifact).text : "error: " + f.status().message();
}

}  // namespace shapejit::testing
