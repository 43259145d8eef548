// Pointwise regions (Note [Pointwise regions], Note [Pointwise programs]):
// what the fusion pass groups, what a region compiles to, and on the GPU that
// the fused kernel gives bitwise the unfused kernels' results, NaN and Inf
// included, and the host reference executor's within float rounding.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <iterator>
#include <random>

#include "common/cuda_handles.h"
#include "runtime/bind.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/cuda/kernel_test_util.h"
#include "runtime/cuda/pointwise_kernel.h"
#include "runtime/fusion.h"
#include "runtime/host/host_executor.h"
#include "runtime/op_registry.h"

namespace graphserve {
namespace {

std::shared_ptr<const HostTensor> Scalar(float v) {
  auto tensor = std::make_shared<HostTensor>(DType::kFloat32, Dims{});
  tensor->data<float>()[0] = v;
  return tensor;
}

// GPT-2's tanh GELU as torch.onnx exports HF's NewGELUActivation,
// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))): eight nodes over
// x[B,64], one input.
Model TanhGeluModel() {
  Model model;
  model.name = "tanh_gelu";
  model.opset = 17;
  model.inputs.push_back({"x", DType::kFloat32, {-1, 64}});
  model.outputs.push_back({"y", DType::kFloat32, {-1, 64}});
  model.initializers["half"] = Scalar(0.5f);
  model.initializers["three"] = Scalar(3.0f);
  model.initializers["k"] = Scalar(0.044715f);
  model.initializers["c"] = Scalar(0.7978845608f);
  model.initializers["one"] = Scalar(1.0f);
  model.nodes = {
      {"half_x", "Mul", {"x", "half"}, {"a"}, {}},
      {"cube", "Pow", {"x", "three"}, {"b"}, {}},
      {"scale_cube", "Mul", {"b", "k"}, {"c1"}, {}},
      {"inner", "Add", {"x", "c1"}, {"d"}, {}},
      {"scale_inner", "Mul", {"d", "c"}, {"e"}, {}},
      {"tanh", "Tanh", {"e"}, {"f"}, {}},
      {"plus_one", "Add", {"f", "one"}, {"g"}, {}},
      {"gelu", "Mul", {"a", "g"}, {"y"}, {}},
  };
  return model;
}

// A residual sum s = x + r that is also a graph output, then SiLU(s) and a
// broadcast bias Add: s cannot join a region (a graph output), the bias (not
// of s's dims) stops the region, so the region is {Sigmoid, Mul} over s.
Model BoundaryModel() {
  Model model;
  model.name = "boundaries";
  model.opset = 17;
  model.inputs.push_back({"x", DType::kFloat32, {-1, 64}});
  model.inputs.push_back({"r", DType::kFloat32, {-1, 64}});
  model.outputs.push_back({"s", DType::kFloat32, {-1, 64}});
  model.outputs.push_back({"y", DType::kFloat32, {-1, 64}});
  auto bias = std::make_shared<HostTensor>(DType::kFloat32, Dims{64});
  for (int64_t i = 0; i < 64; ++i) bias->data<float>()[i] = 0.01f * static_cast<float>(i);
  model.initializers["bias"] = bias;
  model.nodes = {
      {"residual", "Add", {"x", "r"}, {"s"}, {}},
      {"sigmoid", "Sigmoid", {"s"}, {"g"}, {}},
      {"silu", "Mul", {"s", "g"}, {"h"}, {}},
      {"bias", "Add", {"h", "bias"}, {"y"}, {}},
  };
  return model;
}

const FusedStep* OnlyPointwiseStep(const FusionPlan& plan) {
  const FusedStep* found = nullptr;
  for (const FusedStep& step : plan.steps) {
    if (step.kind != StepKind::kPointwise) continue;
    EXPECT_EQ(found, nullptr) << "more than one pointwise region";
    found = &step;
  }
  return found;
}

TEST(PointwiseRegionTest, TanhGeluIsOneRegionOfEightNodes) {
  absl::StatusOr<BoundGraph> graph = BindModel(TanhGeluModel(), {.batch_size = 3});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const FusionPlan plan = PlanFusion(*graph, {});
  ASSERT_EQ(plan.steps.size(), 1u);
  const FusedStep* step = OnlyPointwiseStep(plan);
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->nodes.size(), 8u);
  ASSERT_EQ(step->inputs.size(), 1u);
  EXPECT_EQ(graph->value(step->inputs[0]).name, "x");
  EXPECT_EQ(plan.pointwise_regions, 1);
  EXPECT_EQ(plan.fused_into_pointwise, 8);

