// GridSample: binding (shapes, modes by opset, the canonical node) and the
// host kernel through the host executor, against ONNX's reference evaluator
// (onnx 1.23.2's GridSample) on the same inputs.

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/bind.h"
#include "runtime/data_movement_params.h"
#include "runtime/host/host_executor.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

HostTensor Floats(Dims dims, const std::vector<float>& values) {
  HostTensor t(DType::kFloat32, std::move(dims));
  EXPECT_EQ(static_cast<size_t>(t.num_elements()), values.size());
  for (size_t i = 0; i < values.size(); ++i) t.data<float>()[i] = values[i];
  return t;
}

// X and grid -> GridSample -> y at `opset`.
Model GridSampleModel(int64_t opset, Dims x_dims, Dims grid_dims, Attributes attrs,
                      DType dtype = DType::kFloat32) {
  Model model;
  model.name = "grid_sample";
  model.opset = opset;
  model.inputs = {{"x", dtype, std::move(x_dims)}, {"grid", DType::kFloat32, std::move(grid_dims)}};
  model.outputs = {{"y", dtype, {}}};
  model.nodes = {{"n", "GridSample", {"x", "grid"}, {"y"}, std::move(attrs)}};
  return model;
}

Attributes Modes(const std::string& mode, const std::string& padding, int64_t align_corners) {
  return {{"mode", mode}, {"padding_mode", padding}, {"align_corners", align_corners}};
}

absl::StatusOr<BoundGraph> Bind(const Model& model) {
  BindOptions options;
  options.batch_size = 1;
  return BindModel(model, options);
}

// The model's output for x and grid, through binding and the host executor.
std::vector<float> RunModel(const Model& model, HostTensor x, HostTensor grid) {
  absl::StatusOr<BoundGraph> graph = Bind(model);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  absl::StatusOr<std::unique_ptr<HostExecutor>> executor = HostExecutor::Create(*graph);
  EXPECT_TRUE(executor.ok()) << executor.status();
  absl::StatusOr<std::vector<HostTensor>> out = (*executor)->Run({std::move(x), std::move(grid)});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  const HostTensor& y = (*out)[0];
  return std::vector<float>(y.data<float>(), y.data<float>() + y.num_elements());
}

// [[1, 2], [3, 4]] sampled at 4 points, one mode.
std::vector<float> SampleSquare(int64_t opset, Attributes attrs, std::vector<float> points) {
  const int64_t count = static_cast<int64_t>(points.size()) / 2;
  return RunModel(GridSampleModel(opset, {1, 1, 2, 2}, {1, 1, count, 2}, std::move(attrs)),
                  Floats({1, 1, 2, 2}, {1, 2, 3, 4}), Floats({1, 1, count, 2}, points));
}

// [10, 20, 30, 40] as a [1, 1, 1, 4] image, sampled along x (y = 0).
std::vector<float> SampleRow(int64_t opset, Attributes attrs, const std::vector<float>& xs) {
  std::vector<float> points;
  for (float x : xs) points.insert(points.end(), {x, 0});
  const int64_t count = static_cast<int64_t>(xs.size());
  return RunModel(GridSampleModel(opset, {1, 1, 1, 4}, {1, 1, count, 2}, std::move(attrs)),
                  Floats({1, 1, 1, 4}, {10, 20, 30, 40}), Floats({1, 1, count, 2}, points));
}

TEST(GridSampleBindTest, BindsTheCanonicalNodeWithItsModesAsEnums) {
  absl::StatusOr<BoundGraph> graph =
      Bind(GridSampleModel(16, {1, 3, 5, 6}, {1, 7, 8, 2}, Modes("bicubic", "reflection", 1)));
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 1u);
  const BoundNode& node = graph->nodes[0];
  EXPECT_EQ(node.op_type, "GridSample");
  EXPECT_EQ(IntAttr(node.attributes, "interpolation"),
            static_cast<int64_t>(GridInterpolation::kCubic));
  EXPECT_EQ(IntAttr(node.attributes, "padding"), static_cast<int64_t>(GridPadding::kReflection));
  EXPECT_EQ(IntAttr(node.attributes, "align_corners"), 1);
  EXPECT_EQ(graph->value(graph->outputs[0]).dims, (Dims{1, 3, 7, 8}));
}

TEST(GridSampleBindTest, LinearZerosPaddingMatchesOnnxReference) {
  // The centre, the top-left outer corner (a quarter of pixel 1), the
  // bottom-right outer corner, and the centre of pixel 2.
  EXPECT_THAT(SampleSquare(16, Modes("bilinear", "zeros", 0), {0, 0, -1, -1, 1, 1, 0.5, -0.5}),
              Pointwise(FloatNear(1e-6), std::vector<float>{2.5, 0.25, 1, 2}));
  // With align_corners, -1 and 1 are the corner pixels' centres.
  EXPECT_THAT(SampleSquare(20, Modes("linear", "zeros", 1), {-1, -1, 1, 1, 0, 0}),
              Pointwise(FloatNear(1e-6), std::vector<float>{1, 4, 2.5}));
}

