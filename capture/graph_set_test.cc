// GPU tests of the graph set: capture of real models on several slots and
// sizes, replays against the host reference executor, padding independence,
// rejection of a model that mixes rows. They skip without a GPU.
#include "capture/graph_set.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "capture/reference_plans.h"
#include "common/cuda_handles.h"
#include "common/gpu_wait_testing.h"
#include "common/status.h"
#include "examples/example_models.h"
#include "runtime/bind.h"
#include "runtime/host/host_executor.h"
#include "runtime/onnx_import.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

constexpr double kTolerance = 1e-5;  // float32 GPU against the float64-accumulating host

Model Import(const onnx::ModelProto& proto, const std::string& name) {
  absl::StatusOr<Model> model = ImportOnnxBytes(proto.SerializeAsString(), name);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// The host reference on `rows` rows.
std::vector<HostTensor> Reference(const Model& model, const std::vector<HostTensor>& inputs,
                                  int64_t rows) {
  BindOptions options;
  options.batch_size = rows;
  std::unique_ptr<HostExecutor> host = *HostExecutor::Create(*BindModel(model, options));
  return *host->Run(inputs);
}

// The outputs of `chunk`, once done, shaped like `reference`.
std::vector<HostTensor> Outputs(const GraphSet& set, const LaunchChunk& chunk,
                                const std::vector<HostTensor>& reference) {
  std::vector<HostTensor> outputs;
  for (size_t i = 0; i < reference.size(); ++i) {
    HostTensor& out = outputs.emplace_back(reference[i].dtype(), reference[i].dims());
    std::memcpy(out.raw(), set.output_rows(chunk.slot, i, chunk.staging), out.bytes());
  }
  return outputs;
}

// Runs `rows` rows through `set` on `slot` at captured size `batch` and
// returns the outputs, shaped like `reference`.
std::vector<HostTensor> Launch(const GraphSet& set, const LaunchChunk& chunk,
                               const std::vector<HostTensor>& inputs,
                               const std::vector<HostTensor>& reference) {
  std::vector<const void*> pointers;
  for (const HostTensor& input : inputs) pointers.push_back(input.raw());
  const absl::Status status = set.Launch(chunk, pointers);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(cudaEventSynchronize(set.done_event(chunk.slot, chunk.staging)), cudaSuccess);
  return Outputs(set, chunk, reference);
}

std::vector<HostTensor> RandomRows(const Model& model, int64_t rows, uint64_t seed) {
  std::vector<HostTensor> inputs;
  for (const auto& input : model.inputs) {
    Dims dims = input.dims;
    dims[0] = rows;
    inputs.push_back(RandomTensor(input.dtype, dims, seed++));
  }
  return inputs;
}

// Where the mapped copy of tensor `name` lies among the set's inputs or
// outputs (a mapping names the interface tensor it copies).
size_t InputIndex(const GraphSet& set, const std::string& name) {
  for (size_t i = 0; i < set.num_inputs(); ++i) {
    if (set.input_name(i) == name) return i;
  }
  ADD_FAILURE() << "a mapping names '" << name << "', no input of the set";
  return 0;
}
size_t OutputIndex(const GraphSet& set, const std::string& name) {
  for (size_t i = 0; i < set.num_outputs(); ++i) {
    if (set.output_name(i) == name) return i;
  }
  ADD_FAILURE() << "a mapping names '" << name << "', no output of the set";
  return 0;
}

struct ModelCase {
  const char* name;
  onnx::ModelProto (*make)(uint64_t);
};

class GraphSetModelTest : public ::testing::TestWithParam<ModelCase> {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(GraphSetModelTest, EveryReplayMatchesTheHostReference) {
  const Model model = Import(GetParam().make(kExampleModelSeed), GetParam().name);
  GraphSetOptions options;
  options.num_streams = 2;
  options.graphs = BatchOnlyKeys({8, 1, 3});  // any order; captured largest first
  std::vector<CaptureProgress> progress;
  options.on_progress = [&](const CaptureProgress& p) { progress.push_back(p); };
  absl::StatusOr<std::unique_ptr<GraphSet>> set = GraphSet::Create(model, options);
  ASSERT_TRUE(set.ok()) << set.status();
  const GraphSet& graphs = **set;
  EXPECT_EQ(graphs.keys(), BatchOnlyKeys({1, 3, 8}));
  ASSERT_EQ(progress.size(), 6u);
  EXPECT_EQ(progress[0].key.batch_size, 8);  // largest first
  EXPECT_EQ(progress.back().graphs_done, 6);

  // Every (slot, size, rows) against the host executor on exactly those rows.
  for (int slot = 0; slot < 2; ++slot) {
    for (const GraphKey& key : graphs.keys()) {
      const int64_t batch = key.batch_size;
      const CapturedGraphInfo& info = graphs.graph_info(slot, key);
      EXPECT_EQ(info.transfers.inputs.size(), model.inputs.size());
      EXPECT_EQ(info.transfers.outputs.size(), model.outputs.size());
      EXPECT_LE(info.check_rel_err, options.tolerance);
      for (int64_t rows : {int64_t{1}, batch}) {
        const std::vector<HostTensor> inputs = RandomRows(model, rows, 100 * batch + rows);
        const std::vector<HostTensor> want = Reference(model, inputs, rows);
        for (LaunchMode mode : {LaunchMode::kGraph, LaunchMode::kEager}) {
          const std::vector<HostTensor> got =
              Launch(graphs, {slot, {batch}, rows, mode}, inputs, want);
          for (size_t i = 0; i < want.size(); ++i) {
            EXPECT_LT(RelativeError(got[i], want[i]), kTolerance)
                << "slot " << slot << " batch " << batch << " rows " << rows << " output " << i
                << (mode == LaunchMode::kGraph ? " graph" : " eager");
          }
        }
      }
    }
  }
}

// Note [Double-buffered staging]: a chunk launched through staging buffer 1
// while the chunk of buffer 0 is still queued runs after it on the slot's
// stream; each reads its own rows and writes its own outputs.
TEST_P(GraphSetModelTest, ChunksOnBothStagingBuffersRunBackToBack) {
  const Model model = Import(GetParam().make(kExampleModelSeed), GetParam().name);
  GraphSetOptions options;
  options.graphs = BatchOnlyKeys({4, 16});
  std::unique_ptr<GraphSet> set = *GraphSet::Create(model, options);
  for (int round = 0; round < 3; ++round) {
    const LaunchChunk first{0, {16}, 11, LaunchMode::kGraph, round % 2};
    const LaunchChunk second{0, {4}, 3, LaunchMode::kGraph, 1 - round % 2};
    const std::vector<HostTensor> first_in = RandomRows(model, 11, 10 + round);
    const std::vector<HostTensor> second_in = RandomRows(model, 3, 20 + round);
    for (const auto& [chunk, inputs] : {std::pair{first, &first_in}, {second, &second_in}}) {
      std::vector<const void*> pointers;
      for (const HostTensor& input : *inputs) pointers.push_back(input.raw());
      ASSERT_TRUE(set->Launch(chunk, pointers).ok());
    }
    // Waited for in launch order, as the stream pool does.
    for (const auto& [chunk, inputs] : {std::pair{first, &first_in}, {second, &second_in}}) {
      ASSERT_EQ(cudaEventSynchronize(set->done_event(0, chunk.staging)), cudaSuccess);
      const std::vector<HostTensor> want = Reference(model, *inputs, chunk.rows);
      const std::vector<HostTensor> got = Outputs(*set, chunk, want);
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_LT(RelativeError(got[i], want[i]), kTolerance)
            << "round " << round << " staging " << chunk.staging << " output " << i;
      }
    }
  }
}

// Note [Padding rows from a valid row]: Launch overwrites rows [r, B) of
// every device input with copies of row 0, so two Launches of the same real
// rows see the same padding whatever ran before them. To vary the padding,
// the test writes all B rows of each graph input itself (the real rows, then
// padding of its choosing) and replays the bare graph, as the capture check
// does (Note [Checking a captured graph] in capture/graph_set.cc): the
// padding Launch serves, random rows, and NaN with huge values. The real
// rows' outputs must be bit-identical across the three and match the host
// reference. Every replay's outputs are poisoned with NaN first, so one that
// wrote nothing cannot pass on the previous replay's outputs.
TEST_P(GraphSetModelTest, RealRowsDoNotDependOnThePadding) {
  const Model model = Import(GetParam().make(kExampleModelSeed), GetParam().name);
  constexpr int64_t kBatch = 16;
  constexpr int64_t kRows = 5;  // 11 padding rows
  GraphSetOptions options;
  options.graphs = BatchOnlyKeys({kBatch});
  std::unique_ptr<GraphSet> set = *GraphSet::Create(model, options);
  const std::vector<HostTensor> real = RandomRows(model, kRows, 1);
  const std::vector<HostTensor> want = Reference(model, real, kRows);
  const std::vector<HostTensor> served =
      Launch(*set, {0, {kBatch}, kRows, LaunchMode::kGraph}, real, want);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_LT(RelativeError(served[i], want[i]), kTolerance) << "served padding, output " << i;
  }

  const TransferPlan& transfers = set->graph_info(0, {kBatch}).transfers;
  cudaStream_t stream = set->stream(0);
  // The real rows, then rows [kRows, kBatch) of `padding`, for each input.
  const auto replay_with_padding = [&](const std::vector<HostTensor>& padding) {
    std::vector<HostTensor> rows = padding;
    for (size_t i = 0; i < rows.size(); ++i) {
      std::memcpy(rows[i].raw(), real[i].raw(), real[i].bytes());
    }
    for (const InputMapping& mapping : transfers.inputs) {
      const size_t i = InputIndex(*set, mapping.name);
      EXPECT_EQ(mapping.bytes, rows[i].bytes()) << mapping.name << ": all " << kBatch << " rows";
      EXPECT_EQ(cudaMemcpyAsync(mapping.device_dst, rows[i].raw(),
                                std::min(mapping.bytes, rows[i].bytes()), cudaMemcpyHostToDevice,
                                stream),
                cudaSuccess);
    }
    for (const OutputMapping& mapping : transfers.outputs) {
      EXPECT_EQ(cudaMemsetAsync(const_cast<void*>(mapping.device_src), 0xFF, mapping.bytes, stream),
                cudaSuccess);  // all-ones: NaN as float32
    }
    EXPECT_EQ(cudaGraphLaunch(set->graph_exec(0, {kBatch}), stream), cudaSuccess);
    std::vector<HostTensor> outputs;
    for (const HostTensor& w : want) outputs.emplace_back(w.dtype(), w.dims());
    for (const OutputMapping& mapping : transfers.outputs) {
      HostTensor& out = outputs[OutputIndex(*set, mapping.name)];
      const size_t bytes = static_cast<size_t>(kRows) * mapping.bytes_per_row;
      EXPECT_EQ(bytes, out.bytes()) << mapping.name << ": the real rows";
      EXPECT_EQ(cudaMemcpyAsync(out.raw(), mapping.device_src, std::min(bytes, out.bytes()),
                                cudaMemcpyDeviceToHost, stream),
                cudaSuccess);
    }
    // `rows` and `outputs` are pageable and local: wait before they go.
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    return outputs;
  };

  std::vector<HostTensor> row_0 = RandomRows(model, kBatch, 2);  // what Launch serves
  std::vector<HostTensor> nan_and_huge = RandomRows(model, kBatch, 3);
  for (size_t i = 0; i < row_0.size(); ++i) {
    const size_t row_bytes = real[i].bytes() / kRows;
    auto* rows = static_cast<std::byte*>(row_0[i].raw());
    for (int64_t row = kRows; row < kBatch; ++row) {
      std::memcpy(rows + row * row_bytes, real[i].raw(), row_bytes);
    }
    ASSERT_EQ(nan_and_huge[i].dtype(), DType::kFloat32) << "NaN padding needs float inputs";
    float* values = nan_and_huge[i].data<float>();
    for (int64_t v = 0; v < nan_and_huge[i].num_elements(); ++v) {
      values[v] = v % 2 == 0 ? std::numeric_limits<float>::quiet_NaN() : 3e38f;
    }
  }
  const std::vector<HostTensor> random_padding = RandomRows(model, kBatch, 4);
  using Padding = std::pair<const std::vector<HostTensor>*, const char*>;
  for (const auto& [padding, label] : {Padding{&row_0, "copies of row 0"},
                                       Padding{&random_padding, "random rows"},
                                       Padding{&nan_and_huge, "NaN and 3e38"}}) {
    const std::vector<HostTensor> got = replay_with_padding(*padding);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].bytes(), served[i].bytes());
      EXPECT_EQ(std::memcmp(got[i].raw(), served[i].raw(), got[i].bytes()), 0)
          << "padding " << label << ", output " << i;
      EXPECT_LT(RelativeError(got[i], want[i]), kTolerance)
          << "padding " << label << ", output " << i;
    }
  }
}

