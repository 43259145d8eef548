#include "server/response_order.h"

#include <vector>

#include "gtest/gtest.h"

namespace graphserve {
namespace {

TEST(ResponseOrder, LaterRequestsWaitForEarlierOnes) {
  ResponseOrder order;
  const uint64_t a = order.Accept(), b = order.Accept(), c = order.Accept();
  std::vector<char> answered;
  order.Finish(c, [&] { answered.push_back('c'); });
  order.Finish(b, [&] { answered.push_back('b'); });
  EXPECT_TRUE(answered.empty());
  order.Finish(a, [&] { answered.push_back('a'); });
  EXPECT_EQ(answered, (std::vector<char>{'a', 'b', 'c'}));
  const uint64_t d = order.Accept();
  order.Finish(d, [&] { answered.push_back('d'); });
  EXPECT_EQ(answered.back(), 'd');
}

TEST(ResponseOrder, AnEmptyAnswerReleasesTheRequestsBehindIt) {
  ResponseOrder order;
  const uint64_t refused = order.Accept(), next = order.Accept();
  bool answered = false;
  order.Finish(next, [&] { answered = true; });
  order.Finish(refused, [] {});
  EXPECT_TRUE(answered);
}

}  // namespace
}  // namespace graphserve
