#pragma once
// Threads that end RPCs, so that stream workers never write to sockets.
//
// Finishing a gRPC call from a thread of ours runs the response's
// serialisation and the socket write on that thread: on the H200 machine
// about 75 us per call (bench/results/2026-11-21_b44b661_serve), four
// times a small-batch replay. Done on a stream worker, it kept the slot and
// its GPU stream idle; handed to a responder, the worker takes its next
// chunk at once. Idle responders can poll before sleeping (--idle-spin-us;
// none by default, Note [Idle polling off by default] in
// server/served_model.h), so that a quiet server pays no thread wake-up.
//
// An RPC's own thread is different: when it ran its request's chunk itself
// (Note [Chunks on the caller's thread] in server/stream_pool.h) it holds no
// slot any more once the chunk is done, and handing the finish to a
// responder would only add a wake-up. Inside an OwnThread scope, Post runs
// the finish at once.

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace graphserve {

struct ResponderOptions {
  // Threads writing responses.
  int threads = 4;
  // How long an idle thread polls for work before it sleeps (none by
  // default: Note [Idle polling off by default] in server/served_model.h).
  std::chrono::microseconds idle_spin{0};
};

class Responder {
 public:
  explicit Responder(const ResponderOptions& options);
  // While one is alive, Post on this thread runs `finish` at once. Scopes
  // nest; the RPC handler that accepted a request opens one around it.
  class OwnThread {
   public:
    OwnThread();
    OwnThread(const OwnThread&) = delete;
    OwnThread& operator=(const OwnThread&) = delete;
    ~OwnThread();

   private:
    const bool outer_;
  };

  // Runs `finish` on a responder thread; on the caller inside an OwnThread
  // scope or after Stop.
  void Post(std::function<void()> finish);
  // Runs everything posted, then joins the threads. Idempotent; the
  // destructor calls it.
  void Stop();
  ~Responder();

  // Implementation details follow.
 private:
  void Loop();

  const ResponderOptions options_;
  absl::Mutex mu_;
  absl::CondVar work_available_;
  std::deque<std::function<void()>> work_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<size_t> pending_{0};  // work_.size(), polled without the lock
  // Teardown: Stop sets stopping_, wakes every thread and joins them; a
  // thread exits only when stopping_ is set and nothing is left to run.
  std::vector<std::thread> threads_;
};

}  // namespace graphserve