// Note [Pinned shared memory]: rows copied to the device straight from pinned
// memory, and outputs straight into it, give what the staging path gives,
// bit for bit, padding included (5 real rows of 16), in both launch modes.
TEST_P(GraphSetModelTest, DirectCopiesFromPinnedMemoryMatchStaging) {
  const Model model = Import(GetParam().make(kExampleModelSeed), GetParam().name);
  GraphSetOptions options;
  options.graphs = BatchOnlyKeys({16});
  std::unique_ptr<GraphSet> set = *GraphSet::Create(model, options);
  constexpr int64_t kRows = 5;
  const std::vector<HostTensor> real = RandomRows(model, kRows, 7);
  const std::vector<HostTensor> want = Reference(model, real, kRows);
  for (const LaunchMode mode : {LaunchMode::kGraph, LaunchMode::kEager}) {
    const std::vector<HostTensor> staged = Launch(*set, {0, {16}, kRows, mode}, real, want);
    // The same rows in pinned buffers of their own, and pinned room for the
    // outputs, both named per tensor.
    std::vector<PinnedHostBuffer> buffers;
    std::vector<InputRows> sources;
    for (const HostTensor& input : real) {
      buffers.push_back(*PinnedHostBuffer::Allocate(input.bytes()));
      std::memcpy(buffers.back().get(), input.raw(), input.bytes());
      sources.push_back({static_cast<const std::byte*>(buffers.back().get()), input.bytes() / kRows,
                         RowMemory::kPinned});
    }
    std::vector<OutputRows> destinations;
    for (const HostTensor& output : want) {
      buffers.push_back(*PinnedHostBuffer::Allocate(output.bytes()));
      std::memset(buffers.back().get(), 0xFF, output.bytes());
      destinations.push_back({static_cast<std::byte*>(buffers.back().get()), output.bytes() / kRows,
                              RowMemory::kPinned});
    }
    const DirectRows all{0, kRows, sources, destinations};
    LaunchChunk chunk{0, {16}, kRows, mode, 1};
    chunk.direct = absl::MakeConstSpan(&all, 1);
    ASSERT_TRUE(set->Launch(chunk).ok());
    ASSERT_EQ(cudaEventSynchronize(set->done_event(0, 1)), cudaSuccess);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(staged[i].bytes(), want[i].bytes());
      EXPECT_EQ(std::memcmp(destinations[i].data, staged[i].raw(), staged[i].bytes()), 0)
          << "output " << i << (mode == LaunchMode::kGraph ? " (graph)" : " (eager)");
    }
  }
  // Mixed: input 0 and every output but the last through staging, the rest
  // direct; and of those, rows 2 and 3 direct, the others staged too. The
  // staged outputs come back in output_rows().
  std::vector<PinnedHostBuffer> buffers;
  std::vector<InputRows> sources(real.size());
  for (size_t i = 0; i < real.size(); ++i) {
    std::memcpy(set->input_staging(0, i, 0), real[i].raw(), real[i].bytes());
    if (i == 0) continue;
    buffers.push_back(*PinnedHostBuffer::Allocate(real[i].bytes()));
    std::memcpy(buffers.back().get(), real[i].raw(), real[i].bytes());
    // Staging's rows 2 and 3 are garbage: the direct rows must win.
    const size_t pitch = real[i].bytes() / kRows;
    std::memset(set->input_staging(0, i, 0) + 2 * pitch, 0x7F, 2 * pitch);
    sources[i] = {static_cast<const std::byte*>(buffers.back().get()) + 2 * pitch, pitch,
                  RowMemory::kPinned};
  }
  std::vector<OutputRows> destinations(want.size());
  buffers.push_back(*PinnedHostBuffer::Allocate(want.back().bytes()));
  const size_t last_pitch = want.back().bytes() / kRows;
  destinations.back() = {static_cast<std::byte*>(buffers.back().get()) + 2 * last_pitch, last_pitch,
                         RowMemory::kPinned};
  const DirectRows rows_2_3{2, 2, sources, destinations};
  LaunchChunk mixed{0, {16}, kRows, LaunchMode::kGraph, 0};
  mixed.direct = absl::MakeConstSpan(&rows_2_3, 1);
  ASSERT_TRUE(set->Launch(mixed).ok());
  ASSERT_EQ(cudaEventSynchronize(set->done_event(0, 0)), cudaSuccess);
  for (size_t o = 0; o < want.size(); ++o) {
    const size_t pitch = want[o].bytes() / kRows;
    HostTensor out(want[o].dtype(), want[o].dims());
    std::memcpy(out.raw(), set->output_rows(0, o, 0), out.bytes());
    if (o + 1 == want.size()) {  // rows 2 and 3 went to their own memory
      std::memcpy(static_cast<std::byte*>(out.raw()) + 2 * pitch, destinations[o].data, 2 * pitch);
    }
    EXPECT_LT(RelativeError(out, want[o]), kTolerance) << "mixed, output " << o;
  }

  // Direct rows are per tensor, within the chunk, no longer than the
  // bucket's rows; they do not mix with inputs copied to staging by Launch.
  std::vector<InputRows> too_many(set->num_inputs() + 1);
  const DirectRows wrong_count{0, kRows, too_many, destinations};
  LaunchChunk wrong{0, {16}, kRows, LaunchMode::kGraph, 0};
  wrong.direct = absl::MakeConstSpan(&wrong_count, 1);
  EXPECT_THAT(set->Launch(wrong).message(), HasSubstr("do not fit a chunk of 5 rows"));
  const DirectRows past_end{4, 2, sources, destinations};
  wrong.direct = absl::MakeConstSpan(&past_end, 1);
  EXPECT_THAT(set->Launch(wrong).message(), HasSubstr("direct rows 4+2"));
  // Input 0's rows, direct, with a pitch longer and one shorter than its
  // rows at the key.
  buffers.push_back(*PinnedHostBuffer::Allocate(real[0].bytes()));
  std::vector<InputRows> too_long(real.size());
  too_long[0] = {static_cast<const std::byte*>(buffers.back().get()), 2 * real[0].bytes() / kRows,
                 RowMemory::kPinned};
  const DirectRows long_rows{0, 1, too_long, destinations};
  wrong.direct = absl::MakeConstSpan(&long_rows, 1);
  EXPECT_THAT(set->Launch(wrong).message(), HasSubstr("direct rows of input"));
  std::vector<InputRows> too_short = too_long;
  too_short[0].pitch /= 4;
  const DirectRows short_rows{0, 1, too_short, destinations};
  wrong.direct = absl::MakeConstSpan(&short_rows, 1);
  EXPECT_THAT(set->Launch(wrong).message(), HasSubstr("needs the chunk's pad bytes"));
  std::vector<const void*> pointers;
  for (const HostTensor& input : real) pointers.push_back(input.raw());
  EXPECT_THAT(set->Launch(mixed, pointers).message(), HasSubstr("names no direct rows"));
}

