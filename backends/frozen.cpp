#include "backends/frozen.h"

#include <algorithm>
#include <cstdio>

#include "core/ir/tensor.h"

namespace shapejit::backends {

namespace {

std::string address(uintptr_t p) {
  char text[32];
  std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(p));
  return text;
}
std::string span_text(uintptr_t begin, uintptr_t end) { return "[" + address(begin) + ", " + address(end) + ")"; }

// The range of `ranges` (by first byte, never overlapping) that holds
// [p, p + bytes), or ranges.end().
template <typename Ranges>
auto holding(Ranges& ranges, uintptr_t p, size_t bytes) -> decltype(ranges.begin()) {
  auto it = ranges.upper_bound(p);
  if (it == ranges.begin()) return ranges.end();
  --it;
  return p + bytes >= p && p + bytes <= it->second.end ? it : ranges.end();
}

// The bytes a host tensor's elements span: [first, end).
Expected<std::pair<uintptr_t, uintptr_t>> span_of(const DLTensor& t) {
  if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost) {
    return invalid("in device memory (DLPack device type " + std::to_string(t.device.device_type) + "); frozen memory is host memory");
  }
  if (std::find(t.shape, t.shape + t.ndim, 0) != t.shape + t.ndim) return invalid("no elements");
  if (!t.data || t.dtype.bits == 0 || t.dtype.lanes == 0) return invalid("no data");
  const ir::ByteSpan s = ir::byte_span(t);
  return std::make_pair(s.begin, s.end);
}

// What messages call tensor i.
std::string name_of(std::span<const std::string> names, size_t i) { return i < names.size() ? names[i] : "tensor " + std::to_string(i); }

// The spans of `tensors`, or the first one's error, named.
Expected<std::vector<std::pair<uintptr_t, uintptr_t>>> spans_of(const char* what, std::span<const DLTensor* const> tensors,
                                                                 std::span<const std::string> names) {
  std::vector<std::pair<uintptr_t, uintptr_t>> spans;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string name = name_of(names, i);
    if (!tensors[i]) return invalid(std::string(what) + ": " + name + " is null");
    Expected<std::pair<uintptr_t, uintptr_t>> s = span_of(*tensors[i]);
    if (!s.is_ok()) return invalid(std::string(what) + ": " + name + ": " + s.status().message());
    spans.push_back(s.value());
  }
  return spans;
}

// Prefixes a message with the name of the tensor it is about.
Status named(const char* what, const std::string& name, Status s) {
  const std::string prefix = std::string(what) + ": ";
  std::string m = s.message();
  if (m.rfind(prefix, 0) == 0) m = m.substr(prefix.size());
  return Status(s.code(), prefix + name + ": " + m);
}

}  // namespace

FrozenMemory& FrozenMemory::process() {
  static FrozenMemory* registry = new FrozenMemory();  // never destroyed: kernels may run during static destruction
  return *registry;
}

Status FrozenMemory::freeze_locked(uintptr_t begin, uintptr_t end) {
  auto next = ranges_.lower_bound(begin);
  if (next != ranges_.end() && next->first == begin && next->second.end == end) {
    ++next->second.count;
    return Status::ok();
  }
  // The range must not overlap its neighbours: the one starting at or
  // after `begin`, and the one before it.
  auto overlaps = [&](auto it) {
    return invalid("freeze: memory " + span_text(begin, end) + " overlaps frozen memory " + span_text(it->first, it->second.end) +
                   " without being it; freeze a buffer whole, and thaw it as often as it was frozen");
  };
  if (next != ranges_.end() && next->first < end) return overlaps(next);
  if (next != ranges_.begin() && std::prev(next)->second.end > begin) return overlaps(std::prev(next));
  Range& r = ranges_[begin];
  r.end = end;
  r.count = 1;
  r.id = ++ranges_made_;
  ranges_now_.store(ranges_.size(), std::memory_order_relaxed);
  return Status::ok();
}