  absl::StatusOr<PointwiseProgram> program =
      CompilePointwise(*graph, step->nodes, step->inputs, step->outputs[0]);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->num_inputs, 1);
  EXPECT_EQ(program->num_instructions, 8);
  EXPECT_TRUE(IsWellFormed(*program));
  // Every scalar constant is an immediate, not a register.
  int immediates = 0;
  for (int k = 0; k < program->num_instructions; ++k) {
    immediates += program->code[k].a == kPointwiseImmediate ||
                  program->code[k].b == kPointwiseImmediate;
  }
  EXPECT_EQ(immediates, 5);
}

TEST(PointwiseRegionTest, GraphOutputsAndBroadcastsBoundARegion) {
  absl::StatusOr<BoundGraph> graph = BindModel(BoundaryModel(), {.batch_size = 2});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const FusionPlan plan = PlanFusion(*graph, {});
  const FusedStep* step = OnlyPointwiseStep(plan);
  ASSERT_NE(step, nullptr);
  ASSERT_EQ(step->nodes.size(), 2u);
  EXPECT_EQ(graph->nodes[step->nodes[0]].op_type, "Sigmoid");
  EXPECT_EQ(graph->nodes[step->nodes[1]].op_type, "Mul");
  ASSERT_EQ(step->inputs.size(), 1u);
  EXPECT_EQ(graph->value(step->inputs[0]).name, "s");
  EXPECT_EQ(plan.steps.size(), 3u);  // residual, the region, the bias Add
}

TEST(PointwiseRegionTest, NoRegionsWithoutFusion) {
  absl::StatusOr<BoundGraph> graph = BindModel(TanhGeluModel(), {.batch_size = 3});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const FusionPlan plan = PlanFusion(*graph, {.fuse = false});
  EXPECT_EQ(plan.pointwise_regions, 0);
  EXPECT_EQ(plan.steps.size(), 8u);
}

TEST(PointwiseRegionTest, TheFusionPassAndTheCompilerAgreeOnTheOps) {
  for (const OpDef& op : AllOps()) {
    EXPECT_EQ(IsPointwiseOp(op.name), HasPointwiseInstruction(op.name)) << op.name;
  }
}

TEST(PointwiseProgramTest, IllFormedProgramsAreRefused) {
  PointwiseProgram program;
  program.num_inputs = 1;
  program.num_instructions = 1;
  program.code[0] = {PointwiseOp::kAdd, 1, 0, kPointwiseImmediate, 2.0f};
  program.result = 1;
  EXPECT_TRUE(IsWellFormed(program));
  PointwiseProgram reads_ahead = program;
  reads_ahead.code[0].b = 1;  // its own destination
  EXPECT_FALSE(IsWellFormed(reads_ahead));
  PointwiseProgram two_immediates = program;
  two_immediates.code[0].a = kPointwiseImmediate;
  EXPECT_FALSE(IsWellFormed(two_immediates));
  PointwiseProgram result_unwritten = program;
  result_unwritten.result = 2;
  EXPECT_FALSE(IsWellFormed(result_unwritten));
  PointwiseProgram too_many_inputs = program;
  too_many_inputs.num_inputs = kPointwiseMaxInputs + 1;
  EXPECT_FALSE(IsWellFormed(too_many_inputs));
  EXPECT_EQ(LaunchPointwise(reads_ahead, {}, nullptr, 4, nullptr), cudaErrorInvalidValue);
}

