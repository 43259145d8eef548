#pragma once
// Threads that end RPCs, so that stream workers never write to sockets.
//
// Finishing a gRPC call from a thread of ours runs the response's
// serialisation and the socket write on that thread: on the H200 machine
// about 75 us per call (bench/results/2026-11-21_b44b661_serve), four
// times a small-batch replay. Done on a stream worker, it kept the slot and
// its GPU stream idle; handed to a responder, the worker takes its next
// chunk at once. Idle responders poll briefly before sleeping, so a quiet
// server pays no thread wake-up either.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"

namespace graphserve {

struct ResponderOptions {
  // Threads writing responses.
  int threads = 4;
  // How long an idle thread polls for work before it sleeps.
  std::chrono::microseconds idle_spin{50};
};

class Responder {
 public:
  explicit Responder(const ResponderOptions& options);
  // Runs `finish` on a responder thread. After Stop, runs it on the caller.
  void Post(std::function<void()> finish);
  // Runs everything posted, then joins the threads. Idempotent; the
  // destructor calls it.
  void Stop();
  ~Responder();

  // Implementation details follow.
 private:
  void Loop();

  const ResponderOptions options_;
  std::mutex mu_;
  std::condition_variable work_available_;
  std::deque<std::function<void()>> work_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<size_t> pending_{0};  // work_.size(), polled without the lock
  // Teardown: Stop sets stopping_, wakes every thread and joins them; a
  // thread exits only when stopping_ is set and nothing is left to run.
  std::vector<std::thread> threads_;
};

}  // namespace graphserve
