#include "common/thread_name.h"

#include <pthread.h>

#include <string>

namespace graphserve {

void NameThisThread(std::string_view name) {
  constexpr size_t kMaxLength = 15;  // the kernel's TASK_COMM_LEN less its NUL
  const std::string cut(name.substr(0, kMaxLength));
  // Best effort: a name is for people reading tools, never for the program.
  pthread_setname_np(pthread_self(), cut.c_str());
}

}  // namespace graphserve
