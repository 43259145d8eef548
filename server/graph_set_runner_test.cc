// GPU tests of GraphSetRunner's chunks of requests whose tensors lie in
// pageable or pinned host memory or on the device (Notes [Pinned shared
// memory] and [CUDA shared memory] in server/shared_memory.h): every way the
// rows can reach the graph gives the host reference executor's outputs for
// those rows. They skip without a GPU.
#include "server/graph_set_runner.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cuda_handles.h"
#include "common/lost_cuda_context.h"
#include "examples/example_models.h"
#include "runtime/bind.h"
#include "runtime/host/host_executor.h"
#include "runtime/onnx_import.h"

namespace graphserve {
namespace {

constexpr int64_t kBatch = 16;
// Input rows for a test's runs, enough that no two runs of a test share a
// row: an output the runner leaves from an earlier run then never matches
// the reference of the rows asked for.
constexpr int64_t kInputRows = 4 * kBatch;
constexpr double kTolerance = 1e-5;  // float32 GPU against the float64-accumulating host

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

// dlrm_dense (two inputs, one output) on one slot at batch size 16, random
// rows for it, and the host reference executor's outputs for those rows.
class GraphSetRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    absl::StatusOr<Model> model =
        ImportOnnxBytes(MakeDlrmDenseModel().SerializeAsString(), "dlrm_dense");
    ASSERT_TRUE(model.ok()) << model.status();
    GraphSetOptions options;
    options.graphs = {{kBatch}};
    absl::StatusOr<std::unique_ptr<GraphSet>> set = GraphSet::Create(*model, options);
    ASSERT_TRUE(set.ok()) << set.status();
    set_ = std::shared_ptr<const GraphSet>(*std::move(set));
    runner_ = std::make_unique<GraphSetRunner>(std::vector<std::shared_ptr<const GraphSet>>{set_});
    ASSERT_TRUE(runner_->PrepareWorkerThread(0).ok());
    std::vector<size_t> input_bytes, output_bytes;
    for (size_t i = 0; i < set_->num_inputs(); ++i) {
      input_bytes.push_back(set_->input_bytes_per_row(i, {kBatch}));
    }
    for (size_t o = 0; o < set_->num_outputs(); ++o) {
      output_bytes.push_back(set_->output_bytes_per_row(o, {kBatch}));
    }
    shape_ = RowShapeOfBytes(input_bytes, output_bytes);
    for (size_t i = 0; i < set_->num_inputs(); ++i) {
      Dims dims = model->inputs[i].dims;
      dims[0] = kInputRows;
      rows_.push_back(RandomTensor(model->inputs[i].dtype, dims, 30 + i));
    }
    // The model mixes no rows (GraphSet::Create checked it), so the
    // reference of rows [first, first + n) is rows [first, first + n) of the
    // reference of all the rows.
    BindOptions bind;
    bind.batch_size = kInputRows;
    absl::StatusOr<BoundGraph> graph = BindModel(*model, bind);
    ASSERT_TRUE(graph.ok()) << graph.status();
    absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(*std::move(graph));
    ASSERT_TRUE(host.ok()) << host.status();
    absl::StatusOr<std::vector<HostTensor>> reference = (*host)->Run(rows_);
    ASSERT_TRUE(reference.ok()) << reference.status();
    reference_ = *std::move(reference);
    ASSERT_EQ(reference_.size(), set_->num_outputs());
  }

