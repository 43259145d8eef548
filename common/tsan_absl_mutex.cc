// Note [Abseil's mutexes under ThreadSanitizer]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Abseil's mutex.cc tells ThreadSanitizer what each absl::Mutex and
// absl::CondVar operation does (__tsan_mutex_pre_lock and the rest), but only
// when Abseil itself is built with -fsanitize=thread. Debian's
// libabsl_synchronization is not, so under --config=tsan those annotations
// are missing and TSan never sees the lock. Then two threads that take turns
// on a member under one absl::Mutex, without contention, look like a data
// race: without this file, 4 of the 35 server tests fail under --config=tsan
// (request_gate, responder, sequence_batcher, stream_pool), each on accesses
// under one mutex. With it TSan also checks the order absl::Mutex locks are
// taken in, as it does for std::mutex.
//
// So under --config=tsan only, every binary that links @system//:absl also
// links this file, which defines absl::Mutex's and absl::CondVar's locking
// functions itself. A definition in the executable takes precedence over the
// shared library's, both for GraphServe's calls and for calls from inside
// Debian's libraries (absl::Notification, ReleasableMutexLock::Release,
// gRPC's locks). Each one annotates as mutex.cc would, and calls Debian's
// function, which it finds with dlsym(RTLD_NEXT). In between, TSan ignores
// memory accesses, as it does inside any annotated lock function: a
// Condition that Await or LockWhen evaluates is not checked.
//
// Waits (CondVar::Wait*, Mutex::Await*) are annotated as made with the mutex
// held exclusively. GraphServe takes no reader locks; a wait under one would
// be reported by TSan as a bad unlock, not missed.
//
// Outside --config=tsan this file is not compiled.

#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/base/options.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

static_assert(ABSL_OPTION_USE_INLINE_NAMESPACE == 1,
              "the Itanium names below assume Abseil's inline namespace");

#define GRAPHSERVE_STRINGIFY_INNER(x) #x
#define GRAPHSERVE_STRINGIFY(x) GRAPHSERVE_STRINGIFY_INNER(x)

