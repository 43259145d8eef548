// GPU tests of GraphSetRunner's chunks of requests whose tensors lie in
// pinned host memory or on the device (Notes [Pinned shared memory] and
// [CUDA shared memory] in server/shared_memory.h): every way the rows can
// reach the graph gives the outputs of the plain host path, bit for bit.
// They skip without a GPU.
#include "server/graph_set_runner.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/cuda_handles.h"
#include "examples/example_models.h"
#include "runtime/onnx_import.h"

namespace graphserve {
namespace {

constexpr int64_t kBatch = 16;

// Where a request's tensors live.
enum class Memory { kHost, kPinned, kDevice };

const char* Name(Memory memory) {
  switch (memory) {
    case Memory::kHost: return "host";
    case Memory::kPinned: return "pinned";
    case Memory::kDevice: return "device";
  }
  return "?";
}

// dlrm_dense (two inputs, one output) on one slot at batch size 16, and
// random rows for it.
class GraphSetRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    absl::StatusOr<Model> model =
        ImportOnnxBytes(MakeDlrmDenseModel().SerializeAsString(), "dlrm_dense");
    ASSERT_TRUE(model.ok()) << model.status();
    GraphSetOptions options;
    options.batch_sizes = {kBatch};
    absl::StatusOr<std::unique_ptr<GraphSet>> set = GraphSet::Create(*model, options);
    ASSERT_TRUE(set.ok()) << set.status();
    set_ = std::shared_ptr<const GraphSet>(*std::move(set));
    runner_ = std::make_unique<GraphSetRunner>(
        std::vector<GraphSetRunner::Placement>{{set_, 0}}, LaunchMode::kGraph);
    ASSERT_TRUE(runner_->PrepareWorkerThread(0).ok());
    for (size_t i = 0; i < set_->num_inputs(); ++i) {
      Dims dims = model->inputs[i].dims;
      dims[0] = kBatch;
      rows_.push_back(RandomTensor(model->inputs[i].dtype, dims, 30 + i));
    }
  }

  // One request's `rows` rows from row `first` of rows_, its inputs and its
  // output room in `memory` (input 0 in `first_input`, when given); the
  // buffers live in the request.
  struct Request {
    SegmentRows segment;
    std::vector<PinnedHostBuffer> pinned;
    std::vector<DeviceBuffer> device;
    std::vector<std::vector<std::byte>> host;
  };
  std::unique_ptr<Request> MakeRequest(int64_t first, int64_t rows, Memory memory,
                                       std::optional<Memory> first_input = std::nullopt) const {
    auto request = std::make_unique<Request>();
    request->segment.rows = rows;
    for (size_t i = 0; i < set_->num_inputs(); ++i) {
      const Memory input_memory = i == 0 && first_input.has_value() ? *first_input : memory;
      const size_t row_bytes = set_->input_bytes_per_row(i);
      const std::byte* from = static_cast<const std::byte*>(rows_[i].raw()) + first * row_bytes;
      const size_t bytes = row_bytes * static_cast<size_t>(rows);
      void* to = nullptr;
      switch (input_memory) {
        case Memory::kHost:
          to = request->host.emplace_back(bytes).data();
          break;
        case Memory::kPinned: {
          absl::StatusOr<PinnedHostBuffer> buffer = PinnedHostBuffer::Allocate(bytes);
          EXPECT_TRUE(buffer.ok()) << buffer.status();
          to = request->pinned.emplace_back(*std::move(buffer)).get();
          request->segment.pinned_inputs |= MaskBit(i);
          break;
        }
        case Memory::kDevice: {
          absl::StatusOr<DeviceBuffer> buffer = DeviceBuffer::Allocate(bytes);
          EXPECT_TRUE(buffer.ok()) << buffer.status();
          to = request->device.emplace_back(*std::move(buffer)).get();
          request->segment.device_inputs |= MaskBit(i);
          break;
        }
      }
      if (input_memory == Memory::kDevice) {
        EXPECT_EQ(cudaMemcpy(to, from, bytes, cudaMemcpyHostToDevice), cudaSuccess);
      } else {
        std::memcpy(to, from, bytes);
      }
      request->segment.inputs.push_back(static_cast<const std::byte*>(to));
    }
    for (size_t o = 0; o < set_->num_outputs(); ++o) {
      const size_t bytes = set_->output_bytes_per_row(o) * static_cast<size_t>(rows);
      std::byte* to = nullptr;
      if (memory == Memory::kPinned) {
        absl::StatusOr<PinnedHostBuffer> buffer = PinnedHostBuffer::Allocate(bytes);
        EXPECT_TRUE(buffer.ok()) << buffer.status();
        to = static_cast<std::byte*>(request->pinned.emplace_back(*std::move(buffer)).get());
        request->segment.pinned_outputs |= MaskBit(o);
      } else if (memory == Memory::kDevice) {
        // A guard row past the request's rows: a write beyond them shows.
        absl::StatusOr<DeviceBuffer> buffer =
            DeviceBuffer::Allocate(bytes + set_->output_bytes_per_row(o));
        EXPECT_TRUE(buffer.ok()) << buffer.status();
        to = static_cast<std::byte*>(request->device.emplace_back(*std::move(buffer)).get());
        request->segment.device_outputs |= MaskBit(o);
      } else {
        to = request->host.emplace_back(bytes).data();
      }
      // Rows the runner leaves unwritten show as 0xFF bytes.
      if (memory == Memory::kDevice) {
        EXPECT_EQ(cudaMemset(to, 0xFF, bytes + set_->output_bytes_per_row(o)), cudaSuccess);
      } else {
        std::memset(to, 0xFF, bytes);
      }
      request->segment.outputs.push_back(to);
    }
    return request;
  }