// The multi-lane graphs replay bit-identically to the single-lane eager run
// (same kernels: the sets share their algorithm choices). The towers of the
// multi-tower model run on lanes of their own; the others are one chain and
// stay on one lane.
TEST_P(GraphSetModelTest, MultiLaneGraphsMatchTheSingleLaneEagerRun) {
  const Model model = Import(GetParam().make(kExampleModelSeed), GetParam().name);
  GraphSetOptions options;
  options.num_streams = 2;
  options.graphs = BatchOnlyKeys({1, 8});
  options.algorithm_choices = std::make_shared<AlgorithmChoices>();
  absl::StatusOr<std::unique_ptr<GraphSet>> single = GraphSet::Create(model, options);
  ASSERT_TRUE(single.ok()) << single.status();
  for (SchedulePolicy policy : {SchedulePolicy::kWavefront, SchedulePolicy::kAsap}) {
    options.executor.schedule = {.policy = policy, .max_lanes = 4};
    absl::StatusOr<std::unique_ptr<GraphSet>> multi = GraphSet::Create(model, options);
    ASSERT_TRUE(multi.ok()) << multi.status();
    for (int slot = 0; slot < 2; ++slot) {
      EXPECT_EQ((*multi)->slot_memory(slot).lanes, (*multi)->graph_info(slot, {8}).lanes);
      for (const GraphKey& key : (*multi)->keys()) {
        const int64_t batch = key.batch_size;
        const CapturedGraphInfo& info = (*multi)->graph_info(slot, key);
        EXPECT_EQ(info.check_rel_err, 0.0) << "replay against the multi-lane eager run";
        EXPECT_EQ(info.lanes, GetParam().make == &MakeMultiTowerModel ? 4 : 1);
        const std::vector<HostTensor> inputs = RandomRows(model, batch, 7 * batch);
        const std::vector<HostTensor> want = Reference(model, inputs, batch);
        const std::vector<HostTensor> eager =
            Launch(**single, {slot, {batch}, batch, LaunchMode::kEager}, inputs, want);
        const std::vector<HostTensor> got =
            Launch(**multi, {slot, {batch}, batch, LaunchMode::kGraph}, inputs, want);
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_EQ(got[i].bytes(), eager[i].bytes());
          EXPECT_EQ(std::memcmp(got[i].raw(), eager[i].raw(), got[i].bytes()), 0)
              << SchedulePolicyName(policy) << " slot " << slot << " batch " << batch << " output "
              << i;
          EXPECT_LT(RelativeError(got[i], want[i]), kTolerance);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ExampleModels, GraphSetModelTest,
                         ::testing::Values(ModelCase{"mlp", &MakeMlpModel},
                                           ModelCase{"dlrm_dense", &MakeDlrmDenseModel},
                                           ModelCase{"multi_tower", &MakeMultiTowerModel}),
                         [](const auto& info) { return std::string(info.param.name); });

class GraphSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(GraphSetTest, SlotsShareOneArenaAcrossSizes) {
  const Model model = Import(MakeMlpModel(kExampleModelSeed), "mlp");
  GraphSetOptions options;
  options.num_streams = 2;
  options.graphs = BatchOnlyKeys({1, 2, 4, 8, 16, 32, 64, 128});
  std::unique_ptr<GraphSet> set = *GraphSet::Create(model, options);
  for (int slot = 0; slot < 2; ++slot) {
    const SlotMemory memory = set->slot_memory(slot);
    EXPECT_GT(memory.arena, 0u);
    // One arena for the largest plan, instead of one per size.
    EXPECT_LT(memory.arena, memory.arena_unshared);
    EXPECT_GT(memory.io_device, 0u);
    // Two pinned staging buffers per device buffer (Note [Double-buffered
    // staging]).
    EXPECT_EQ(memory.staging_pinned, kStagingBuffers * memory.io_device);
  }
  EXPECT_GT(set->weight_bytes(), 0u);
  EXPECT_EQ(set->SmallestKeyHolding({5}), GraphKey{8});
  EXPECT_EQ(set->SmallestKeyHolding({128}), GraphKey{128});
  EXPECT_EQ(set->SmallestKeyHolding({129}), std::nullopt);
}

TEST_F(GraphSetTest, LaunchRejectsBadChunks) {
  const Model model = Import(MakeMlpModel(kExampleModelSeed), "mlp");
  GraphSetOptions options;
  options.graphs = BatchOnlyKeys({4});
  std::unique_ptr<GraphSet> set = *GraphSet::Create(model, options);
  const std::vector<HostTensor> inputs = RandomRows(model, 4, 1);
  const std::vector<const void*> pointers = {inputs[0].raw()};
  EXPECT_EQ(set->Launch({1, {4}, 4}, pointers).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(set->Launch({0, {8}, 4}, pointers).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(set->Launch({0, {4}, 5}, pointers).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(set->Launch({0, {4}, 0}, pointers).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(set->Launch({0, {4}, 4}, {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(set->Launch({0, {4}, 4, LaunchMode::kGraph, kStagingBuffers}, pointers).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(set->Launch({0, {4}, 4, LaunchMode::kGraph, -1}, pointers).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(set->Launch({0, {4}, 4}, pointers).ok());
}

TEST_F(GraphSetTest, ModelThatMixesRowsIsRejected) {
  // y = x - mean(x over the batch): every row depends on every other, so
  // padding changes real rows and the set must refuse to serve it.
  Model model;
  model.name = "mixes_rows";
  model.opset = 17;
  model.inputs.push_back({"x", DType::kFloat32, {-1, 4}});
  model.outputs.push_back({"y", DType::kFloat32, {-1, 4}});
  model.nodes = {
      {"mean", "ReduceMean", {"x"}, {"m"}, {{"axes", std::vector<int64_t>{0}},
                                             {"keepdims", int64_t{1}}}},
      {"center", "Sub", {"x", "m"}, {"y"}, {}},
  };
  GraphSetOptions options;
  options.graphs = BatchOnlyKeys({8});
  absl::StatusOr<std::unique_ptr<GraphSet>> set = GraphSet::Create(model, options);
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(set.status().message()), HasSubstr("mixes rows"));
  EXPECT_THAT(std::string(set.status().message()), HasSubstr("slot 0, batch 8"));
}

// Note [An independent reference]: the plain CUDA plan and the host
// executor both agree with every captured graph of the DLRM-style model
// (GEMMs autotuned, epilogues fused in the served plans), each key's error
// recorded.
TEST_F(GraphSetTest, ReplaysAgreeWithAnIndependentReference) {
  const auto model =
      std::make_shared<const Model>(Import(MakeDlrmDenseModel(kExampleModelSeed), "dlrm_dense"));
  const ReferenceRunner host = [model](const GraphKey& key, absl::Span<const HostTensor> inputs)
      -> absl::StatusOr<std::vector<HostTensor>> {
    return Reference(*model, std::vector<HostTensor>(inputs.begin(), inputs.end()),
                     key.batch_size);
  };
  for (const ReferenceRunner& reference : {PlainCudaReference(model), host}) {
    GraphSetOptions options;
    options.num_streams = 2;
    options.graphs = BatchOnlyKeys({1, 4});
    options.reference = reference;
    options.reference_tolerance = kTolerance;
    absl::StatusOr<std::unique_ptr<GraphSet>> set = GraphSet::Create(*model, options);
    ASSERT_TRUE(set.ok()) << set.status();
    for (const GraphKey& key : (*set)->keys()) {
      const double error = (*set)->graph_info(0, key).reference_rel_err;
      EXPECT_GE(error, 0.0);
      EXPECT_LE(error, kTolerance);
      EXPECT_LT((*set)->graph_info(1, key).reference_rel_err, 0.0);  // slot 0 only
    }
  }
}

// A reference that disagrees (here: every float output doubled) fails the
// load, naming the graph, the output and the error.
TEST_F(GraphSetTest, AReferenceThatDisagreesFailsTheLoad) {
  const auto model = std::make_shared<const Model>(Import(MakeMlpModel(kExampleModelSeed), "mlp"));
  GraphSetOptions options;
  options.graphs = BatchOnlyKeys({2});
  const ReferenceRunner plain = PlainCudaReference(model);
  options.reference = [plain](const GraphKey& key, absl::Span<const HostTensor> inputs)
      -> absl::StatusOr<std::vector<HostTensor>> {
    ASSIGN_OR_RETURN(std::vector<HostTensor> outputs, plain(key, inputs));
    for (HostTensor& output : outputs) {
      for (int64_t i = 0; i < output.num_elements(); ++i) output.data<float>()[i] *= 2;
    }
    return outputs;
  };
  absl::StatusOr<std::unique_ptr<GraphSet>> set = GraphSet::Create(*model, options);
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(std::string(set.status().message()), HasSubstr("independent reference"));
  EXPECT_THAT(std::string(set.status().message()), HasSubstr("slot 0, batch 2"));
}

constexpr std::chrono::milliseconds kHold(100);

// UseSleepingDoneEvents remakes a set's done events so that a thread waiting
// for its chunk sleeps, even on a device whose threads spin (what the server
// gives a model with long chunks: Note [How threads wait for the GPU]).
// Before it, the same wait holds the core: the control that shows the
// measurement can tell the two apart. A host function that sleeps holds each
// chunk back kHold on its stream.
TEST_F(GraphSetTest, SleepingDoneEventsLetTheWaitingThreadSleep) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const SpinningDevice0 spinning;
  ASSERT_TRUE(spinning.status().ok()) << spinning.status();
  const Model model = Import(MakeMlpModel(kExampleModelSeed), "mlp");
  GraphSetOptions options;
  options.num_streams = 1;
  options.graphs = BatchOnlyKeys({4});
  std::unique_ptr<GraphSet> set = *GraphSet::Create(model, options);
  const std::vector<HostTensor> inputs = RandomRows(model, 4, 1);
  const std::vector<const void*> pointers = {inputs[0].raw()};
  const auto cpu_waiting_for_a_held_chunk = [&]() {
    EXPECT_EQ(cudaLaunchHostFunc(
                  set->stream(0), [](void*) { std::this_thread::sleep_for(kHold); }, nullptr),
              cudaSuccess);
    EXPECT_TRUE(set->Launch({0, {4}, 4}, pointers).ok());
    const std::chrono::nanoseconds before = ThreadCpuTime();
    EXPECT_EQ(cudaEventSynchronize(set->done_event(0, 0)), cudaSuccess);
    return ThreadCpuTime() - before;
  };
  EXPECT_GT(cpu_waiting_for_a_held_chunk(), kHold / 2)
      << "a spinning wait slept: the measurement cannot tell";
  ASSERT_TRUE(set->UseSleepingDoneEvents().ok());
  EXPECT_LT(cpu_waiting_for_a_held_chunk(), kHold / 4) << "the remade done events spin";
}

TEST_F(GraphSetTest, CapturesOneGraphPerBatchAndShapeBucket) {
  const Model model = Import(MakeSequenceSoftmaxModel(), "sequence_softmax");
  GraphSetOptions options;
  options.num_streams = 2;
  options.graphs = {{4, {32}}, {1, {8}}, {4, {8}}, {2, {128}}};
  absl::StatusOr<std::unique_ptr<GraphSet>> set = GraphSet::Create(model, options);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ((*set)->shape_dims(), std::vector<std::string>{"sequence"});
  EXPECT_EQ((*set)->keys(),
            (std::vector<GraphKey>{{1, {8}}, {2, {128}}, {4, {8}}, {4, {32}}}));
  EXPECT_EQ((*set)->input_bytes_per_row(0, {4, {32}}), 32u * 16u * sizeof(float));
  EXPECT_EQ((*set)->output_dims(0, {2, {128}}), (Dims{2, 128, 16}));
  // The cheapest graph that holds 3 rows of 20 tokens: 4 x 32 (128 tokens),
  // not 2 x 128 (which has too few rows anyway).
  EXPECT_EQ((*set)->SmallestKeyHolding({3, {20}}), (GraphKey{4, {32}}));
  EXPECT_EQ((*set)->SmallestKeyHolding({1, {100}}), (GraphKey{2, {128}}));
  EXPECT_EQ((*set)->SmallestKeyHolding({1, {129}}), std::nullopt);
  for (int slot = 0; slot < 2; ++slot) {
    for (const GraphKey& key : (*set)->keys()) {
      for (int64_t rows : {int64_t{1}, key.batch_size}) {
        BindOptions bind;
        bind.batch_size = rows;
        bind.dim_values = {{"sequence", key.bucket[0]}};
        std::vector<HostTensor> inputs = {
            RandomTensor(DType::kFloat32, {rows, key.bucket[0], 16}, 7 + rows)};
        const std::vector<HostTensor> want =
            *(*HostExecutor::Create(*BindModel(model, bind)))->Run(inputs);
        for (LaunchMode mode : {LaunchMode::kGraph, LaunchMode::kEager}) {
          const std::vector<HostTensor> got =
              Launch(**set, {slot, key, rows, mode}, inputs, want);
          EXPECT_LE(RelativeError(got[0], want[0]), kTolerance)
              << "slot " << slot << ", key " << GraphKeyString(key) << ", rows " << rows;
        }
      }
    }
  }
  // A key whose bucket does not fit the model's shape dims is refused.
  options.graphs = {{4, {}}};
  EXPECT_THAT(std::string(GraphSet::Create(model, options).status().message()),
              HasSubstr("the model has 1 dynamic dims beyond the batch ('sequence')"));
}

// Note [Pitched row copies]: rows shorter than the bucket's, placed by the
// device from pinned and from device memory (a pitched copy and a memset of
// the pad byte), and their outputs' leading blocks taken back, give what the
// host's padding through staging gives, bit for bit. A chunk of 4 rows at
// sequence 32: row 0 staged (20 tokens, padded by the test), row 1 pinned
// (20 tokens), rows 2-3 on the device (9 tokens).
TEST_F(GraphSetTest, PitchedDirectRowsMatchRowsPaddedThroughStaging) {
  const Model model = Import(MakeSequenceSoftmaxModel(), "sequence_softmax");
  GraphSetOptions options;
  options.num_streams = 1;
  options.graphs = {{4, {32}}};
  std::unique_ptr<GraphSet> set = *GraphSet::Create(model, options);
  const GraphKey key{4, {32}};
  constexpr size_t kWidth = 16 * sizeof(float);  // a token's bytes
  const size_t bucket_row = 32 * kWidth;
  // Row r holds its real tokens, then the pad (zeros) up to 32.
  const std::vector<int64_t> lengths = {20, 20, 9, 9};
  HostTensor padded = RandomTensor(DType::kFloat32, {4, 32, 16}, 11);
  auto* padded_bytes = static_cast<std::byte*>(padded.raw());
  for (size_t r = 0; r < 4; ++r) {
    std::memset(padded_bytes + r * bucket_row + lengths[r] * kWidth, 0, (32 - lengths[r]) * kWidth);
  }
  BindOptions bind;
  bind.batch_size = 4;
  bind.dim_values = {{"sequence", 32}};
  const std::vector<HostTensor> want =
      *(*HostExecutor::Create(*BindModel(model, bind)))->Run({padded});
  const std::vector<HostTensor> staged =
      Launch(*set, {0, key, 4, LaunchMode::kGraph, 0}, {padded}, want);

  // Row 1 pinned, rows 2-3 on the device, each at its own length.
  PinnedHostBuffer pinned_in = *PinnedHostBuffer::Allocate(20 * kWidth);
  std::memcpy(pinned_in.get(), padded_bytes + bucket_row, 20 * kWidth);
  DeviceBuffer device_in = *DeviceBuffer::Allocate(2 * 9 * kWidth);
  for (size_t r = 2; r < 4; ++r) {
    ASSERT_EQ(cudaMemcpy(static_cast<std::byte*>(device_in.get()) + (r - 2) * 9 * kWidth,
                         padded_bytes + r * bucket_row, 9 * kWidth, cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  PinnedHostBuffer pinned_out = *PinnedHostBuffer::Allocate(20 * kWidth);
  DeviceBuffer device_out = *DeviceBuffer::Allocate(2 * 9 * kWidth);
  const std::vector<InputRows> row_1_in = {
      {static_cast<const std::byte*>(pinned_in.get()), 20 * kWidth, RowMemory::kPinned}};
  const std::vector<OutputRows> row_1_out = {
      {static_cast<std::byte*>(pinned_out.get()), 20 * kWidth, RowMemory::kPinned}};
  const std::vector<InputRows> rows_2_3_in = {
      {static_cast<const std::byte*>(device_in.get()), 9 * kWidth, RowMemory::kDevice}};
  const std::vector<OutputRows> rows_2_3_out = {
      {static_cast<std::byte*>(device_out.get()), 9 * kWidth, RowMemory::kDevice}};
  const std::vector<DirectRows> direct = {{1, 1, row_1_in, row_1_out},
                                          {2, 2, rows_2_3_in, rows_2_3_out}};
  // Staging holds row 0 as the host pads it, and garbage where the direct
  // rows go: the device's placement and pad must overwrite it.
  std::memset(set->input_staging(0, 0, 1), 0x7F, 4 * bucket_row);
  std::memcpy(set->input_staging(0, 0, 1), padded_bytes, bucket_row);
  const std::vector<uint8_t> pad_bytes = {0};
  for (LaunchMode mode : {LaunchMode::kGraph, LaunchMode::kEager}) {
    LaunchChunk chunk{0, key, 4, mode, 1};
    chunk.direct = direct;
    chunk.pad_bytes = pad_bytes;
    ASSERT_TRUE(set->Launch(chunk).ok());
    ASSERT_EQ(cudaEventSynchronize(set->done_event(0, 1)), cudaSuccess);
    const char* label = mode == LaunchMode::kGraph ? "graph" : "eager";
    const auto* want_bytes = static_cast<const std::byte*>(staged[0].raw());
    EXPECT_EQ(std::memcmp(set->output_rows(0, 0, 1), want_bytes, bucket_row), 0)
        << label << ": row 0, staged";
    EXPECT_EQ(std::memcmp(pinned_out.get(), want_bytes + bucket_row, 20 * kWidth), 0)
        << label << ": row 1, pinned";
    std::vector<std::byte> from_device(2 * 9 * kWidth);
    ASSERT_EQ(cudaMemcpy(from_device.data(), device_out.get(), from_device.size(),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    for (size_t r = 2; r < 4; ++r) {
      EXPECT_EQ(std::memcmp(from_device.data() + (r - 2) * 9 * kWidth, want_bytes + r * bucket_row,
                            9 * kWidth),
                0)
          << label << ": row " << r << ", device";
    }
  }
}

TEST_F(GraphSetTest, OptionsAreValidated) {
  const Model model = Import(MakeMlpModel(kExampleModelSeed), "mlp");
  GraphSetOptions options;
  options.graphs = BatchOnlyKeys({4, 4});
  EXPECT_EQ(GraphSet::Create(model, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.graphs = BatchOnlyKeys({0});
  EXPECT_EQ(GraphSet::Create(model, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.graphs = BatchOnlyKeys({4});
  options.num_streams = 0;
  EXPECT_EQ(GraphSet::Create(model, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace graphserve