  // One request's `rows` rows from row `first` of rows_, its inputs and its
  // output room in `memory` (input 0 in `first_input`, when given); the
  // buffers live in the request.
  struct Request {
    RowView segment;
    std::vector<PinnedHostBuffer> pinned;
    std::vector<DeviceBuffer> device;
    std::vector<std::vector<std::byte>> host;
  };
  std::unique_ptr<Request> MakeRequest(int64_t first, int64_t rows, Memory memory,
                                       std::optional<Memory> first_input = std::nullopt) const {
    auto request = std::make_unique<Request>();
    request->segment.rows = rows;
    request->segment.shape = &shape_;
    for (size_t i = 0; i < set_->num_inputs(); ++i) {
      const Memory input_memory = i == 0 && first_input.has_value() ? *first_input : memory;
      const size_t row_bytes = set_->input_bytes_per_row(i, {kBatch});
      const std::byte* from = static_cast<const std::byte*>(rows_[i].raw()) + first * row_bytes;
      const size_t bytes = row_bytes * static_cast<size_t>(rows);
      void* to = nullptr;
      RowMemory kind = RowMemory::kPageable;
      switch (input_memory) {
        case Memory::kHost:
          to = request->host.emplace_back(bytes).data();
          break;
        case Memory::kPinned: {
          absl::StatusOr<PinnedHostBuffer> buffer = PinnedHostBuffer::Allocate(bytes);
          EXPECT_TRUE(buffer.ok()) << buffer.status();
          to = request->pinned.emplace_back(*std::move(buffer)).get();
          kind = RowMemory::kPinned;
          break;
        }
        case Memory::kDevice: {
          absl::StatusOr<DeviceBuffer> buffer = DeviceBuffer::Allocate(bytes);
          EXPECT_TRUE(buffer.ok()) << buffer.status();
          to = request->device.emplace_back(*std::move(buffer)).get();
          kind = RowMemory::kDevice;
          break;
        }
      }
      if (input_memory == Memory::kDevice) {
        EXPECT_EQ(cudaMemcpy(to, from, bytes, cudaMemcpyHostToDevice), cudaSuccess);
      } else {
        std::memcpy(to, from, bytes);
      }
      request->segment.inputs.push_back({static_cast<const std::byte*>(to), row_bytes, kind});
    }
    for (size_t o = 0; o < set_->num_outputs(); ++o) {
      const size_t row_bytes = set_->output_bytes_per_row(o, {kBatch});
      const size_t bytes = row_bytes * static_cast<size_t>(rows);
      std::byte* to = nullptr;
      RowMemory kind = RowMemory::kPageable;
      if (memory == Memory::kPinned) {
        absl::StatusOr<PinnedHostBuffer> buffer = PinnedHostBuffer::Allocate(bytes);
        EXPECT_TRUE(buffer.ok()) << buffer.status();
        to = static_cast<std::byte*>(request->pinned.emplace_back(*std::move(buffer)).get());
        kind = RowMemory::kPinned;
      } else if (memory == Memory::kDevice) {
        // A guard row past the request's rows: a write beyond them shows.
        absl::StatusOr<DeviceBuffer> buffer =
            DeviceBuffer::Allocate(bytes + set_->output_bytes_per_row(o, {kBatch}));
        EXPECT_TRUE(buffer.ok()) << buffer.status();
        to = static_cast<std::byte*>(request->device.emplace_back(*std::move(buffer)).get());
        kind = RowMemory::kDevice;
      } else {
        to = request->host.emplace_back(bytes).data();
      }
      // Rows the runner leaves unwritten stay 0xFF bytes: NaN as float32,
      // which no reference matches.
      if (memory == Memory::kDevice) {
        EXPECT_EQ(cudaMemset(to, 0xFF, bytes + set_->output_bytes_per_row(o, {kBatch})), cudaSuccess);
      } else {
        std::memset(to, 0xFF, bytes);
      }
      request->segment.outputs.push_back({to, row_bytes, kind});
    }
    return request;
  }

  // The requests' rows as one chunk of batch size 16.
  ChunkJob Job(const std::vector<Request*>& requests) const {
    ChunkJob job{.key = {kBatch}, .shape = &shape_};
    for (const Request* request : requests) {
      job.segments.push_back(request->segment);
      job.rows += request->segment.rows;
    }
    return job;
  }