  // Runs the requests' rows as one chunk of batch size 16 through staging
  // buffer `staging`.
  void Run(const std::vector<Request*>& requests, int staging) const {
    ChunkJob job{.batch_size = kBatch};
    for (const Request* request : requests) {
      job.segments.push_back(request->segment);
      job.rows += request->segment.rows;
    }
    ChunkTiming timing;
    ASSERT_TRUE(runner_->Start(0, staging, job, &timing).ok());
    ASSERT_TRUE(runner_->Finish(0, staging, job, &timing).ok());
  }

  // Output 0's bytes of a request, read back from the device if it is there
  // (with `guard`, the guard row after a device output's rows instead).
  std::string Output(const Request& request, bool guard = false) const {
    const size_t row_bytes = set_->output_bytes_per_row(0);
    std::string bytes(guard ? row_bytes : row_bytes * static_cast<size_t>(request.segment.rows),
                      '\0');
    const std::byte* from =
        request.segment.outputs[0] + (guard ? row_bytes * request.segment.rows : 0);
    if (InMask(request.segment.device_outputs, 0)) {
      EXPECT_EQ(cudaMemcpy(bytes.data(), from, bytes.size(), cudaMemcpyDeviceToHost),
                cudaSuccess);
    } else {
      std::memcpy(bytes.data(), from, bytes.size());
    }
    return bytes;
  }

  // The guard row after a device request's output rows, as MakeRequest left it.
  std::string UntouchedGuard() const { return std::string(set_->output_bytes_per_row(0), '\xFF'); }

  std::shared_ptr<const GraphSet> set_;
  std::unique_ptr<GraphSetRunner> runner_;
  std::vector<HostTensor> rows_;
};

// A chunk of one request's rows, 5 of 16 (the rest padding): wherever its
// tensors are (a device request's output written in place, device to
// device), the outputs are those of the host path; also with its inputs
// split between device and host memory, or device and pinned.
TEST_F(GraphSetRunnerTest, OneRequestsChunkGivesTheHostPathsOutputs) {
  const std::unique_ptr<Request> host = MakeRequest(0, 5, Memory::kHost);
  Run({host.get()}, 0);
  for (const Memory memory : {Memory::kPinned, Memory::kDevice}) {
    const std::unique_ptr<Request> request = MakeRequest(0, 5, memory);
    Run({request.get()}, 1);
    EXPECT_EQ(Output(*request), Output(*host)) << Name(memory);
    if (memory == Memory::kDevice) {
      EXPECT_EQ(Output(*request, /*guard=*/true), UntouchedGuard()) << "written past 5 rows";
    }
  }
  for (const Memory others : {Memory::kHost, Memory::kPinned}) {
    const std::unique_ptr<Request> mixed = MakeRequest(0, 5, others, Memory::kDevice);
    Run({mixed.get()}, 0);
    EXPECT_EQ(Output(*mixed), Output(*host))
        << "input 0 on the device, the other " << Name(others);
  }
}

