// GPU tests of ensembles replayed as one CUDA graph (Note [Ensembles as one
// graph] in server/ensemble_scheduler.h): a feature-normalising model and
// the MLP, each loaded as the server loads it, composed by an ensemble.
// They skip without a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/cuda_handles.h"
#include "common/tensor.h"
#include "examples/example_models.h"
#include "google/protobuf/text_format.h"
#include "runtime/bind.h"
#include "runtime/host/host_executor.h"
#include "runtime/onnx_import.h"
#include "server/device_tensor_pool.h"
#include "server/ensemble_scheduler.h"
#include "server/served_model.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kTolerance = 1e-5;  // float32 GPU against the float64-accumulating host

inference::ModelConfig Parse(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

constexpr char kEnsemble[] = R"pb(
  name: "scored"
  platform: "ensemble"
  max_batch_size: 8
  input { name: "FEATURES" data_type: TYPE_FP32 dims: [ 512 ] }
  output { name: "SCORE" data_type: TYPE_FP32 dims: [ 1 ] }
  ensemble_scheduling {
    step {
      model_name: "normalize"
      model_version: -1
      input_map { key: "x" value: "FEATURES" }
      output_map { key: "x_normalized" value: "NORMALIZED" }
    }
    step {
      model_name: "mlp"
      model_version: -1
      input_map { key: "x" value: "NORMALIZED" }
      output_map { key: "y" value: "SCORE" }
    }
  }
)pb";

HostTensor OnHost(const onnx::ModelProto& proto, const HostTensor& input) {
  const Model model = *ImportOnnxBytes(proto.SerializeAsString(), "host");
  BindOptions bind;
  bind.batch_size = input.dims()[0];
  std::unique_ptr<HostExecutor> host = *HostExecutor::Create(*BindModel(model, bind));
  return std::move((*host->Run({input}))[0]);
}

// Triton's inference_count: the rows the model answered.
uint64_t InferenceCount(const ServedModel& model) {
  inference::ModelStatistics statistics;
  model.FillStatistics(&statistics);
  return statistics.inference_count();
}

// Whether `model` counted an execution at `batch_size`: a request of 3 rows
// counts 4 through the pipeline, which replays the captured size 4, and 3
// run step by step.
bool ExecutedAtBatchSize(const ServedModel& model, uint64_t batch_size) {
  inference::ModelStatistics statistics;
  model.FillStatistics(&statistics);
  return std::any_of(statistics.batch_stats().begin(), statistics.batch_stats().end(),
                     [&](const inference::InferBatchStatistics& batch) {
                       return batch.batch_size() == batch_size;
                     });
}

class EnsemblePipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    directory_ = std::filesystem::path(::testing::TempDir()) / "ensemble_pipeline";
    models_["normalize"] = Load("normalize", MakeFeatureNormalizeModel(), "x_normalized", 512);
    models_["mlp"] = Load("mlp", MakeMlpModel(), "y", 1);
    ASSERT_NE(models_["normalize"], nullptr);
    ASSERT_NE(models_["mlp"], nullptr);
    ensemble_ = LoadScored(GpuWait::kAuto);
    ASSERT_NE(ensemble_, nullptr);
  }

  // The ensemble over the fixture's models, its config `capture` section
  // (if any) added, loaded as the server loads it under --gpu-wait
  // `gpu_wait`; null (and a failure) when it fails.
  std::unique_ptr<ServedModel> LoadScored(GpuWait gpu_wait, const std::string& capture = "") {
    RepositoryModel entry;
    entry.name = "scored";
    entry.config = Parse(absl::StrCat(kEnsemble, capture));
    absl::StatusOr<std::unique_ptr<ServedModel>> ensemble = LoadEnsemble(
        entry, {.version = 1, .model_path = ""},
        [this](const inference::ModelEnsembling::Step& step)
            -> absl::StatusOr<inference::ModelConfig> {
          return models_.at(step.model_name())->config();
        },
        [this](absl::string_view name, absl::string_view /*version*/)
            -> absl::StatusOr<std::shared_ptr<ServedModel>> {
          return models_.at(std::string(name));
        },
        gpu_wait);
    EXPECT_TRUE(ensemble.ok()) << ensemble.status();
    return ensemble.ok() ? *std::move(ensemble) : nullptr;
  }

  // `proto` written and loaded as the server loads a model on GPU 0: its
  // input "x" [512], its output `output` [`width`], batch sizes 1, 4, 8.
  std::shared_ptr<ServedModel> Load(const std::string& name, const onnx::ModelProto& proto,
                                    const std::string& output, int64_t width) {
    const std::filesystem::path version = directory_ / name / "1";
    std::filesystem::create_directories(version);
    const std::string path = (version / "model.onnx").string();
    std::ofstream(path, std::ios::binary) << proto.SerializeAsString();
    RepositoryModel entry;
    entry.name = name;
    entry.directory = (directory_ / name).string();
    entry.config = Parse(absl::StrCat(
        "name: '", name, "' max_batch_size: 8 ",
        "input { name: 'x' data_type: TYPE_FP32 dims: [ 512 ] } ",
        "output { name: '", output, "' data_type: TYPE_FP32 dims: [ ", width, " ] } ",
        "capture { batch_sizes: [ 1, 4, 8 ] streams: 2 }"));
    absl::StatusOr<std::unique_ptr<ServedModel>> model =
        ServedModel::Load(entry, {.version = 1, .model_path = path}, ServedModelOptions{});
    EXPECT_TRUE(model.ok()) << model.status();
    return model.ok() ? std::shared_ptr<ServedModel>(*std::move(model)) : nullptr;
  }

  // The ensemble's SCORE for `x` (or, given `model`, that model's output
  // for `x` as its input "x"), or the error.
  absl::StatusOr<HostTensor> Infer(const HostTensor& x, ServedModel* model = nullptr) {
    inference::ModelInferRequest request;
    request.set_model_name(model == nullptr ? "scored" : model->name());
    auto* input = request.add_inputs();
    input->set_name(model == nullptr ? "FEATURES" : "x");
    input->set_datatype("FP32");
    input->add_shape(x.dims()[0]);
    input->add_shape(512);
    request.add_raw_input_contents(static_cast<const char*>(x.raw()), x.bytes());
    inference::ModelInferResponse response;
    absl::Notification answered;
    absl::Status status;
    ServedModel& served = model == nullptr ? *ensemble_ : *model;
    served.Infer(&request, &response, [&](const absl::Status& answer) {
      status = answer;
      answered.Notify();
    });
    answered.WaitForNotification();
    if (!status.ok()) return status;
    HostTensor score(DType::kFloat32, {x.dims()[0], 1});
    EXPECT_EQ(response.raw_output_contents(0).size(), score.bytes());
    std::memcpy(score.raw(), response.raw_output_contents(0).data(), score.bytes());
    return score;
  }

  void ExpectRight(int64_t rows, uint64_t seed) {
    const HostTensor x = RandomTensor(DType::kFloat32, {rows, 512}, seed);
    absl::StatusOr<HostTensor> got = Infer(x);
    ASSERT_TRUE(got.ok()) << got.status();
    const HostTensor want = OnHost(MakeMlpModel(), OnHost(MakeFeatureNormalizeModel(), x));
    EXPECT_LT(RelativeError(*got, want), kTolerance) << rows << " rows";
  }

  // The MLP step loaded again as a new model, with other weights.
  void ReloadMlp() {
    models_["mlp"] = Load("mlp", MakeMlpModel(kReloadedMlpSeed), "y", 1);
    ASSERT_NE(models_["mlp"], nullptr);
  }

  // Three rows through the ensemble after ReloadMlp: the new MLP's answer,
  // counted by the new model.
  void ExpectTheReloadedMlpsAnswer() {
    const uint64_t before = InferenceCount(*models_["mlp"]);
    const HostTensor x = RandomTensor(DType::kFloat32, {3, 512}, 5);
    absl::StatusOr<HostTensor> got = Infer(x);
    ASSERT_TRUE(got.ok()) << got.status();
    const HostTensor want =
        OnHost(MakeMlpModel(kReloadedMlpSeed), OnHost(MakeFeatureNormalizeModel(), x));
    EXPECT_LT(RelativeError(*got, want), kTolerance);
    EXPECT_EQ(InferenceCount(*models_["mlp"]), before + 3);
  }

  static constexpr uint64_t kReloadedMlpSeed = 7;
  std::filesystem::path directory_;
  std::map<std::string, std::shared_ptr<ServedModel>> models_;
  std::unique_ptr<ServedModel> ensemble_;
};

TEST_F(EnsemblePipelineTest, ReplaysAsOneGraphAndAnswersLikeTheHost) {
  EXPECT_THAT(ensemble_->summary().executor,
              HasSubstr("one CUDA graph at batch sizes 1,4,8 on 2 slots"));
  const uint64_t mlp_before = InferenceCount(*models_["mlp"]);
  for (int64_t rows : {1, 3, 4, 8}) ExpectRight(rows, 40 + rows);
  // The load's check is not the ensemble's request; the steps count each.
  EXPECT_EQ(InferenceCount(*ensemble_), 1u + 3 + 4 + 8);
  EXPECT_EQ(InferenceCount(*models_["mlp"]) - mlp_before, 1u + 3 + 4 + 8);
}

// Note [Pipelines sleep under --gpu-wait block]: the server's --gpu-wait
// block reaches the pipeline, which then answers as before.
TEST_F(EnsemblePipelineTest, UnderGpuWaitBlockThePipelineSleepsAndAnswersRight) {
  EXPECT_THAT(ensemble_->summary().executor, Not(HasSubstr("sleeping")));
  ensemble_ = LoadScored(GpuWait::kBlock);
  ASSERT_NE(ensemble_, nullptr);
  EXPECT_THAT(ensemble_->summary().executor, HasSubstr("slots, GPU 0, sleeping while it replays"));
  for (int64_t rows : {1, 5}) ExpectRight(rows, 60 + rows);
  EXPECT_TRUE(ExecutedAtBatchSize(*ensemble_, 8));  // 5 rows, through the pipeline
}