TEST(GridSampleBindTest, NearestRoundsHalfToEvenAndZeroPadsOutside) {
  // x = 0.5 and 1.5 round to 0 and 2; x = 7.5 and -4.5 are outside.
  EXPECT_THAT(SampleRow(20, Modes("nearest", "zeros", 0), {-0.5, 0, 3, -3}),
              ElementsAre(10, 30, 0, 0));
}

TEST(GridSampleBindTest, BorderClampsAndReflectionMirrorsMatchingOnnxReference) {
  EXPECT_THAT(SampleRow(20, Modes("linear", "border", 0), {3, -3, 1.2f}),
              Pointwise(FloatNear(1e-5), std::vector<float>{40, 10, 40}));
  EXPECT_THAT(SampleRow(20, Modes("linear", "reflection", 0), {3, -3, 1.2f, 0.9f}),
              Pointwise(FloatNear(1e-5), std::vector<float>{10, 40, 40, 40}));
}

TEST(GridSampleBindTest, CubicMatchesOnnxReference) {
  // align_corners: -1, -1/3 and 1 land on pixels 0, 1 and 3 exactly.
  EXPECT_THAT(SampleRow(20, Modes("cubic", "zeros", 1), {-1, -1.0f / 3, 0.2f, 1}),
              Pointwise(FloatNear(1e-4), std::vector<float>{10, 20, 27.519993f, 40}));
  EXPECT_THAT(SampleRow(20, Modes("cubic", "reflection", 0), {0.1f, 1.3f}),
              Pointwise(FloatNear(1e-4), std::vector<float>{26.58001f, 39.247505f}));
}

TEST(GridSampleBindTest, VolumetricLinearAtOpset20) {
  // [2, 2, 2] holding 0..7: its centre is their mean; (1, -1, -1) with
  // align_corners is element (z 0, y 0, x 1).
  EXPECT_THAT(
      RunModel(GridSampleModel(20, {1, 1, 2, 2, 2}, {1, 1, 1, 2, 3}, Modes("linear", "zeros", 1)),
               Floats({1, 1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}),
               Floats({1, 1, 1, 2, 3}, {0, 0, 0, 1, -1, -1})),
      Pointwise(FloatNear(1e-6), std::vector<float>{3.5, 1}));
}

TEST(GridSampleBindTest, ANanCoordinateSamplesAsIfFarOutside) {
  // ONNX leaves it undefined; PyTorch's rule: zeros read 0, border the edge.
  EXPECT_THAT(SampleRow(20, Modes("linear", "zeros", 0), {kNaN}), ElementsAre(0));
  EXPECT_THAT(SampleRow(20, Modes("linear", "border", 0), {kNaN}), ElementsAre(10));
  // A NaN pixel with weight 0 still poisons the sum, as in ONNX's reference.
  EXPECT_TRUE(std::isnan(
      RunModel(GridSampleModel(20, {1, 1, 1, 2}, {1, 1, 1, 2}, Modes("linear", "zeros", 1)),
               Floats({1, 1, 1, 2}, {1, kNaN}), Floats({1, 1, 1, 2}, {-1, 0}))[0]));
}

TEST(GridSampleBindTest, RefusesModesOfTheOtherOpsetAndShapesThatDoNotFit) {
  auto refused = [](const Model& model, const std::string& why) {
    absl::StatusOr<BoundGraph> graph = Bind(model);
    ASSERT_FALSE(graph.ok());
    EXPECT_THAT(std::string(graph.status().message()), HasSubstr(why)) << graph.status();
  };
  refused(GridSampleModel(16, {1, 1, 2, 2}, {1, 1, 1, 2}, Modes("linear", "zeros", 0)),
          "mode 'linear' is not one of bilinear, nearest, bicubic");
  refused(GridSampleModel(20, {1, 1, 2, 2}, {1, 1, 1, 2}, Modes("bilinear", "zeros", 0)),
          "mode 'bilinear' is not one of linear, nearest, cubic");
  refused(GridSampleModel(20, {1, 1, 2, 2}, {1, 1, 1, 2}, Modes("linear", "mirror", 0)),
          "padding_mode 'mirror' is not one of zeros, border, reflection");
  refused(GridSampleModel(16, {1, 1, 2, 2, 2}, {1, 1, 1, 1, 3}, Modes("bilinear", "zeros", 0)),
          "1 <= r <= 2 at opset 16");
  refused(GridSampleModel(20, {1, 1, 2, 2}, {1, 1, 1, 3}, Modes("linear", "zeros", 0)),
          "grid [1,1,1,3] should be [1, O1..O2, 2]");
  refused(GridSampleModel(20, {1, 1, 0, 2}, {1, 1, 1, 2}, Modes("linear", "zeros", 0)),
          "has no element to sample");
  refused(
      GridSampleModel(20, {1, 1, 2, 2}, {1, 1, 1, 2}, Modes("linear", "zeros", 0), DType::kInt64),
      "GridSample of int64 is not implemented");
}

}  // namespace
}  // namespace graphserve
