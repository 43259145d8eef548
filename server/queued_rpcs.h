#pragma once
// ModelInfer, ModelStreamInfer and ServerLive served from gRPC completion
// queues, each polled by a thread of ours.
//
// Note [Hot RPCs on completion queues]
// gRPC 1.51's callback API tops out well below its completion queues: on the
// H200 machine an empty RPC at 64 concurrent over 16 connections was answered
// 64-69k times a second by a callback server and 105-107k times by four
// queue threads, the load the same (bench/grpc_path_bench.cc, results in
// bench/results/2026-11-26_ffcd9bf_grpc_path_h200). At saturation the served
// models were bound by that ceiling (issue 13). So the RPCs that carry load
// go through queues: ModelInfer, its stream ModelStreamInfer (Note [Inference
// streams] in queued_rpcs.cc), and ServerLive, the empty RPC every served
// benchmark measures as its floor, which must take the same path. The others,
// rare and cheap, stay on the callback API (server/inference_service.h).
//
// Each queue has a few calls of each method asked for at a time. A call that
// arrives is handed to InferenceProtocol at once, and the next call is asked
// for; its answer (Finish) may come from any thread: this one when the
// request ran its chunk on the caller's thread (Note [Chunks on the caller's
// thread] in server/stream_pool.h), a responder otherwise. The call deletes
// itself when the queue returns its Finish, or when the queue refuses to ask
// (shutting down).
//
// A thread running a chunk takes no calls meanwhile: on the host executor a
// chunk takes milliseconds, and the calls behind it on its queue were
// accepted only after it (the SIGTERM drain test caught a burst refused
// that way). So a request runs its chunk on its thread only while another
// thread polls the same queue; otherwise it queues for the stream workers
// (StreamPool::QueueOnly). With one thread per queue no request runs on its
// RPC thread.
//
// Shutdown order (gRPC's): the server's Shutdown first, after which every
// call asked for comes back not ok, then every answer still owed (the
// responder's Stop), then Stop here, which shuts the queues and drains them
// (Note [Stopping the queues] in queued_rpcs.cc).

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "grpcpp/server_builder.h"
#include "server/inference_protocol.h"
#include "server/inference_service.h"

namespace graphserve {

// The turns a completion queue's threads take at running a request's chunk
// themselves: one fewer than its threads, so that one always polls; with one
// thread, none.
class InlineTurns {
 public:
  explicit InlineTurns(int threads);
  InlineTurns(const InlineTurns&) = delete;
  InlineTurns& operator=(const InlineTurns&) = delete;

  // Takes a turn if one is free.
  [[nodiscard]] bool Take();
  // Gives back a turn taken.
  void Return();

 private:
  std::atomic<int> turns_;
};

// Limits on ModelStreamInfer streams (Note [Inference streams] in
// queued_rpcs.cc).
struct StreamLimits {
  // Streams open on the server at once; one more is finished with
  // RESOURCE_EXHAUSTED as it opens (--grpc-max-open-streams).
  int max_open_streams = 4096;
  // Bytes of answers a stream may owe its client (written to the transport
  // but not yet taken, or waiting to be written) before it stops reading
  // requests (--grpc-max-stream-owed-bytes).
  int64_t max_owed_bytes = int64_t{64} << 20;
};

class QueuedRpcs {
 public:
  // Adds `queues` completion queues to `builder`, before its BuildAndStart,
  // each to be polled by `threads_per_queue` threads. Borrows `service` and
  // `protocol`, which must outlive Stop.
  QueuedRpcs(grpc::ServerBuilder* builder, InferenceService* service,
             const InferenceProtocol* protocol, int queues, int threads_per_queue,
             StreamLimits stream_limits = {});
  QueuedRpcs(const QueuedRpcs&) = delete;
  QueuedRpcs& operator=(const QueuedRpcs&) = delete;

  // After the server started: asks for the first calls, starts the threads.
  void Start();
  // After the drain, before the server's Shutdown: ends every ModelStreamInfer
  // stream with UNAVAILABLE once it owes no answer, and every one opened from
  // now on, instead of leaving them to be cancelled.
  void EndStreams();
  // After the server's Shutdown and every answer owed: shuts the queues down,
  // deletes the calls still asked for, joins the threads. Idempotent; the
  // destructor calls it.
  void Stop();
  ~QueuedRpcs();

  // Implementation details follow.
  struct Queue;
  class OpenStreams;

 private:
  InferenceService* const service_;
  const InferenceProtocol* const protocol_;
  const int threads_per_queue_;
  const StreamLimits stream_limits_;
  std::vector<std::unique_ptr<Queue>> queues_;
  const std::unique_ptr<OpenStreams> streams_;
  std::vector<std::thread> threads_;
  bool stopped_ = false;
};

}  // namespace graphserve
