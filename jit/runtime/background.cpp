#include "jit/runtime/background.h"

#include <tbb/info.h>

#include <algorithm>

namespace shapejit::runtime {

namespace {

// compile.threads, at most one less than the cores (the calls keep one, and
// TBB has no more workers to give), at least one.
int arena_threads(int threads) {
  const int cores = tbb::info::default_concurrency();
  const int most = std::max(1, cores - 1);
  return threads > 0 ? std::min(threads, most) : most;
}

}  // namespace

Background::Background(int threads) : arena_(arena_threads(threads), /*reserved_for_masters=*/0) {}

void Background::run(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++pending_;
  }
  arena_.enqueue([this, task = std::move(task)] {
    task();  // tasks catch their own errors: they report through the site
    std::lock_guard<std::mutex> lock(mu_);
    if (--pending_ == 0) idle_.notify_all();
  });
}

void Background::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return pending_ == 0; });
}

}  // namespace shapejit::runtime
