#include "server/queued_rpcs.h"

#include <gtest/gtest.h>

namespace graphserve {
namespace {

// Note [Hot RPCs on completion queues]: a request runs its chunk on its RPC
// thread only while another thread keeps polling the same queue.

TEST(InlineTurns, WithOneThreadPerQueueNoRequestRunsOnItsRpcThread) {
  InlineTurns turns(1);
  EXPECT_FALSE(turns.Take());
}

TEST(InlineTurns, AllButOneThreadMayRunAChunkAtOnce) {
  InlineTurns turns(3);
  EXPECT_TRUE(turns.Take());
  EXPECT_TRUE(turns.Take());
  EXPECT_FALSE(turns.Take());  // the third thread keeps polling
  turns.Return();
  EXPECT_TRUE(turns.Take());
  EXPECT_FALSE(turns.Take());
}

}  // namespace
}  // namespace graphserve
