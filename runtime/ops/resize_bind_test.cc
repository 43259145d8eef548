// Resize and Upsample: the sampling tables binding computes (Note [Resize
// sampling tables]), run by the host executor against values worked by hand
// or by ONNX's reference evaluator (onnx 1.23.2, noted where used), the
// canonical node, and refusals that name the node.

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/bind.h"
#include "runtime/host/host_executor.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;

std::shared_ptr<const HostTensor> Floats(const std::vector<float>& values) {
  auto tensor =
      std::make_shared<HostTensor>(DType::kFloat32, Dims{static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) tensor->data<float>()[i] = values[i];
  return tensor;
}

std::shared_ptr<const HostTensor> Int64s(const std::vector<int64_t>& values) {
  auto tensor =
      std::make_shared<HostTensor>(DType::kInt64, Dims{static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) tensor->data<int64_t>()[i] = values[i];
  return tensor;
}

HostTensor Input(Dims dims, const std::vector<float>& values) {
  HostTensor x(DType::kFloat32, std::move(dims));
  for (size_t i = 0; i < values.size(); ++i) x.data<float>()[i] = values[i];
  return x;
}

// x -> op (inputs named in `inputs`, "" where omitted) -> y at `opset`.
Model ResizeModel(int64_t opset, Dims x_dims, std::vector<std::string> inputs, Attributes attrs,
                  std::map<std::string, std::shared_ptr<const HostTensor>> initializers,
                  std::string op = "Resize", DType dtype = DType::kFloat32) {
  Model model;
  model.name = "resize";
  model.opset = opset;
  model.inputs = {{"x", dtype, std::move(x_dims)}};
  model.outputs = {{"y", dtype, {}}};
  model.initializers = std::move(initializers);
  inputs.insert(inputs.begin(), "x");
  model.nodes = {{"n", std::move(op), std::move(inputs), {"y"}, std::move(attrs)}};
  return model;
}

absl::StatusOr<BoundGraph> Bind(const Model& model) {
  BindOptions options;
  options.batch_size = 1;
  return BindModel(model, options);
}

// The model's one output for input x, through binding and the host executor.
std::vector<float> RunModel(const Model& model, HostTensor x) {
  absl::StatusOr<BoundGraph> graph = Bind(model);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  absl::StatusOr<std::unique_ptr<HostExecutor>> executor = HostExecutor::Create(*graph);
  EXPECT_TRUE(executor.ok()) << executor.status();
  absl::StatusOr<std::vector<HostTensor>> out = (*executor)->Run({std::move(x)});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  const HostTensor& y = (*out)[0];
  return std::vector<float>(y.data<float>(), y.data<float>() + y.num_elements());
}

// Resize-13 of a 1-D x to `size` elements: roi and scales omitted before
// sizes, as PyTorch exports it.
Model ResizeToSize(int64_t size, Attributes attrs, int64_t length = 4) {
  return ResizeModel(13, {length}, {"", "", "sizes"}, std::move(attrs),
                     {{"sizes", Int64s({size})}});
}

TEST(ResizeBindTest, NearestUpsampleAtOpset10IsAsymmetricAndRoundsDown) {
  // Resize-10 [x, scales]: output y reads floor(y / 2) in each resized dim.
  const Model model = ResizeModel(10, {1, 1, 2, 2}, {"scales"}, {{"mode", std::string("nearest")}},
                                  {{"scales", Floats({1, 1, 2, 2})}});
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 1u);
  const BoundNode& node = graph->nodes[0];
  EXPECT_EQ(node.op_type, "Resize");
  ASSERT_EQ(node.inputs.size(), 3u);
  EXPECT_THAT(IntsAttr(node.attributes, "axes"), ElementsAre(2, 3));
  EXPECT_THAT(IntsAttr(node.attributes, "taps"), ElementsAre(1, 1));
  const HostTensor& indices = *graph->value(node.inputs[1]).constant;
  EXPECT_THAT(std::vector<int64_t>(indices.data<int64_t>(), indices.data<int64_t>() + 8),
              ElementsAre(0, 0, 1, 1, 0, 0, 1, 1));
  EXPECT_EQ(graph->value(graph->outputs[0]).dims, (Dims{1, 1, 4, 4}));
  EXPECT_THAT(RunModel(model, Input({1, 1, 2, 2}, {1, 2, 3, 4})),
              ElementsAre(1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4));
}

TEST(ResizeBindTest, UpsampleBindsAsResize) {
  const Model model = ResizeModel(7, {1, 1, 2, 2}, {}, {{"scales", std::vector<float>{1, 1, 2, 2}}},
                                  {}, "Upsample");
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->nodes[0].op_type, "Resize");
  EXPECT_THAT(RunModel(model, Input({1, 1, 2, 2}, {1, 2, 3, 4})),
              ElementsAre(1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4));
}

