// Device memory of the mock: one reserved range of the address space, so a
// device pointer is never a host one. Each allocation gets pages of its own
// and ends at most 255 bytes before a page nobody may touch (a guard page:
// reading past the end faults); under AddressSanitizer the slack around
// it is poisoned too. Freed pages are protected and never handed out again,
// so a use after free faults as well.
#include <sanitizer/asan_interface.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "tests/backends/cuda/mock_driver/mock_cuda.h"

namespace shapejit::mock_cuda {

namespace {

constexpr size_t kRange = size_t{1} << 38;  // 256 GiB of addresses, none committed until allocated
constexpr size_t kPage = 4096;
constexpr size_t kAlign = 256;  // cuMemAlloc's alignment

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Whether the host has a page mapped at `p`.
bool host_mapped(uint64_t p) {
  unsigned char v = 0;
  return ::mincore(reinterpret_cast<void*>(p & ~(kPage - 1)), 1, &v) == 0;
}

}  // namespace

DeviceMemory& DeviceMemory::get() {
  static DeviceMemory* m = new DeviceMemory;  // lives as long as the process, as a driver does
  return *m;
}

DeviceMemory::DeviceMemory() {
  void* p = ::mmap(nullptr, kRange, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "shapejit mock driver: cannot reserve %zu bytes of addresses for device memory\n", kRange);
    std::abort();
  }
  base_ = static_cast<char*>(p);
}

void* DeviceMemory::allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t pages = (bytes + kPage - 1) / kPage;
  if (bytes == 0 || bytes > kRange || next_ + (pages + 1) * kPage > kRange) return nullptr;
  char* first = base_ + next_;
  if (::mprotect(first, pages * kPage, PROT_READ | PROT_WRITE) != 0) return nullptr;
  char* start = first + ((pages * kPage - bytes) & ~(kAlign - 1));
  ASAN_POISON_MEMORY_REGION(first, static_cast<size_t>(start - first));
  ASAN_POISON_MEMORY_REGION(start + bytes, static_cast<size_t>(first + pages * kPage - (start + bytes)));
  std::memset(start, 0xff, bytes);
  next_ += (pages + 1) * kPage;
  live_[reinterpret_cast<uintptr_t>(start)] = bytes;
  return start;
}

bool DeviceMemory::release(void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(reinterpret_cast<uintptr_t>(p));
  if (it == live_.end()) return false;
  const uintptr_t first = it->first & ~(kPage - 1);
  const size_t pages = (it->first + it->second - first + kPage - 1) / kPage;
  ::mprotect(reinterpret_cast<void*>(first), pages * kPage, PROT_NONE);
  freed_[it->first] = it->second;
  live_.erase(it);
  return true;
}

bool DeviceMemory::in_range(const void* p) const {
  const char* c = static_cast<const char*>(p);
  return c >= base_ && c < base_ + kRange;
}

// What `p` points into, for a message.
std::string DeviceMemory::describe(const void* p) const {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  for (const auto* m : {&live_, &freed_}) {
    auto it = m->upper_bound(a);
    if (it == m->begin()) continue;
    --it;
    if (a <= it->first + it->second + kPage) {
      return std::string(m == &live_ ? "the allocation" : "the freed allocation") + " at " + hex(it->first) + " (" +
             std::to_string(it->second) + " bytes)";
    }
  }
  return "no allocation";
}

std::string DeviceMemory::check(const void* p, size_t bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (!in_range(p)) return hex(a) + " is not device memory (a host pointer where a device one belongs)";
  auto it = live_.upper_bound(a);
  if (it != live_.begin()) {
    --it;
    if (a >= it->first && a - it->first <= it->second && bytes <= it->second - (a - it->first)) return "";
  }
  return hex(a) + " + " + std::to_string(bytes) + " bytes is not inside one live allocation (near " + describe(p) + ")";
}

std::string DeviceMemory::check_word(uint64_t word) const {
  if (word == 0) return "";
  if (in_range(reinterpret_cast<const void*>(word))) return check(reinterpret_cast<const void*>(word), 0);
  // Sizes and strides are far below 2^32, and a host address is above it.
  if (word >= (uint64_t{1} << 32) && word < (uint64_t{1} << 47) && host_mapped(word)) {
    return hex(word) + " is host memory (a host pointer where a device one belongs)";
  }
  return "";
}

}  // namespace shapejit::mock_cuda
