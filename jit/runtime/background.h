// Background compiles (compile.async): tasks on threads of their own,
// bounded by compile.threads, at a lower scheduling priority than the
// process's other threads.
//
// The threads are not TBB's: TBB's workers stay with the calls, for the
// kernels' parallel loops and for the compiles calls wait on (a
// synchronous compile, or a stand-in's wait), whose steps then compile on
// every core, as they would without compile.async. A background thread
// compiles a kernel's steps one after another on itself (its compiles say
// so: backends::CompileContext::background), and gives way to the calls' threads when
// the cores are busy: on a 2-core machine, a call that waits for its
// compile no longer shares the cores evenly with the background's.
//
// One kind of task is run at the calls' priority, on one more thread: the
// compile of an entry whose calls run on a quick kernel meanwhile (a call
// made one rather than wait), once hurried: under load a low thread would
// take several times a compile's own time to land such a kernel, and the
// entry's calls would run the slower code all along. While a hurried task
// waits or runs, the low threads begin nothing new.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "jit/runtime/stand_in.h"

namespace shapejit::runtime {

class Background {
 public:
  // `threads`: tasks at once (0: as many as it may), at most one less than
  // the cores, so that the calls keep one.
  explicit Background(int threads);
  ~Background();

  // Queues `task` behind the others; `tag`, when given, names it to hurry().
  void run(std::function<void()> task, const void* tag = nullptr);
  // The task of `tag`, if it has not begun, runs next, on a thread of its
  // own at the calls' priority: a call would have waited for that compile,
  // and the entry's calls run on a slower stand-in until it lands.
  void hurry(const void* tag);
  // Until every task run so far has finished.
  void wait();
  // Tasks not yet begun are dropped, from now on too, and the one running
  // finishes: for a process that exits with its Jits alive (Python's keep
  // theirs in module globals), whose compiles must not outlive LLVM's
  // static state.
  void stop();
  // What stand-ins weigh: the reference's time and a compile's (stand_in.h).
  StandInCosts& costs() { return costs_; }

 private:
  // `urgent`: the thread of hurried tasks, at the calls' priority.
  void work(bool urgent);

  std::mutex mu_;
  std::condition_variable ready_, idle_;
  struct Task {
    std::function<void()> run;
    const void* tag;
  };
  std::deque<Task> queue_, hurried_;
  size_t running_ = 0, urgent_running_ = 0;
  bool stopped_ = false, closing_ = false;
  std::vector<std::thread> threads_;
  std::thread urgent_;  // started by the first hurry()
  StandInCosts costs_;
};

}  // namespace shapejit::runtime