Status FrozenMemory::thaw_locked(uintptr_t begin, uintptr_t end, Kept& dropped) {
  const auto it = ranges_.find(begin);
  if (it == ranges_.end() || it->second.end != end) return invalid("thaw: memory " + span_text(begin, end) + " is not frozen");
  if (--it->second.count > 0) return Status::ok();
  dropped.merge(it->second.derived);
  ranges_.erase(it);
  ranges_now_.store(ranges_.size(), std::memory_order_relaxed);
  return Status::ok();
}

Status FrozenMemory::freeze(const void* data, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  if (!data || bytes == 0) return invalid("freeze: an empty range of memory (" + std::to_string(bytes) + " bytes at " + address(begin) + ")");
  if (begin + bytes < begin) return invalid("freeze: " + std::to_string(bytes) + " bytes from " + address(begin) + " pass the end of memory");
  std::lock_guard lock(mu_);
  return freeze_locked(begin, begin + bytes);
}

Status FrozenMemory::thaw(const void* data, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  Kept dropped;  // freed after the lock
  std::lock_guard lock(mu_);
  return thaw_locked(begin, begin + bytes, dropped);
}

Status FrozenMemory::freeze(std::span<const DLTensor* const> tensors, std::span<const std::string> names) {
  const auto spans = SJ_TRY(spans_of("freeze", tensors, names));
  Kept dropped;
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < spans.size(); ++i) {
    Status s = freeze_locked(spans[i].first, spans[i].second);
    if (s.is_ok()) continue;
    for (size_t j = 0; j < i; ++j) (void)thaw_locked(spans[j].first, spans[j].second, dropped);  // all or none
    return named("freeze", name_of(names, i), std::move(s));
  }
  return Status::ok();
}

Status FrozenMemory::thaw(std::span<const DLTensor* const> tensors, std::span<const std::string> names) {
  const auto spans = SJ_TRY(spans_of("thaw", tensors, names));
  Kept dropped;  // freed after the lock
  std::lock_guard lock(mu_);
  // Checked first, all or none: each range frozen at least as often as it
  // is listed.
  std::map<uintptr_t, int64_t> thaws;
  for (size_t i = 0; i < spans.size(); ++i) {
    const auto it = ranges_.find(spans[i].first);
    if (it == ranges_.end() || it->second.end != spans[i].second || ++thaws[spans[i].first] > it->second.count) {
      return invalid("thaw: " + name_of(names, i) + ": not frozen (or thawed more often than frozen)");
    }
  }
  for (const auto& [begin, end] : spans) (void)thaw_locked(begin, end, dropped);
  return Status::ok();
}

bool FrozenMemory::frozen(const void* data, size_t bytes) const {
  std::lock_guard lock(mu_);
  return holding(ranges_, reinterpret_cast<uintptr_t>(data), bytes) != ranges_.end();
}

FrozenMemory::Derived FrozenMemory::derived(const void* data, size_t bytes, const std::string& tag, const std::function<Derived()>& make) {
  const auto p = reinterpret_cast<uintptr_t>(data);
  const std::pair<uintptr_t, std::string> key(p, tag);
  uint64_t id = 0;
  {
    std::lock_guard lock(mu_);
    const auto it = holding(ranges_, p, bytes);
    if (it == ranges_.end()) return {};
    if (const auto d = it->second.derived.find(key); d != it->second.derived.end()) return d->second;
    id = it->second.id;
  }
  Derived made = make();
  std::lock_guard lock(mu_);
  ++made_;
  // Kept only while the freeze that held the bytes lasts (a thaw, or a
  // thaw and a new freeze, may have come meanwhile: then this call uses
  // its copy alone).
  const auto it = holding(ranges_, p, bytes);
  if (it == ranges_.end() || it->second.id != id) return made;
  return it->second.derived.try_emplace(key, std::move(made)).first->second;
}

FrozenMemory::Stats FrozenMemory::stats() const {
  std::lock_guard lock(mu_);
  Stats s;
  s.made = made_;
  for (const auto& [begin, r] : ranges_) {
    ++s.ranges;
    s.frozen_bytes += r.end - begin;
    for (const auto& [key, d] : r.derived) {
      ++s.derived;
      s.derived_bytes += d.bytes;
    }
  }
  return s;
}

}  // namespace shapejit::backends
