#include "server/request_gate.h"

#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace graphserve {
namespace {

TEST(RequestGate, ClosedGateRefusesAndWaitsForRequestsInside) {
  RequestGate gate;
  ASSERT_TRUE(gate.Enter());
  ASSERT_TRUE(gate.Enter());
  gate.Close();
  EXPECT_FALSE(gate.Enter());
  EXPECT_EQ(gate.in_flight(), 2);
  EXPECT_FALSE(gate.WaitIdle(std::chrono::milliseconds(10)));  // two still inside
  std::thread leaver([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gate.Leave();
    gate.Leave();
  });
  EXPECT_TRUE(gate.WaitIdle(std::chrono::seconds(10)));
  leaver.join();
  EXPECT_EQ(gate.in_flight(), 0);
}

TEST(RequestGate, IdleGateWaitsForNothing) {
  RequestGate gate;
  gate.Close();
  EXPECT_TRUE(gate.WaitIdle(std::chrono::seconds(0)));
}

TEST(RequestGate, WaitQuietLastsUntilRefusalsStop) {
  using std::chrono::milliseconds;
  RequestGate gate;
  gate.Close();
  std::thread knocker([&] {
    for (int i = 0; i < 5; ++i) {
      EXPECT_FALSE(gate.Enter());
      std::this_thread::sleep_for(milliseconds(20));
    }
  });
  const auto start = std::chrono::steady_clock::now();
  gate.WaitQuiet(milliseconds(50), std::chrono::seconds(5));
  const auto waited = std::chrono::steady_clock::now() - start;
  knocker.join();
  EXPECT_GE(waited, milliseconds(80 + 50));  // the last refusal, then quiet
  EXPECT_LT(waited, std::chrono::seconds(5));

  const auto again = std::chrono::steady_clock::now();
  gate.WaitQuiet(milliseconds(10), milliseconds(30));  // already quiet
  EXPECT_LT(std::chrono::steady_clock::now() - again, milliseconds(30));
}

TEST(RequestGate, WaitHandedWaitsForRequestsNotYetQueued) {
  using std::chrono::milliseconds;
  RequestGate gate;
  ASSERT_TRUE(gate.Enter());
  gate.Close();
  EXPECT_FALSE(gate.WaitHanded(milliseconds(10)));  // entered, not handed yet
  std::thread handler([&] {
    std::this_thread::sleep_for(milliseconds(20));
    gate.Handed();
  });
  EXPECT_TRUE(gate.WaitHanded(std::chrono::seconds(5)));
  handler.join();
  EXPECT_EQ(gate.in_flight(), 1);  // handed, still running until Leave
  gate.Leave();
  EXPECT_TRUE(gate.WaitIdle(milliseconds(1)));
}

}  // namespace
}  // namespace graphserve
