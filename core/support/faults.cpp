#include "core/support/faults.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace shapejit::support {

namespace {

constexpr std::array<const char*, static_cast<size_t>(Fault::kCount)> kNames = {
    "trace", "numpy", "symbolic", "lower", "compile", "fallback", "load", "run"};

// splitmix64: each chance's draw from the seed and the chance's number.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct Process {
  FaultSpec spec;
  std::atomic<uint64_t> chance{0};
  bool log = false;  // SHAPEJIT_FAULT_LOG: each failure made, on stderr

  Process() {
    const char* log_env = std::getenv("SHAPEJIT_FAULT_LOG");
    log = log_env && *log_env && std::string_view(log_env) != "0";
    const char* seed = std::getenv("SHAPEJIT_FAULT_SEED");
    const char* names = std::getenv("SHAPEJIT_FAULTS");
    std::string unknown;
    spec = parse_faults(names ? names : "", seed ? std::strtoull(seed, nullptr, 10) : 0, &unknown);
    if (!unknown.empty()) {
      std::fprintf(stderr, "shapejit: warning: SHAPEJIT_FAULTS names %s, which is not a stage (trace, numpy, symbolic, lower, "
                           "compile, fallback, load, run)\n", unknown.c_str());
    }
  }
};

Process& process() {
  static Process p;
  return p;
}

}  // namespace

FaultSpec parse_faults(std::string_view names, uint64_t seed, std::string* unknown) {
  FaultSpec spec;
  spec.seed = seed;
  while (!names.empty()) {
    const size_t comma = names.find(',');
    std::string_view item = names.substr(0, comma);
    names = comma == std::string_view::npos ? std::string_view() : names.substr(comma + 1);
    if (item.empty()) continue;
    double rate = 1.0;
    if (const size_t colon = item.find(':'); colon != std::string_view::npos) {
      rate = std::strtod(std::string(item.substr(colon + 1)).c_str(), nullptr);
      item = item.substr(0, colon);
    }
    bool known = false;
    for (size_t i = 0; i < kNames.size(); ++i) {
      if (item == kNames[i]) spec.rate[i] = rate, known = true;
    }
    if (!known && unknown) *unknown += (unknown->empty() ? "'" : ", '") + std::string(item) + "'";
    spec.any = spec.any || (known && rate > 0);
  }
  return spec;
}

bool FaultSpec::fires(Fault f, uint64_t chance) const {
  const double r = rate[static_cast<size_t>(f)];
  if (r <= 0) return false;
  if (r >= 1) return true;
  const uint64_t draw = mix(seed * 0x100000001b3ULL + chance * 31 + static_cast<uint64_t>(f));
  return static_cast<double>(draw >> 11) * 0x1.0p-53 < r;
}

namespace detail {

const bool any_fault = process().spec.any;

bool fault_fires(Fault f) {
  Process& p = process();
  const uint64_t chance = p.chance.fetch_add(1, std::memory_order_relaxed);
  const bool fires = p.spec.fires(f, chance);
  if (fires && p.log) std::fprintf(stderr, "shapejit: fault injected: %s (chance %llu)\n", fault_name(f), static_cast<unsigned long long>(chance));
  return fires;
}

}  // namespace detail

const char* fault_name(Fault f) { return kNames[static_cast<size_t>(f)]; }

std::vector<std::string> faults_named() {
  std::vector<std::string> out;
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (process().spec.rate[i] > 0) out.emplace_back(kNames[i]);
  }
  return out;
}

}  // namespace shapejit::support
