// Elapsed times, as the runtime and the backends count them.
#pragma once

#include <chrono>

namespace shapejit::support {

using Clock = std::chrono::steady_clock;

// Milliseconds from `t0` to now.
inline double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

}  // namespace shapejit::support
