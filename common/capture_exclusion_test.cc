// The capture lock's two kinds of holder (Note [Captures and device-wide
// synchronisation]), on the host: the lock needs no GPU.
#include "common/capture_exclusion.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace graphserve {
namespace {

// Long enough for a thread that could take the lock to have taken it.
constexpr absl::Duration kBlocked = absl::Milliseconds(100);

constexpr int kDevice = 3;  // one no other test here uses

TEST(CaptureLockTest, CapturesShareTheLock) {
  CaptureLock first(kDevice, CaptureLock::kCapture);
  absl::Notification second_held;
  std::thread beside([&] {
    const CaptureLock second(kDevice, CaptureLock::kCapture);
    second_held.Notify();
  });
  const bool shared = second_held.WaitForNotificationWithTimeout(absl::Seconds(10));
  if (!shared) first.Release();  // let the waiting thread through: a failure, not a hang
  beside.join();
  EXPECT_TRUE(shared);
  EXPECT_EQ(CapturesInProgress(kDevice), 1);
}

TEST(CaptureLockTest, SynchronisingWorkWaitsForCapturesToEnd) {
  CaptureLock capture(kDevice, CaptureLock::kCapture);
  absl::Notification held;
  std::thread beside([&] {
    const CaptureLock synchronising(kDevice, CaptureLock::kSynchronising);
    held.Notify();
  });
  EXPECT_FALSE(held.WaitForNotificationWithTimeout(kBlocked));
  capture.Release();
  EXPECT_TRUE(held.WaitForNotificationWithTimeout(absl::Seconds(10)));
  beside.join();
  EXPECT_EQ(CapturesInProgress(kDevice), 0);
}

// Synchronising work waiting keeps new captures out, so a load that captures
// back to back cannot starve it.
TEST(CaptureLockTest, NewCapturesWaitBehindWaitingSynchronisingWork) {
  absl::Mutex mu;
  std::vector<std::string> order;
  auto record = [&](const char* who) {
    absl::MutexLock lock(&mu);
    order.push_back(who);
  };
  CaptureLock capture(kDevice, CaptureLock::kCapture);
  std::thread synchronising([&] {
    const CaptureLock held(kDevice, CaptureLock::kSynchronising);
    record("synchronising");
    absl::SleepFor(kBlocked);
  });
  absl::SleepFor(kBlocked);  // now waiting
  std::thread next_capture([&] {
    const CaptureLock held(kDevice, CaptureLock::kCapture);
    record("capture");
  });
  absl::SleepFor(kBlocked);
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(order.empty());
  }
  capture.Release();
  synchronising.join();
  next_capture.join();
  EXPECT_EQ(order, (std::vector<std::string>{"synchronising", "capture"}));
}

TEST(CaptureLockTest, SynchronisingWorkSharesTheLockAndLetsItGoToWait) {
  CaptureLock synchronising(kDevice, CaptureLock::kSynchronising);
  absl::Notification other_held;
  std::thread other([&] {
    const CaptureLock held(kDevice, CaptureLock::kSynchronising);
    other_held.Notify();
  });
  const bool shared = other_held.WaitForNotificationWithTimeout(absl::Seconds(10));
  if (!shared) synchronising.Release();  // as above
  other.join();
  ASSERT_TRUE(shared);
  // A capture gets in while the holder waits, and not after.
  const bool captured_while_waiting = synchronising.WhileReleased([] {
    const CaptureLock capture(kDevice, CaptureLock::kCapture);
    return CapturesInProgress(kDevice) == 1;
  });
  EXPECT_TRUE(captured_while_waiting);
  absl::Notification captured;
  std::thread capture([&] {
    const CaptureLock held(kDevice, CaptureLock::kCapture);
    captured.Notify();
  });
  EXPECT_FALSE(captured.WaitForNotificationWithTimeout(kBlocked));
  synchronising.Release();
  capture.join();
  EXPECT_TRUE(captured.HasBeenNotified());
}

TEST(CaptureLockTest, MovedHoldIsReleasedOnce) {
  {
    CaptureLock first(kDevice, CaptureLock::kCapture);
    const CaptureLock second(std::move(first));
    EXPECT_EQ(CapturesInProgress(kDevice), 1);
  }
  EXPECT_EQ(CapturesInProgress(kDevice), 0);
}

}  // namespace
}  // namespace graphserve
