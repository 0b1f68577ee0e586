// compile.async's background queue: tasks run in the order they came,
// except one that a stand-in hurries (a call would have waited for it),
// which goes to the front if it has not begun.
#include "jit/runtime/background.h"

#include <gtest/gtest.h>

#include <future>
#include <string>

namespace shapejit::runtime {
namespace {

TEST(Background, AHurriedTaskRunsNextAndTheRestKeepTheirOrder) {
  Background bg(1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> began;
  std::string order;  // written by the one background thread only
  bg.run([&] {
    began.set_value();
    released.wait();
  });
  began.get_future().wait();  // the thread is busy: what follows is queued
  const int a = 0, b = 0, c = 0;
  bg.run([&] { order += 'a'; }, &a);
  bg.run([&] { order += 'b'; }, &b);
  bg.run([&] { order += 'c'; }, &c);
  bg.run([&] { order += 'd'; });
  bg.hurry(&c);
  bg.hurry(&c);        // first already: stays there
  const int none = 0;  // no task of that tag: nothing moves
  bg.hurry(&none);
  bg.hurry(nullptr);  // untagged tasks are never hurried
  release.set_value();
  bg.wait();
  EXPECT_EQ(order, "cabd");
}

TEST(Background, ATaskThatHasBegunOrEndedIsNotRunAgain) {
  Background bg(1);
  std::string order;
  const int a = 0;
  bg.run([&] { order += 'a'; }, &a);
  bg.wait();
  bg.hurry(&a);
  bg.run([&] { order += 'b'; });
  bg.wait();
  EXPECT_EQ(order, "ab");
}

TEST(Background, APendingKernelHurriesItsCompileOnce) {
  int hurried = 0;
  const PendingKernel* seen = nullptr;
  PendingKernel pending([](bool) { return std::shared_ptr<backends::Kernel>(); },
                        [&](const PendingKernel* p) {
                          ++hurried;
                          seen = p;
                        });
  pending.hurry();
  pending.hurry();
  EXPECT_EQ(hurried, 1);
  EXPECT_EQ(seen, &pending);
}

}  // namespace
}  // namespace shapejit::runtime
