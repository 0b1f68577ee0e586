// compile.async's background queue: tasks run in the order they came, on
// threads below the calls' priority, except one that a stand-in hurries (a
// call made a quick kernel in its stead), which runs at once on a thread
// of its own if it has not begun.
#include "jit/runtime/background.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>

namespace shapejit::runtime {
namespace {

TEST(Background, AHurriedTaskRunsWhileTheOthersWait) {
  Background bg(1);
  std::promise<void> release, began, hurried_ran;
  std::shared_future<void> released = release.get_future().share();
  std::mutex mu;
  std::string order;
  auto note = [&](char c) {
    std::lock_guard<std::mutex> lock(mu);
    order += c;
  };
  bg.run([&] {
    began.set_value();
    released.wait();
  });
  began.get_future().wait();  // the one thread is busy: what follows is queued
  const int a = 0, b = 0, c = 0;
  bg.run([&] { note('a'); }, &a);
  bg.run([&] { note('b'); }, &b);
  bg.run(
      [&] {
        note('c');
        hurried_ran.set_value();
      },
      &c);
  const int none = 0;  // no task of that tag: nothing moves
  bg.hurry(&none);
  bg.hurry(nullptr);  // untagged tasks are never hurried
  bg.hurry(&c);
  bg.hurry(&c);  // once taken up, a task is not queued twice
  // Without the hurry, c would wait behind the blocked thread for ever.
  EXPECT_EQ(hurried_ran.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  release.set_value();
  bg.wait();
  EXPECT_EQ(order, "cab");
}

// While a hurried task runs, the low threads begin nothing: the cores the
// calls leave go to it.
TEST(Background, TheLowThreadsWaitWhileAHurriedTaskRuns) {
  Background bg(1);
  std::promise<void> release_first, first_began, hurried_began, release_hurried;
  std::shared_future<void> first_released = release_first.get_future().share();
  std::shared_future<void> hurried_released = release_hurried.get_future().share();
  std::mutex mu;
  std::string order;
  auto note = [&](char c) {
    std::lock_guard<std::mutex> lock(mu);
    order += c;
  };
  bg.run([&] {
    first_began.set_value();
    first_released.wait();
  });
  first_began.get_future().wait();
  const int a = 0;
  bg.run(
      [&] {
        hurried_began.set_value();
        hurried_released.wait();
        note('a');
      },
      &a);
  bg.run([&] { note('b'); });
  bg.hurry(&a);
  hurried_began.get_future().wait();
  release_first.set_value();  // the low thread is free, and b is queued
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(order, "") << "b began beside the hurried task";
  }
  release_hurried.set_value();
  bg.wait();
  EXPECT_EQ(order, "ab");
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
