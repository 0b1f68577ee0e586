#include "jit/runtime/background.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <tbb/info.h>
#include <unistd.h>

#include <algorithm>

#include "backends/backend.h"

namespace shapejit::runtime {

namespace {

// compile.threads, at most one less than the cores (the calls keep one),
// at least one.
int background_threads(int threads) {
  const int cores = tbb::info::default_concurrency();
  const int most = std::max(1, cores - 1);
  return threads > 0 ? std::min(threads, most) : most;
}

// How far below the calls a background thread runs: Linux weighs a thread
// of nice 10 at about a tenth of one of nice 0, so a busy call's threads
// take the cores and an idle machine still gives the compiles all of them.
constexpr int kNice = 10;

}  // namespace

Background::Background(int threads) {
  const int n = background_threads(threads);
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
}

Background::~Background() {
  wait();
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void Background::run(std::function<void()> task, const void* tag) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    queue_.push_back({std::move(task), tag});
  }
  ready_.notify_one();
}

void Background::hurry(const void* tag) {
  if (!tag) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(queue_.begin(), queue_.end(), [&](const Task& t) { return t.tag == tag; });
  if (it == queue_.end() || it == queue_.begin()) return;
  Task task = std::move(*it);
  queue_.erase(it);
  queue_.push_front(std::move(task));
}

void Background::work() {
  // Raising a thread's own nice value needs no privilege; it is this
  // thread's alone (Linux schedules threads apart). A refusal leaves the
  // thread at the calls' priority, which is only slower for them.
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), kNice);
  const backends::BackgroundCompile background;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    ready_.wait(lock, [&] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing, and nothing left
    std::function<void()> task = std::move(queue_.front().run);
    queue_.pop_front();
    ++running_;
    lock.unlock();
    task();  // tasks catch their own errors: they report through the site
    task = nullptr;
    lock.lock();
    --running_;
    if (running_ == 0 && queue_.empty()) idle_.notify_all();
  }
}

void Background::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return running_ == 0 && queue_.empty(); });
}

void Background::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    queue_.clear();
  }
  wait();
}

}  // namespace shapejit::runtime