// Note [Pipelines share slots] in the server: requests to the ensemble (on
// its pipeline, or step by step when its one slot is busy) and the MLP's own
// requests, from several threads at once, all answered right.
TEST_F(EnsemblePipelineTest, ConcurrentRequestsToTheEnsembleAndItsStepAreRight) {
  constexpr int kThreads = 6;
  constexpr int kRequests = 20;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const bool direct = t % 2 == 1;  // the MLP's own clients
      for (int r = 0; r < kRequests; ++r) {
        const int64_t rows = 1 + (t + r) % 8;
        const HostTensor x = RandomTensor(DType::kFloat32, {rows, 512}, 1000 * t + r);
        absl::StatusOr<HostTensor> got = Infer(x, direct ? models_["mlp"].get() : nullptr);
        const HostTensor want = direct ? OnHost(MakeMlpModel(), x)
                                       : OnHost(MakeMlpModel(),
                                                OnHost(MakeFeatureNormalizeModel(), x));
        if (!got.ok() || !(RelativeError(*got, want) < kTolerance)) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

// Note [Ensemble tensors on the device]: step by step, NORMALIZED passes
// from one model to the next in the ensemble's device buffer, alone and
// beside the MLP's own clients, whose rows merge with the ensemble's.
TEST_F(EnsemblePipelineTest, StepByStepTheTensorBetweenStepsStaysOnTheDevice) {
  ensemble_ = LoadScored(GpuWait::kAuto, "capture { graphs_disabled: true }");
  ASSERT_NE(ensemble_, nullptr);
  EXPECT_THAT(ensemble_->summary().executor,
              HasSubstr("step by step, tensors between steps on the device"));
  for (int64_t rows : {1, 3, 8}) ExpectRight(rows, 70 + rows);
  constexpr int kThreads = 6;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const bool direct = t % 3 == 2;
      for (int r = 0; r < 20; ++r) {
        const int64_t rows = 1 + (t + r) % 8;
        const HostTensor x = RandomTensor(DType::kFloat32, {rows, 512}, 2000 * t + r);
        absl::StatusOr<HostTensor> got = Infer(x, direct ? models_["mlp"].get() : nullptr);
        const HostTensor want =
            direct ? OnHost(MakeMlpModel(), x)
                   : OnHost(MakeMlpModel(), OnHost(MakeFeatureNormalizeModel(), x));
        if (!got.ok() || !(RelativeError(*got, want) < kTolerance)) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(EnsemblePipelineTest, HostStepTensorsSendsTheTensorThroughTheHost) {
  ensemble_ =
      LoadScored(GpuWait::kAuto, "capture { graphs_disabled: true host_step_tensors: true }");
  ASSERT_NE(ensemble_, nullptr);
  EXPECT_THAT(ensemble_->summary().executor,
              HasSubstr("step by step, tensors between steps through the host"));
  for (int64_t rows : {1, 5}) ExpectRight(rows, 80 + rows);
}

// The pool hands a buffer out again, of the smallest capacity that holds
// the bytes, and refuses past its limits.
TEST_F(EnsemblePipelineTest, DeviceTensorPoolReusesBuffersWithinItsLimits) {
  DeviceTensorPool pool("test", {.max_buffers = 2, .max_bytes = 1 << 20});
  std::optional<DeviceTensorPool::Buffer> first = pool.Take(0, 5000);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->capacity, 8192u);
  absl::StatusOr<SharedMemorySlice> slice = pool.registry()->Slice(first->region, 0, 5000);
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice.value().region->kind(), RegionKind::kCuda);
  const std::string region = first->region;
  pool.Give(*std::move(first));
  std::optional<DeviceTensorPool::Buffer> again = pool.Take(0, 6000);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->region, region);
  EXPECT_FALSE(pool.Take(0, 2 << 20).has_value());  // past max_bytes
  std::optional<DeviceTensorPool::Buffer> second = pool.Take(0, 100);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->capacity, 4096u);
  EXPECT_FALSE(pool.Take(0, 100).has_value());  // past max_buffers
  EXPECT_EQ(pool.buffers(), 2);
}

TEST_F(EnsemblePipelineTest, AReloadedStepEndsThePipeline) {
  const std::shared_ptr<ServedModel> old_mlp = models_["mlp"];
  ReloadMlp();
  const uint64_t old_before = InferenceCount(*old_mlp);
  ExpectTheReloadedMlpsAnswer();
  EXPECT_EQ(InferenceCount(*old_mlp), old_before);
  EXPECT_FALSE(ExecutedAtBatchSize(*ensemble_, 4));  // step by step
}

// What the registry does after a load: the ensemble's pipeline is built again
// over the new model, and requests replay it.
TEST_F(EnsemblePipelineTest, AReloadedStepGetsThePipelineBuiltAgain) {
  ReloadMlp();
  ensemble_->ComposingModelLoaded("mlp");
  ExpectTheReloadedMlpsAnswer();
  EXPECT_TRUE(ExecutedAtBatchSize(*ensemble_, 4));  // through the pipeline
}

}  // namespace
}  // namespace graphserve
