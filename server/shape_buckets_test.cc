#include "server/shape_buckets.h"

#include <memory>
#include <string>
#include <vector>

#include "examples/example_models.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "runtime/host/host_executor.h"
#include "runtime/onnx_import.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

inference::ModelConfig Parse(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

Model Import(const onnx::ModelProto& proto) {
  absl::StatusOr<Model> model = ImportOnnxBytes(proto.SerializeAsString(), "m");
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// The masked sequence model's interface as a config with the sequence -1.
ModelInterface MaskedInterface() {
  absl::StatusOr<ModelInterface> interface = InterfaceFromConfig(Parse(R"pb(
    name: "masked"
    max_batch_size: 8
    input { name: "x" data_type: TYPE_FP32 dims: [ -1, 16 ] }
    input { name: "mask" data_type: TYPE_INT64 dims: [ -1 ] }
    output { name: "y" data_type: TYPE_FP32 dims: [ -1, 16 ] })pb"));
  EXPECT_TRUE(interface.ok()) << interface.status();
  return *std::move(interface);
}

TEST(ShapeBucketsTest, CaptureBucketsAreSortedAndAttachedToEveryTensor) {
  const Model model = Import(MakeMaskedSequenceModel());
  ModelInterface interface = MaskedInterface();
  const auto capture = Parse(R"pb(capture {
                                    shape_dims: "sequence"
                                    buckets { extents: 64 }
                                    buckets { extents: 8 }
                                  })pb")
                           .capture();
  absl::StatusOr<std::vector<std::vector<int64_t>>> buckets =
      AttachShapeBuckets(model, capture, &interface);
  ASSERT_TRUE(buckets.ok()) << buckets.status();
  EXPECT_THAT(*buckets, ElementsAre(ElementsAre(8), ElementsAre(64)));
  EXPECT_THAT(interface.shape_dims, ElementsAre("sequence"));
  EXPECT_THAT(interface.inputs[0].shape_dim_of, ElementsAre(0, -1));
  EXPECT_THAT(interface.inputs[1].shape_dim_of, ElementsAre(0));
  // Found by binding at two extents: y's first dim follows the sequence.
  EXPECT_THAT(interface.outputs[0].shape_dim_of, ElementsAre(0, -1));
  const RowShape rows = RowShapeAt(interface, {5});
  EXPECT_EQ(rows.inputs[0].bytes, 5 * 16 * sizeof(float));
  EXPECT_EQ(rows.inputs[1].bytes, 5 * sizeof(int64_t));
  EXPECT_EQ(rows.outputs[0].bytes, 5 * 16 * sizeof(float));
}

// Note [Eager fallback]: the eager limits per shape dim, in the order the
// config's shape_dims name them, or the open dims' when it names none.
TEST(ShapeBucketsTest, EagerExtentsBoundEachShapeDim) {
  const Model model = Import(MakeMaskedSequenceModel());
  for (const char* text : {R"pb(capture { eager_extents: 600 })pb",
                           R"pb(capture {
                                  shape_dims: "sequence"
                                  buckets { extents: 512 }
                                  eager_extents: 600
                                })pb"}) {
    ModelInterface interface = MaskedInterface();
    ASSERT_TRUE(AttachShapeBuckets(model, Parse(text).capture(), &interface).ok()) << text;
    EXPECT_THAT(interface.eager_extents, ElementsAre(600)) << text;
  }
  ModelInterface interface = MaskedInterface();
  ASSERT_TRUE(AttachShapeBuckets(model, inference::ModelCapture(), &interface).ok());
  EXPECT_THAT(interface.eager_extents, IsEmpty());
}

TEST(ShapeBucketsTest, NoBucketsListedGivesTheDefaults) {
  const Model model = Import(MakeMaskedSequenceModel());
  ModelInterface interface = MaskedInterface();
  absl::StatusOr<std::vector<std::vector<int64_t>>> buckets =
      AttachShapeBuckets(model, inference::ModelCapture(), &interface);
  ASSERT_TRUE(buckets.ok()) << buckets.status();
  EXPECT_EQ(buckets->size(), 6u);
  EXPECT_THAT(buckets->front(), ElementsAre(16));
  EXPECT_THAT(buckets->back(), ElementsAre(512));
}

TEST(ShapeBucketsTest, BadCaptureSectionsAreRefusedNamingTheField) {
  const Model model = Import(MakeMaskedSequenceModel());
  const struct {
    const char* capture;
    const char* expected;
  } cases[] = {
      {R"pb(capture {
              shape_dims: "height"
              buckets { extents: 8 }
            })pb",
       "capture.shape_dims names 'height'"},
      {R"pb(capture { buckets { extents: 8 } })pb", "must list the dims config.pbtxt gives as -1"},
      {R"pb(capture {
              shape_dims: "sequence"
              buckets { extents: 0 }
            })pb",
       "capture.buckets[0] extents [0]"},
      {R"pb(capture {
              shape_dims: "sequence"
              buckets { extents: 8 }
              buckets { extents: 8 }
            })pb",
       "lists a bucket twice"},
      {R"pb(capture {
              shape_dims: "sequence"
              buckets { extents: 64 }
              eager_extents: 32
            })pb",
       "capture.eager_extents gives 32 for dim 'sequence'; it takes from the largest bucket's "
       "extent, 64, to 16777216"},
      {R"pb(capture { shape_dims: "height" eager_extents: 600 })pb",
       "capture.shape_dims names 'height', which is not a dim"},
      {R"pb(capture { eager_extents: [ 600, 600 ] })pb",
       "capture.eager_extents gives 2 extents; it takes one for each of the dims [sequence]"},
  };
  for (const auto& c : cases) {
    ModelInterface interface = MaskedInterface();
    absl::StatusOr<std::vector<std::vector<int64_t>>> buckets =
        AttachShapeBuckets(model, Parse(c.capture).capture(), &interface);
    ASSERT_FALSE(buckets.ok()) << c.capture;
    EXPECT_EQ(buckets.status().code(), absl::StatusCode::kInvalidArgument) << c.capture;
    EXPECT_THAT(std::string(buckets.status().message()), HasSubstr(c.expected)) << c.capture;
  }
}

