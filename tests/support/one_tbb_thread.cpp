// Linked into the ThreadSanitizer test binary only (CMakeLists.txt).
//
// Debian's libtbb is not built with ThreadSanitizer, so the joins at the end
// of a parallel_for are invisible to it: memory a worker read inside a body
// and the caller then frees looks like a race. tests/tsan.supp hides reports
// with a frame in TBB, but a worker's stack can be too old for TSan to
// restore, and then nothing names TBB and the report stands (CI saw one on
// a kernel's buffer table). With TBB held to one thread, every body runs on
// the thread that called parallel_for, whose accesses TSan sees and checks
// against the runtime's other threads (call sites, background compiles,
// caches), which is what this suite is for.

#include <oneapi/tbb/global_control.h>

namespace {

const tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);

}  // namespace
