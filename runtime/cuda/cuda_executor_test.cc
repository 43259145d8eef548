#include "runtime/cuda/cuda_executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cuda_handles.h"
#include "common/half.h"
#include "runtime/bind.h"
#include "runtime/fusion.h"
#include "runtime/host/host_executor.h"

namespace graphserve {
namespace {

std::shared_ptr<const HostTensor> RandomConstant(Dims dims, std::mt19937& rng) {
  auto tensor = std::make_shared<HostTensor>(DType::kFloat32, std::move(dims));
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  for (int64_t i = 0; i < tensor->num_elements(); ++i) tensor->data<float>()[i] = uniform(rng);
  return tensor;
}

HostTensor RandomInput(Dims dims, std::mt19937& rng) {
  HostTensor tensor(DType::kFloat32, std::move(dims));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.data<float>()[i] = normal(rng);
  return tensor;
}

// x[B,32] -> Gemm(W1,b1,transB)+Relu -> MatMul(W2)+Add(b2)+Relu -> Gemm with C
// [1,8] and beta 0.5 (not a plain bias: C is broadcast into the output and
// accumulated) -> Reshape to [B,2,4] (aliased) -> Softmax -> y. A second output z = Sigmoid of the first
// hidden layer gives that layer two readers, so it is materialised.
Model TestModel() {
  std::mt19937 rng(7);
  Model model;
  model.name = "executor_test";
  model.opset = 17;
  model.inputs.push_back({"x", DType::kFloat32, {-1, 32}});
  model.outputs.push_back({"y", DType::kFloat32, {-1, 2, 4}});
  model.outputs.push_back({"z", DType::kFloat32, {-1, 64}});
  model.initializers["W1"] = RandomConstant({64, 32}, rng);
  model.initializers["b1"] = RandomConstant({64}, rng);
  model.initializers["W2"] = RandomConstant({64, 16}, rng);
  model.initializers["b2"] = RandomConstant({16}, rng);
  model.initializers["W3"] = RandomConstant({16, 8}, rng);
  model.initializers["C3"] = RandomConstant({1, 8}, rng);
  auto shape = std::make_shared<HostTensor>(DType::kInt64, Dims{3});
  shape->data<int64_t>()[0] = -1;
  shape->data<int64_t>()[1] = 2;
  shape->data<int64_t>()[2] = 4;
  model.initializers["shape"] = shape;
  model.nodes = {
      {"fc1", "Gemm", {"x", "W1", "b1"}, {"h1"}, {{"transB", int64_t{1}}}},
      {"act1", "Relu", {"h1"}, {"a1"}, {}},
      {"side", "Sigmoid", {"a1"}, {"z"}, {}},
      {"fc2", "MatMul", {"a1", "W2"}, {"h2"}, {}},
      {"bias2", "Add", {"h2", "b2"}, {"h2b"}, {}},
      {"act2", "Relu", {"h2b"}, {"a2"}, {}},
      {"fc3", "Gemm", {"a2", "W3", "C3"}, {"h3"}, {{"beta", 0.5f}}},
      {"reshape", "Reshape", {"h3", "shape"}, {"r"}, {}},
      {"softmax", "Softmax", {"r"}, {"y"}, {{"axis", int64_t{-1}}}},
  };
  return model;
}

// The parameterized suites below: each skips without a GPU.
template <typename Param>
class CudaParamTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }
};

using CudaExecutorTest = CudaParamTest<int64_t>;

TEST_P(CudaExecutorTest, MatchesHostExecutorFusedAndUnfused) {
  const int64_t batch = GetParam();
  const Model model = TestModel();
  absl::StatusOr<BoundGraph> graph = BindModel(model, {.batch_size = batch});
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(*graph);
  ASSERT_TRUE(host.ok()) << host.status();
  std::mt19937 rng(static_cast<uint32_t>(batch));
  std::vector<HostTensor> inputs;
  inputs.push_back(RandomInput({batch, 32}, rng));
  absl::StatusOr<std::vector<HostTensor>> expected = (*host)->Run(inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();

  for (const auto& [fuse, tf32] : {std::pair{true, false}, {false, false}, {true, true}}) {
    CudaExecutorOptions options;
    options.fuse_epilogues = fuse;
    options.allow_tf32 = tf32;
    absl::StatusOr<std::unique_ptr<CudaExecutor>> cuda = CudaExecutor::Create(*graph, options);
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    // Bias epilogues: fc1 (its own C, fused or not) and fc2 (the following
    // Add, when fusing). Relu never goes into cuBLASLt's epilogue (NaN).
    EXPECT_EQ((*cuda)->fused_epilogues(), fuse ? 2 : 1);
    // Under TF32, fc2's and fc3's weights are read K-major (Note [K-major
    // weights]); fc3's C is then its step's second input. fc1's is K-major.
    EXPECT_EQ((*cuda)->transposed_weights(), tf32 ? 2 : 0);
    EXPECT_GE((*cuda)->arena_bytes(), (*cuda)->arena_lower_bound_bytes());
    absl::StatusOr<std::vector<HostTensor>> got = (*cuda)->Run(inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), 2u);
    for (size_t i = 0; i < got->size(); ++i) {
      EXPECT_EQ((*got)[i].dims(), (*expected)[i].dims());
      // TF32 rounds the GEMMs' operands to 10 mantissa bits.
      EXPECT_LT(RelativeError((*got)[i], (*expected)[i]), tf32 ? 3e-3 : 1e-5)
          << "output " << i << " fuse " << fuse << " tf32 " << tf32;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BatchSizes, CudaExecutorTest, ::testing::Values(1, 3, 64, 1000));

// One Enqueue of `cuda` captured on `stream` and instantiated; null, with
// the failure reported, when capture or instantiation fails.
CudaGraphExec CaptureEnqueue(CudaExecutor& cuda, cudaStream_t stream) {
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    ADD_FAILURE() << "cudaStreamBeginCapture failed";
    return CudaGraphExec();
  }
  const absl::Status enqueued = cuda.Enqueue(stream);
  cudaGraph_t raw_graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &raw_graph);
  CudaGraph captured(raw_graph);
  EXPECT_EQ(ended, cudaSuccess);
  EXPECT_TRUE(enqueued.ok()) << enqueued;
  if (ended != cudaSuccess || !enqueued.ok()) return CudaGraphExec();
  cudaGraphExec_t raw_exec = nullptr;
  EXPECT_EQ(cudaGraphInstantiate(&raw_exec, captured.get(), 0), cudaSuccess);
  return CudaGraphExec(raw_exec);
}

// Note [Contiguous views] on the device: x [B, 3, width] through a Relu (a
// step, so the stack lives in the arena), stacked [3, B, width] by a
// Transpose, and each of the three blocks read in place by a Gather: y =
// a * b + c. At width 64 every block starts on the arena's alignment and
// all three are views; at width 3 (12-byte rows) only the first is. Run
// eagerly and replayed from a captured graph, against the host executor.
Model StackOfThree(int64_t width) {
  std::mt19937 rng(static_cast<uint32_t>(width));
  Model model;
  model.name = "stack_of_three";
  model.opset = 17;
  model.inputs.push_back({"x", DType::kFloat32, {-1, 3, width}});
  model.outputs.push_back({"y", DType::kFloat32, {-1, width}});
  model.initializers["scale"] = RandomConstant({width}, rng);
  for (int64_t i = 0; i < 3; ++i) {
    auto index = std::make_shared<HostTensor>(DType::kInt64, Dims{});
    *index->data<int64_t>() = i;
    model.initializers[absl::StrCat("i", i)] = index;
  }
  model.nodes = {
      {"relu", "Relu", {"x"}, {"r"}, {}},
      {"stack", "Transpose", {"r"}, {"t"}, {{"perm", std::vector<int64_t>{1, 0, 2}}}},
      {"a", "Gather", {"t", "i0"}, {"ta"}, {}},
      {"b", "Gather", {"t", "i1"}, {"tb"}, {}},
      {"c", "Gather", {"t", "i2"}, {"tc"}, {}},
      {"ab", "Mul", {"ta", "tb"}, {"p"}, {}},
      {"abs", "Mul", {"p", "scale"}, {"ps"}, {}},
      {"sum", "Add", {"ps", "tc"}, {"y"}, {}},
  };
  return model;
}

TEST(CudaExecutorViewTest, GathersReadInPlaceMatchHostEagerlyAndReplayed) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  for (const auto& [width, views] : {std::pair<int64_t, int>{64, 3}, {3, 1}}) {
    for (const int64_t batch : {1, 5}) {
      const std::string label = absl::StrCat("width ", width, " batch ", batch);
      absl::StatusOr<BoundGraph> graph = BindModel(StackOfThree(width), {.batch_size = batch});
      ASSERT_TRUE(graph.ok()) << graph.status();
      absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(*graph);
      ASSERT_TRUE(host.ok()) << host.status();
      std::mt19937 rng(static_cast<uint32_t>(batch));
      std::vector<HostTensor> inputs;
      inputs.push_back(RandomInput({batch, 3, width}, rng));
      absl::StatusOr<std::vector<HostTensor>> expected = (*host)->Run(inputs);
      ASSERT_TRUE(expected.ok()) << expected.status();

      absl::StatusOr<std::unique_ptr<CudaExecutor>> cuda = CudaExecutor::Create(*graph, {});
      ASSERT_TRUE(cuda.ok()) << cuda.status();
      EXPECT_EQ((*cuda)->contiguous_views(), views) << label;
      absl::StatusOr<std::vector<HostTensor>> eager = (*cuda)->Run(inputs);
      ASSERT_TRUE(eager.ok()) << eager.status();
      EXPECT_LT(RelativeError((*eager)[0], (*expected)[0]), 1e-6) << label;

      absl::StatusOr<CudaStream> stream = CudaStream::Create();
      ASSERT_TRUE(stream.ok());
      const CudaGraphExec exec = CaptureEnqueue(**cuda, stream->get());
      ASSERT_NE(exec.get(), nullptr) << label;
      std::memcpy((*cuda)->input_staging(0), inputs[0].raw(), inputs[0].bytes());
      std::memset(const_cast<void*>((*cuda)->output_staging(0)), 0xFF, (*eager)[0].bytes());
      ASSERT_EQ(cudaGraphLaunch(exec.get(), stream->get()), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
      EXPECT_EQ(std::memcmp((*cuda)->output_staging(0), (*eager)[0].raw(), (*eager)[0].bytes()), 0)
          << label;
    }
  }
}

// Note [Batch-swapped GEMM operands]: nn.MultiheadAttention's heads, q, k
// and v [seq, batch * heads, d] transposed (1 0 2) and split into [batch,
// heads, seq, d] for the scores and the weighted sum, whose result goes back
// to [seq, batch, heads, d] (y); and the same at rank 3 without the split
// (z, scores of two more such inputs, a against c, written back [seq,
// batch * heads, seq]).
Model FoldedHeads(int64_t batch) {
  constexpr int64_t kHeads = 3, kSeq = 5, kD = 16;
  const int64_t folded = batch * kHeads;
  Model model;
  model.name = "folded_heads";
  model.opset = 17;
  for (const char* name : {"q", "k", "v", "a", "c"}) {
    model.inputs.push_back({name, DType::kFloat32, {kSeq, folded, kD}});
  }
  model.outputs.push_back({"y", DType::kFloat32, {kSeq, batch, kHeads, kD}});
  model.outputs.push_back({"z", DType::kFloat32, {kSeq, folded, kSeq}});
  auto split = std::make_shared<HostTensor>(DType::kInt64, Dims{4});
  const int64_t split_dims[] = {batch, kHeads, kSeq, kD};
  std::copy(std::begin(split_dims), std::end(split_dims), split->data<int64_t>());
  model.initializers["split"] = split;
  const auto perm = [](std::vector<int64_t> p) { return Attributes{{"perm", std::move(p)}}; };
  for (const std::string name : {"q", "k", "v"}) {
    model.nodes.push_back({name + "_heads", "Transpose", {name}, {name + "t"}, perm({1, 0, 2})});
    model.nodes.push_back({name + "_split", "Reshape", {name + "t", "split"}, {name + "4"}, {}});
  }
  model.nodes.push_back({"k_t", "Transpose", {"k4"}, {"kT"}, perm({0, 1, 3, 2})});
  model.nodes.push_back({"scores", "MatMul", {"q4", "kT"}, {"s"}, {}});
  model.nodes.push_back({"softmax", "Softmax", {"s"}, {"p"}, {{"axis", int64_t{-1}}}});
  model.nodes.push_back({"mix", "MatMul", {"p", "v4"}, {"o"}, {}});
  model.nodes.push_back({"merge", "Transpose", {"o"}, {"y"}, perm({2, 0, 1, 3})});
  model.nodes.push_back({"a3", "Transpose", {"a"}, {"a3t"}, perm({1, 0, 2})});
  model.nodes.push_back({"c3", "Transpose", {"c"}, {"c3t"}, perm({1, 0, 2})});
  model.nodes.push_back({"c3_t", "Transpose", {"c3t"}, {"c3T"}, perm({0, 2, 1})});
  model.nodes.push_back({"scores3", "MatMul", {"a3t", "c3T"}, {"s3"}, {}});
  model.nodes.push_back({"back3", "Transpose", {"s3"}, {"z"}, perm({1, 0, 2})});
  return model;
}

