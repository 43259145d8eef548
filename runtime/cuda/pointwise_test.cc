// Pointwise regions (Note [Pointwise regions], Note [Pointwise programs]):
// what the fusion pass groups, what a region compiles to, and on the GPU that
// the fused kernel gives bitwise the unfused kernels' results, NaN and Inf
// included, and the host reference executor's within float rounding; in
// float16 and bfloat16 (Note [16-bit fusions] in runtime/fusion.h), a
// float64 evaluation of the region rounded once to within one unit in the
// last place, and the unfused kernels' and the host's results within their
// per-node roundings, NaN and Inf where they have them.

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <iterator>
#include <random>
#include <string>
#include <tuple>
#include <vector>

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
  EXPECT_EQ(LaunchPointwise(DType::kFloat32, reads_ahead, {}, nullptr, 4, nullptr),
            cudaErrorInvalidValue);
  // Types that do not compute in float, refused before any launch.
  EXPECT_EQ(LaunchPointwise(DType::kFloat64, program, {}, nullptr, 4, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(LaunchPointwise(DType::kInt32, program, {}, nullptr, 4, nullptr),
            cudaErrorInvalidValue);
}

// Every float value of `model` (inputs, outputs, initializers) in `dtype`,
// initializers rounded once: the model as exported in that type.
Model AsType(Model model, DType dtype) {
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

// The constants of a 16-bit model compile to immediates of their stored
// value, widened to float.
TEST(PointwiseRegionTest, HalfConstantsCompileToTheirStoredValue) {
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    absl::StatusOr<BoundGraph> graph = BindModel(AsType(TanhGeluModel(), dtype), {.batch_size = 2});
    ASSERT_TRUE(graph.ok()) << graph.status();
    const FusionPlan plan = PlanFusion(*graph, {});
    const FusedStep* step = OnlyPointwiseStep(plan);
    ASSERT_NE(step, nullptr) << DTypeName(dtype);
    absl::StatusOr<PointwiseProgram> program =
        CompilePointwise(*graph, step->nodes, step->inputs, step->outputs[0]);
    ASSERT_TRUE(program.ok()) << program.status();
    // "scale_cube" multiplies by 0.044715 as the type stores it.
    HostTensor k(DType::kFloat32, Dims{});
    k.data<float>()[0] = 0.044715f;
    const float stored = ConvertFloats(ConvertFloats(k, dtype), DType::kFloat32).data<float>()[0];
    EXPECT_NE(stored, 0.044715f);
    bool found = false;
    for (int i = 0; i < program->num_instructions; ++i) {
      found |= program->code[i].op == PointwiseOp::kMul && program->code[i].imm == stored;
    }
    EXPECT_TRUE(found) << DTypeName(dtype);
  }
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
  return a.dtype() == b.dtype() && a.dims() == b.dims() &&
         std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

// A tensor's elements widened to float (exactly).
std::vector<float> Widened(const HostTensor& tensor) {
  const HostTensor wide = ConvertFloats(tensor, DType::kFloat32);
  return std::vector<float>(wide.data<float>(), wide.data<float>() + wide.num_elements());
}

// Elementwise: NaN where `want` is NaN, the same infinity where it is
// infinite, and within tolerance[k] elsewhere.
::testing::AssertionResult WithinTolerance(const std::vector<float>& got,
                                           const std::vector<float>& want,
                                           const std::vector<double>& tolerance) {
  int mismatches = 0;
  std::string examples;
  for (size_t k = 0; k < want.size(); ++k) {
    const bool ok = std::isnan(want[k])   ? std::isnan(got[k])
                    : std::isinf(want[k]) ? got[k] == want[k]
                                          : std::isfinite(got[k]) &&
                                                std::fabs(double{got[k]} - want[k]) <= tolerance[k];
    if (!ok && ++mismatches <= 5) {
      examples += " [" + std::to_string(k) + "] got " + std::to_string(got[k]) + " want " +
                  std::to_string(want[k]) + ";";
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << mismatches << " of " << want.size() << " elements differ:" << examples;
}

// (element type, batch).
class PointwiseDeviceTest : public ::testing::TestWithParam<std::tuple<DType, int64_t>> {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }

  // `model` (written in float32) in the test's type. Fused, the region's
  // result; unfused, each node's own kernel; host, the reference executor,
  // which runs each node in float64 and rounds it to the model's type. The
  // inputs hold NaN, the infinities and each type's extremes (EdgeInput,
  // rounded to the type). `outside_roundings`: see CheckHalf.
  void CheckModel(const Model& float_model, int expected_regions, int outside_roundings = 0) {
    const auto [dtype, batch] = GetParam();
    const Model model = AsType(float_model, dtype);
    absl::StatusOr<BoundGraph> graph = BindModel(model, {.batch_size = batch});
    ASSERT_TRUE(graph.ok()) << graph.status();
    std::vector<HostTensor> inputs;
    for (size_t i = 0; i < model.inputs.size(); ++i) {
      inputs.push_back(
          ConvertFloats(EdgeInput(batch, 64, static_cast<uint32_t>(batch * 10 + i)), dtype));
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
    if (dtype == DType::kFloat32) {
      CheckFloat32(got[0], got[1], *want);
    } else {
      CheckHalf(model, inputs, outside_roundings, got[0], got[1], *want);
    }
  }

 private:
  // Bitwise the unfused kernels (Note [Pointwise programs]), and the host's
  // float32 results within float rounding.
  static void CheckFloat32(const std::vector<HostTensor>& fused,
                           const std::vector<HostTensor>& unfused,
                           const std::vector<HostTensor>& want) {
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(BitwiseEqual(fused[i], unfused[i])) << "output " << i << ": fused != unfused";
      // NaN where the host has NaN, and within rounding elsewhere.
      const float* device = fused[i].data<float>();
      const float* reference = want[i].data<float>();
      for (int64_t k = 0; k < want[i].num_elements(); ++k) {
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

  // Note [16-bit fusions]. Against float64: the model run in float64 on the
  // host (its constants and inputs widened exactly) and rounded once to the
  // type. The fused region computes in float and rounds once, so the two
  // differ by the two roundings (2u |want|, u the type's unit roundoff), by
  // float's own error, a few 2^-24 of the magnitudes it computes with (8
  // FLT_EPSILON (1 + |x|), with |x| the sum of the element's input
  // magnitudes: tanh GELU's 1 + tanh cancels at |x|'s scale, as in float32),
  // and by one u (1 + |x|) for each of the `outside_roundings` the model
  // does outside its region that the float64 run does not. Against the
  // unfused kernels and the host:
  // each of the model's n nodes rounds to the type, an error of u times an
  // intermediate that reaches the output no larger than 1 + |x| (tanh GELU's
  // x^3 damped by 0.036 times tanh's slope), so n u (1 + |x|).
  void CheckHalf(const Model& model, const std::vector<HostTensor>& inputs,
                 int outside_roundings, const std::vector<HostTensor>& fused, const std::vector<HostTensor>& unfused,
                 const std::vector<HostTensor>& chain) const {
    const auto [dtype, batch] = GetParam();
    const double u = UnitRoundoff(dtype);
    absl::StatusOr<BoundGraph> wide = BindModel(AsType(model, DType::kFloat64), {.batch_size = batch});
    ASSERT_TRUE(wide.ok()) << wide.status();
    absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(*wide);
    ASSERT_TRUE(host.ok()) << host.status();
    std::vector<HostTensor> wide_inputs;
    for (const HostTensor& input : inputs) wide_inputs.push_back(ConvertFloats(input, DType::kFloat64));
    absl::StatusOr<std::vector<HostTensor>> exact = (*host)->Run(wide_inputs);
    ASSERT_TRUE(exact.ok()) << exact.status();
    // 1 + the sum of each element's input magnitudes.
    std::vector<double> scale(static_cast<size_t>(inputs[0].num_elements()), 1.0);
    for (const HostTensor& input : inputs) {
      const std::vector<float> x = Widened(input);
      for (size_t k = 0; k < x.size(); ++k) scale[k] += std::fabs(double{x[k]});
    }
    const double chain_roundings = static_cast<double>(model.nodes.size());
    for (size_t i = 0; i < fused.size(); ++i) {
      ASSERT_EQ(fused[i].dtype(), dtype);
      const std::vector<float> got = Widened(fused[i]);
      const std::vector<float> want = Widened(ConvertFloats((*exact)[i], dtype));
      ASSERT_EQ(got.size(), scale.size());
      std::vector<double> tight(got.size()), loose(got.size());
      for (size_t k = 0; k < got.size(); ++k) {
        tight[k] = 2 * u * std::fabs(double{want[k]}) +
                   (8 * FLT_EPSILON + outside_roundings * u) * scale[k] + DTypeFloor(dtype);
        loose[k] = chain_roundings * u * scale[k] + tight[k];
      }
      EXPECT_TRUE(WithinTolerance(got, want, tight)) << "output " << i << " against float64";
      EXPECT_TRUE(WithinTolerance(got, Widened(unfused[i]), loose))
          << "output " << i << " against the unfused kernels";
      EXPECT_TRUE(WithinTolerance(got, Widened(chain[i]), loose))
          << "output " << i << " against the host";
    }
  }
};

TEST_P(PointwiseDeviceTest, TanhGeluFusedIsTheUnfusedChain) { CheckModel(TanhGeluModel(), 1); }

// Outside the region, the residual Add rounds s (SiLU's slope, at most 1.1,
// carries that on) and the bias Add reads the region's rounded output: three
// u (1 + |x| + |r|) cover both.
TEST_P(PointwiseDeviceTest, BoundedRegionIsTheUnfusedNodes) {
  CheckModel(BoundaryModel(), 1, /*outside_roundings=*/3);
}

INSTANTIATE_TEST_SUITE_P(
    TypesAndBatches, PointwiseDeviceTest,
    ::testing::Combine(::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                       ::testing::Values(int64_t{1}, int64_t{7}, int64_t{4096})),
    [](const auto& info) {
      return std::string(DTypeName(std::get<0>(info.param))) + "_b" +
             std::to_string(std::get<1>(info.param));
    });

}  // namespace
}  // namespace graphserve
