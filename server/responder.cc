#include "server/responder.h"

#include <algorithm>
#include <utility>

#include "common/thread_name.h"

namespace graphserve {

namespace {

thread_local bool finish_on_this_thread = false;

}  // namespace

Responder::OwnThread::OwnThread() : outer_(finish_on_this_thread) {
  finish_on_this_thread = true;
}

Responder::OwnThread::~OwnThread() { finish_on_this_thread = outer_; }

Responder::Responder(const ResponderOptions& options) : options_(options) {
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    threads_.emplace_back([this] {
      NameThisThread("gs-responder");
      Loop();
    });
  }
}

Responder::~Responder() { Stop(); }

void Responder::Post(std::function<void()> finish) {
  if (finish_on_this_thread) {
    finish();
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      work_.push_back(std::move(finish));
      pending_.store(work_.size(), std::memory_order_release);
      finish = nullptr;
    }
  }
  if (finish != nullptr) {
    finish();  // stopped: nobody else will run it
    return;
  }
  work_available_.Signal();
}

void Responder::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  work_available_.SignalAll();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

void Responder::Loop() {
  while (true) {
    const auto spin_end = std::chrono::steady_clock::now() + options_.idle_spin;
    while (pending_.load(std::memory_order_acquire) == 0 &&
           std::chrono::steady_clock::now() < spin_end) {
    }
    std::function<void()> finish;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && work_.empty()) work_available_.Wait(&mu_);
      if (work_.empty()) return;
      finish = std::move(work_.front());
      work_.pop_front();
      pending_.store(work_.size(), std::memory_order_release);
    }
    finish();
  }
}

}  // namespace graphserve