  // Runs the requests' rows as one chunk through staging buffer `staging`
  // of slot 0 of `runner` (runner_ by default).
  void Run(const std::vector<Request*>& requests, int staging,
           GraphSetRunner* runner = nullptr) const {
    if (runner == nullptr) runner = runner_.get();
    const ChunkJob job = Job(requests);
    ChunkTiming timing;
    const absl::Status started = runner->Start(0, staging, job, &timing);
    ASSERT_TRUE(started.ok()) << started;
    const absl::Status finished = runner->Finish(0, staging, job, &timing);
    ASSERT_TRUE(finished.ok()) << finished;
  }

  // Output `output`'s bytes of a request, read back from the device if it is
  // there (with `guard`, the guard row after a device output's rows instead).
  std::string Output(const Request& request, size_t output = 0, bool guard = false) const {
    const size_t row_bytes = set_->output_bytes_per_row(output, {kBatch});
    std::string bytes(guard ? row_bytes : row_bytes * static_cast<size_t>(request.segment.rows),
                      '\0');
    const OutputRows& rows = request.segment.outputs[output];
    const std::byte* from = guard ? rows.row(request.segment.rows) : rows.data;
    if (rows.memory == RowMemory::kDevice) {
      EXPECT_EQ(cudaMemcpy(bytes.data(), from, bytes.size(), cudaMemcpyDeviceToHost),
                cudaSuccess);
    } else {
      std::memcpy(bytes.data(), from, bytes.size());
    }
    return bytes;
  }

  // Every output of a request made from rows [first, first + its rows) of
  // rows_ against the host reference of those rows.
  void ExpectReference(const Request& request, int64_t first, const std::string& what) const {
    for (size_t o = 0; o < set_->num_outputs(); ++o) {
      const HostTensor& all = reference_[o];
      const size_t row_bytes = all.bytes() / kInputRows;
      ASSERT_EQ(row_bytes, set_->output_bytes_per_row(o, {kBatch}));
      Dims dims = all.dims();
      dims[0] = request.segment.rows;
      HostTensor want(all.dtype(), dims);
      std::memcpy(want.raw(), static_cast<const std::byte*>(all.raw()) + first * row_bytes,
                  want.bytes());
      HostTensor got(all.dtype(), dims);
      const std::string bytes = Output(request, o);
      ASSERT_EQ(bytes.size(), got.bytes());
      std::memcpy(got.raw(), bytes.data(), bytes.size());
      EXPECT_LT(RelativeError(got, want), kTolerance)
          << what << ": output " << o << ", rows " << first << "+" << request.segment.rows;
    }
  }

  // The guard row after a device request's output rows, as MakeRequest left it.
  std::string UntouchedGuard() const { return std::string(set_->output_bytes_per_row(0, {kBatch}), '\xFF'); }

  std::shared_ptr<const GraphSet> set_;
  std::unique_ptr<GraphSetRunner> runner_;
  std::vector<HostTensor> rows_;       // kInputRows rows of each input
  std::vector<HostTensor> reference_;  // the host executor's outputs for rows_
  RowShape shape_;  // every request's rows, and the graph's: bytes alone
};

// A chunk of one request's rows, 5 of 16 (the rest padding): wherever its
// tensors are (a device request's output written in place, device to
// device), the outputs are the reference's; also with its inputs split
// between device and host memory, or device and pinned. Each run takes rows
// of its own.
TEST_F(GraphSetRunnerTest, OneRequestsChunkGivesTheReferenceOutputs) {
  int64_t first = 0;
  for (const Memory memory : {Memory::kHost, Memory::kPinned, Memory::kDevice}) {
    const std::unique_ptr<Request> request = MakeRequest(first, 5, memory);
    Run({request.get()}, memory == Memory::kHost ? 0 : 1);
    ExpectReference(*request, first, Name(memory));
    if (memory == Memory::kDevice) {
      EXPECT_EQ(Output(*request, /*output=*/0, /*guard=*/true), UntouchedGuard())
          << "written past 5 rows";
    }
    first += 5;
  }
  for (const Memory others : {Memory::kHost, Memory::kPinned}) {
    const std::unique_ptr<Request> mixed = MakeRequest(first, 5, others, Memory::kDevice);
    Run({mixed.get()}, 0);
    ExpectReference(*mixed, first,
                    std::string("input 0 on the device, the other ") + Name(others));
    first += 5;
  }
}

