// Background compiles (compile.async): tasks in a TBB arena of their own,
// bounded by compile.threads, apart from the arena kernels split their
// loops in, so a compile never takes a core a kernel's parallel_for waits on
// and never runs inside a call's parallel_for.
#pragma once

#include <tbb/task_arena.h>

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>

#include "jit/runtime/stand_in.h"

namespace shapejit::runtime {

class Background {
 public:
  // `threads`: tasks at once (0: as many as it may), at most one less than
  // the cores, so that the calls keep one.
  explicit Background(int threads);
  ~Background() { wait(); }

  void run(std::function<void()> task);
  // Until every task run so far has finished.
  void wait();
  // What stand-ins weigh: the reference's time and a compile's (stand_in.h).
  StandInCosts& costs() { return costs_; }

 private:
  tbb::task_arena arena_;
  std::mutex mu_;
  std::condition_variable idle_;
  size_t pending_ = 0;
  StandInCosts costs_;
};

}  // namespace shapejit::runtime
