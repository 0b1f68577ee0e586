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

// A gate a task waits at until the test opens it.
class Gate {
 public:
  void wait() const { opened_.wait(); }
  void open() { open_.set_value(); }

 private:
  std::promise<void> open_;
  std::shared_future<void> opened_ = open_.get_future().share();
};

// The order tasks noted themselves in, from any thread.
class Order {
 public:
  void note(char c) {
    std::lock_guard<std::mutex> lock(mu_);
    order_ += c;
  }
  std::string str() {
    std::lock_guard<std::mutex> lock(mu_);
    return order_;
  }

 private:
  std::mutex mu_;
  std::string order_;
};

// Keeps `bg`'s one low thread busy until `gate` opens: what follows is queued.
void occupy(Background& bg, Gate& gate) {
  std::promise<void> began;
  bg.run([&] {
    began.set_value();
    gate.wait();
  });
  began.get_future().wait();
}

TEST(Background, AHurriedTaskRunsWhileTheOthersWait) {
  Background bg(1);
  Gate busy;
  occupy(bg, busy);
  Order order;
  std::promise<void> hurried_ran;
  const int a = 0, b = 0, c = 0;
  bg.run([&] { order.note('a'); }, &a);
  bg.run([&] { order.note('b'); }, &b);
  bg.run(
      [&] {
        order.note('c');
        hurried_ran.set_value();
      },
      &c);
  const int none = 0;  // no task of that tag: nothing moves
  bg.hurry(&none);
  bg.hurry(nullptr);  // untagged tasks are never hurried
  bg.hurry(&c);
  bg.hurry(&c);  // once taken up, a task is not queued twice
  // Without the hurry, c would wait behind the busy thread for ever.
  EXPECT_EQ(hurried_ran.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  busy.open();
  bg.wait();
  EXPECT_EQ(order.str(), "cab");
}

// While a hurried task runs, the low threads begin nothing: the cores the
// calls leave go to it.
TEST(Background, TheLowThreadsWaitWhileAHurriedTaskRuns) {
  Background bg(1);
  Gate busy, hurried;
  occupy(bg, busy);
  Order order;
  std::promise<void> hurried_began;
  const int a = 0;
  bg.run(
      [&] {
        hurried_began.set_value();
        hurried.wait();
        order.note('a');
      },
      &a);
  bg.run([&] { order.note('b'); });
  bg.hurry(&a);
  hurried_began.get_future().wait();
  busy.open();  // the low thread is free, and b is queued
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(order.str(), "") << "b began beside the hurried task";
  hurried.open();
  bg.wait();
  EXPECT_EQ(order.str(), "ab");
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
