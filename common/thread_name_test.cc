#include "common/thread_name.h"

#include <pthread.h>

#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace graphserve {
namespace {

std::string NameOfThisThread() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
}

TEST(NameThisThread, NamesTheCallingThreadOnly) {
  const std::string before = NameOfThisThread();
  std::string named;
  std::thread([&] {
    NameThisThread("gs-stream");
    named = NameOfThisThread();
  }).join();
  EXPECT_EQ(named, "gs-stream");
  EXPECT_EQ(NameOfThisThread(), before);
}

TEST(NameThisThread, CutsNamesToFifteenCharacters) {
  std::string named;
  std::thread([&] {
    NameThisThread("gs-a-name-longer-than-the-kernel-keeps");
    named = NameOfThisThread();
  }).join();
  EXPECT_EQ(named, "gs-a-name-longe");
}

}  // namespace
}  // namespace graphserve