// Every Transpose goes into a GEMM (k's last-two swaps as op(B), the rest
// into its layouts): the three GEMMs and the Softmax are the steps.
TEST(CudaExecutorSwappedOperandsTest, FoldedHeadsTransposesGoIntoTheGemms) {
  for (const int64_t batch : {1, 2}) {
    absl::StatusOr<BoundGraph> graph = BindModel(FoldedHeads(batch), {});
    ASSERT_TRUE(graph.ok()) << graph.status();
    const FusionPlan plan = PlanFusion(*graph, {});
    std::vector<std::array<bool, 3>> swapped;
    for (const FusedStep& step : plan.steps) {
      if (step.kind != StepKind::kGemm) continue;
      swapped.push_back({step.gemm_swapped_a, step.gemm_swapped_b, step.gemm_swapped_d});
    }
    EXPECT_EQ(plan.steps.size(), 4u);
    EXPECT_EQ(swapped, (std::vector<std::array<bool, 3>>{
                           {true, true, false}, {false, true, true}, {true, true, true}}));
  }
}

TEST(CudaExecutorSwappedOperandsTest, FoldedHeadsReadInPlaceMatchHost) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  for (const int64_t batch : {1, 2}) {
    absl::StatusOr<BoundGraph> graph = BindModel(FoldedHeads(batch), {});
    ASSERT_TRUE(graph.ok()) << graph.status();
    absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(*graph);
    ASSERT_TRUE(host.ok()) << host.status();
    std::mt19937 rng(static_cast<uint32_t>(batch));
    std::vector<HostTensor> inputs;
    for (int i = 0; i < 5; ++i) inputs.push_back(RandomInput({5, batch * 3, 16}, rng));
    absl::StatusOr<std::vector<HostTensor>> expected = (*host)->Run(inputs);
    ASSERT_TRUE(expected.ok()) << expected.status();
    for (const bool fuse : {true, false}) {
      CudaExecutorOptions options;
      options.fuse_epilogues = fuse;
      absl::StatusOr<std::unique_ptr<CudaExecutor>> cuda = CudaExecutor::Create(*graph, options);
      ASSERT_TRUE(cuda.ok()) << cuda.status();
      absl::StatusOr<std::vector<HostTensor>> got = (*cuda)->Run(inputs);
      ASSERT_TRUE(got.ok()) << got.status();
      for (size_t i = 0; i < got->size(); ++i) {
        EXPECT_EQ((*got)[i].dims(), (*expected)[i].dims());
        EXPECT_LT(RelativeError((*got)[i], (*expected)[i]), 1e-5)
            << "output " << i << " batch " << batch << " fuse " << fuse;
      }
    }
  }
}

TEST(CudaExecutorCaptureTest, EnqueueIsCapturableAndReplaysTheEagerResult) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  constexpr int64_t kBatch = 16;
  absl::StatusOr<BoundGraph> graph = BindModel(TestModel(), {.batch_size = kBatch});
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<CudaExecutor>> cuda = CudaExecutor::Create(*graph, {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  std::mt19937 rng(11);
  std::vector<HostTensor> inputs;
  inputs.push_back(RandomInput({kBatch, 32}, rng));
  absl::StatusOr<std::vector<HostTensor>> eager = (*cuda)->Run(inputs);
  ASSERT_TRUE(eager.ok()) << eager.status();

  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok());
  const CudaGraphExec exec = CaptureEnqueue(**cuda, stream->get());
  ASSERT_NE(exec.get(), nullptr);

  std::memcpy((*cuda)->input_staging(0), inputs[0].raw(), inputs[0].bytes());
  for (int i = 0; i < 2; ++i) {
    std::memset(const_cast<void*>((*cuda)->output_staging(0)), 0xFF, (*eager)[0].bytes());
    ASSERT_EQ(cudaGraphLaunch(exec.get(), stream->get()), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
    EXPECT_EQ(std::memcmp((*cuda)->output_staging(0), (*eager)[0].raw(), (*eager)[0].bytes()), 0);
  }
}

TEST(CudaExecutorSharingTest, PlansOfOneStreamShareArenaAndWeights) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  const Model model = TestModel();
  absl::StatusOr<std::shared_ptr<WeightStore>> weights = WeightStore::Create(0);
  absl::StatusOr<std::shared_ptr<StreamArena>> arena = StreamArena::Create(0);
  absl::StatusOr<std::shared_ptr<IoBuffers>> io = IoBuffers::Create(0);
  ASSERT_TRUE(weights.ok() && arena.ok() && io.ok());
  ExecutionResources resources{*weights, *arena, *io};
  size_t largest = 0;
  std::vector<std::unique_ptr<CudaExecutor>> plans;
  for (int64_t batch : {256, 64, 8, 1}) {  // largest first, as capture will
    absl::StatusOr<BoundGraph> graph = BindModel(model, {.batch_size = batch});
    ASSERT_TRUE(graph.ok());
    absl::StatusOr<std::unique_ptr<CudaExecutor>> cuda = CudaExecutor::Create(*graph, {}, resources);
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    largest = std::max(largest, (*cuda)->arena_bytes());
    // The GEMMs' workspaces are planned inside the arena, not beside it.
    EXPECT_LE((*cuda)->workspace_bytes(), (*cuda)->arena_bytes()) << "batch " << batch;
    plans.push_back(std::move(*cuda));
  }
  EXPECT_EQ((*arena)->bytes(), largest);
  // The six initializers the run reads, uploaded once for all four plans
  // (the Reshape's shape is consumed by binding, never uploaded).
  EXPECT_EQ((*weights)->count(), 6u);
  // Every plan still computes its own batch correctly in the shared memory.
  std::mt19937 rng(3);
  for (auto& plan : plans) {
    const int64_t batch = plan->graph().batch_size;
    std::vector<HostTensor> inputs;
    inputs.push_back(RandomInput({batch, 32}, rng));
    absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(plan->graph());
    ASSERT_TRUE(host.ok());
    absl::StatusOr<std::vector<HostTensor>> want = (*host)->Run(inputs);
    absl::StatusOr<std::vector<HostTensor>> got = plan->Run(inputs);
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_LT(RelativeError((*got)[0], (*want)[0]), 1e-5) << "batch " << batch;
  }
}

// How the erf GELU chain is spelled: PyTorch's export (Div by sqrt(2), the
// 0.5 Mul last), the same with every commutative operand swapped and Div as a
// Mul by 1/sqrt(2), the 0.5 Mul taken first (x * 0.5) * (1 + erf), and a chain
// whose last constant is not 0.5 (a different function: must not be fused).
enum class GeluSpelling { kPyTorch, kSwapped, kHalfFirst, kNotGelu };

std::shared_ptr<const HostTensor> ScalarConstant(float v) {
  auto tensor = std::make_shared<HostTensor>(DType::kFloat32, Dims{});
  tensor->data<float>()[0] = v;
  return tensor;
}

// x[B,64] -> MatMul(W[64,128]) -> Add(b[128]) -> h -> the GELU chain -> y.
Model GeluModel(GeluSpelling spelling) {
  std::mt19937 rng(5);
  Model model;
  model.name = "gelu_test";
  model.opset = 17;
  model.inputs.push_back({"x", DType::kFloat32, {-1, 64}});
  model.outputs.push_back({"y", DType::kFloat32, {-1, 128}});
  model.initializers["W"] = RandomConstant({64, 128}, rng);
  model.initializers["b"] = RandomConstant({128}, rng);
  // The constants PyTorch writes, bit for bit.
  model.initializers["sqrt2"] = ScalarConstant(1.4142135381698608f);
  model.initializers["inv_sqrt2"] = ScalarConstant(0.70710677f);
  model.initializers["one"] = ScalarConstant(1.0f);
  model.initializers["half"] = ScalarConstant(spelling == GeluSpelling::kNotGelu ? 0.6f : 0.5f);
  model.nodes = {
      {"fc", "MatMul", {"x", "W"}, {"g"}, {}},
      {"bias", "Add", {"g", "b"}, {"h"}, {}},
  };
  switch (spelling) {
    case GeluSpelling::kPyTorch:
    case GeluSpelling::kNotGelu:
      model.nodes.insert(model.nodes.end(), {
          {"div", "Div", {"h", "sqrt2"}, {"d"}, {}},
          {"erf", "Erf", {"d"}, {"e"}, {}},
          {"add", "Add", {"e", "one"}, {"a"}, {}},
          {"mul", "Mul", {"h", "a"}, {"m"}, {}},
          {"half_mul", "Mul", {"m", "half"}, {"y"}, {}},
      });
      break;
    case GeluSpelling::kSwapped:
      model.nodes.insert(model.nodes.end(), {
          {"scale", "Mul", {"inv_sqrt2", "h"}, {"d"}, {}},
          {"erf", "Erf", {"d"}, {"e"}, {}},
          {"add", "Add", {"one", "e"}, {"a"}, {}},
          {"mul", "Mul", {"a", "h"}, {"m"}, {}},
          {"half_mul", "Mul", {"half", "m"}, {"y"}, {}},
      });
      break;
    case GeluSpelling::kHalfFirst:
      model.nodes.insert(model.nodes.end(), {
          {"half_mul", "Mul", {"h", "half"}, {"hh"}, {}},
          {"div", "Div", {"h", "sqrt2"}, {"d"}, {}},
          {"erf", "Erf", {"d"}, {"e"}, {}},
          {"add", "Add", {"e", "one"}, {"a"}, {}},
          {"mul", "Mul", {"a", "hh"}, {"y"}, {}},
      });
      break;
  }
  return model;
}

// Host-only: binding keeps every spelling's chain as the five nodes the
// executor's matcher looks for (nothing folded or reordered away), with the
// constants as one-element float32 values.
TEST(CudaExecutorGeluModelTest, BindingKeepsTheChainTheMatcherExpects) {
  for (GeluSpelling spelling : {GeluSpelling::kPyTorch, GeluSpelling::kSwapped,
                                GeluSpelling::kHalfFirst}) {
    absl::StatusOr<BoundGraph> graph = BindModel(GeluModel(spelling), {.batch_size = 37});
    ASSERT_TRUE(graph.ok()) << graph.status();
    ASSERT_EQ(graph->nodes.size(), 7u);
    int divs_or_muls = 0, erfs = 0, adds = 0;
    for (size_t i = 2; i < graph->nodes.size(); ++i) {
      const BoundNode& node = graph->nodes[i];
      divs_or_muls += node.op_type == "Div" || node.op_type == "Mul";
      erfs += node.op_type == "Erf";
      adds += node.op_type == "Add";
      for (ValueId input : node.inputs) {
        const BoundValue& value = graph->value(input);
        EXPECT_EQ(value.dtype, DType::kFloat32);
        if (value.is_constant()) {
          EXPECT_EQ(value.constant->num_elements(), 1) << node.name;
        } else {
          EXPECT_EQ(value.dims, (Dims{37, 128})) << node.name;
        }
      }
    }
    EXPECT_EQ(divs_or_muls, 3);
    EXPECT_EQ(erfs, 1);
    EXPECT_EQ(adds, 1);
    EXPECT_EQ(graph->value(graph->outputs[0]).dims, (Dims{37, 128}));
  }
}

using CudaExecutorGeluTest = CudaParamTest<std::tuple<GeluSpelling, int64_t>>;

TEST_P(CudaExecutorGeluTest, FusedErfGeluMatchesHostExecutor) {
  const auto [spelling, batch] = GetParam();
  absl::StatusOr<BoundGraph> graph = BindModel(GeluModel(spelling), {.batch_size = batch});
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(*graph);
  ASSERT_TRUE(host.ok()) << host.status();
  std::mt19937 rng(static_cast<uint32_t>(batch) + 100);
  std::vector<HostTensor> inputs;
  inputs.push_back(RandomInput({batch, 64}, rng));
  absl::StatusOr<std::vector<HostTensor>> expected = (*host)->Run(inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();

  for (bool fuse : {true, false}) {
    CudaExecutorOptions options;
    options.fuse_epilogues = fuse;
    absl::StatusOr<std::unique_ptr<CudaExecutor>> cuda = CudaExecutor::Create(*graph, options);
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    const bool is_gelu = spelling != GeluSpelling::kNotGelu;
    EXPECT_EQ((*cuda)->fused_gelus(), fuse && is_gelu ? 1 : 0) << "fuse " << fuse;
    // The bias Add goes into the MatMul's epilogue either way when fusing.
    EXPECT_EQ((*cuda)->fused_epilogues(), fuse ? 1 : 0);
    absl::StatusOr<std::vector<HostTensor>> got = (*cuda)->Run(inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), 1u);
    EXPECT_EQ((*got)[0].dims(), (*expected)[0].dims());
    EXPECT_LT(RelativeError((*got)[0], (*expected)[0]), 1e-5) << "fuse " << fuse;
  }
}