namespace {

// Debian's definition of absl::<inline namespace>::`rest` (the Itanium name's
// tail after the namespaces, e.g. "5Mutex4LockEv"), as a function taking the
// object first.
template <typename Function>
Function Real(const char* rest) {
  const char* inline_namespace = GRAPHSERVE_STRINGIFY(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string name = "_ZN4absl" + std::to_string(std::strlen(inline_namespace)) +
                           inline_namespace + rest;
  void* real = dlsym(RTLD_NEXT, name.c_str());
  if (real == nullptr) {
    std::fprintf(stderr, "tsan_absl_mutex: no %s after the executable (%s)\n", name.c_str(),
                 dlerror());
    std::abort();
  }
  return reinterpret_cast<Function>(real);
}

using MutexFunction = void (*)(absl::Mutex*);
using TryFunction = bool (*)(absl::Mutex*);
using WhenFunction = void (*)(absl::Mutex*, const absl::Condition&);
using WhenDeadlineFunction = bool (*)(absl::Mutex*, const absl::Condition&, absl::Time);

// For its lifetime, the real function takes `mu` (as a reader with
// __tsan_mutex_read_lock).
class Taking {
 public:
  Taking(absl::Mutex* mu, unsigned flags) : mu_(mu), flags_(flags) {
    __tsan_mutex_pre_lock(mu_, flags_);
  }
  ~Taking() { __tsan_mutex_post_lock(mu_, flags_, 0); }
  Taking(const Taking&) = delete;
  Taking& operator=(const Taking&) = delete;

 private:
  absl::Mutex* const mu_;
  const unsigned flags_;
};

// For its lifetime, the real function releases `mu`.
class Releasing {
 public:
  Releasing(absl::Mutex* mu, unsigned flags) : mu_(mu), flags_(flags) {
    __tsan_mutex_pre_unlock(mu_, flags_);
  }
  ~Releasing() { __tsan_mutex_post_unlock(mu_, flags_); }
  Releasing(const Releasing&) = delete;
  Releasing& operator=(const Releasing&) = delete;

 private:
  absl::Mutex* const mu_;
  const unsigned flags_;
};

// For its lifetime, the real function waits: releases `mu`, held
// exclusively, and takes it again.
class Waiting {
 public:
  explicit Waiting(absl::Mutex* mu) : mu_(mu) { __tsan_mutex_pre_unlock(mu_, 0); }
  ~Waiting() {
    __tsan_mutex_post_unlock(mu_, 0);
    __tsan_mutex_pre_lock(mu_, 0);
    __tsan_mutex_post_lock(mu_, 0, 0);
  }
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;

 private:
  absl::Mutex* const mu_;
};

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

// These are the lock functions themselves: what they acquire and release is
// Debian's business, not the analysis's.

ABSL_NO_THREAD_SAFETY_ANALYSIS Mutex::~Mutex() {
  static const MutexFunction real = Real<MutexFunction>("5MutexD1Ev");
  real(this);
  __tsan_mutex_destroy(this, __tsan_mutex_not_static);
}

ABSL_NO_THREAD_SAFETY_ANALYSIS void Mutex::Lock() {
  static const MutexFunction real = Real<MutexFunction>("5Mutex4LockEv");
  const Taking tsan(this, 0);
  real(this);
}

ABSL_NO_THREAD_SAFETY_ANALYSIS void Mutex::ReaderLock() {
  static const MutexFunction real = Real<MutexFunction>("5Mutex10ReaderLockEv");
  const Taking tsan(this, __tsan_mutex_read_lock);
  real(this);
}

ABSL_NO_THREAD_SAFETY_ANALYSIS bool Mutex::TryLock() {
  static const TryFunction real = Real<TryFunction>("5Mutex7TryLockEv");
  const unsigned flags = __tsan_mutex_try_lock;
  __tsan_mutex_pre_lock(this, flags);
  const bool locked = real(this);
  __tsan_mutex_post_lock(this, flags | (locked ? 0 : __tsan_mutex_try_lock_failed), 0);
  return locked;
}

ABSL_NO_THREAD_SAFETY_ANALYSIS bool Mutex::ReaderTryLock() {
  static const TryFunction real = Real<TryFunction>("5Mutex13ReaderTryLockEv");
  const unsigned flags = __tsan_mutex_read_lock | __tsan_mutex_try_lock;
  __tsan_mutex_pre_lock(this, flags);
  const bool locked = real(this);
  __tsan_mutex_post_lock(this, flags | (locked ? 0 : __tsan_mutex_try_lock_failed), 0);
  return locked;
}

ABSL_NO_THREAD_SAFETY_ANALYSIS void Mutex::Unlock() {
  static const MutexFunction real = Real<MutexFunction>("5Mutex6UnlockEv");
  const Releasing tsan(this, 0);
  real(this);
}

ABSL_NO_THREAD_SAFETY_ANALYSIS void Mutex::ReaderUnlock() {
  static const MutexFunction real = Real<MutexFunction>("5Mutex12ReaderUnlockEv");
  const Releasing tsan(this, __tsan_mutex_read_lock);
  real(this);
}

ABSL_NO_THREAD_SAFETY_ANALYSIS void Mutex::LockWhen(const Condition& cond) {
  static const WhenFunction real = Real<WhenFunction>("5Mutex8LockWhenERKNS0_9ConditionE");
  const Taking tsan(this, 0);
  real(this, cond);
}

ABSL_NO_THREAD_SAFETY_ANALYSIS void Mutex::ReaderLockWhen(const Condition& cond) {
  static const WhenFunction real = Real<WhenFunction>("5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  const Taking tsan(this, __tsan_mutex_read_lock);
  real(this, cond);
}

// The *WithTimeout forms are the *WithDeadline ones at Now() + timeout, as
// in mutex.cc (Debian's *WithTimeout call its *WithDeadline through the
// PLT, which would reach the definitions here and annotate twice). Both hold
// the lock when they return, whether or not the condition became true.
ABSL_NO_THREAD_SAFETY_ANALYSIS bool Mutex::LockWhenWithTimeout(const Condition& cond,
                                                               absl::Duration timeout) {
  return LockWhenWithDeadline(cond, absl::Now() + timeout);
}

ABSL_NO_THREAD_SAFETY_ANALYSIS bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond,
                                                                     absl::Duration timeout) {
  return ReaderLockWhenWithDeadline(cond, absl::Now() + timeout);
}

ABSL_NO_THREAD_SAFETY_ANALYSIS bool Mutex::LockWhenWithDeadline(const Condition& cond,
                                                                absl::Time deadline) {
  static const WhenDeadlineFunction real = Real<WhenDeadlineFunction>(
      "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  const Taking tsan(this, 0);
  return real(this, cond, deadline);
}

ABSL_NO_THREAD_SAFETY_ANALYSIS bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond,
                                                                      absl::Time deadline) {
  static const WhenDeadlineFunction real = Real<WhenDeadlineFunction>(
      "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  const Taking tsan(this, __tsan_mutex_read_lock);
  return real(this, cond, deadline);
}

ABSL_NO_THREAD_SAFETY_ANALYSIS void Mutex::Await(const Condition& cond) {
  static const WhenFunction real = Real<WhenFunction>("5Mutex5AwaitERKNS0_9ConditionE");
  const Waiting tsan(this);
  real(this, cond);
}

ABSL_NO_THREAD_SAFETY_ANALYSIS bool Mutex::AwaitWithTimeout(const Condition& cond,
                                                            absl::Duration timeout) {
  return AwaitWithDeadline(cond, absl::Now() + timeout);
}

ABSL_NO_THREAD_SAFETY_ANALYSIS bool Mutex::AwaitWithDeadline(const Condition& cond,
                                                             absl::Time deadline) {
  static const WhenDeadlineFunction real = Real<WhenDeadlineFunction>(
      "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  const Waiting tsan(this);
  return real(this, cond, deadline);
}

ABSL_NO_THREAD_SAFETY_ANALYSIS void CondVar::Wait(Mutex* mu) {
  using Function = void (*)(CondVar*, Mutex*);
  static const Function real = Real<Function>("7CondVar4WaitEPNS0_5MutexE");
  const Waiting tsan(mu);
  real(this, mu);
}

ABSL_NO_THREAD_SAFETY_ANALYSIS bool CondVar::WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
  return WaitWithDeadline(mu, absl::Now() + timeout);
}

ABSL_NO_THREAD_SAFETY_ANALYSIS bool CondVar::WaitWithDeadline(Mutex* mu, absl::Time deadline) {
  using Function = bool (*)(CondVar*, Mutex*, absl::Time);
  static const Function real =
      Real<Function>("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  const Waiting tsan(mu);
  return real(this, mu, deadline);
}

ABSL_NAMESPACE_END
}  // namespace absl
