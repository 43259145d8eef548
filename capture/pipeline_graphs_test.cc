// GPU tests of pipelines: two captured models replayed as one graph give
// the host reference's answer and the step-by-step replays' bytes, while the
// second model's own chunks run on the same slot from another thread (Note
// [Pipelines share slots]). They skip without a GPU.
#include "capture/pipeline_graphs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/cuda_handles.h"
#include "common/gpu_wait_testing.h"
#include "common/tensor.h"
#include "examples/example_models.h"
#include "runtime/bind.h"
#include "runtime/host/host_executor.h"
#include "runtime/onnx_import.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

constexpr double kTolerance = 1e-5;  // float32 GPU against the float64-accumulating host
constexpr size_t kFeatureBytes = 512 * sizeof(float);

Model Import(const onnx::ModelProto& proto, const std::string& name) {
  absl::StatusOr<Model> model = ImportOnnxBytes(proto.SerializeAsString(), name);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

std::shared_ptr<const GraphSet> Capture(const Model& model) {
  GraphSetOptions options;
  options.num_streams = 2;
  options.graphs = BatchOnlyKeys({1, 4, 8});
  absl::StatusOr<std::unique_ptr<GraphSet>> set = GraphSet::Create(model, options);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? std::shared_ptr<const GraphSet>(*std::move(set)) : nullptr;
}

// `model` on the host, at `rows` rows.
HostTensor OnHost(const Model& model, const HostTensor& input) {
  BindOptions bind;
  bind.batch_size = input.dims()[0];
  std::unique_ptr<HostExecutor> host = *HostExecutor::Create(*BindModel(model, bind));
  return std::move((*host->Run({input}))[0]);
}

class PipelineGraphsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    normalize_model_ = Import(MakeFeatureNormalizeModel(), "normalize");
    mlp_model_ = Import(MakeMlpModel(), "mlp");
    normalize_ = Capture(normalize_model_);
    mlp_ = Capture(mlp_model_);
    ASSERT_NE(normalize_, nullptr);
    ASSERT_NE(mlp_, nullptr);
  }

  PipelineOptions Options() const {
    PipelineOptions options;
    options.steps = {{normalize_, {"x"}, {"features"}}, {mlp_, {"features"}, {"score"}}};
    options.inputs = {{"x", kFeatureBytes}};
    options.outputs = {{"score", sizeof(float)}};
    options.batch_sizes = {8, 1};
    options.num_slots = 2;
    return options;
  }

  // The pipeline's answer for `x` on `slot` at `batch`.
  static HostTensor Run(const PipelineGraphs& pipeline, int slot, int64_t batch,
                        const HostTensor& x) {
    HostTensor score(DType::kFloat32, {x.dims()[0], 1});
    const void* inputs[] = {x.raw()};
    void* outputs[] = {score.raw()};
    const absl::Status status = pipeline.Run(slot, batch, x.dims()[0], inputs, outputs);
    EXPECT_TRUE(status.ok()) << status;
    return score;
  }

  Model normalize_model_;
  Model mlp_model_;
  std::shared_ptr<const GraphSet> normalize_;
  std::shared_ptr<const GraphSet> mlp_;
};

TEST_F(PipelineGraphsTest, OneReplayGivesTheHostReferenceAndTheStepsBytes) {
  absl::StatusOr<std::unique_ptr<PipelineGraphs>> pipeline = PipelineGraphs::Create(Options());
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  EXPECT_EQ((*pipeline)->batch_sizes(), (std::vector<int64_t>{1, 8}));
  EXPECT_EQ((*pipeline)->parent_nodes(), 3u);  // two child graphs, one copy between

  for (int slot = 0; slot < 2; ++slot) {
    for (int64_t batch : {1, 8}) {
      for (int64_t rows : {int64_t{1}, batch / 2 + 1, batch}) {
        if (rows > batch) continue;
        const HostTensor x = RandomTensor(DType::kFloat32, {rows, 512}, 31 * batch + rows);
        const HostTensor got = Run(**pipeline, slot, batch, x);
        const HostTensor want = OnHost(mlp_model_, OnHost(normalize_model_, x));
        EXPECT_LT(RelativeError(got, want), kTolerance)
            << "slot " << slot << " batch " << batch << " rows " << rows;

        // The same graphs one after the other, through the host.
        const void* x_rows[] = {x.raw()};
        ASSERT_TRUE(normalize_->Launch({slot, {batch}, rows}, x_rows).ok());
        ASSERT_TRUE(normalize_->WaitForChunk(slot, 0).ok());
        const void* feature_rows[] = {normalize_->output_rows(slot, 0)};
        ASSERT_TRUE(mlp_->Launch({slot, {batch}, rows}, feature_rows).ok());
        ASSERT_TRUE(mlp_->WaitForChunk(slot, 0).ok());
        EXPECT_EQ(std::memcmp(got.raw(), mlp_->output_rows(slot, 0), got.bytes()), 0)
            << "slot " << slot << " batch " << batch << " rows " << rows;
      }
    }
  }
}