TEST(ResizeBindTest, LinearHalfPixelFromSizesWithRoiAndScalesOmitted) {
  // Output y samples (y + 0.5) / 2 - 0.5: -0.25 (clamped to x[0]), 0.25,
  // 0.75, ..., 3.25 (clamped to x[3]).
  EXPECT_THAT(
      RunModel(ResizeToSize(8, {{"mode", std::string("linear")}}), Input({4}, {0, 10, 20, 30})),
      ElementsAre(0, 2.5, 7.5, 12.5, 17.5, 22.5, 27.5, 30));
}

TEST(ResizeBindTest, LinearAlignCornersKeepsTheCorners) {
  // y * (3 - 1) / (5 - 1): 0, 0.5, 1, 1.5, 2.
  EXPECT_THAT(
      RunModel(ResizeToSize(5,
                            {{"mode", std::string("linear")},
                             {"coordinate_transformation_mode", std::string("align_corners")}},
                            3),
               Input({3}, {0, 10, 20})),
      ElementsAre(0, 5, 10, 15, 20));
}

TEST(ResizeBindTest, BilinearWeighsFourPixels) {
  // Each output element sums the products of one entry per resized dim:
  // align_corners 2x2 -> 3x3 puts the centre at the four pixels' mean.
  const Model model =
      ResizeModel(13, {1, 1, 2, 2}, {"", "", "sizes"},
                  {{"mode", std::string("linear")},
                   {"coordinate_transformation_mode", std::string("align_corners")}},
                  {{"sizes", Int64s({1, 1, 3, 3})}});
  EXPECT_THAT(RunModel(model, Input({1, 1, 2, 2}, {0, 1, 2, 3})),
              ElementsAre(0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3));
}

TEST(ResizeBindTest, CubicMatchesOnnxReference) {
  // onnx.reference's Resize of [0, 1, 4, 9] to 8, half_pixel, float32.
  EXPECT_THAT(
      RunModel(ResizeToSize(8, {{"mode", std::string("cubic")}}), Input({4}, {0, 1, 4, 9})),
      Pointwise(FloatNear(1e-6), std::vector<float>{-0.10546875, 0.12109375, 0.45703125, 1.609375,
                                                    2.828125, 5.44921875, 7.97265625, 9.52734375}));
  // The same with cubic_coeff_a -0.5 and exclude_outside.
  EXPECT_THAT(RunModel(ResizeToSize(8, {{"mode", std::string("cubic")},
                                        {"cubic_coeff_a", -0.5f},
                                        {"exclude_outside", int64_t{1}}}),
                       Input({4}, {0, 1, 4, 9})),
              Pointwise(FloatNear(1e-6),
                        std::vector<float>{-0.0882352963, 0.1240875944, 0.5725190639, 1.5625,
                                           3.0625, 5.3129773140, 8.1167879105, 9.4411764145}));
}

TEST(ResizeBindTest, AntialiasWidensTheLinearFilterWhenShrinking) {
  // onnx.reference: [0, 1, 4, 9, 16, 25] to 3 with antialias, a 4-tap tent
  // of half the slope.
  const Model model = ResizeModel(18, {6}, {"", "", "sizes"},
                                  {{"mode", std::string("linear")}, {"antialias", int64_t{1}}},
                                  {{"sizes", Int64s({3})}});
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(IntsAttr(graph->nodes[0].attributes, "taps"), ElementsAre(4));
  EXPECT_THAT(RunModel(model, Input({6}, {0, 1, 4, 9, 16, 25})),
              Pointwise(FloatNear(1e-5), std::vector<float>{0.875, 7.0, 19.625}));
}