// A merged chunk: requests' rows one after the other, in each kind of
// memory (host and pinned rows gathered through staging, device rows copied
// device to device at their row, in and out), give what the same rows give
// as one host request.
TEST_F(GraphSetRunnerTest, MergedChunkGathersEveryKindOfMemory) {
  const std::unique_ptr<Request> whole = MakeRequest(0, 12, Memory::kHost);
  Run({whole.get()}, 0);
  const std::unique_ptr<Request> pinned = MakeRequest(0, 4, Memory::kPinned);
  const std::unique_ptr<Request> device = MakeRequest(4, 5, Memory::kDevice);
  const std::unique_ptr<Request> host = MakeRequest(9, 3, Memory::kHost);
  Run({pinned.get(), device.get(), host.get()}, 1);
  const std::string want = Output(*whole);
  const size_t row_bytes = set_->output_bytes_per_row(0);
  EXPECT_EQ(Output(*pinned), want.substr(0, 4 * row_bytes));
  EXPECT_EQ(Output(*device), want.substr(4 * row_bytes, 5 * row_bytes));
  EXPECT_EQ(Output(*device, /*guard=*/true), UntouchedGuard()) << "written past its rows";
  EXPECT_EQ(Output(*host), want.substr(9 * row_bytes, 3 * row_bytes));

  // Device rows first (the padding rows copy row 0), then a request with only
  // input 0 on the device.
  const std::unique_ptr<Request> first = MakeRequest(0, 5, Memory::kDevice);
  const std::unique_ptr<Request> mixed = MakeRequest(5, 4, Memory::kHost, Memory::kDevice);
  const std::unique_ptr<Request> last = MakeRequest(9, 3, Memory::kPinned);
  Run({first.get(), mixed.get(), last.get()}, 0);
  EXPECT_EQ(Output(*first), want.substr(0, 5 * row_bytes));
  EXPECT_EQ(Output(*first, /*guard=*/true), UntouchedGuard()) << "written past its rows";
  EXPECT_EQ(Output(*mixed), want.substr(5 * row_bytes, 4 * row_bytes));
  EXPECT_EQ(Output(*last), want.substr(9 * row_bytes, 3 * row_bytes));
}

// A device request split into chunks (as the stream pool splits one larger
// than a chunk): each chunk's segment points into the request's memory at
// its first row, and each writes its rows there, device to device.
TEST_F(GraphSetRunnerTest, SplitDeviceRequestWritesEachChunkAtItsRows) {
  const std::unique_ptr<Request> whole = MakeRequest(0, 10, Memory::kHost);
  Run({whole.get()}, 0);
  const std::unique_ptr<Request> device = MakeRequest(0, 10, Memory::kDevice);
  const size_t out_row = set_->output_bytes_per_row(0);
  for (const auto& [first, rows] : {std::pair<int64_t, int64_t>{0, 6}, {6, 4}}) {
    Request part;
    part.segment = device->segment;
    part.segment.rows = rows;
    for (size_t i = 0; i < set_->num_inputs(); ++i) {
      part.segment.inputs[i] += first * set_->input_bytes_per_row(i);
    }
    part.segment.outputs[0] += first * out_row;
    Run({&part}, 0);
  }
  EXPECT_EQ(Output(*device), Output(*whole));
  EXPECT_EQ(Output(*device, /*guard=*/true), UntouchedGuard()) << "written past 10 rows";
}

// A runner on one GPU reads device inputs from, and writes device outputs
// into, that GPU's memory.
TEST_F(GraphSetRunnerTest, DeviceTensorsLieOnTheSetsGpu) {
  EXPECT_EQ(runner_->DeviceMemoryGpu(), std::optional<int>(0));
}

// Runner slots take the GPUs in turn (Note [Runner slots alternate GPUs]), so
// the first idle slot of a quiet server lies on each GPU in turn. The two
// placements share one two-slot set here, labelled as GPUs 0 and 1: only the
// mapping is read, nothing runs.
TEST_F(GraphSetRunnerTest, SlotsTakeTheGpusInTurn) {
  absl::StatusOr<Model> model =
      ImportOnnxBytes(MakeDlrmDenseModel().SerializeAsString(), "dlrm_dense");
  ASSERT_TRUE(model.ok()) << model.status();
  GraphSetOptions options;
  options.batch_sizes = {kBatch};
  options.num_streams = 2;
  absl::StatusOr<std::unique_ptr<GraphSet>> set = GraphSet::Create(*model, options);
  ASSERT_TRUE(set.ok()) << set.status();
  const std::shared_ptr<const GraphSet> two_slots(*std::move(set));
  const GraphSetRunner runner({{two_slots, 0}, {two_slots, 1}}, LaunchMode::kGraph);
  ASSERT_EQ(runner.num_slots(), 4);
  EXPECT_EQ(runner.device(0), 0);
  EXPECT_EQ(runner.device(1), 1);
  EXPECT_EQ(runner.device(2), 0);
  EXPECT_EQ(runner.device(3), 1);
  EXPECT_EQ(runner.DeviceMemoryGpu(), std::nullopt);  // across GPUs: none
}

}  // namespace
}  // namespace graphserve