// Note [Pipelines share slots]: the MLP's own chunks on slot 0, launched
// from another thread through its staging, and the pipeline's replays on
// the same slot never see each other's rows.
TEST_F(PipelineGraphsTest, TheStepModelsOwnChunksRunBesideThePipeline) {
  std::unique_ptr<PipelineGraphs> pipeline = *PipelineGraphs::Create(Options());
  const HostTensor features = RandomTensor(DType::kFloat32, {8, 512}, 7);
  const HostTensor features_want = OnHost(mlp_model_, features);
  const HostTensor x = RandomTensor(DType::kFloat32, {8, 512}, 8);
  const HostTensor pipeline_want = OnHost(mlp_model_, OnHost(normalize_model_, x));

  std::atomic<int> own_mismatches{0};
  std::atomic<bool> stop{false};
  std::thread own([&] {
    const void* rows[] = {features.raw()};
    HostTensor got(DType::kFloat32, {8, 1});
    while (!stop.load()) {
      if (!mlp_->Launch({0, {8}, 8}, rows).ok() || !mlp_->WaitForChunk(0, 0).ok()) {
        ++own_mismatches;
        return;
      }
      std::memcpy(got.raw(), mlp_->output_rows(0, 0), got.bytes());
      if (!(RelativeError(got, features_want) < kTolerance)) ++own_mismatches;
    }
  });
  int pipeline_mismatches = 0;
  for (int i = 0; i < 200; ++i) {
    if (!(RelativeError(Run(*pipeline, 0, 8, x), pipeline_want) < kTolerance)) {
      ++pipeline_mismatches;
    }
  }
  stop.store(true);
  own.join();
  EXPECT_EQ(pipeline_mismatches, 0);
  EXPECT_EQ(own_mismatches.load(), 0);
}

constexpr std::chrono::milliseconds kHold(100);

// Note [Pipelines sleep under --gpu-wait block]: a pipeline made with
// sleeping_wait lets the thread that runs it sleep while the replay runs,
// even on a device whose threads spin; without it the same Run holds the
// core (the control that shows the measurement can tell). A host function
// that sleeps holds the MLP's slot 0 stream, which the replay waits for,
// kHold.
TEST_F(PipelineGraphsTest, ASleepingWaitLetsTheRunningThreadSleep) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const SpinningDevice0 spinning;
  ASSERT_TRUE(spinning.status().ok()) << spinning.status();
  const HostTensor x = RandomTensor(DType::kFloat32, {8, 512}, 9);
  const auto cpu_running_a_held_pipeline = [&](bool sleeping_wait) {
    PipelineOptions options = Options();
    options.sleeping_wait = sleeping_wait;
    absl::StatusOr<std::unique_ptr<PipelineGraphs>> pipeline = PipelineGraphs::Create(options);
    EXPECT_TRUE(pipeline.ok()) << pipeline.status();
    if (!pipeline.ok()) return std::chrono::nanoseconds(0);
    EXPECT_EQ(cudaLaunchHostFunc(
                  mlp_->stream(0), [](void*) { std::this_thread::sleep_for(kHold); }, nullptr),
              cudaSuccess);
    const std::chrono::nanoseconds before = ThreadCpuTime();
    Run(**pipeline, 0, 8, x);
    return ThreadCpuTime() - before;
  };
  EXPECT_GT(cpu_running_a_held_pipeline(false), kHold / 2)
      << "a spinning wait slept: the measurement cannot tell";
  EXPECT_LT(cpu_running_a_held_pipeline(true), kHold / 4) << "the sleeping wait spins";
}

TEST_F(PipelineGraphsTest, RefusesWhatDoesNotConnect) {
  PipelineOptions backwards = Options();
  std::swap(backwards.steps[0], backwards.steps[1]);
  EXPECT_THAT(PipelineGraphs::Create(backwards).status().message(),
              HasSubstr("reads 'features' before any step writes it"));

  PipelineOptions uncaptured = Options();
  uncaptured.batch_sizes = {2};
  EXPECT_THAT(PipelineGraphs::Create(uncaptured).status().message(),
              HasSubstr("has no graph of batch size 2"));

  PipelineOptions twice = Options();
  twice.steps[1].set = normalize_;
  twice.steps[1].outputs = {"score"};
  EXPECT_THAT(PipelineGraphs::Create(twice).status().message(),
              HasSubstr("runs a graph set an earlier step runs"));

  PipelineOptions wide = Options();
  wide.outputs = {{"score", 2 * sizeof(float)}};
  EXPECT_THAT(PipelineGraphs::Create(wide).status().message(),
              HasSubstr("has rows of 8 bytes; its step writes 4"));
}

}  // namespace
}  // namespace graphserve