// Triton's configs write -1 for dims a model fixes: they become the model's.
TEST(ShapeBucketsTest, MinusOneForADimTheModelFixesBecomesIt) {
  const Model model = Import(MakeMlpModel());
  absl::StatusOr<ModelInterface> interface = InterfaceFromConfig(Parse(R"pb(
    name: "mlp"
    max_batch_size: 8
    input { name: "x" data_type: TYPE_FP32 dims: [ -1 ] }
    output { name: "y" data_type: TYPE_FP32 dims: [ -1 ] })pb"));
  ASSERT_TRUE(interface.ok()) << interface.status();
  absl::StatusOr<std::vector<std::vector<int64_t>>> buckets =
      AttachShapeBuckets(model, inference::ModelCapture(), &*interface);
  ASSERT_TRUE(buckets.ok()) << buckets.status();
  EXPECT_THAT(interface->inputs[0].dims, ElementsAre(512));
  EXPECT_THAT(interface->outputs[0].dims, ElementsAre(1));
  EXPECT_TRUE(interface->shape_dims.empty());
}

// The check of Note [Shape buckets], on the host reference: a mask padded
// with 0 leaves the real positions' answers; a softmax over the sequence
// without one does not, and the error names the output.
TEST(ShapeBucketsTest, PaddingIsCheckedNotAssumed) {
  const Model masked = Import(MakeMaskedSequenceModel());
  ModelInterface masked_interface = MaskedInterface();
  const auto capture = Parse(R"pb(capture {
                                    shape_dims: "sequence"
                                    buckets { extents: 8 }
                                    buckets { extents: 32 }
                                  })pb")
                           .capture();
  ASSERT_TRUE(AttachShapeBuckets(masked, capture, &masked_interface).ok());
  absl::StatusOr<std::vector<PadElement>> pads = PadElementsFromConfig(masked_interface, capture);
  ASSERT_TRUE(pads.ok()) << pads.status();
  EXPECT_TRUE(CheckPaddingExact(masked, masked_interface, *pads, HostExecutorFactory()).ok());

  const Model softmax = Import(MakeSequenceSoftmaxModel());
  absl::StatusOr<ModelInterface> interface = InterfaceFromConfig(Parse(R"pb(
    name: "softmax"
    max_batch_size: 8
    input { name: "x" data_type: TYPE_FP32 dims: [ -1, 16 ] }
    output { name: "y" data_type: TYPE_FP32 dims: [ -1, 16 ] })pb"));
  ASSERT_TRUE(interface.ok());
  ASSERT_TRUE(AttachShapeBuckets(softmax, capture, &*interface).ok());
  const absl::Status exact =
      CheckPaddingExact(softmax, *interface, {PadElement{}}, HostExecutorFactory());
  EXPECT_EQ(exact.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(exact.message()),
              HasSubstr("padding extents [6] into bucket [8] changes output 'y'"));
}

// Note [Models without a batch dim]: with max_batch_size 0, the masked
// model's dim 0 ("batch" in the file) is a shape dim beside the sequence,
// the buckets cover both, and the padding check pads both: exact for the
// masked model (its rows are independent, padded positions masked), not for
// the softmax over the sequence. The model must be bound as the config says.
TEST(ShapeBucketsTest, WithoutABatchDimDimZeroIsBucketedAndCheckedToo) {
  Model masked = Import(MakeMaskedSequenceModel());
  masked.batches = false;
  absl::StatusOr<ModelInterface> interface = InterfaceFromConfig(Parse(R"pb(
    name: "masked"
    max_batch_size: 0
    input { name: "x" data_type: TYPE_FP32 dims: [ -1, -1, 16 ] }
    input { name: "mask" data_type: TYPE_INT64 dims: [ -1, -1 ] }
    output { name: "y" data_type: TYPE_FP32 dims: [ -1, -1, 16 ] })pb"));
  ASSERT_TRUE(interface.ok()) << interface.status();
  const auto capture = Parse(R"pb(capture {
                                    shape_dims: [ "batch", "sequence" ]
                                    buckets { extents: [ 4, 8 ] }
                                    buckets { extents: [ 8, 32 ] }
                                  })pb")
                           .capture();
  absl::StatusOr<std::vector<std::vector<int64_t>>> buckets =
      AttachShapeBuckets(masked, capture, &*interface);
  ASSERT_TRUE(buckets.ok()) << buckets.status();
  EXPECT_THAT(*buckets, ElementsAre(ElementsAre(4, 8), ElementsAre(8, 32)));
  EXPECT_THAT(interface->shape_dims, ElementsAre("batch", "sequence"));
  EXPECT_THAT(interface->inputs[0].shape_dim_of, ElementsAre(0, 1, -1));
  EXPECT_THAT(interface->inputs[1].shape_dim_of, ElementsAre(0, 1));
  EXPECT_THAT(interface->outputs[0].shape_dim_of, ElementsAre(0, 1, -1));
  EXPECT_EQ(RowShapeAt(*interface, {3, 5}).inputs[0].bytes, 3 * 5 * 16 * sizeof(float));
  EXPECT_TRUE(CheckPaddingExact(masked, *interface, {PadElement{}, PadElement{}},
                                HostExecutorFactory())
                  .ok());

  Model softmax = Import(MakeSequenceSoftmaxModel());
  softmax.batches = false;
  absl::StatusOr<ModelInterface> softmax_interface = InterfaceFromConfig(Parse(R"pb(
    name: "softmax"
    max_batch_size: 0
    input { name: "x" data_type: TYPE_FP32 dims: [ -1, -1, 16 ] }
    output { name: "y" data_type: TYPE_FP32 dims: [ -1, -1, 16 ] })pb"));
  ASSERT_TRUE(softmax_interface.ok()) << softmax_interface.status();
  ASSERT_TRUE(AttachShapeBuckets(softmax, capture, &*softmax_interface).ok());
  const absl::Status exact =
      CheckPaddingExact(softmax, *softmax_interface, {PadElement{}}, HostExecutorFactory());
  EXPECT_EQ(exact.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(exact.message()),
              HasSubstr("padding extents [3,6] into bucket [4,8] changes output 'y'"));

  // A model bound with a batch dim against a config without one.
  const Model batching = Import(MakeSequenceSoftmaxModel());
  absl::StatusOr<ModelInterface> mismatched = InterfaceFromConfig(Parse(R"pb(
    name: "softmax"
    max_batch_size: 0
    input { name: "x" data_type: TYPE_FP32 dims: [ -1, -1, 16 ] }
    output { name: "y" data_type: TYPE_FP32 dims: [ -1, -1, 16 ] })pb"));
  ASSERT_TRUE(mismatched.ok());
  EXPECT_EQ(AttachShapeBuckets(batching, capture, &*mismatched).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// Note [Pitched row copies]: the device pads a request's rows itself when
// each tensor's shape dim is its first row dim and each pad one repeated
// byte; an image's height and width, a model without a batch dim (its rows
// padded in dim 0 and the sequence) or a pad token of several byte values
// leave it to the host.
TEST(ShapeBucketsTest, DevicePadsRowsWhoseShapeDimComesFirst) {
  const Model model = Import(MakeMaskedSequenceModel());
  ModelInterface interface = MaskedInterface();
  const auto capture = Parse(R"pb(capture {
                                    shape_dims: "sequence"
                                    buckets { extents: 8 }
                                  })pb")
                           .capture();
  ASSERT_TRUE(AttachShapeBuckets(model, capture, &interface).ok());
  EXPECT_TRUE(DevicePadsRows(interface, {PadElement{}, PadElement{}}));
  PadElement minus_one;
  minus_one.fill(std::byte{0xFF});
  EXPECT_TRUE(DevicePadsRows(interface, {PadElement{}, minus_one}));
  PadElement three{};
  three[0] = std::byte{3};
  EXPECT_FALSE(DevicePadsRows(interface, {PadElement{}, three}));

  ModelInterface image = interface;  // as though x were [height, width]
  image.inputs[0].shape_dim_of = {-1, 0};
  EXPECT_FALSE(DevicePadsRows(image, {PadElement{}, PadElement{}}));
  ModelInterface output_image = interface;
  output_image.outputs[0].shape_dim_of = {-1, 0};
  EXPECT_FALSE(DevicePadsRows(output_image, {PadElement{}, PadElement{}}));
  EXPECT_TRUE(DevicePadsRows(MaskedInterface(), {}));  // no shape dims: nothing padded
}

TEST(ShapeBucketsTest, PadValuesTakeTheInputsType) {
  ModelInterface interface = MaskedInterface();
  absl::StatusOr<std::vector<PadElement>> pads = PadElementsFromConfig(
      interface, Parse(R"pb(capture { padding { input: "mask" value: 3 } })pb").capture());
  ASSERT_TRUE(pads.ok()) << pads.status();
  EXPECT_EQ((*pads)[1][0], std::byte{3});
  EXPECT_EQ((*pads)[0][0], std::byte{0});
  EXPECT_FALSE(PadElementsFromConfig(
                   interface, Parse(R"pb(capture { padding { input: "mask" value: 0.5 } })pb")
                                  .capture())
                   .ok());
  EXPECT_FALSE(PadElementsFromConfig(
                   interface, Parse(R"pb(capture { padding { input: "nope" value: 0 } })pb")
                                  .capture())
                   .ok());
}

}  // namespace
}  // namespace graphserve
