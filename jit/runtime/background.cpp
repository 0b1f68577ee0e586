#include "jit/runtime/background.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <tbb/info.h>
#include <unistd.h>

#include <algorithm>

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
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { work(false); });
}

Background::~Background() {
  wait();
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : threads_) t.join();
  if (urgent_.joinable()) urgent_.join();
}

void Background::run(std::function<void()> task, const void* tag) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    queue_.push_back({std::move(task), tag});
  }
  ready_.notify_all();  // the urgent thread waits on ready_ too, for its own queue
}

void Background::hurry(const void* tag) {
  if (!tag) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(queue_.begin(), queue_.end(), [&](const Task& t) { return t.tag == tag; });
    if (it == queue_.end()) return;  // begun, done, or never queued
    hurried_.push_back(std::move(*it));
    queue_.erase(it);
    if (!urgent_.joinable()) urgent_ = std::thread([this] { work(true); });
  }
  ready_.notify_all();
}

void Background::work(bool urgent) {
  // Raising a thread's own nice value needs no privilege, but lowering it
  // again does (RLIMIT_NICE is 0 by default): hurried tasks have a thread
  // that never raises it. It is this thread's alone (Linux schedules
  // threads apart). A refusal leaves the thread at the calls' priority,
  // which is only slower for them.
  if (!urgent) (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), kNice);
  std::deque<Task>& queue = urgent ? hurried_ : queue_;
  std::unique_lock<std::mutex> lock(mu_);
  // A low thread begins nothing while a hurried task waits or runs: the
  // cores the calls leave go to that one.
  auto may_take = [&] { return urgent || (hurried_.empty() && urgent_running_ == 0); };
  for (;;) {
    ready_.wait(lock, [&] { return queue.empty() ? closing_ : may_take(); });
    if (queue.empty()) return;  // closing, and nothing left
    std::function<void()> task = std::move(queue.front().run);
    queue.pop_front();
    ++running_;
    if (urgent) ++urgent_running_;
    lock.unlock();
    task();  // tasks catch their own errors: they report through the site
    task = nullptr;
    lock.lock();
    --running_;
    if (urgent) --urgent_running_;
    if (urgent && urgent_running_ == 0 && hurried_.empty()) ready_.notify_all();  // the low threads' turn
    if (running_ == 0 && queue_.empty() && hurried_.empty()) idle_.notify_all();
  }
}

void Background::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return running_ == 0 && queue_.empty() && hurried_.empty(); });
}

void Background::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    queue_.clear();
    hurried_.clear();
  }
  wait();
}

}  // namespace shapejit::runtime