// x with NaN, +-Inf, +-FLT_MAX, huge and tiny magnitudes, +-0, subnormals, then
// normal values.
HostTensor EdgeInput(int64_t batch, int64_t width, uint32_t seed) {
  HostTensor tensor(DType::kFloat32, {batch, width});
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            1e30f,
                            -1e30f,
                            1e-30f,
                            0.0f,
                            -0.0f,
                            std::numeric_limits<float>::denorm_min(),
                            -10.0f,
                            10.0f};
  float* data = tensor.data<float>();
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    data[i] = i < static_cast<int64_t>(std::size(specials)) ? specials[i] : normal(rng);
  }
  return tensor;
}

bool BitwiseEqual(const HostTensor& a, const HostTensor& b) {
  return a.dims() == b.dims() && std::memcmp(a.data<float>(), b.data<float>(),
                                             a.num_elements() * sizeof(float)) == 0;
}

class PointwiseDeviceTest : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }

  // Fused, the region's result; unfused, each node's own kernel; host, the
  // reference executor.
  void CheckModel(const Model& model, int expected_regions) {
    const int64_t batch = GetParam();
    absl::StatusOr<BoundGraph> graph = BindModel(model, {.batch_size = batch});
    ASSERT_TRUE(graph.ok()) << graph.status();
    std::vector<HostTensor> inputs;
    for (size_t i = 0; i < model.inputs.size(); ++i) {
      inputs.push_back(EdgeInput(batch, 64, static_cast<uint32_t>(batch * 10 + i)));
    }
    absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(*graph);
    ASSERT_TRUE(host.ok()) << host.status();
    absl::StatusOr<std::vector<HostTensor>> want = (*host)->Run(inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    std::vector<std::vector<HostTensor>> got;
    for (bool fuse : {true, false}) {
      absl::StatusOr<std::unique_ptr<CudaExecutor>> cuda =
          CudaExecutor::Create(*graph, {.fuse_epilogues = fuse});
      ASSERT_TRUE(cuda.ok()) << cuda.status();
      EXPECT_EQ((*cuda)->pointwise_regions(), fuse ? expected_regions : 0);
      absl::StatusOr<std::vector<HostTensor>> out = (*cuda)->Run(inputs);
      ASSERT_TRUE(out.ok()) << out.status();
      got.push_back(*std::move(out));
    }
    for (size_t i = 0; i < want->size(); ++i) {
      EXPECT_TRUE(BitwiseEqual(got[0][i], got[1][i])) << "output " << i << ": fused != unfused";
      // NaN where the host has NaN, and within rounding elsewhere.
      const float* device = got[0][i].data<float>();
      const float* reference = (*want)[i].data<float>();
      for (int64_t k = 0; k < (*want)[i].num_elements(); ++k) {
        if (std::isnan(reference[k]) || std::isinf(reference[k])) {
          EXPECT_EQ(std::isnan(device[k]), std::isnan(reference[k])) << "element " << k;
          if (std::isinf(reference[k])) {
            EXPECT_EQ(device[k], reference[k]) << "element " << k;
          }
          continue;
        }
        EXPECT_LE(std::fabs(device[k] - reference[k]), 1e-5f * (1.0f + std::fabs(reference[k])))
            << "output " << i << " element " << k << ": " << device[k] << " vs "
            << reference[k];
      }
    }
  }
};

TEST_P(PointwiseDeviceTest, TanhGeluFusedIsTheUnfusedChain) { CheckModel(TanhGeluModel(), 1); }

TEST_P(PointwiseDeviceTest, BoundedRegionIsTheUnfusedNodes) { CheckModel(BoundaryModel(), 1); }

INSTANTIATE_TEST_SUITE_P(Batches, PointwiseDeviceTest, ::testing::Values(1, 7, 4096));

}  // namespace
}  // namespace graphserve