INSTANTIATE_TEST_SUITE_P(
    SpellingsAndBatches, CudaExecutorGeluTest,
    ::testing::Combine(::testing::Values(GeluSpelling::kPyTorch, GeluSpelling::kSwapped,
                                         GeluSpelling::kHalfFirst, GeluSpelling::kNotGelu),
                       ::testing::Values(int64_t{1}, int64_t{37}, int64_t{512})));

// A row of NaN in, a row of NaN out, on every path (fused or not), and the
// other rows unchanged: ONNX's and PyTorch's semantics, which cuBLASLt's
// RELU epilogue does not promise (issue 9).
TEST(CudaExecutorNanTest, NanRowStaysNanThroughGemmBiasRelu) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  const Model model = TestModel();
  absl::StatusOr<BoundGraph> graph = BindModel(model, {.batch_size = 4});
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::mt19937 rng(11);
  std::vector<HostTensor> inputs;
  inputs.push_back(RandomInput({4, 32}, rng));
  inputs[0].data<float>()[1 * 32 + 5] = std::nanf("");
  inputs[0].data<float>()[3 * 32 + 0] = 1e30f;  // large, finite in, Inf or NaN out as the host says
  absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(*graph);
  ASSERT_TRUE(host.ok()) << host.status();
  absl::StatusOr<std::vector<HostTensor>> expected = (*host)->Run(inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (bool fuse : {true, false}) {
    CudaExecutorOptions options;
    options.fuse_epilogues = fuse;
    absl::StatusOr<std::unique_ptr<CudaExecutor>> cuda = CudaExecutor::Create(*graph, options);
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    absl::StatusOr<std::vector<HostTensor>> got = (*cuda)->Run(inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    for (size_t o = 0; o < got->size(); ++o) {
      const HostTensor& g = (*got)[o];
      const HostTensor& w = (*expected)[o];
      const int64_t row = g.num_elements() / 4;
      for (int64_t i = 0; i < g.num_elements(); ++i) {
        const float gv = g.data<float>()[i];
        const float wv = w.data<float>()[i];
        SCOPED_TRACE(testing::Message() << "fuse " << fuse << " output " << o << " element " << i);
        if (std::isnan(wv) || i / row == 1) {
          EXPECT_TRUE(std::isnan(gv)) << gv;  // the NaN row is NaN everywhere
        } else if (std::isinf(wv)) {
          EXPECT_EQ(gv, wv);
        } else {
          EXPECT_NEAR(gv, wv, 1e-4 * (1 + std::fabs(wv)));
        }
      }
    }
  }
}

// x[B,3,13,11] -> Conv 3x3 pad 1 (+bias) -> Add(x-shaped residual via a 1x1
// Conv) -> Relu -> MaxPool 3x3/2 ceil -> depthwise Conv 3x3 (group 8) ->
// Clip [0,6] -> Conv 1x1 -> Sigmoid, Mul (SiLU) -> AveragePool 2x2 pad 1
// count_include_pad -> GlobalAveragePool -> Flatten -> Gemm -> y [B,5]; a
// BatchNormalization that cannot be folded (its input is also an output)
// gives z.
Model CnnModel() {
  std::mt19937 rng(21);
  Model model;
  model.name = "cnn_executor_test";
  model.opset = 17;
  model.inputs.push_back({"x", DType::kFloat32, {-1, 3, 13, 11}});
  model.outputs.push_back({"y", DType::kFloat32, {-1, 5}});
  model.outputs.push_back({"z", DType::kFloat32, {-1, 8, 13, 11}});
  model.outputs.push_back({"c1", DType::kFloat32, {-1, 8, 13, 11}});
  model.initializers["w1"] = RandomConstant({8, 3, 3, 3}, rng);
  model.initializers["b1"] = RandomConstant({8}, rng);
  model.initializers["wr"] = RandomConstant({8, 3, 1, 1}, rng);
  model.initializers["wd"] = RandomConstant({8, 1, 3, 3}, rng);
  model.initializers["wp"] = RandomConstant({16, 8, 1, 1}, rng);
  model.initializers["bp"] = RandomConstant({16}, rng);
  model.initializers["wf"] = RandomConstant({5, 16}, rng);
  model.initializers["bf"] = RandomConstant({5}, rng);
  for (const char* name : {"gamma", "beta", "mean"}) {
    model.initializers[name] = RandomConstant({8}, rng);
  }
  auto var = std::make_shared<HostTensor>(DType::kFloat32, Dims{8});
  for (int i = 0; i < 8; ++i) var->data<float>()[i] = 0.5f + 0.1f * static_cast<float>(i);
  model.initializers["var"] = var;
  auto scalar = [](float v) {
    auto t = std::make_shared<HostTensor>(DType::kFloat32, Dims{});
    *t->data<float>() = v;
    return t;
  };
  model.initializers["zero"] = scalar(0.0f);
  model.initializers["six"] = scalar(6.0f);
  const Attributes pad1 = {{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  model.nodes = {
      {"conv1", "Conv", {"x", "w1", "b1"}, {"c1"}, pad1},
      {"bn", "BatchNormalization", {"c1", "gamma", "beta", "mean", "var"}, {"z"}, {}},
      {"res", "Conv", {"x", "wr"}, {"r"}, {}},
      {"add", "Add", {"c1", "r"}, {"s"}, {}},
      {"relu", "Relu", {"s"}, {"a"}, {}},
      {"pool",
       "MaxPool",
       {"a"},
       {"p"},
       {{"kernel_shape", std::vector<int64_t>{3, 3}},
        {"strides", std::vector<int64_t>{2, 2}},
        {"ceil_mode", int64_t{1}}}},
      {"dw",
       "Conv",
       {"p", "wd"},
       {"d"},
       {{"group", int64_t{8}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}},
      {"clip", "Clip", {"d", "zero", "six"}, {"q"}, {}},
      {"pw", "Conv", {"q", "wp", "bp"}, {"e"}, {}},
      {"sig", "Sigmoid", {"e"}, {"g"}, {}},
      {"silu", "Mul", {"e", "g"}, {"h"}, {}},
      {"avg",
       "AveragePool",
       {"h"},
       {"v"},
       {{"kernel_shape", std::vector<int64_t>{2, 2}},
        {"pads", std::vector<int64_t>{1, 1, 1, 1}},
        {"count_include_pad", int64_t{1}}}},
      {"gap", "GlobalAveragePool", {"v"}, {"m"}, {}},
      {"flat", "Flatten", {"m"}, {"f"}, {}},
      {"fc", "Gemm", {"f", "wf", "bf"}, {"y"}, {{"transB", int64_t{1}}}},
  };
  return model;
}

class CudaExecutorCnnTest : public CudaExecutorTest {};

TEST_P(CudaExecutorCnnTest, MatchesHostExecutorFusedAndUnfused) {
  const int64_t batch = GetParam();
  absl::StatusOr<BoundGraph> graph = BindModel(CnnModel(), {.batch_size = batch});
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(*graph);
  ASSERT_TRUE(host.ok()) << host.status();
  std::mt19937 rng(static_cast<uint32_t>(batch) + 300);
  std::vector<HostTensor> inputs;
  inputs.push_back(RandomInput({batch, 3, 13, 11}, rng));
  absl::StatusOr<std::vector<HostTensor>> expected = (*host)->Run(inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  // dw on our own kernel (Note [Depthwise convolutions]) and on cuDNN.
  for (const auto& [fuse, own_depthwise] :
       {std::pair{true, true}, std::pair{false, true}, std::pair{true, false}}) {
    CudaExecutorOptions options;
    options.fuse_epilogues = fuse;
    options.own_depthwise_convs = own_depthwise;
    absl::StatusOr<std::unique_ptr<CudaExecutor>> cuda = CudaExecutor::Create(*graph, options);
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    EXPECT_EQ((*cuda)->conv_steps(), 4);
    EXPECT_LE((*cuda)->workspace_bytes(), (*cuda)->arena_bytes());
    // conv1 is also an output, so its Add is not fused; the residual 1x1
    // Conv takes the Add (+ Relu), dw its Clip, pw its SiLU (two nodes).
    EXPECT_EQ((*cuda)->fused_into_convs(), fuse ? 5 : 0);
    absl::StatusOr<std::vector<HostTensor>> got = (*cuda)->Run(inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), expected->size());
    for (size_t i = 0; i < got->size(); ++i) {
      EXPECT_EQ((*got)[i].dims(), (*expected)[i].dims());
      EXPECT_LT(RelativeError((*got)[i], (*expected)[i]), 1e-5)
          << "fuse " << fuse << " own depthwise " << own_depthwise << " output " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Batches, CudaExecutorCnnTest,
                         ::testing::Values(int64_t{1}, int64_t{3}, int64_t{8}, int64_t{64}));

// An Inception-style block with independent branches: x[B,8,9,9] -> {1x1
// Conv+Relu; 1x1 Conv+Relu -> 3x3 Conv+Relu; 3x3 MaxPool -> 1x1 Conv} ->
// Concat -> GlobalAveragePool -> Flatten -> two Gemm heads side by side (two
// GEMMs that may run at once, each on its lane's workspace): y [B,5] and
// Softmax(w) [B,3].
Model BranchyModel() {
  std::mt19937 rng(31);
  Model model;
  model.name = "branchy_executor_test";
  model.opset = 17;
  model.inputs.push_back({"x", DType::kFloat32, {-1, 8, 9, 9}});
  model.outputs.push_back({"y", DType::kFloat32, {-1, 5}});
  model.outputs.push_back({"w", DType::kFloat32, {-1, 3}});
  model.initializers["w1"] = RandomConstant({4, 8, 1, 1}, rng);
  model.initializers["w2a"] = RandomConstant({4, 8, 1, 1}, rng);
  model.initializers["w2b"] = RandomConstant({6, 4, 3, 3}, rng);
  model.initializers["b2b"] = RandomConstant({6}, rng);
  model.initializers["w3"] = RandomConstant({2, 8, 1, 1}, rng);
  model.initializers["wy"] = RandomConstant({5, 12}, rng);
  model.initializers["by"] = RandomConstant({5}, rng);
  model.initializers["ww"] = RandomConstant({3, 12}, rng);
  model.initializers["bw"] = RandomConstant({3}, rng);
  const Attributes pad1 = {{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  const Attributes trans_b = {{"transB", int64_t{1}}};
  model.nodes = {
      {"b1", "Conv", {"x", "w1"}, {"c1"}, {}},
      {"b1_relu", "Relu", {"c1"}, {"r1"}, {}},
      {"b2a", "Conv", {"x", "w2a"}, {"c2a"}, {}},
      {"b2a_relu", "Relu", {"c2a"}, {"r2a"}, {}},
      {"b2b", "Conv", {"r2a", "w2b", "b2b"}, {"c2b"}, pad1},
      {"b2b_relu", "Relu", {"c2b"}, {"r2b"}, {}},
      {"b3_pool",
       "MaxPool",
       {"x"},
       {"p3"},
       {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}},
      {"b3", "Conv", {"p3", "w3"}, {"c3"}, {}},
      {"concat", "Concat", {"r1", "r2b", "c3"}, {"cat"}, {{"axis", int64_t{1}}}},
      {"gap", "GlobalAveragePool", {"cat"}, {"m"}, {}},
      {"flat", "Flatten", {"m"}, {"f"}, {}},
      {"head_y", "Gemm", {"f", "wy", "by"}, {"y"}, trans_b},
      {"head_w", "Gemm", {"f", "ww", "bw"}, {"hw"}, trans_b},
      {"softmax", "Softmax", {"hw"}, {"w"}, {{"axis", int64_t{-1}}}},
  };
  return model;
}

bool SameBytes(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].bytes() != b[i].bytes() || std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) != 0) {
      return false;
    }
  }
  return true;
}

// The captured graph of `executor`, replayed once on `inputs`; its outputs.
std::vector<HostTensor> ReplayCaptured(const CudaExecutor& executor,
                                       const std::vector<HostTensor>& inputs) {
  std::vector<HostTensor> outputs;
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  EXPECT_TRUE(stream.ok());
  if (!stream.ok()) return outputs;
  EXPECT_EQ(cudaStreamBeginCapture(stream->get(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const absl::Status enqueued = executor.Enqueue(stream->get());
  cudaGraph_t raw_graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(stream->get(), &raw_graph), cudaSuccess);
  EXPECT_TRUE(enqueued.ok()) << enqueued;
  CudaGraph captured(raw_graph);
  cudaGraphExec_t raw_exec = nullptr;
  EXPECT_EQ(cudaGraphInstantiate(&raw_exec, captured.get(), 0), cudaSuccess);
  CudaGraphExec exec(raw_exec);
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::memcpy(executor.input_staging(i), inputs[i].raw(), inputs[i].bytes());
  }
  const BoundGraph& graph = executor.graph();
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    std::memset(const_cast<void*>(executor.output_staging(i)), 0xFF,
                graph.value(graph.outputs[i]).bytes());
  }
  EXPECT_EQ(cudaGraphLaunch(exec.get(), stream->get()), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const BoundValue& value = graph.value(graph.outputs[i]);
    HostTensor& out = outputs.emplace_back(value.dtype, value.dims);
    std::memcpy(out.raw(), executor.output_staging(i), out.bytes());
  }
  return outputs;
}

using CudaExecutorLanesTest = CudaParamTest<std::tuple<SchedulePolicy, int64_t>>;

// Same kernels on the same inputs: a multi-lane run, eager or replayed, is
// bit-identical to the single-lane eager run, and close to the host's.
TEST_P(CudaExecutorLanesTest, MultiLaneRunIsBitIdenticalToSingleLane) {
  const auto [policy, batch] = GetParam();
  absl::StatusOr<BoundGraph> graph = BindModel(BranchyModel(), {.batch_size = batch});
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::mt19937 rng(static_cast<uint32_t>(batch) + 500);
  std::vector<HostTensor> inputs;
  inputs.push_back(RandomInput({batch, 8, 9, 9}, rng));
  absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(*graph);
  ASSERT_TRUE(host.ok()) << host.status();
  absl::StatusOr<std::vector<HostTensor>> expected = (*host)->Run(inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();

  // Both plans share one slot's resources, as a GraphSet's plans do, and
  // one set of algorithm choices, so they run the same kernels.
  ExecutionResources resources;
  resources.algorithm_choices = std::make_shared<AlgorithmChoices>();
  absl::StatusOr<std::shared_ptr<SlotLanes>> lanes = SlotLanes::Create(0);
  ASSERT_TRUE(lanes.ok()) << lanes.status();
  resources.lanes = *lanes;
  absl::StatusOr<std::unique_ptr<CudaExecutor>> single =
      CudaExecutor::Create(*graph, {}, resources);
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_EQ((*single)->schedule().lanes, 1);
  EXPECT_EQ((*single)->events_per_run(), 0);
  CudaExecutorOptions options;
  options.schedule = {.policy = policy, .max_lanes = 4};
  absl::StatusOr<std::unique_ptr<CudaExecutor>> multi =
      CudaExecutor::Create(*graph, options, resources);
  ASSERT_TRUE(multi.ok()) << multi.status();
  const Schedule& schedule = (*multi)->schedule();
  EXPECT_GE(schedule.lanes, 3);  // three convolution branches, two heads
  EXPECT_GE(schedule.max_width, 3);
  EXPECT_GT((*multi)->events_per_run(), schedule.lanes);  // fork, joins, waits
  EXPECT_GE((*lanes)->lanes(), schedule.lanes);
  EXPECT_GE((*multi)->arena_bytes(), (*multi)->arena_lower_bound_bytes());
  EXPECT_EQ((*single)->single_lane_arena_bytes(), (*single)->arena_bytes());

  absl::StatusOr<std::vector<HostTensor>> want = (*single)->Run(inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  for (size_t i = 0; i < want->size(); ++i) {
    EXPECT_LT(RelativeError((*want)[i], (*expected)[i]), 1e-5) << "output " << i;
  }
  for (int run = 0; run < 3; ++run) {  // the lanes' events are reused run after run
    absl::StatusOr<std::vector<HostTensor>> eager = (*multi)->Run(inputs);
    ASSERT_TRUE(eager.ok()) << eager.status();
    EXPECT_TRUE(SameBytes(*eager, *want)) << "eager run " << run;
  }
  EXPECT_TRUE(SameBytes(ReplayCaptured(**multi, inputs), *want));
}

INSTANTIATE_TEST_SUITE_P(
    PoliciesAndBatches, CudaExecutorLanesTest,
    ::testing::Combine(::testing::Values(SchedulePolicy::kWavefront, SchedulePolicy::kAsap),
                       ::testing::Values(int64_t{1}, int64_t{7}, int64_t{64})));

// Attention scores with the exporters' scales taken into the MatMul's alpha
// (q and k^T each times 0.5, the scores divided by 2): the host executor's
// answer, fused or not.
TEST(CudaExecutorScaleTest, ScalesInAlphaMatchHostExecutor) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  Model model;
  model.name = "scaled_scores";
  model.opset = 17;
  model.inputs.push_back({"q", DType::kFloat32, {-1, 16, 32}});
  model.inputs.push_back({"kt", DType::kFloat32, {-1, 32, 16}});
  model.outputs.push_back({"p", DType::kFloat32, {-1, 16, 16}});
  model.initializers["s"] = ScalarConstant(0.5f);
  model.initializers["d"] = ScalarConstant(2.0f);
  model.nodes = {
      {"scale_q", "Mul", {"q", "s"}, {"qs"}, {}},
      {"scale_k", "Mul", {"s", "kt"}, {"ks"}, {}},
      {"scores", "MatMul", {"qs", "ks"}, {"a"}, {}},
      {"scale", "Div", {"a", "d"}, {"b"}, {}},
      {"softmax", "Softmax", {"b"}, {"p"}, {{"axis", int64_t{-1}}}},
  };
  constexpr int64_t kBatch = 6;
  absl::StatusOr<BoundGraph> graph = BindModel(model, {.batch_size = kBatch});
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(*graph);
  ASSERT_TRUE(host.ok()) << host.status();
  std::mt19937 rng(23);
  std::vector<HostTensor> inputs;
  inputs.push_back(RandomInput({kBatch, 16, 32}, rng));
  inputs.push_back(RandomInput({kBatch, 32, 16}, rng));
  absl::StatusOr<std::vector<HostTensor>> expected = (*host)->Run(inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (bool fuse : {true, false}) {
    CudaExecutorOptions options;
    options.fuse_epilogues = fuse;
    absl::StatusOr<std::unique_ptr<CudaExecutor>> cuda = CudaExecutor::Create(*graph, options);
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    absl::StatusOr<std::vector<HostTensor>> got = (*cuda)->Run(inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_LT(RelativeError((*got)[0], (*expected)[0]), 1e-5) << "fuse " << fuse;
  }
}

// The residual stream: s = x + a, y = LayerNorm(s) (or RMSNormalization(s))
// over C, z = s + y, with outputs y and z (so the fused step writes the sum
// too). C = 64 takes the warp-per-row kernel, C = 2048 the block-per-row one.
// A NaN in one row of x stays in that row.
using CudaExecutorAddLayerNormTest = CudaParamTest<std::tuple<int64_t, const char*>>;

TEST_P(CudaExecutorAddLayerNormTest, FusedMatchesHostExecutor) {
  const auto [channels, norm_op] = GetParam();
  const bool rms = std::string(norm_op) == "RMSNormalization";
  std::mt19937 rng(31);
  Model model;
  model.name = "add_layer_norm";
  model.opset = rms ? 23 : 17;
  model.inputs.push_back({"x", DType::kFloat32, {-1, channels}});
  model.inputs.push_back({"a", DType::kFloat32, {-1, channels}});
  model.outputs.push_back({"y", DType::kFloat32, {-1, channels}});
  model.outputs.push_back({"z", DType::kFloat32, {-1, channels}});
  model.initializers["gamma"] = RandomConstant({channels}, rng);
  std::vector<std::string> norm_inputs = {"s", "gamma"};
  if (!rms) {  // RMSNormalization has no B
    model.initializers["beta"] = RandomConstant({channels}, rng);
    norm_inputs.push_back("beta");
  }
  model.nodes = {
      {"residual", "Add", {"x", "a"}, {"s"}, {}},
      {"norm", norm_op, norm_inputs, {"y"}, {{"axis", int64_t{-1}}}},
      {"next", "Add", {"s", "y"}, {"z"}, {}},
  };
  constexpr int64_t kBatch = 5;
  absl::StatusOr<BoundGraph> graph = BindModel(model, {.batch_size = kBatch});
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<HostTensor> inputs;
  inputs.push_back(RandomInput({kBatch, channels}, rng));
  inputs.push_back(RandomInput({kBatch, channels}, rng));
  inputs[0].data<float>()[2 * channels + 1] = std::nanf("");  // row 2
  absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(*graph);
  ASSERT_TRUE(host.ok()) << host.status();
  absl::StatusOr<std::vector<HostTensor>> expected = (*host)->Run(inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (bool fuse : {true, false}) {
    CudaExecutorOptions options;
    options.fuse_epilogues = fuse;
    absl::StatusOr<std::unique_ptr<CudaExecutor>> cuda = CudaExecutor::Create(*graph, options);
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    EXPECT_EQ((*cuda)->add_layer_norms(), fuse ? 1 : 0);
    absl::StatusOr<std::vector<HostTensor>> got = (*cuda)->Run(inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    for (size_t i = 0; i < 2; ++i) {
      const float* g = (*got)[i].data<float>();
      const float* w = (*expected)[i].data<float>();
      for (int64_t k = 0; k < kBatch * channels; ++k) {
        const bool nan_row = k / channels == 2;
        EXPECT_EQ(std::isnan(g[k]), nan_row) << "output " << i << " element " << k;
        if (!nan_row) {
          EXPECT_NEAR(g[k], w[k], 1e-5 * (1.0 + std::fabs(w[k])))
              << "output " << i << " element " << k << " fuse " << fuse;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    ChannelsAndNorms, CudaExecutorAddLayerNormTest,
    ::testing::Combine(::testing::Values(int64_t{64}, int64_t{2048}),
                       ::testing::Values("LayerNormalization", "RMSNormalization")),
    [](const auto& info) {
      return absl::StrCat(std::get<1>(info.param), "_", std::get<0>(info.param));
    });

// A model already in half precision (exported with .half(), or bf16), run as
// written: one encoder block of a transformer, every value float16 or
// bfloat16. x[B,8,64] -> q, k, v (MatMul + bias Add), scores q k^T / 8,
// Softmax, context, output projection, residual Add + LayerNorm, a feed-
// forward layer with the exact GELU chain (Div, Erf, Add, Mul, Mul) and a
// Tanh/Sigmoid gate, residual Add + LayerNorm -> y; beside it a Gemm with
// transB and a bias C, Relu, Sqrt of its square -> z.
Model HalfEncoderBlock(DType dtype) {
  uint64_t seed = 40;
  Model model;
  model.name = "half_encoder_block";
  model.opset = 17;
  const auto constant = [&](Dims dims, float scale) {
    auto tensor = std::make_shared<HostTensor>(RandomTensor(dtype, std::move(dims), ++seed));
    HostTensor scaled(dtype, tensor->dims());
    // Weights of N(0, scale^2), rounded once to the model's type.
    VisitDType(dtype, [&](auto tag) {
      using T = typename decltype(tag)::Host;
      if constexpr (kIsHost16BitFloat<T>) {
        for (int64_t i = 0; i < tensor->num_elements(); ++i) {
          scaled.data<T>()[i] = Narrow<T>(Widen(tensor->data<T>()[i]) * scale);
        }
      }
    });
    return std::make_shared<const HostTensor>(std::move(scaled));
  };
  const auto scalar = [&](float v) {
    auto tensor = std::make_shared<HostTensor>(dtype, Dims{});
    VisitDType(dtype, [&](auto tag) {
      using T = typename decltype(tag)::Host;
      if constexpr (kIsHost16BitFloat<T>) tensor->data<T>()[0] = Narrow<T>(v);
    });
    return tensor;
  };
  model.inputs.push_back({"x", dtype, {-1, 8, 64}});
  model.inputs.push_back({"x2", dtype, {-1, 64}});
  model.outputs.push_back({"y", dtype, {-1, 8, 64}});
  model.outputs.push_back({"z", dtype, {-1, 16}});
  for (const char* w : {"Wq", "Wk", "Wv", "Wo"}) model.initializers[w] = constant({64, 64}, 0.125f);
  for (const char* b : {"bq", "bk", "bv", "bo", "ln1_b", "ln2_b", "b2"}) {
    model.initializers[b] = constant({64}, 0.1f);
  }
  model.initializers["ln1_g"] = constant({64}, 1.0f);
  model.initializers["ln2_g"] = constant({64}, 1.0f);
  model.initializers["W1"] = constant({64, 128}, 0.125f);
  model.initializers["b1"] = constant({128}, 0.1f);
  model.initializers["W2"] = constant({128, 64}, 0.09f);
  model.initializers["Wg"] = constant({16, 64}, 0.125f);
  model.initializers["Cg"] = constant({16}, 0.1f);
  model.initializers["eight"] = scalar(8.0f);
  model.initializers["sqrt2"] = scalar(1.4142135f);
  model.initializers["one"] = scalar(1.0f);
  model.initializers["half"] = scalar(0.5f);
  model.nodes = {
      {"q_mm", "MatMul", {"x", "Wq"}, {"q0"}, {}},
      {"q_b", "Add", {"q0", "bq"}, {"q"}, {}},
      {"k_mm", "MatMul", {"x", "Wk"}, {"k0"}, {}},
      {"k_b", "Add", {"k0", "bk"}, {"k"}, {}},
      {"v_mm", "MatMul", {"x", "Wv"}, {"v0"}, {}},
      {"v_b", "Add", {"v0", "bv"}, {"v"}, {}},
      {"k_t", "Transpose", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 2, 1}}}},
      {"scores", "MatMul", {"q", "kt"}, {"s0"}, {}},
      {"scale", "Div", {"s0", "eight"}, {"s"}, {}},
      {"softmax", "Softmax", {"s"}, {"p"}, {{"axis", int64_t{-1}}}},
      {"context", "MatMul", {"p", "v"}, {"c"}, {}},
      {"o_mm", "MatMul", {"c", "Wo"}, {"o0"}, {}},
      {"o_b", "Add", {"o0", "bo"}, {"o"}, {}},
      {"residual1", "Add", {"x", "o"}, {"r1"}, {}},
      {"ln1", "LayerNormalization", {"r1", "ln1_g", "ln1_b"}, {"h"}, {{"axis", int64_t{-1}}}},
      {"ff1_mm", "MatMul", {"h", "W1"}, {"f0"}, {}},
      {"ff1_b", "Add", {"f0", "b1"}, {"f"}, {}},
      {"gelu_div", "Div", {"f", "sqrt2"}, {"g0"}, {}},
      {"gelu_erf", "Erf", {"g0"}, {"g1"}, {}},
      {"gelu_add", "Add", {"g1", "one"}, {"g2"}, {}},
      {"gelu_mul", "Mul", {"f", "g2"}, {"g3"}, {}},
      {"gelu_half", "Mul", {"g3", "half"}, {"g"}, {}},
      {"gate_tanh", "Tanh", {"g"}, {"t"}, {}},
      {"gate_sigmoid", "Sigmoid", {"t"}, {"u"}, {}},
      {"gate", "Mul", {"g", "u"}, {"gu"}, {}},
      {"ff2_mm", "MatMul", {"gu", "W2"}, {"e0"}, {}},
      {"ff2_b", "Add", {"e0", "b2"}, {"e"}, {}},
      {"residual2", "Add", {"h", "e"}, {"r2"}, {}},
      {"ln2", "LayerNormalization", {"r2", "ln2_g", "ln2_b"}, {"y"}, {{"axis", int64_t{-1}}}},
      {"fc", "Gemm", {"x2", "Wg", "Cg"}, {"z0"}, {{"transB", int64_t{1}}}},
      {"relu", "Relu", {"z0"}, {"z1"}, {}},
      {"square", "Mul", {"z1", "z1"}, {"z2"}, {}},
      {"root", "Sqrt", {"z2"}, {"z"}, {}},
  };
  return model;
}

using CudaExecutorHalfModelTest = CudaParamTest<std::tuple<DType, int64_t>>;

// The host reference computes each node in double and rounds its output once
// to the model's type; the GPU computes in float (GEMMs accumulate in float
// on the tensor cores) and rounds the same way. Through 30 nodes the two
// differ by a few roundings of the type: ||got - want|| / ||want|| stays
// under four units in the last place (2^-11 for float16, 2^-8 for bfloat16).
// Runs `model` at `batch` on the host reference and on CUDA (fused and
// unfused), every output of `dtype` within `ulps` units in its last place of
// the host's, norm-wise (2^-11 for float16, 2^-8 for bfloat16, 2^-24 for
// float32). `check_plan` sees the fused executor.
void ExpectModelMatchesHost(const Model& model, DType dtype, int64_t batch,
                            const std::vector<HostTensor>& inputs,
                            const std::function<void(const CudaExecutor&)>& check_plan,
                            double ulps = 4,
                            FuseAttention fuse_attention = FuseAttention::kHalf) {
  absl::StatusOr<BoundGraph> graph = BindModel(model, {.batch_size = batch});
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(*graph);
  ASSERT_TRUE(host.ok()) << host.status();
  absl::StatusOr<std::vector<HostTensor>> expected = (*host)->Run(inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  const double ulp = dtype == DType::kFloat16    ? 0x1p-11
                     : dtype == DType::kBFloat16 ? 0x1p-8
                                                 : 0x1p-24;
  for (bool fuse : {true, false}) {
    CudaExecutorOptions options;
    options.fuse_epilogues = fuse;
    options.fuse_attention = fuse_attention;
    absl::StatusOr<std::unique_ptr<CudaExecutor>> cuda = CudaExecutor::Create(*graph, options);
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    if (fuse) check_plan(**cuda);
    absl::StatusOr<std::vector<HostTensor>> got = (*cuda)->Run(inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), expected->size());
    for (size_t i = 0; i < got->size(); ++i) {
      ASSERT_EQ((*got)[i].dtype(), dtype);
      EXPECT_EQ((*got)[i].dims(), (*expected)[i].dims());
      EXPECT_LT(RelativeError((*got)[i], (*expected)[i]), ulps * ulp)
          << "output " << i << " fuse " << fuse;
    }
  }
}

// The host reference computes each node in double and rounds its output once
// to the model's type; the GPU computes in float (GEMMs accumulate in float
// on the tensor cores) and rounds the same way. Through 30 nodes the two
// differ by a few roundings of the type.
TEST_P(CudaExecutorHalfModelTest, MatchesHostExecutorFusedAndUnfused) {
  const auto [dtype, batch] = GetParam();
  std::vector<HostTensor> inputs;
  inputs.push_back(RandomTensor(dtype, {batch, 8, 64}, 3));
  inputs.push_back(RandomTensor(dtype, {batch, 64}, 4));
  ExpectModelMatchesHost(HalfEncoderBlock(dtype), dtype, batch, inputs,
                             [](const CudaExecutor& cuda) {
                               // Six bias Adds and the Gemm's C in cuBLASLt's epilogue, two
                               // residual LayerNorms fused, in the model's own type.
                               EXPECT_EQ(cuda.fused_epilogues(), 7);
                               EXPECT_EQ(cuda.add_layer_norms(), 2);
                               // Note [16-bit fusions]: the erf GELU chain, the gate
                               // (Tanh, Sigmoid, Mul) and Relu, Mul, Sqrt as regions.
                               EXPECT_EQ(cuda.fused_gelus(), 1);
                               EXPECT_EQ(cuda.pointwise_regions(), 2);
                               // The attention chain (k's Transpose, the two MatMuls, the
                               // scale and the Softmax) is one step on cuDNN's engines:
                               // 13 steps where float32 runs 16
                               // (HalfEncoderBlockFusesLikeItsFloat32Twin).
                               EXPECT_EQ(cuda.fused_attentions(), 1);
                               EXPECT_EQ(cuda.schedule().steps.size(), 13u);
                             });
}

// A convolutional block in half precision: x[B,8,16,16] -> Conv 3x3 (bias)
// -> BatchNormalization (not folded: its statistics are float16 or
// bfloat16 here, held by binding as a per-channel affine in that type) ->
// Relu -> MaxPool 2x2 -> Conv 3x3 with asymmetric pads -> residual Add of a
// 1x1 Conv of the pooled input -> Clip [0, 6] -> HardSwish -> AveragePool
// 3x3 -> GlobalAveragePool -> y [B,16,1,1]. Every value of the model's type.
Model HalfConvBlock(DType dtype) {
  uint64_t seed = 90;
  Model model;
  model.name = "half_conv_block";
  model.opset = 17;
  const auto constant = [&](Dims dims, float scale, float offset = 0.0f) {
    HostTensor normal = ConvertFloats(RandomTensor(DType::kFloat32, std::move(dims), ++seed),
                                      DType::kFloat32);
    for (int64_t i = 0; i < normal.num_elements(); ++i) {
      normal.data<float>()[i] = normal.data<float>()[i] * scale + offset;
    }
    return std::make_shared<const HostTensor>(ConvertFloats(normal, dtype));
  };
  model.inputs.push_back({"x", dtype, {-1, 8, 16, 16}});
  model.outputs.push_back({"y", dtype, {-1, 16, 1, 1}});
  model.initializers["W1"] = constant({16, 8, 3, 3}, 0.15f);
  model.initializers["B1"] = constant({16}, 0.1f);
  model.initializers["bn_scale"] = constant({16}, 0.1f, 1.0f);
  model.initializers["bn_bias"] = constant({16}, 0.1f);
  model.initializers["bn_mean"] = constant({16}, 0.1f);
  model.initializers["bn_var"] = constant({16}, 0.05f, 1.0f);
  model.initializers["W2"] = constant({16, 16, 3, 3}, 0.1f);
  model.initializers["W3"] = constant({16, 16, 1, 1}, 0.25f);
  model.initializers["lo"] = constant({}, 0.0f);
  model.initializers["hi"] = constant({}, 0.0f, 6.0f);
  model.nodes = {
      {"conv1", "Conv", {"x", "W1", "B1"}, {"c1"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}},
      {"bn", "BatchNormalization", {"c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"}, {"n1"}, {}},
      {"relu", "Relu", {"n1"}, {"r1"}, {}},
      {"pool", "MaxPool", {"r1"}, {"p1"},
       {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}},
      {"conv2", "Conv", {"p1", "W2"}, {"c2"}, {{"pads", std::vector<int64_t>{0, 1, 2, 1}}}},
      {"skip", "Conv", {"p1", "W3"}, {"s1"}, {}},
      {"residual", "Add", {"c2", "s1"}, {"a1"}, {}},
      {"clip", "Clip", {"a1", "lo", "hi"}, {"k1"}, {}},
      {"hswish", "HardSwish", {"k1"}, {"h1"}, {}},
      {"avg", "AveragePool", {"h1"}, {"v1"},
       {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}},
      {"gap", "GlobalAveragePool", {"v1"}, {"y"}, {}},
  };
  return model;
}

TEST_P(CudaExecutorHalfModelTest, ConvBlockMatchesHostExecutorFusedAndUnfused) {
  const auto [dtype, batch] = GetParam();
  std::vector<HostTensor> inputs;
  inputs.push_back(RandomTensor(dtype, {batch, 8, 16, 16}, 5));
  ExpectModelMatchesHost(HalfConvBlock(dtype), dtype, batch, inputs, [](const CudaExecutor& cuda) {
    // Note [Channels-last convolutions]: the 1x1
    // skip Conv's output, conv2's residual, would
    // cost more transposes NHWC than it saves.
    EXPECT_EQ(cuda.channels_last_values(), 0);
  });
}

// Note [Channels-last convolutions] through every layout pairing, x[B,8,12,12]:
//   stem   Conv 3x3 (bias)             -> s   NHWC (x NCHW, the graph's input)
//   pool   MaxPool 2x2                 -> p   NHWC (x NHWC)
//   conv1  Relu(Conv 3x3 (p))          -> a   NHWC (x NHWC, y NHWC)
//   conv2  Relu(Conv 3x3 (a) + d)      -> r   NHWC (x NHWC, residual NHWC)
//   down   Conv 3x3 (p)                -> d   NHWC (conv2's residual)
//   conv3  Relu(Conv 3x3 (r) + r)      -> y3  NCHW for dw (x and residual NHWC)
//   dw     Conv 3x3 depthwise (y3)     -> z   graph output, NCHW
//   gap    GlobalAveragePool(y3)       -> y
// Without the depthwise tail, y3 is NHWC and the global pool reads it so.
Model HalfConvChain(DType dtype, bool depthwise_tail) {
  uint64_t seed = 120;
  Model model;
  model.name = "half_conv_chain";
  model.opset = 17;
  const auto constant = [&](Dims dims, float scale) {
    HostTensor normal = RandomTensor(DType::kFloat32, std::move(dims), ++seed);
    for (int64_t i = 0; i < normal.num_elements(); ++i) normal.data<float>()[i] *= scale;
    return std::make_shared<const HostTensor>(ConvertFloats(normal, dtype));
  };
  model.inputs.push_back({"x", dtype, {-1, 8, 12, 12}});
  model.outputs.push_back({"y", dtype, {-1, 16, 1, 1}});
  if (depthwise_tail) model.outputs.push_back({"z", dtype, {-1, 16, 6, 6}});
  model.initializers["w0"] = constant({16, 8, 3, 3}, 0.15f);
  model.initializers["b0"] = constant({16}, 0.1f);
  model.initializers["w1"] = constant({16, 16, 3, 3}, 0.1f);
  model.initializers["w2"] = constant({16, 16, 3, 3}, 0.1f);
  model.initializers["wd"] = constant({16, 16, 3, 3}, 0.1f);
  model.initializers["w3"] = constant({16, 16, 3, 3}, 0.1f);
  model.initializers["wz"] = constant({16, 1, 3, 3}, 0.3f);
  const Attributes pad1 = {{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  model.nodes = {
      {"stem", "Conv", {"x", "w0", "b0"}, {"s"}, pad1},
      {"pool",
       "MaxPool",
       {"s"},
       {"p"},
       {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}},
      {"conv1", "Conv", {"p", "w1"}, {"c1"}, pad1},
      {"relu1", "Relu", {"c1"}, {"a"}, {}},
      {"conv2", "Conv", {"a", "w2"}, {"c2"}, pad1},
      {"down", "Conv", {"p", "wd"}, {"d"}, pad1},
      {"add2", "Add", {"c2", "d"}, {"s2"}, {}},
      {"relu2", "Relu", {"s2"}, {"r"}, {}},
      {"conv3", "Conv", {"r", "w3"}, {"c3"}, pad1},
      {"add3", "Add", {"c3", "r"}, {"s3"}, {}},
      {"relu3", "Relu", {"s3"}, {"y3"}, {}},
      {"gap", "GlobalAveragePool", {"y3"}, {"y"}, {}},
  };
  if (depthwise_tail) {
    model.nodes.push_back({"dw",
                           "Conv",
                           {"y3", "wz"},
                           {"z"},
                           {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", int64_t{16}}}});
  } else {
    model.initializers.erase("wz");
  }
  return model;
}

TEST_P(CudaExecutorHalfModelTest, ConvChainInEveryLayoutPairingMatchesHostExecutor) {
  const auto [dtype, batch] = GetParam();
  std::vector<HostTensor> inputs;
  inputs.push_back(RandomTensor(dtype, {batch, 8, 12, 12}, 6));
  ExpectModelMatchesHost(HalfConvChain(dtype, /*depthwise_tail=*/true), dtype, batch, inputs,
                         [](const CudaExecutor& cuda) {
                           EXPECT_EQ(cuda.conv_steps(), 6);
                           EXPECT_EQ(cuda.channels_last_values(), 5);  // s, p, a, d, r
                         });
  ExpectModelMatchesHost(HalfConvChain(dtype, /*depthwise_tail=*/false), dtype, batch, inputs,
                         [](const CudaExecutor& cuda) {
                           EXPECT_EQ(cuda.conv_steps(), 5);
                           EXPECT_EQ(cuda.channels_last_values(), 6);  // and y3
                         });
}

// Opset 23's transformer ops in half precision: x[B,8,64] -> RMSNormalization
// -> q (4 heads of 16), k and v (2 KV heads) by MatMul -> RotaryEmbedding of
// q and k at position ids (an int64 input) -> Attention, 3-D and grouped,
// causal, softcapped, with a constant boolean mask that hides every key from
// query 2 (the fully masked row's guard) -> y[B,8,64]. RMSNormalization and
// RotaryEmbedding are kernels of their own; Attention runs as the MatMul,
// Softmax, Where and elementwise nodes binding lowers it to (Note [Attention
// lowering] in runtime/ops/attention.cc).
Model HalfOpset23Block(DType dtype) {
  uint64_t seed = 130;
  Model model;
  model.name = "half_opset23_block";
  model.opset = 23;
  const auto constant = [&](Dims dims, float scale) {
    HostTensor normal = RandomTensor(DType::kFloat32, std::move(dims), ++seed);
    for (int64_t i = 0; i < normal.num_elements(); ++i) normal.data<float>()[i] *= scale;
    return std::make_shared<const HostTensor>(ConvertFloats(normal, dtype));
  };
  auto mask = std::make_shared<HostTensor>(DType::kBool, Dims{8, 8});
  for (int64_t i = 0; i < 64; ++i) mask->data<bool>()[i] = i / 8 != 2;
  model.inputs.push_back({"x", dtype, {-1, 8, 64}});
  model.inputs.push_back({"ids", DType::kInt64, {-1, 8}});
  model.outputs.push_back({"y", dtype, {-1, 8, 64}});
  model.initializers["gamma"] = constant({64}, 1.0f);
  model.initializers["Wq"] = constant({64, 64}, 0.125f);
  model.initializers["Wk"] = constant({64, 32}, 0.125f);
  model.initializers["Wv"] = constant({64, 32}, 0.125f);
  model.initializers["cos"] = constant({16, 8}, 1.0f);
  model.initializers["sin"] = constant({16, 8}, 1.0f);
  model.initializers["mask"] = std::move(mask);
  model.nodes = {
      {"norm", "RMSNormalization", {"x", "gamma"}, {"h"}, {}},
      {"q_mm", "MatMul", {"h", "Wq"}, {"q0"}, {}},
      {"k_mm", "MatMul", {"h", "Wk"}, {"k0"}, {}},
      {"v_mm", "MatMul", {"h", "Wv"}, {"v"}, {}},
      {"q_rope", "RotaryEmbedding", {"q0", "cos", "sin", "ids"}, {"q"},
       {{"num_heads", int64_t{4}}}},
      {"k_rope", "RotaryEmbedding", {"k0", "cos", "sin", "ids"}, {"k"},
       {{"num_heads", int64_t{2}}, {"interleaved", int64_t{1}}}},
      {"attention", "Attention", {"q", "k", "v", "mask"}, {"y"},
       {{"q_num_heads", int64_t{4}},
        {"kv_num_heads", int64_t{2}},
        {"is_causal", int64_t{1}},
        {"softcap", 5.0f}}},
  };
  return model;
}

TEST_P(CudaExecutorHalfModelTest, Opset23BlockMatchesHostExecutorFusedAndUnfused) {
  const auto [dtype, batch] = GetParam();
  std::vector<HostTensor> inputs;
  inputs.push_back(RandomTensor(dtype, {batch, 8, 64}, 6));
  inputs.push_back(RandomTensor(DType::kInt64, {batch, 8}, 7));  // ids 0 or 1
  ExpectModelMatchesHost(HalfOpset23Block(dtype), dtype, batch, inputs,
                         [](const CudaExecutor&) {});
}

// Every float value of `model` (inputs, outputs, initializers) converted to
// `dtype`, initializers rounded once: the same model exported in that type.
Model ConvertModel(Model model, DType dtype) {
  for (auto* values : {&model.inputs, &model.outputs}) {
    for (ValueInfo& value : *values) {
      if (IsFloatingDType(value.dtype)) value.dtype = dtype;
    }
  }
  for (auto& [name, tensor] : model.initializers) {
    if (IsFloatingDType(tensor->dtype())) {
      tensor = std::make_shared<const HostTensor>(ConvertFloats(*tensor, dtype));
    }
  }
  return model;
}

// Host-only: issue 28's point. The encoder block in a 16-bit type runs as
// many steps (kernels) as the same block in float32: every fusion that fires
// for float32 fires for the 16-bit types (Note [16-bit fusions]).
TEST(CudaExecutorHalfModelPlanTest, HalfEncoderBlockFusesLikeItsFloat32Twin) {
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const Model half = HalfEncoderBlock(dtype);
    absl::StatusOr<BoundGraph> half_graph = BindModel(half, {.batch_size = 2});
    ASSERT_TRUE(half_graph.ok()) << half_graph.status();
    // The float32 export writes sqrt(2) in float32, not widened from the type.
    Model twin = ConvertModel(half, DType::kFloat32);
    twin.initializers["sqrt2"] = ScalarConstant(1.4142135f);
    absl::StatusOr<BoundGraph> float_graph = BindModel(twin, {.batch_size = 2});
    ASSERT_TRUE(float_graph.ok()) << float_graph.status();
    // Attention aside: by default 16-bit chains fuse (cuDNN's engines);
    // float32 ones, under kHalf, do not.
    const FusionPlan half_plan =
        PlanFusion(*half_graph, {.fuse_attention = FuseAttention::kNone});
    const FusionPlan float_plan =
        PlanFusion(*float_graph, {.fuse_attention = FuseAttention::kHalf});
    EXPECT_EQ(half_plan.steps.size(), 15u) << DTypeName(dtype);
    EXPECT_EQ(half_plan.gemm_transposes, 1);  // k^T, read by q k^T as op(T)
    const FusionPlan half_default = PlanFusion(*half_graph, {});
    EXPECT_EQ(half_default.attentions, 1);
    EXPECT_EQ(half_default.steps.size(), 13u) << DTypeName(dtype);
    EXPECT_EQ(half_plan.steps.size(), float_plan.steps.size()) << DTypeName(dtype);
    EXPECT_EQ(half_plan.erf_gelus, 1);
    EXPECT_EQ(half_plan.pointwise_regions, 2);
    EXPECT_EQ(half_plan.fused_into_pointwise, 6);
    EXPECT_EQ(half_plan.gemm_scales, 1);
    EXPECT_EQ(half_plan.gemm_bias_epilogues, float_plan.gemm_bias_epilogues);
    EXPECT_EQ(half_plan.add_layer_norms, float_plan.add_layer_norms);
  }
}

INSTANTIATE_TEST_SUITE_P(
    TypesAndBatches, CudaExecutorHalfModelTest,
    ::testing::Combine(::testing::Values(DType::kFloat16, DType::kBFloat16),
                       ::testing::Values(int64_t{1}, int64_t{5}, int64_t{64})),
    [](const auto& info) {
      return absl::StrCat(DTypeName(std::get<0>(info.param)), "_b", std::get<1>(info.param));
    });

// Note [16-bit fusions] end to end, against the host reference (which rounds
// every node to the model's type, as the unfused chain does): the fused
// steps drop those roundings, within the four units in the last place
// ExpectModelMatchesHost allows; fused and unfused runs both checked.
using CudaExecutorHalfFusionTest = CudaParamTest<std::tuple<DType, int64_t>>;

// GeluModel in the 16-bit type, every spelling: the GELU kernel for the three
// GELU spellings, a pointwise region of the five nodes for the chain that is
// another function; the bias Add in the MatMul's epilogue.
TEST_P(CudaExecutorHalfFusionTest, ErfGeluSpellingsMatchHostExecutor) {
  const auto [dtype, batch] = GetParam();
  for (const GeluSpelling spelling : {GeluSpelling::kPyTorch, GeluSpelling::kSwapped,
                                      GeluSpelling::kHalfFirst, GeluSpelling::kNotGelu}) {
    SCOPED_TRACE(static_cast<int>(spelling));
    const bool is_gelu = spelling != GeluSpelling::kNotGelu;
    std::vector<HostTensor> inputs;
    inputs.push_back(RandomTensor(dtype, {batch, 64}, 100 + static_cast<uint64_t>(batch)));
    ExpectModelMatchesHost(ConvertModel(GeluModel(spelling), dtype), dtype, batch, inputs,
                           [&](const CudaExecutor& cuda) {
                             EXPECT_EQ(cuda.fused_gelus(), is_gelu ? 1 : 0);
                             EXPECT_EQ(cuda.pointwise_regions(), is_gelu ? 0 : 1);
                             EXPECT_EQ(cuda.fused_epilogues(), 1);
                             EXPECT_EQ(cuda.schedule().steps.size(), 2u);
                           });
  }
}

// Attention scores with the exporters' scales: q and k^T each times
// 32^-1/4 (the dynamo exporter's, for d = 32; rounded to the type, so the
// unfused products round), the scores divided by 2 (TorchScript's form),
// then Softmax. The three scales go into the MatMul's alpha: two steps.
TEST_P(CudaExecutorHalfFusionTest, ScalesInAlphaMatchHostExecutor) {
  const auto [dtype, batch] = GetParam();
  Model model;
  model.name = "scaled_scores";
  model.opset = 17;
  model.inputs.push_back({"q", DType::kFloat32, {-1, 16, 32}});
  model.inputs.push_back({"kt", DType::kFloat32, {-1, 32, 16}});
  model.outputs.push_back({"p", DType::kFloat32, {-1, 16, 16}});
  model.initializers["s"] = ScalarConstant(0.42044820762685725f);  // 32^-1/4
  model.initializers["d"] = ScalarConstant(2.0f);
  model.nodes = {
      {"scale_q", "Mul", {"q", "s"}, {"qs"}, {}},
      {"scale_k", "Mul", {"s", "kt"}, {"ks"}, {}},
      {"scores", "MatMul", {"qs", "ks"}, {"a"}, {}},
      {"scale", "Div", {"a", "d"}, {"b"}, {}},
      {"softmax", "Softmax", {"b"}, {"p"}, {{"axis", int64_t{-1}}}},
  };
  std::vector<HostTensor> inputs;
  inputs.push_back(RandomTensor(dtype, {batch, 16, 32}, 23));
  inputs.push_back(RandomTensor(dtype, {batch, 32, 16}, 24));
  ExpectModelMatchesHost(ConvertModel(model, dtype), dtype, batch, inputs,
                         [](const CudaExecutor& cuda) {
                           EXPECT_EQ(cuda.schedule().steps.size(), 2u);
                         });
}

INSTANTIATE_TEST_SUITE_P(
    TypesAndBatches, CudaExecutorHalfFusionTest,
    ::testing::Combine(::testing::Values(DType::kFloat16, DType::kBFloat16),
                       ::testing::Values(int64_t{1}, int64_t{37}, int64_t{512})),
    [](const auto& info) {
      return absl::StrCat(DTypeName(std::get<0>(info.param)), "_b", std::get<1>(info.param));
    });

// Multi-head attention as the two torch.onnx exporters write it, fused into
// one kernel (Note [Fused attention]): q, k, v [B,4,S,D] and an additive
// mask [B,1,S,S]. The dynamo form scales q and k^T by 0.5 each and guards
// NaN rows with Where(IsNaN(p), 0, p); the TorchScript form divides the
// scores by 4. S = 40 spans two key tiles and three query blocks; D is 96 in
// the dynamo form and 16 in the other, the kernel's two register layouts.
int64_t AttentionHeadDim(bool dynamo_form) { return dynamo_form ? 96 : 16; }

Model AttentionModel(DType dtype, int64_t seq, bool dynamo_form) {
  const int64_t dim = AttentionHeadDim(dynamo_form);
  Model model;
  model.name = dynamo_form ? "attention_dynamo" : "attention_torchscript";
  model.opset = 17;
  const auto scalar = [&](float v) {
    HostTensor value(DType::kFloat32, Dims{});
    value.data<float>()[0] = v;
    return std::make_shared<const HostTensor>(ConvertFloats(value, dtype));
  };
  for (const char* name : {"q", "k", "v"}) model.inputs.push_back({name, dtype, {-1, 4, seq, dim}});
  model.inputs.push_back({"mask", dtype, {-1, 1, seq, seq}});
  model.outputs.push_back({"o", dtype, {-1, 4, seq, dim}});
  model.initializers["c"] = scalar(0.5f);
  model.initializers["four"] = scalar(4.0f);
  model.initializers["zero"] = scalar(0.0f);
  model.nodes.push_back(
      {"k_t", "Transpose", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}}});
  if (dynamo_form) {
    model.nodes.push_back({"q_scale", "Mul", {"q", "c"}, {"qs"}, {}});
    model.nodes.push_back({"k_scale", "Mul", {"kt", "c"}, {"ks"}, {}});
    model.nodes.push_back({"scores", "MatMul", {"qs", "ks"}, {"s"}, {}});
  } else {
    model.nodes.push_back({"scores", "MatMul", {"q", "kt"}, {"s0"}, {}});
    model.nodes.push_back({"scale", "Div", {"s0", "four"}, {"s"}, {}});
  }
  model.nodes.push_back({"mask_add", "Add", {"s", "mask"}, {"a"}, {}});
  model.nodes.push_back({"softmax", "Softmax", {"a"}, {"p"}, {{"axis", int64_t{-1}}}});
  if (dynamo_form) {
    model.nodes.push_back({"is_nan", "IsNaN", {"p"}, {"n"}, {}});
    model.nodes.push_back({"guard", "Where", {"n", "zero", "p"}, {"w"}, {}});
    model.nodes.push_back({"context", "MatMul", {"w", "v"}, {"o"}, {}});
  } else {
    model.nodes.push_back({"context", "MatMul", {"p", "v"}, {"o"}, {}});
  }
  return model;
}

using CudaExecutorAttentionTest = CudaParamTest<std::tuple<DType, int64_t, bool>>;

// AttentionModel's inputs at sequence kAttentionSeq. In the dynamo form query
// row 2 of batch 0 sees only -inf in the mask and one query of the last batch
// holds a NaN: the Where turns both rows to 0.
constexpr int64_t kAttentionSeq = 40;

std::vector<HostTensor> AttentionInputs(DType dtype, int64_t batch, bool dynamo_form) {
  constexpr int64_t kSeq = kAttentionSeq;
  std::vector<HostTensor> inputs;
  const int64_t dim = AttentionHeadDim(dynamo_form);
  for (uint64_t seed : {11, 12, 13}) inputs.push_back(RandomTensor(dtype, {batch, 4, kSeq, dim}, seed));
  HostTensor mask = ConvertFloats(RandomTensor(DType::kFloat32, {batch, 1, kSeq, kSeq}, 14),
                                  DType::kFloat32);
  if (dynamo_form) {
    for (int64_t key = 0; key < kSeq; ++key) {
      mask.data<float>()[2 * kSeq + key] = -std::numeric_limits<float>::infinity();
    }
    HostTensor q = ConvertFloats(inputs[0], DType::kFloat32);
    q.data<float>()[q.num_elements() - 5] = std::nanf("");
    inputs[0] = ConvertFloats(q, dtype);
  }
  inputs.push_back(ConvertFloats(mask, dtype));
  return inputs;
}

// Against the host reference, which runs the unfused chain node by node.
TEST_P(CudaExecutorAttentionTest, FusedMatchesHostExecutor) {
  const auto [dtype, batch, dynamo_form] = GetParam();
  ExpectModelMatchesHost(
      AttentionModel(dtype, kAttentionSeq, dynamo_form), dtype, batch,
      AttentionInputs(dtype, batch, dynamo_form),
      [](const CudaExecutor& cuda) { EXPECT_EQ(cuda.fused_attentions(), 1); }, /*ulps=*/8,
      FuseAttention::kAll);
}

// The chain not fused whole (float32 under the default, every type with
// attention fusion off): its mask Add, Softmax and NaN guard are one step
// (Note [Masked softmax]), between the MatMuls' steps.
TEST_P(CudaExecutorAttentionTest, MaskedSoftmaxMatchesHostExecutor) {
  const auto [dtype, batch, dynamo_form] = GetParam();
  ExpectModelMatchesHost(
      AttentionModel(dtype, kAttentionSeq, dynamo_form), dtype, batch,
      AttentionInputs(dtype, batch, dynamo_form),
      [](const CudaExecutor& cuda) {
        EXPECT_EQ(cuda.fused_attentions(), 0);
        EXPECT_EQ(cuda.masked_softmaxes(), 1);
        EXPECT_EQ(cuda.gemm_transposes(), 1);  // k^T (Note [Transposed GEMM operands])
      },
      /*ulps=*/8, dtype == DType::kFloat32 ? FuseAttention::kHalf : FuseAttention::kNone);
}

INSTANTIATE_TEST_SUITE_P(
    TypesBatchesForms, CudaExecutorAttentionTest,
    ::testing::Combine(::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                       ::testing::Values(int64_t{1}, int64_t{3}), ::testing::Bool()),
    [](const auto& info) {
      return absl::StrCat(DTypeName(std::get<0>(info.param)), "_b", std::get<1>(info.param),
                          std::get<2>(info.param) ? "_dynamo" : "_torchscript");
    });

// Attention as transformers' BERT exports it through TorchScript (Note
// [Attention views]): q, k and v leave their projections as [B, S, 4, 64]
// and reach the MatMuls through the heads' Transposes, the scores are divided
// by 8, the mask is computed from a 0/1 input as (1 - m) * lowest, and the
// output goes back through a Transpose. In 16 bits the step runs on cuDNN's
// engines (Note [cuDNN attention]) reading every Transpose in place.
Model HeadsSplitAttentionModel(DType dtype, int64_t seq) {
  Model model;
  model.name = "attention_heads_split";
  model.opset = 17;
  for (const char* name : {"q", "k", "v"}) model.inputs.push_back({name, dtype, {-1, seq, 4, 64}});
  model.inputs.push_back({"keep", dtype, {-1, 1, 1, seq}});
  model.outputs.push_back({"y", dtype, {-1, seq, 4, 64}});
  const auto scalar = [&](float v) {
    HostTensor value(DType::kFloat32, Dims{});
    value.data<float>()[0] = v;
    return std::make_shared<const HostTensor>(ConvertFloats(value, dtype));
  };
  model.initializers["one"] = scalar(1.0f);
  model.initializers["eight"] = scalar(8.0f);
  model.initializers["lowest"] = scalar(dtype == DType::kFloat16 ? -65504.0f : -3.38953139e38f);
  const auto perm = [](std::vector<int64_t> p) { return Attributes{{"perm", std::move(p)}}; };
  model.nodes = {
      {"q_t", "Transpose", {"q"}, {"qt"}, perm({0, 2, 1, 3})},
      {"k_t", "Transpose", {"k"}, {"kt"}, perm({0, 2, 3, 1})},
      {"v_t", "Transpose", {"v"}, {"vt"}, perm({0, 2, 1, 3})},
      {"masked", "Sub", {"one", "keep"}, {"m0"}, {}},
      {"mask", "Mul", {"m0", "lowest"}, {"mask"}, {}},
      {"scores", "MatMul", {"qt", "kt"}, {"s0"}, {}},
      {"scale", "Div", {"s0", "eight"}, {"s"}, {}},
      {"mask_add", "Add", {"s", "mask"}, {"a"}, {}},
      {"softmax", "Softmax", {"a"}, {"p"}, {{"axis", int64_t{-1}}}},
      {"context", "MatMul", {"p", "vt"}, {"o"}, {}},
      {"o_t", "Transpose", {"o"}, {"y"}, perm({0, 2, 1, 3})},
  };
  return model;
}

// The TorchScript exporter's float16 SDPA (Note [Fused attention]): the
// heads' Transposes, q and k^T scaled, the scores cast up to float32, a
// float32 mask from a 0/1 input, Softmax and the NaN guard in float32, v
// cast up, the context Transposed back and cast down to the model's type.
// Head dim 64 runs on cuDNN's engines, 12 (not a multiple of 8) on our own
// kernel.
Model FloatScoresAttentionModel(DType dtype, int64_t seq, int64_t dim) {
  Model model;
  model.name = "attention_float_scores";
  model.opset = 17;
  for (const char* name : {"q", "k", "v"}) model.inputs.push_back({name, dtype, {-1, seq, 4, dim}});
  model.inputs.push_back({"keep", DType::kFloat32, {-1, 1, 1, seq}});
  model.outputs.push_back({"y", dtype, {-1, seq, 4, dim}});
  const auto scalar = [&](float v, DType type) {
    HostTensor value(DType::kFloat32, Dims{});
    value.data<float>()[0] = v;
    return std::make_shared<const HostTensor>(ConvertFloats(value, type));
  };
  model.initializers["c"] = scalar(1.0f / std::sqrt(std::sqrt(float(dim))), dtype);
  model.initializers["one"] = scalar(1.0f, DType::kFloat32);
  model.initializers["lowest"] = scalar(-3.4028235e38f, DType::kFloat32);
  model.initializers["zero"] = scalar(0.0f, DType::kFloat32);
  const auto perm = [](std::vector<int64_t> p) { return Attributes{{"perm", std::move(p)}}; };
  // DType's value is the ONNX type id (Note [Datatype table]).
  const auto to = [](DType type) { return Attributes{{"to", static_cast<int64_t>(type)}}; };
  model.nodes = {
      {"q_t", "Transpose", {"q"}, {"qt"}, perm({0, 2, 1, 3})},
      {"k_t", "Transpose", {"k"}, {"kt"}, perm({0, 2, 3, 1})},
      {"v_t", "Transpose", {"v"}, {"vt"}, perm({0, 2, 1, 3})},
      {"masked", "Sub", {"one", "keep"}, {"m0"}, {}},
      {"mask", "Mul", {"m0", "lowest"}, {"mask"}, {}},
      {"q_scale", "Mul", {"qt", "c"}, {"qs"}, {}},
      {"k_scale", "Mul", {"kt", "c"}, {"ks"}, {}},
      {"scores", "MatMul", {"qs", "ks"}, {"s16"}, {}},
      {"up", "Cast", {"s16"}, {"s"}, to(DType::kFloat32)},
      {"mask_add", "Add", {"s", "mask"}, {"a"}, {}},
      {"softmax", "Softmax", {"a"}, {"p"}, {{"axis", int64_t{-1}}}},
      {"is_nan", "IsNaN", {"p"}, {"n"}, {}},
      {"guard", "Where", {"n", "zero", "p"}, {"w"}, {}},
      {"v_up", "Cast", {"vt"}, {"vf"}, to(DType::kFloat32)},
      {"context", "MatMul", {"w", "vf"}, {"o"}, {}},
      {"o_t", "Transpose", {"o"}, {"ot"}, perm({0, 2, 1, 3})},
      {"down", "Cast", {"ot"}, {"y"}, to(dtype)},
  };
  return model;
}

using CudaExecutorFloatScoresAttentionTest = CudaParamTest<std::tuple<DType, int64_t, int64_t>>;

TEST_P(CudaExecutorFloatScoresAttentionTest, MatchesHostExecutor) {
  const auto [dtype, batch, dim] = GetParam();
  constexpr int64_t kSeq = 40;
  std::vector<HostTensor> inputs;
  for (uint64_t seed : {31, 32, 33}) inputs.push_back(RandomTensor(dtype, {batch, kSeq, 4, dim}, seed));
  HostTensor keep(DType::kFloat32, Dims{batch, 1, 1, kSeq});
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t key = 0; key < kSeq; ++key) {
      keep.data<float>()[b * kSeq + key] = key < kSeq - 5 * (b + 1) ? 1.0f : 0.0f;
    }
  }
  inputs.push_back(std::move(keep));
  ExpectModelMatchesHost(
      FloatScoresAttentionModel(dtype, kSeq, dim), dtype, batch, inputs,
      [](const CudaExecutor& cuda) { EXPECT_EQ(cuda.fused_attentions(), 1); }, /*ulps=*/8);
}

INSTANTIATE_TEST_SUITE_P(
    TypesBatchesDims, CudaExecutorFloatScoresAttentionTest,
    ::testing::Combine(::testing::Values(DType::kFloat16, DType::kBFloat16),
                       ::testing::Values(int64_t{1}, int64_t{3}),
                       ::testing::Values(int64_t{64}, int64_t{12})),
    [](const auto& info) {
      return absl::StrCat(DTypeName(std::get<0>(info.param)), "_b", std::get<1>(info.param), "_d",
                          std::get<2>(info.param));
    });

using CudaExecutorHeadsSplitAttentionTest = CudaParamTest<std::tuple<DType, int64_t>>;

TEST_P(CudaExecutorHeadsSplitAttentionTest, MatchesHostExecutor) {
  const auto [dtype, batch] = GetParam();
  constexpr int64_t kSeq = 72;
  std::vector<HostTensor> inputs;
  for (uint64_t seed : {21, 22, 23}) inputs.push_back(RandomTensor(dtype, {batch, kSeq, 4, 64}, seed));
  HostTensor keep(DType::kFloat32, Dims{batch, 1, 1, kSeq});
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t key = 0; key < kSeq; ++key) {
      keep.data<float>()[b * kSeq + key] = key < kSeq - 7 * (b + 1) ? 1.0f : 0.0f;
    }
  }
  inputs.push_back(ConvertFloats(keep, dtype));
  // float32 stays a chain by default: the heads' Transposes as 16-byte
  // copies (Note [Vector copies]), the [B, 1, 1, S] mask in the masked
  // softmax (Note [Masked softmax]).
  const bool fused = dtype != DType::kFloat32;
  ExpectModelMatchesHost(
      HeadsSplitAttentionModel(dtype, kSeq), dtype, batch, inputs,
      [&](const CudaExecutor& cuda) {
        EXPECT_EQ(cuda.fused_attentions(), fused ? 1 : 0);
        EXPECT_EQ(cuda.masked_softmaxes(), fused ? 0 : 1);
      },
      /*ulps=*/8);
}

INSTANTIATE_TEST_SUITE_P(
    TypesAndBatches, CudaExecutorHeadsSplitAttentionTest,
    ::testing::Combine(::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                       ::testing::Values(int64_t{1}, int64_t{3})),
    [](const auto& info) {
      return absl::StrCat(DTypeName(std::get<0>(info.param)), "_b", std::get<1>(info.param));
    });

// Resize and Einsum reach their CUDA kernels only through binding (Resize's
// constant sampling tables, Einsum's Transposes, Reshapes, Slices and
// MatMuls), so each case is a one-node model, bound, run on the host
// reference and on CUDA. The GPU sums a Resize's taps and a MatMul's
// products in float: float32 outputs within 64 units in their last place of
// the host's double, the 16-bit floats within four.
struct BoundOpCase {
  std::string label;
  std::string op;
  std::vector<Dims> inputs;
  Attributes attributes;
  // Resize's roi, scales and sizes (initializers; empty: omitted).
  std::vector<float> scales;
  std::vector<int64_t> sizes;
  std::vector<float> roi;
  int64_t opset = 19;
};

Model BoundOpModel(const BoundOpCase& c, DType dtype) {
  Model model;
  model.name = c.label;
  model.opset = c.opset;
  Node node{"op", c.op, {}, {"y"}, c.attributes};
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const std::string name = absl::StrCat("x", i);
    model.inputs.push_back({name, dtype, c.inputs[i]});
    node.inputs.push_back(name);
  }
  if (c.op == "Resize") {
    auto add = [&](const std::string& name, HostTensor tensor) {
      model.initializers[name] = std::make_shared<const HostTensor>(std::move(tensor));
      node.inputs.push_back(name);
    };
    const auto floats = [](const std::vector<float>& values) {
      HostTensor tensor(DType::kFloat32, {static_cast<int64_t>(values.size())});
      std::copy(values.begin(), values.end(), tensor.data<float>());
      return tensor;
    };
    if (c.roi.empty()) node.inputs.push_back(""); else add("roi", floats(c.roi));
    if (c.scales.empty()) node.inputs.push_back(""); else add("scales", floats(c.scales));
    if (!c.sizes.empty()) {
      HostTensor sizes(DType::kInt64, {static_cast<int64_t>(c.sizes.size())});
      std::copy(c.sizes.begin(), c.sizes.end(), sizes.data<int64_t>());
      add("sizes", std::move(sizes));
    }
    while (node.inputs.back().empty()) node.inputs.pop_back();
  }
  model.outputs.push_back({"y", dtype, {}});
  model.nodes = {std::move(node)};
  return model;
}

std::vector<BoundOpCase> BoundOpCases() {
  const auto text = [](const char* s) { return Attribute(std::string(s)); };
  return {
      {"resize_nearest_x2", "Resize", {{2, 3, 5, 7}}, {{"mode", text("nearest")}},
       {1, 1, 2, 2}},
      {"resize_nearest_floor_asymmetric_sizes", "Resize", {{2, 3, 9, 7}},
       {{"mode", text("nearest")}, {"nearest_mode", text("floor")},
        {"coordinate_transformation_mode", text("asymmetric")}},
       {}, {2, 3, 4, 16}},
      {"resize_bilinear_half_pixel", "Resize", {{2, 3, 16, 12}}, {{"mode", text("linear")}},
       {1, 1, 1.75f, 0.5f}},
      {"resize_bilinear_pytorch_half_pixel", "Resize", {{1, 4, 7, 9}},
       {{"mode", text("linear")}, {"coordinate_transformation_mode", text("pytorch_half_pixel")}},
       {}, {1, 4, 1, 20}},
      {"resize_bicubic_align_corners", "Resize", {{2, 2, 8, 8}},
       {{"mode", text("cubic")}, {"coordinate_transformation_mode", text("align_corners")}},
       {}, {2, 2, 13, 5}},
      {"resize_cubic_exclude_outside", "Resize", {{1, 3, 10, 6}},
       {{"mode", text("cubic")}, {"cubic_coeff_a", Attribute(-0.5f)},
        {"exclude_outside", Attribute(int64_t{1})}},
       {1, 1, 0.6f, 2.5f}},
      {"resize_linear_antialias", "Resize", {{1, 2, 33, 20}},
       {{"mode", text("linear")}, {"antialias", Attribute(int64_t{1})}}, {}, {1, 2, 8, 20}},
      {"resize_cubic_antialias_axes", "Resize", {{2, 25, 18}},
       {{"mode", text("cubic")}, {"antialias", Attribute(int64_t{1})},
        {"axes", Attribute(std::vector<int64_t>{1, 2})}},
       {}, {6, 24}},
      {"resize_tf_crop_and_resize", "Resize", {{1, 2, 10, 10}},
       {{"mode", text("linear")}, {"coordinate_transformation_mode", text("tf_crop_and_resize")},
        {"extrapolation_value", Attribute(-2.0f)}},
       {}, {1, 2, 6, 7}, {0, 0, -0.2f, 0.3f, 1, 1, 0.9f, 1.4f}},
      {"resize_trilinear_5d", "Resize", {{1, 2, 4, 6, 5}}, {{"mode", text("linear")}},
       {1, 1, 2, 0.5f, 1.5f}},
      {"einsum_batched_matmul", "Einsum", {{4, 8, 16}, {4, 16, 12}},
       {{"equation", text("bij,bjk->bik")}}},
      {"einsum_attention_scores", "Einsum", {{2, 4, 8, 16}, {2, 4, 10, 16}},
       {{"equation", text("bhid,bhjd->bhij")}}},
      {"einsum_ellipsis_broadcast", "Einsum", {{3, 1, 5, 6}, {1, 2, 6, 7}},
       {{"equation", text("...ij,...jk->...ik")}}},
      {"einsum_transpose_sum", "Einsum", {{6, 5, 4}}, {{"equation", text("abc->cb")}}},
      {"einsum_outer", "Einsum", {{7}, {9}}, {{"equation", text("i,j->ij")}}},
      {"einsum_diagonal", "Einsum", {{3, 6, 6}}, {{"equation", text("bii->bi")}}},
      {"einsum_three_operands", "Einsum", {{5, 6}, {6, 7}, {7, 3}},
       {{"equation", text("ij,jk,kl->il")}}},
  };
}

using CudaExecutorBoundOpTest = CudaParamTest<std::tuple<BoundOpCase, DType>>;

TEST_P(CudaExecutorBoundOpTest, MatchesHostExecutor) {
  const auto& [c, dtype] = GetParam();
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    inputs.push_back(RandomTensor(dtype, c.inputs[i], 60 + i));
  }
  ExpectModelMatchesHost(BoundOpModel(c, dtype), dtype, /*batch=*/1, inputs,
                         [](const CudaExecutor&) {}, dtype == DType::kFloat32 ? 64 : 4);
}

INSTANTIATE_TEST_SUITE_P(
    ResizeAndEinsum, CudaExecutorBoundOpTest,
    ::testing::Combine(::testing::ValuesIn(BoundOpCases()),
                       ::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16)),
    [](const auto& info) {
      return absl::StrCat(std::get<0>(info.param).label, "_",
                          DTypeName(std::get<1>(info.param)));
    });

// MLP-Mixer's token mixing (timm's mixer_b16_224, dynamo export): channels
// Transposed (0 2 1) into a MatMul with a 2-D weight. The MatMul reads the
// Transpose's input with op(T) (Note [Transposed GEMM operands]), so A's
// batches are [k, m] matrices: one GEMM of batch * m rows read them across
// the batch, right at batch 1 only (bench/results/2026-11-30_*: the padding
// check refused the model at batch 8).
Model TokenMixingModel(DType dtype) {
  Model model;
  model.name = "token_mixing";
  model.opset = 17;
  model.inputs.push_back({"x", dtype, {-1, 6, 5}});
  model.outputs.push_back({"y", dtype, {-1, 5, 4}});
  model.initializers["w"] = std::make_shared<const HostTensor>(RandomTensor(dtype, {6, 4}, 7));
  model.nodes = {
      {"channels_first", "Transpose", {"x"}, {"xt"}, {{"perm", std::vector<int64_t>{0, 2, 1}}}},
      {"mix", "MatMul", {"xt", "w"}, {"y"}, {}},
  };
  return model;
}

using CudaExecutorTokenMixingTest = CudaParamTest<std::tuple<DType, int64_t>>;

TEST_P(CudaExecutorTokenMixingTest, TransposedOperandWithTwoDimWeightMatchesHostExecutor) {
  const auto [dtype, batch] = GetParam();
  ExpectModelMatchesHost(
      TokenMixingModel(dtype), dtype, batch, {RandomTensor(dtype, {batch, 6, 5}, 11)},
      [](const CudaExecutor& cuda) { EXPECT_EQ(cuda.gemm_transposes(), 1); },
      dtype == DType::kFloat32 ? 64 : 4);
}

INSTANTIATE_TEST_SUITE_P(
    Batches, CudaExecutorTokenMixingTest,
    ::testing::Combine(::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                       ::testing::Values(int64_t{1}, int64_t{3})),
    [](const auto& info) {
      return absl::StrCat(DTypeName(std::get<0>(info.param)), "_b", std::get<1>(info.param));
    });

}  // namespace
}  // namespace graphserve
