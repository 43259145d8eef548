#include "server/responder.h"

#include <atomic>
#include <set>
#include <thread>

#include "gtest/gtest.h"

namespace graphserve {
namespace {

TEST(Responder, RunsEverythingPostedOffTheCallersThread) {
  std::atomic<int> ran{0};
  std::atomic<int> on_caller{0};
  const std::thread::id caller = std::this_thread::get_id();
  {
    Responder responder({2, std::chrono::microseconds(10)});
    for (int i = 0; i < 100; ++i) {
      responder.Post([&] {
        if (std::this_thread::get_id() == caller) ++on_caller;
        ++ran;
      });
    }
    responder.Stop();
    EXPECT_EQ(ran.load(), 100);  // Stop runs everything posted before it
  }
  EXPECT_EQ(on_caller.load(), 0);
}

TEST(Responder, AfterStopPostRunsOnTheCaller) {
  Responder responder({1, std::chrono::microseconds(0)});
  responder.Stop();
  bool ran = false;
  responder.Post([&] { ran = true; });
  EXPECT_TRUE(ran);
}

// An RPC's own thread finishes what it posts itself inside an OwnThread
// scope, and only there.
TEST(Responder, OwnThreadScopeRunsPostsOnTheCaller) {
  Responder responder({1, std::chrono::microseconds(0)});
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id inside, nested, after;
  {
    const Responder::OwnThread scope;
    responder.Post([&] { inside = std::this_thread::get_id(); });
    {
      const Responder::OwnThread inner;
    }
    responder.Post([&] { nested = std::this_thread::get_id(); });
  }
  responder.Post([&] { after = std::this_thread::get_id(); });
  responder.Stop();
  EXPECT_EQ(inside, caller);
  EXPECT_EQ(nested, caller);  // the inner scope's end kept the outer one
  EXPECT_NE(after, caller);
}

}  // namespace
}  // namespace graphserve
