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

}  // namespace
}  // namespace graphserve