// A merged chunk: requests' rows one after the other, in each kind of
// memory (host and pinned rows gathered through staging, device rows copied
// device to device at their row, in and out), each request given the
// reference outputs of its own rows.
TEST_F(GraphSetRunnerTest, MergedChunkGathersEveryKindOfMemory) {
  const std::unique_ptr<Request> pinned = MakeRequest(0, 4, Memory::kPinned);
  const std::unique_ptr<Request> device = MakeRequest(4, 5, Memory::kDevice);
  const std::unique_ptr<Request> host = MakeRequest(9, 3, Memory::kHost);
  Run({pinned.get(), device.get(), host.get()}, 1);
  ExpectReference(*pinned, 0, "pinned, rows 0-3 of the chunk");
  ExpectReference(*device, 4, "device, rows 4-8 of the chunk");
  EXPECT_EQ(Output(*device, /*output=*/0, /*guard=*/true), UntouchedGuard())
      << "written past its rows";
  ExpectReference(*host, 9, "host, rows 9-11 of the chunk");

  // Device rows first (the padding rows copy row 0), then a request with only
  // input 0 on the device; rows not used above.
  const std::unique_ptr<Request> first = MakeRequest(12, 5, Memory::kDevice);
  const std::unique_ptr<Request> mixed = MakeRequest(17, 4, Memory::kHost, Memory::kDevice);
  const std::unique_ptr<Request> last = MakeRequest(21, 3, Memory::kPinned);
  Run({first.get(), mixed.get(), last.get()}, 0);
  ExpectReference(*first, 12, "device, rows 0-4 of the chunk");
  EXPECT_EQ(Output(*first, /*output=*/0, /*guard=*/true), UntouchedGuard())
      << "written past its rows";
  ExpectReference(*mixed, 17, "input 0 on the device, rows 5-8 of the chunk");
  ExpectReference(*last, 21, "pinned, rows 9-11 of the chunk");
}

// A device request split into chunks (as the stream pool splits one larger
// than a chunk): each chunk's segment points into the request's memory at
// its first row, and each writes its rows there, device to device.
TEST_F(GraphSetRunnerTest, SplitDeviceRequestWritesEachChunkAtItsRows) {
  const std::unique_ptr<Request> device = MakeRequest(0, 10, Memory::kDevice);
  for (const auto& [first, rows] : {std::pair<int64_t, int64_t>{0, 6}, {6, 4}}) {
    Request part;
    part.segment = device->segment.Rows(first, rows);
    Run({&part}, 0);
  }
  ExpectReference(*device, 0, "device request in two chunks");
  EXPECT_EQ(Output(*device, /*output=*/0, /*guard=*/true), UntouchedGuard())
      << "written past 10 rows";
}