TEST(ResizeBindTest, TfCropAndResizeExtrapolatesOutsideTheInput) {
  // roi [0.4, 1.2] of length 4: y samples 1.2 + 1.2 y; 3.6 lies outside.
  const Model model =
      ResizeModel(13, {4}, {"roi", "", "sizes"},
                  {{"mode", std::string("linear")},
                   {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                   {"extrapolation_value", 9.0f}},
                  {{"roi", Floats({0.4f, 1.2f})}, {"sizes", Int64s({3})}});
  EXPECT_THAT(RunModel(model, Input({4}, {0, 1, 2, 3})),
              Pointwise(FloatNear(1e-5), std::vector<float>{1.2f, 2.4f, 9}));
}

TEST(ResizeBindTest, NaNSpreadsToEveryOutputThatWeighsItAsTheReferenceDoes) {
  // Linear x2, asymmetric (Resize-10): y samples y / 2. On a pixel the
  // window is that pixel and the one before, weighted 0 and 1 (ONNX's
  // reference), so x = 2 still reads the NaN at 1.
  const Model model = ResizeModel(10, {4}, {"scales"}, {{"mode", std::string("linear")}},
                                  {{"scales", Floats({2})}});
  const std::vector<float> y = RunModel(model, Input({4}, {1, NAN, 3, 4}));
  ASSERT_EQ(y.size(), 8u);
  EXPECT_EQ(y[0], 1);
  for (int i = 1; i <= 4; ++i) EXPECT_TRUE(std::isnan(y[i])) << i;
  EXPECT_THAT(std::vector<float>(y.begin() + 5, y.end()), ElementsAre(3.5, 4, 4));
}

TEST(ResizeBindTest, KeepAspectRatioAndAxes) {
  // sizes [3, 3] for dims 2 and 3 of [1, 1, 4, 6]: not_larger scales both
  // by min(3/4, 3/6) = 1/2, not_smaller by 3/4 (round(4.5) = 5).
  for (const auto& [policy, dims] :
       std::vector<std::pair<std::string, Dims>>{{"not_larger", {1, 1, 2, 3}},
                                                 {"not_smaller", {1, 1, 3, 5}},
                                                 {"stretch", {1, 1, 3, 3}}}) {
    absl::StatusOr<BoundGraph> graph = Bind(
        ResizeModel(18, {1, 1, 4, 6}, {"", "", "sizes"},
                    {{"axes", std::vector<int64_t>{2, -1}}, {"keep_aspect_ratio_policy", policy}},
                    {{"sizes", Int64s({3, 3})}}));
    ASSERT_TRUE(graph.ok()) << graph.status();
    EXPECT_EQ(graph->value(graph->outputs[0]).dims, dims) << policy;
  }
}

TEST(ResizeBindTest, ScalesOfOneBindAsAnAlias) {
  absl::StatusOr<BoundGraph> graph =
      Bind(ResizeModel(13, {1, 3, 4}, {"", "scales"}, {{"mode", std::string("cubic")}},
                       {{"scales", Floats({1, 1, 1})}}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (const BoundNode& node : graph->nodes) EXPECT_NE(node.op_type, "Resize");
}

TEST(ResizeBindTest, RefusalsNameTheNode) {
  struct Refusal {
    Model model;
    absl::StatusCode code;
    std::string says;
  };
  const std::vector<Refusal> refusals = {
      {ResizeModel(13, {4}, {"", "scales", "sizes"}, {},
                   {{"scales", Floats({2})}, {"sizes", Int64s({8})}}),
       absl::StatusCode::kInvalidArgument, "exactly one of scales and sizes"},
      {ResizeModel(13, {1, 4}, {"", "scales"}, {}, {{"scales", Floats({2})}}),
       absl::StatusCode::kInvalidArgument, "scales should have 2 entries"},
      {ResizeModel(13, {4}, {"", "", "sizes"}, {{"axes", std::vector<int64_t>{0}}},
                   {{"sizes", Int64s({8})}}),
       absl::StatusCode::kInvalidArgument, "'axes' needs opset 18"},
      {ResizeModel(13, {4}, {"", "", "sizes"},
                   {{"coordinate_transformation_mode", std::string("tf_half_pixel_for_nn")}},
                   {{"sizes", Int64s({8})}}),
       absl::StatusCode::kInvalidArgument, "ends at opset 12"},
      {ResizeModel(13, {4}, {"", "", "sizes"}, {{"mode", std::string("area")}},
                   {{"sizes", Int64s({8})}}),
       absl::StatusCode::kInvalidArgument, "mode 'area' is not one of"},
      {ResizeModel(13, {4}, {"", "", "sizes"}, {}, {{"sizes", Int64s({8})}}, "Resize",
                   DType::kInt32),
       absl::StatusCode::kUnimplemented, "Resize of int32"},
      // What a hostile model file could ask for: tables as long as an absurd
      // output, and a length no int64 holds.
      {ResizeModel(13, {4}, {"", "scales"}, {}, {{"scales", Floats({1e12f})}}),
       absl::StatusCode::kInvalidArgument, "sampling tables past any tensor's size"},
      {ResizeModel(13, {4}, {"", "scales"}, {}, {{"scales", Floats({1e8f})}}),
       absl::StatusCode::kInvalidArgument, "past binding's bound"},
      {ResizeModel(13, {4}, {"", "scales"}, {}, {{"scales", Floats({1e30f})}}),
       absl::StatusCode::kInvalidArgument, "is too large"},
  };
  for (const Refusal& refusal : refusals) {
    absl::StatusOr<BoundGraph> graph = Bind(refusal.model);
    ASSERT_FALSE(graph.ok()) << refusal.says;
    EXPECT_EQ(graph.status().code(), refusal.code) << graph.status();
    EXPECT_THAT(graph.status().message(), HasSubstr("node 'n' (Resize)"));
    EXPECT_THAT(graph.status().message(), HasSubstr(refusal.says));
  }
}

}  // namespace
}  // namespace graphserve
