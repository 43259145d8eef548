#pragma once
// Note [Callback queue keep-alive]
//
// gRPC 1.51 (Debian 12's) runs the C++ callback API, on Linux's epoll1
// poller, on one process-wide "callback alternative" completion queue and
// its thread pool. Every channel that makes a callback call, and every server
// with callback methods, holds a reference to it; when the last one goes,
// the queue is shut down and its threads joined, and the next user builds a
// new one. Tearing it down right after callback calls have run, then
// building it again, sometimes frees the old queue twice inside gRPC
// (AddressSanitizer: double-free in grpc_cq_internal_unref on one of its
// threads). Tests that start and stop a server and client per test case hit
// it: under AddressSanitizer, 1 run in 6 of client/load_generator_test, and 4
// runs in 5 of a loop of 40 servers and clients, each with a closed-loop load
// (callback_queue_keepalive_test). A process that holds one reference for its
// whole life never tears the queue down: the same loop then passed 32 runs
// of 32.

namespace graphserve {

// Takes that one reference, once per process, with a callback call on a
// channel that is never destroyed (to a Unix socket that does not exist, so
// the call fails at once without touching the network). Idempotent and
// thread-safe; cheap after the first call.
void KeepCallbackQueueAlive();

}  // namespace graphserve