// Note [Pitched row copies]: requests shorter than the bucket, merged into
// one chunk of masked_sequence at 4 x 32 with their tensors in each kind of
// memory (pageable rows packed in staging, pinned and device rows where they
// are, all placed and padded by the device, outputs sliced the same ways;
// or x padded by the host where its pad is no repeated byte), each get the
// host reference's outputs at their own length, and the same bytes wherever
// their rows lay.
TEST(GraphSetRunnerPaddedTest, ShorterRowsInEveryMemoryGiveTheirExactLengthsOutputs) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  absl::StatusOr<Model> model =
      ImportOnnxBytes(MakeMaskedSequenceModel().SerializeAsString(), "masked_sequence");
  ASSERT_TRUE(model.ok()) << model.status();
  const GraphKey key{4, {32}};
  GraphSetOptions options;
  options.graphs = {key};
  absl::StatusOr<std::unique_ptr<GraphSet>> created = GraphSet::Create(*model, options);
  ASSERT_TRUE(created.ok()) << created.status();
  const std::shared_ptr<const GraphSet> set(*std::move(created));
  GraphSetRunner runner({set});
  ASSERT_TRUE(runner.PrepareWorkerThread(0).ok());
  const auto shape_at = [](int64_t length) {
    RowShape shape{.extents = {length},
                   .inputs = {TensorRowOf({length, 16}, sizeof(float)),
                              TensorRowOf({length}, sizeof(int64_t))},
                   .outputs = {TensorRowOf({length, 16}, sizeof(float))}};
    return shape;
  };
  RowShape bucket = shape_at(32);

  // One request: `rows` rows of `length`, its x random, its mask all 1, its
  // tensors in `memory`, and the host reference's y at its length.
  struct Request {
    RowShape shape;
    RowView view;
    HostTensor x, mask, want;
    std::vector<PinnedHostBuffer> pinned;
    std::vector<DeviceBuffer> device;
    std::vector<std::byte> out;  // pageable y
    std::string Output() const {
      const OutputRows& y = view.outputs[0];
      std::string bytes(static_cast<size_t>(view.rows) * y.pitch, '\0');
      if (y.memory == RowMemory::kDevice) {
        EXPECT_EQ(cudaMemcpy(bytes.data(), y.data, bytes.size(), cudaMemcpyDeviceToHost),
                  cudaSuccess);
      } else {
        std::memcpy(bytes.data(), y.data, bytes.size());
      }
      return bytes;
    }
  };
  const auto make_request = [&](int64_t rows, int64_t length, RowMemory memory, uint64_t seed) {
    auto request = std::make_unique<Request>();
    request->shape = shape_at(length);
    request->x = RandomTensor(DType::kFloat32, {rows, length, 16}, seed);
    request->mask = HostTensor(DType::kInt64, {rows, length});
    for (int64_t e = 0; e < rows * length; ++e) request->mask.data<int64_t>()[e] = 1;
    BindOptions bind;
    bind.batch_size = rows;
    bind.dim_values = {{"sequence", length}};
    request->want =
        (*(*HostExecutor::Create(*BindModel(*model, bind)))->Run({request->x, request->mask}))[0];
    RowView& view = request->view;
    view.rows = rows;
    view.shape = &request->shape;
    const auto place = [&](const HostTensor& tensor) -> const std::byte* {
      if (memory == RowMemory::kPageable) return static_cast<const std::byte*>(tensor.raw());
      if (memory == RowMemory::kPinned) {
        void* to = request->pinned.emplace_back(*PinnedHostBuffer::Allocate(tensor.bytes())).get();
        std::memcpy(to, tensor.raw(), tensor.bytes());
        return static_cast<std::byte*>(to);
      }
      void* to = request->device.emplace_back(*DeviceBuffer::Allocate(tensor.bytes())).get();
      EXPECT_EQ(cudaMemcpy(to, tensor.raw(), tensor.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
      return static_cast<std::byte*>(to);
    };
    for (const HostTensor* input : {&request->x, &request->mask}) {
      view.inputs.push_back({place(*input), input->bytes() / static_cast<size_t>(rows), memory});
    }
    std::byte* y = nullptr;
    const size_t y_bytes = request->want.bytes();
    if (memory == RowMemory::kPageable) {
      request->out.resize(y_bytes);
      y = request->out.data();
    } else if (memory == RowMemory::kPinned) {
      y = static_cast<std::byte*>(
          request->pinned.emplace_back(*PinnedHostBuffer::Allocate(y_bytes)).get());
    } else {
      y = static_cast<std::byte*>(
          request->device.emplace_back(*DeviceBuffer::Allocate(y_bytes)).get());
    }
    view.outputs.push_back({y, y_bytes / static_cast<size_t>(rows), memory});
    return request;
  };

  // Three requests of 1 + 2 + 1 rows at lengths 20, 9 and 32, merged; with
  // x padded with 0.0 (a repeated byte: the device pads every row that is
  // short), and with 1.0 (bytes 00 00 80 3F: the host pads x's, in staging,
  // for pageable and pinned rows alike). The mask hides either pad.
  const std::vector<std::pair<int64_t, int64_t>> requests = {{1, 20}, {2, 9}, {1, 32}};
  PadElement one{};
  const float one_value = 1.0f;
  std::memcpy(one.data(), &one_value, sizeof(one_value));
  for (const PadElement& x_pad : {PadElement{}, one}) {
    bucket.input_pad = {x_pad, PadElement{}};
    const bool device_pads_x = RepeatedByte(x_pad, sizeof(float)).has_value();
    std::vector<std::string> first_bytes;
    for (const RowMemory memory : {RowMemory::kPageable, RowMemory::kPinned, RowMemory::kDevice}) {
      // Device memory the device cannot pad is read through the host
      // (DevicePadsRows): never handed to the runner.
      if (memory == RowMemory::kDevice && !device_pads_x) continue;
      const std::string what = absl::StrCat("x pad ", device_pads_x ? "0.0" : "1.0", ", memory ",
                                            static_cast<int>(memory));
      std::vector<std::unique_ptr<Request>> made;
      ChunkJob job{.key = key, .shape = &bucket};
      for (size_t r = 0; r < requests.size(); ++r) {
        made.push_back(make_request(requests[r].first, requests[r].second, memory, 50 + r));
        job.segments.push_back(made.back()->view);
        job.rows += requests[r].first;
      }
      ChunkTiming timing;
      const absl::Status started = runner.Start(0, 0, job, &timing);
      ASSERT_TRUE(started.ok()) << what << ": " << started;
      const absl::Status finished = runner.Finish(0, 0, job, &timing);
      ASSERT_TRUE(finished.ok()) << what << ": " << finished;
      for (size_t r = 0; r < made.size(); ++r) {
        const std::string bytes = made[r]->Output();
        HostTensor got(DType::kFloat32, made[r]->want.dims());
        ASSERT_EQ(bytes.size(), got.bytes());
        std::memcpy(got.raw(), bytes.data(), bytes.size());
        EXPECT_LT(RelativeError(got, made[r]->want), kTolerance)
            << what << ": request " << r << " (length " << requests[r].second << ")";
        if (memory == RowMemory::kPageable) {
          first_bytes.push_back(bytes);
        } else {
          EXPECT_EQ(bytes, first_bytes[r]) << what << ": request " << r << " against pageable";
        }
      }
    }
  }
}

// A runner on one GPU reads device inputs from, and writes device outputs
// into, that GPU's memory.
TEST_F(GraphSetRunnerTest, DeviceTensorsLieOnTheSetsGpu) {
  EXPECT_EQ(runner_->DeviceMemoryGpu(), std::optional<int>(0));
}

// The set knows its GPU and its profiler ranges' names, made at capture
// (common/nvtx.h): the model, the size and the slot.
TEST_F(GraphSetRunnerTest, SetKnowsItsDeviceAndNamesItsRanges) {
  EXPECT_EQ(set_->device(), 0);
  EXPECT_EQ(runner_->device(0), 0);
  const GraphSet::ProfilerRanges& ranges = set_->profiler_ranges(0, {kBatch});
  EXPECT_EQ(ranges.stage, "dlrm_dense b16 slot 0 stage");
  EXPECT_EQ(ranges.h2d, "dlrm_dense b16 slot 0 h2d");
  EXPECT_EQ(ranges.launch, "dlrm_dense b16 slot 0 launch");
  EXPECT_EQ(ranges.d2h, "dlrm_dense b16 slot 0 d2h");
  EXPECT_EQ(ranges.complete, "dlrm_dense b16 slot 0 complete");
  EXPECT_EQ(set_->profiler_ranges(0, {kBatch + 1}).launch, "chunk launch");  // not captured
}

// Runner slots take the GPUs in turn (Note [Runner slots alternate GPUs]), so
// the first idle slot of a quiet server lies on each GPU in turn. Each set
// says its own GPU (Note [Graphs own their device]); only the mapping is
// read, nothing runs.
TEST_F(GraphSetRunnerTest, SlotsTakeTheGpusInTurnOnTwoGpus) {
  if (CudaDeviceCount() < 2) GTEST_SKIP() << "needs two CUDA devices";
  absl::StatusOr<Model> model =
      ImportOnnxBytes(MakeDlrmDenseModel().SerializeAsString(), "dlrm_dense");
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<std::shared_ptr<const GraphSet>> sets;
  for (const int device : {0, 1}) {
    GraphSetOptions options;
    options.graphs = {{kBatch}};
    options.num_streams = 2;
    options.executor.device = device;
    absl::StatusOr<std::unique_ptr<GraphSet>> set = GraphSet::Create(*model, options);
    ASSERT_TRUE(set.ok()) << set.status();
    EXPECT_EQ((*set)->device(), device);
    sets.push_back(*std::move(set));
  }
  const GraphSetRunner runner(sets);
  ASSERT_EQ(runner.num_slots(), 4);
  EXPECT_EQ(runner.device(0), 0);
  EXPECT_EQ(runner.device(1), 1);
  EXPECT_EQ(runner.device(2), 0);
  EXPECT_EQ(runner.device(3), 1);
  EXPECT_EQ(runner.DeviceMemoryGpu(), std::nullopt);  // across GPUs: none
}

// The set owns its device (Note [Graphs own their device]): a chunk runs
// from a thread whose current device was never set to the set's, and the
// thread's device is left as it was.
TEST_F(GraphSetRunnerTest, LaunchSetsTheSetsDeviceAndRestoresTheCallers) {
  const int other = CudaDeviceCount() - 1;  // device 0 itself on a one-GPU machine
  ASSERT_EQ(cudaSetDevice(other), cudaSuccess);
  const std::unique_ptr<Request> request = MakeRequest(0, 5, Memory::kHost);
  Run({request.get()}, 0);
  ExpectReference(*request, 0, "launched from a thread on GPU " + std::to_string(other));
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, other);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

// Note [CUDA faults in a served model]: a failed launch (not sticky,
// injected as Note [Injected CUDA faults] says) fails only its chunk,
// INTERNAL with the GPU, the slot, the size and CUDA's error named; the
// chunks before and after it on the same slot give the reference outputs,
// and no context is reported lost.
TEST_F(GraphSetRunnerTest, FailedLaunchFailsOnlyItsChunkAndTheSlotServesOn) {
  ResetLostCudaContextForTest();
  GraphSetRunnerOptions options;
  options.fault = {.kind = InjectedCudaFault::Kind::kFailedLaunch, .slot = 0, .after_chunks = 1};
  GraphSetRunner runner({set_}, options);
  ASSERT_TRUE(runner.PrepareWorkerThread(0).ok());

  const std::unique_ptr<Request> before = MakeRequest(0, 5, Memory::kHost);
  Run({before.get()}, 0, &runner);
  ExpectReference(*before, 0, "the chunk before the fault");

  const std::unique_ptr<Request> failed = MakeRequest(5, 5, Memory::kPinned);
  const ChunkJob job = Job({failed.get()});
  ChunkTiming timing;
  const absl::Status status = runner.Start(0, 1, job, &timing);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
  EXPECT_NE(status.message().find("GPU 0, runner slot 0, batch 16"), absl::string_view::npos)
      << status;
  EXPECT_NE(status.message().find("cudaErrorLaunchOutOfResources"), absl::string_view::npos)
      << status;
  EXPECT_FALSE(CudaContextLost());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // nothing left for the next chunk

  // The slot serves on, through either staging buffer; the fault fired once.
  for (int staging = 0; staging < kStagingBuffers; ++staging) {
    const int64_t first = 10 + 5 * staging;
    const std::unique_ptr<Request> after = MakeRequest(first, 5, Memory::kHost);
    Run({after.get()}, staging, &runner);
    ExpectReference(*after, first, "a chunk after the fault");
  }
  EXPECT_FALSE(CudaContextLost());
}

}  // namespace
}  // namespace graphserve
