// GPU test, skipped without a GPU: a sticky CUDA error in a served model's
// slot (Note [CUDA faults in a served model] in server/graph_set_runner.h),
// injected as a real illegal-address fault (Note [Injected CUDA faults]).
// A test binary of its own: the fault loses the process's CUDA context, so
// nothing can run on the GPU after it.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "common/cuda_handles.h"
#include "common/lost_cuda_context.h"
#include "examples/example_models.h"
#include "runtime/onnx_import.h"
#include "server/graph_set_runner.h"

namespace graphserve {
namespace {

constexpr int64_t kBatch = 4;
constexpr int64_t kRows = 3;  // a part-filled chunk, as most are

std::atomic<int> handler_calls{0};
void CountCall() { handler_calls.fetch_add(1); }

// One request's kRows rows in host memory (zeros: no output is checked).
struct Request {
  std::vector<std::vector<std::byte>> buffers;
  RowShape shape;
  ChunkJob job;
};
std::unique_ptr<Request> MakeRequest(const GraphSet& set) {
  auto request = std::make_unique<Request>();
  request->buffers.reserve(set.num_inputs() + set.num_outputs());
  RowView segment;
  segment.rows = kRows;
  for (size_t i = 0; i < set.num_inputs(); ++i) {
    const size_t bytes = set.input_bytes_per_row(i, {kBatch});
    segment.inputs.push_back({request->buffers.emplace_back(bytes * kRows).data(), bytes});
  }
  for (size_t o = 0; o < set.num_outputs(); ++o) {
    const size_t bytes = set.output_bytes_per_row(o, {kBatch});
    segment.outputs.push_back({request->buffers.emplace_back(bytes * kRows).data(), bytes});
  }
  std::vector<size_t> input_bytes, output_bytes;
  for (size_t i = 0; i < set.num_inputs(); ++i) input_bytes.push_back(set.input_bytes_per_row(i, {kBatch}));
  for (size_t o = 0; o < set.num_outputs(); ++o) {
    output_bytes.push_back(set.output_bytes_per_row(o, {kBatch}));
  }
  request->shape = RowShapeOfBytes(input_bytes, output_bytes);
  segment.shape = &request->shape;
  request->job =
      ChunkJob{.key = {kBatch}, .shape = &request->shape, .rows = kRows, .segments = {segment}};
  return request;
}

// Start, then (if it started) Finish: what the chunk's requests are answered.
absl::Status RunChunk(GraphSetRunner& runner, int slot, const ChunkJob& job) {
  ChunkTiming timing;
  absl::Status status = runner.Start(slot, 0, job, &timing);
  if (status.ok()) status = runner.Finish(slot, 0, job, &timing);
  return status;
}

// The injected kernel faults on runner slot 0's stream: that chunk fails
// INTERNAL naming the lost context and CUDA's error, the loss is reported
// once (health and main react to the report: server/inference_protocol.cc,
// server/main.cc), and a chunk on the other slot fails too, since CUDA
// fails every call on a lost context.
TEST(GraphSetRunnerLostContextTest, IllegalAddressLosesTheContextAndIsReportedOnce) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  ResetLostCudaContextForTest();
  SetLostCudaContextHandler(&CountCall);
  absl::StatusOr<Model> model =
      ImportOnnxBytes(MakeDlrmDenseModel().SerializeAsString(), "dlrm_dense");
  ASSERT_TRUE(model.ok()) << model.status();
  GraphSetOptions set_options;
  set_options.graphs = {{kBatch}};
  set_options.num_streams = 2;
  absl::StatusOr<std::unique_ptr<GraphSet>> created = GraphSet::Create(*model, set_options);
  ASSERT_TRUE(created.ok()) << created.status();
  const std::shared_ptr<const GraphSet> set(*std::move(created));
  GraphSetRunnerOptions options;
  options.fault = {.kind = InjectedCudaFault::Kind::kIllegalAddress, .slot = 0};
  GraphSetRunner runner({set}, options);
  ASSERT_EQ(runner.num_slots(), 2);
  ASSERT_TRUE(runner.PrepareWorkerThread(0).ok());

  const std::unique_ptr<Request> first = MakeRequest(*set);
  const absl::Status failed = RunChunk(runner, 0, first->job);
  EXPECT_EQ(failed.code(), absl::StatusCode::kInternal) << failed;
  EXPECT_NE(failed.message().find("GPU 0, runner slot 0, batch 4"), absl::string_view::npos)
      << failed;
  EXPECT_NE(failed.message().find("CUDA context is lost (cudaErrorIllegalAddress"),
            absl::string_view::npos)
      << failed;
  EXPECT_TRUE(CudaContextLost());
  EXPECT_NE(LostCudaContextReason().find("GPU 0: "), std::string::npos)
      << LostCudaContextReason();
  EXPECT_EQ(handler_calls.load(), 1);

  const std::unique_ptr<Request> second = MakeRequest(*set);
  const absl::Status also_failed = RunChunk(runner, 1, second->job);
  EXPECT_EQ(also_failed.code(), absl::StatusCode::kInternal) << also_failed;
  EXPECT_NE(also_failed.message().find("cudaErrorIllegalAddress"), absl::string_view::npos)
      << also_failed;
  EXPECT_EQ(handler_calls.load(), 1);  // the process reacts once
}

}  // namespace
}  // namespace graphserve
