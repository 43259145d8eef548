// The data movement family's host kernels through RunHostNode: Tile, Trilu,
// the scatters, OneHot, TopK and Resize on canonical nodes (as binding writes them),
// against values worked out by hand.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/half.h"
#include "runtime/data_movement_params.h"
#include "runtime/host/kernels.h"

namespace graphserve {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A tensor of `dims` holding `values` row-major, of the row whose host type
// is T.
template <typename T>
HostTensor Make(DType dtype, Dims dims, const std::vector<T>& values) {
  HostTensor t(dtype, std::move(dims));
  EXPECT_EQ(static_cast<size_t>(t.num_elements()), values.size());
  for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
  return t;
}

HostTensor Floats(Dims dims, const std::vector<float>& values) {
  return Make<float>(DType::kFloat32, std::move(dims), values);
}

HostTensor Ints(Dims dims, const std::vector<int64_t>& values) {
  return Make<int64_t>(DType::kInt64, std::move(dims), values);
}

template <typename T>
std::vector<T> Values(const HostTensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.num_elements());
}

BoundNode MakeNode(const std::string& op_type, Attributes attributes = {}) {
  BoundNode node;
  node.name = "test_" + op_type;
  node.op_type = op_type;
  node.attributes = std::move(attributes);
  return node;
}

Attributes Scatter(ScatterReduction reduction, Attributes more = {}) {
  more["reduction"] = static_cast<int64_t>(reduction);
  return more;
}

// Runs `node` on `inputs` into outputs of the given dtypes and dims.
absl::StatusOr<std::vector<HostTensor>> Run(const BoundNode& node,
                                            const std::vector<HostTensor>& inputs,
                                            std::vector<HostTensor> outputs) {
  std::vector<const HostTensor*> in;
  for (const HostTensor& t : inputs) in.push_back(&t);
  std::vector<HostTensor*> out;
  for (HostTensor& t : outputs) out.push_back(&t);
  absl::Status status = RunHostNode(node, in, out);
  if (!status.ok()) return status;
  return outputs;
}

HostTensor RunOk(const BoundNode& node, const std::vector<HostTensor>& inputs, DType dtype,
                 Dims dims) {
  absl::StatusOr<std::vector<HostTensor>> out =
      Run(node, inputs, {HostTensor(dtype, std::move(dims))});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0] : HostTensor();
}

absl::Status RunStatus(const BoundNode& node, const std::vector<HostTensor>& inputs, DType dtype,
                       Dims dims) {
  return Run(node, inputs, {HostTensor(dtype, std::move(dims))}).status();
}

// ---------------------------------------------------------------------------
// Tile
// ---------------------------------------------------------------------------

TEST(TileTest, RepeatsEveryDim) {
  // [2,3] tiled [2,2] -> [4,6]: the rows twice over, each row twice along.
  HostTensor out =
      RunOk(MakeNode("Tile"), {Ints({2, 3}, {1, 2, 3, 4, 5, 6})}, DType::kInt64, {4, 6});
  EXPECT_EQ(Values<int64_t>(out), (std::vector<int64_t>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6,
                                                        1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
}

TEST(TileTest, MiddleDimOfOneByteType) {
  // bool [2,1,2] tiled [1,3,1] -> [2,3,2].
  HostTensor in = Make<bool>(DType::kBool, {2, 1, 2}, {true, false, false, true});
  HostTensor out = RunOk(MakeNode("Tile"), {in}, DType::kBool, {2, 3, 2});
  EXPECT_EQ(Values<bool>(out), (std::vector<bool>{true, false, true, false, true, false, false,
                                                  true, false, true, false, true}));
}

TEST(TileTest, ZeroRepeatsGiveAnEmptyOutput) {
  HostTensor out = RunOk(MakeNode("Tile"), {Floats({2}, {1, 2})}, DType::kFloat32, {0});
  EXPECT_EQ(out.num_elements(), 0);
}

TEST(TileTest, OutputThatIsNoMultipleIsInvalid) {
  EXPECT_TRUE(absl::IsInvalidArgument(
      RunStatus(MakeNode("Tile"), {Floats({2}, {1, 2})}, DType::kFloat32, {3})));
}

// ---------------------------------------------------------------------------
// Trilu
// ---------------------------------------------------------------------------

TEST(TriluTest, UpperAndLowerWithOffsets) {
  const HostTensor x = Ints({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  auto trilu = [&](int64_t upper, int64_t k) {
    return Values<int64_t>(
        RunOk(MakeNode("Trilu", {{"upper", upper}, {"k", k}}), {x}, DType::kInt64, {3, 4}));
  };
  EXPECT_EQ(trilu(1, 0), (std::vector<int64_t>{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12}));
  EXPECT_EQ(trilu(1, 2), (std::vector<int64_t>{0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0}));
  EXPECT_EQ(trilu(1, -1), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12}));
  EXPECT_EQ(trilu(0, 0), (std::vector<int64_t>{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0}));
  EXPECT_EQ(trilu(0, -2), (std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0}));
  // The clamped extremes binding writes: everything kept or nothing.
  EXPECT_EQ(trilu(0, 4), Values<int64_t>(x));
  EXPECT_EQ(trilu(1, 4), std::vector<int64_t>(12, 0));
}

TEST(TriluTest, EveryMatrixOfABatchAndHalfZeros) {
  // float16 [2,2,2], lower: the upper-right element of each matrix becomes
  // +0 (all-zero bits).
  std::vector<Half> values;
  for (float v : {1.0f, -2.0f, 3.0f, 4.0f, 5.0f, -6.0f, 7.0f, 8.0f}) values.emplace_back(v);
  HostTensor out = RunOk(MakeNode("Trilu", {{"upper", int64_t{0}}, {"k", int64_t{0}}}),
                         {Make<Half>(DType::kFloat16, {2, 2, 2}, values)}, DType::kFloat16,
                         {2, 2, 2});
  const std::vector<Half> got = Values<Half>(out);
  const std::vector<uint16_t> zero_bits = {got[1].bits, got[5].bits};
  EXPECT_EQ(zero_bits, (std::vector<uint16_t>{0, 0}));
  EXPECT_EQ(static_cast<float>(got[2]), 3.0f);
  EXPECT_EQ(static_cast<float>(got[4]), 5.0f);
}

TEST(TriluTest, EmptyMatricesWriteNothing) {
  for (const Dims& dims : {Dims{3, 0}, Dims{0, 3}, Dims{2, 0, 0}}) {
    HostTensor out = RunOk(MakeNode("Trilu", {{"upper", int64_t{1}}, {"k", int64_t{0}}}),
                           {Floats(dims, {})}, DType::kFloat32, dims);
    EXPECT_EQ(out.num_elements(), 0);
  }
}

TEST(TriluTest, OffsetOutsideTheClampIsInvalid) {
  EXPECT_TRUE(absl::IsInvalidArgument(
      RunStatus(MakeNode("Trilu", {{"upper", int64_t{1}}, {"k", int64_t{5}}}),
                {Floats({2, 2}, {1, 2, 3, 4})}, DType::kFloat32, {2, 2})));
}

// ---------------------------------------------------------------------------
// ScatterND
// ---------------------------------------------------------------------------

TEST(ScatterNDTest, ReplacesRowsCountingNegativeIndicesFromTheEnd) {
  // data [3,2]; rows -1 (= 2) and 0 replaced.
  HostTensor out = RunOk(MakeNode("ScatterND", Scatter(ScatterReduction::kNone)),
                         {Floats({3, 2}, {1, 2, 3, 4, 5, 6}), Ints({2, 1}, {-1, 0}),
                          Floats({2, 2}, {10, 20, 30, 40})},
                         DType::kFloat32, {3, 2});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{30, 40, 3, 4, 10, 20}));
}

TEST(ScatterNDTest, ElementTuplesReduceDuplicatesInOrder) {
  // Full [row, col] tuples, (1, 0) twice.
  const HostTensor data = Floats({2, 2}, {1, 2, 3, 4});
  const HostTensor indices = Ints({3, 2}, {1, 0, 0, 1, 1, 0});
  const HostTensor updates = Floats({3}, {10, 5, 2});
  auto scatter = [&](ScatterReduction reduction) {
    return Values<float>(RunOk(MakeNode("ScatterND", Scatter(reduction)),
                               {data, indices, updates}, DType::kFloat32, {2, 2}));
  };
  EXPECT_EQ(scatter(ScatterReduction::kAdd), (std::vector<float>{1, 7, 15, 4}));
  EXPECT_EQ(scatter(ScatterReduction::kMul), (std::vector<float>{1, 10, 60, 4}));
  EXPECT_EQ(scatter(ScatterReduction::kMax), (std::vector<float>{1, 5, 10, 4}));
  EXPECT_EQ(scatter(ScatterReduction::kMin), (std::vector<float>{1, 2, 2, 4}));
}

TEST(ScatterNDTest, MaxAndMinPropagateNaN) {
  // NaN in the data stays; NaN in an update takes over, as numpy's maximum.
  const HostTensor data = Floats({3}, {kNaN, 1, 1});
  const HostTensor indices = Ints({3, 1}, {0, 1, 2});
  const HostTensor updates = Floats({3}, {5, kNaN, -3});
  for (ScatterReduction reduction : {ScatterReduction::kMax, ScatterReduction::kMin}) {
    const std::vector<float> out =
        Values<float>(RunOk(MakeNode("ScatterND", Scatter(reduction)), {data, indices, updates},
                            DType::kFloat32, {3}));
    EXPECT_TRUE(std::isnan(out[0]));
    EXPECT_TRUE(std::isnan(out[1]));
    EXPECT_EQ(out[2], reduction == ScatterReduction::kMax ? 1.0f : -3.0f);
  }
}

TEST(ScatterNDTest, IntegerArithmeticWraps) {
  // int8: 100 + 100 wraps to -56; 100 * 3 = 300 wraps to 44.
  const HostTensor data = Make<int8_t>(DType::kInt8, {2}, {100, 100});
  const HostTensor indices = Ints({2, 1}, {0, 1});
  const HostTensor add_updates = Make<int8_t>(DType::kInt8, {2}, {100, 0});
  const HostTensor mul_updates = Make<int8_t>(DType::kInt8, {2}, {3, 1});
  EXPECT_EQ(Values<int8_t>(RunOk(MakeNode("ScatterND", Scatter(ScatterReduction::kAdd)),
                                 {data, indices, add_updates}, DType::kInt8, {2})),
            (std::vector<int8_t>{-56, 100}));
  EXPECT_EQ(Values<int8_t>(RunOk(MakeNode("ScatterND", Scatter(ScatterReduction::kMul)),
                                 {data, indices, mul_updates}, DType::kInt8, {2})),
            (std::vector<int8_t>{44, 100}));
}

TEST(ScatterNDTest, OutOfRangeIndexIsInvalid) {
  EXPECT_TRUE(absl::IsInvalidArgument(RunStatus(
      MakeNode("ScatterND", Scatter(ScatterReduction::kNone)),
      {Floats({2}, {1, 2}), Ints({1, 1}, {2}), Floats({1}, {5})}, DType::kFloat32, {2})));
  EXPECT_TRUE(absl::IsInvalidArgument(RunStatus(
      MakeNode("ScatterND", Scatter(ScatterReduction::kNone)),
      {Floats({2}, {1, 2}), Ints({1, 1}, {-3}), Floats({1}, {5})}, DType::kFloat32, {2})));
}

TEST(ScatterNDTest, ArithmeticOnBoolIsInvalid) {
  const HostTensor data = Make<bool>(DType::kBool, {2}, {true, false});
  const HostTensor updates = Make<bool>(DType::kBool, {1}, {true});
  EXPECT_TRUE(absl::IsInvalidArgument(
      RunStatus(MakeNode("ScatterND", Scatter(ScatterReduction::kAdd)),
                {data, Ints({1, 1}, {1}), updates}, DType::kBool, {2})));
  EXPECT_EQ(Values<bool>(RunOk(MakeNode("ScatterND", Scatter(ScatterReduction::kNone)),
                               {data, Ints({1, 1}, {1}), updates}, DType::kBool, {2})),
            (std::vector<bool>{true, true}));
}

// ---------------------------------------------------------------------------
// ScatterElements
// ---------------------------------------------------------------------------

TEST(ScatterElementsTest, Axis1WithNegativeIndices) {
  // ONNX's example: data [1,5], indices [[1, -2]] (= [1, 3]) on axis 1.
  HostTensor out = RunOk(
      MakeNode("ScatterElements", Scatter(ScatterReduction::kNone, {{"axis", int64_t{1}}})),
      {Floats({1, 5}, {1, 2, 3, 4, 5}), Ints({1, 2}, {1, -2}), Floats({1, 2}, {1.1f, 2.1f})},
      DType::kFloat32, {1, 5});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{1, 1.1f, 3, 2.1f, 5}));
}

TEST(ScatterElementsTest, Axis0IndicesSmallerThanData) {
  // indices [2,2] into data [3,3] on axis 0: column j of update row r lands
  // at (indices[r][j], j).
  HostTensor out = RunOk(
      MakeNode("ScatterElements", Scatter(ScatterReduction::kNone, {{"axis", int64_t{0}}})),
      {Floats({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0}), Ints({2, 2}, {1, 0, 2, 1}),
       Floats({2, 2}, {1, 2, 3, 4})},
      DType::kFloat32, {3, 3});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{0, 2, 0, 1, 4, 0, 3, 0, 0}));
}

TEST(ScatterElementsTest, Float16AddRoundsAfterEachUpdate) {
  // 2048 + 1 + 1 in float16: 2049 is not representable and rounds (to
  // even) back to 2048 after each update, so the sum stays 2048, as adding
  // the updates one at a time in float16 gives.
  const HostTensor data = Make<Half>(DType::kFloat16, {1}, {Half(2048.0f)});
  const HostTensor updates = Make<Half>(DType::kFloat16, {2}, {Half(1.0f), Half(1.0f)});
  HostTensor out = RunOk(
      MakeNode("ScatterElements", Scatter(ScatterReduction::kAdd, {{"axis", int64_t{0}}})),
      {data, Ints({2}, {0, 0}), updates}, DType::kFloat16, {1});
  EXPECT_EQ(static_cast<float>(Values<Half>(out)[0]), 2048.0f);
}

TEST(ScatterElementsTest, OutOfRangeIndexIsInvalid) {
  EXPECT_TRUE(absl::IsInvalidArgument(RunStatus(
      MakeNode("ScatterElements", Scatter(ScatterReduction::kNone, {{"axis", int64_t{0}}})),
      {Floats({3}, {1, 2, 3}), Ints({1}, {3}), Floats({1}, {5})}, DType::kFloat32, {3})));
}

// ---------------------------------------------------------------------------
// OneHot
// ---------------------------------------------------------------------------

TEST(OneHotTest, DepthInsertedAtTheAxis) {
  // indices [2] = {2, 0}, depth 3, values [off 0, on 7].
  const HostTensor indices = Ints({2}, {2, 0});
  const HostTensor values = Ints({2}, {0, 7});
  const Attributes last = {{"axis", int64_t{1}}, {"wrap_negative", int64_t{1}}};
  const Attributes first = {{"axis", int64_t{0}}, {"wrap_negative", int64_t{1}}};
  EXPECT_EQ(Values<int64_t>(RunOk(MakeNode("OneHot", last), {indices, values}, DType::kInt64,
                                  {2, 3})),
            (std::vector<int64_t>{0, 0, 7, 7, 0, 0}));
  EXPECT_EQ(Values<int64_t>(RunOk(MakeNode("OneHot", first), {indices, values}, DType::kInt64,
                                  {3, 2})),
            (std::vector<int64_t>{0, 7, 0, 0, 7, 0}));
}

TEST(OneHotTest, NegativeIndicesWrapFromOpset11AndOutOfRangeIsAllOff) {
  // depth 3: -1 is 2 when wrapping (opset 11), off before; 3 and -4 are off.
  const HostTensor indices = Ints({3}, {-1, 3, -4});
  const HostTensor values = Floats({2}, {-1, 1});
  auto one_hot = [&](int64_t wrap) {
    return Values<float>(
        RunOk(MakeNode("OneHot", {{"axis", int64_t{1}}, {"wrap_negative", wrap}}),
              {indices, values}, DType::kFloat32, {3, 3}));
  };
  EXPECT_EQ(one_hot(1), (std::vector<float>{-1, -1, 1, -1, -1, -1, -1, -1, -1}));
  EXPECT_EQ(one_hot(0), std::vector<float>(9, -1));
}

TEST(OneHotTest, ValuesOfAnyType) {
  const HostTensor values = Make<bool>(DType::kBool, {2}, {false, true});
  HostTensor out = RunOk(MakeNode("OneHot", {{"axis", int64_t{1}}, {"wrap_negative", int64_t{1}}}),
                         {Ints({2}, {1, 1}), values}, DType::kBool, {2, 2});
  EXPECT_EQ(Values<bool>(out), (std::vector<bool>{false, true, false, true}));
}

// ---------------------------------------------------------------------------
// TopK
// ---------------------------------------------------------------------------

// Runs a TopK node and returns its values and indices.
std::pair<HostTensor, HostTensor> TopK(const HostTensor& x, int64_t axis, bool largest,
                                       Dims out_dims) {
  absl::StatusOr<std::vector<HostTensor>> out =
      Run(MakeNode("TopK", {{"axis", axis}, {"largest", int64_t{largest}}}), {x},
          {HostTensor(x.dtype(), out_dims), HostTensor(DType::kInt64, out_dims)});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  return {(*out)[0], (*out)[1]};
}

TEST(TopKTest, LargestAndSmallestBreakTiesByLowerIndex) {
  const HostTensor x = Ints({6}, {3, 1, 3, 2, 1, 3});
  auto [top, top_at] = TopK(x, 0, true, {4});
  EXPECT_EQ(Values<int64_t>(top), (std::vector<int64_t>{3, 3, 3, 2}));
  EXPECT_EQ(Values<int64_t>(top_at), (std::vector<int64_t>{0, 2, 5, 3}));
  auto [bottom, bottom_at] = TopK(x, 0, false, {3});
  EXPECT_EQ(Values<int64_t>(bottom), (std::vector<int64_t>{1, 1, 2}));
  EXPECT_EQ(Values<int64_t>(bottom_at), (std::vector<int64_t>{1, 4, 3}));
}

TEST(TopKTest, NaNIsAboveEveryNumber) {
  // Note [TopK order]: NaNs first in the largest (by index), last in the
  // smallest; -0 and +0 tie.
  const HostTensor x = Floats({6}, {1, kNaN, -0.0f, kNaN, 0.0f, -kNaN});
  auto [top, top_at] = TopK(x, 0, true, {4});
  EXPECT_EQ(Values<int64_t>(top_at), (std::vector<int64_t>{1, 3, 5, 0}));
  EXPECT_TRUE(std::isnan(Values<float>(top)[2]));
  auto [bottom, bottom_at] = TopK(x, 0, false, {4});
  EXPECT_EQ(Values<int64_t>(bottom_at), (std::vector<int64_t>{2, 4, 0, 1}));
}

TEST(TopKTest, MiddleAxisOfFloat16) {
  // [2,3,2] along axis 1, k 2: each (outer, inner) line on its own.
  std::vector<Half> values;
  for (float v : {1, 6, 5, 2, 3, 4, -1, -6, -5, -2, -3, -4}) values.emplace_back(v);
  auto [top, top_at] = TopK(Make<Half>(DType::kFloat16, {2, 3, 2}, values), 1, true, {2, 2, 2});
  std::vector<float> got;
  for (Half h : Values<Half>(top)) got.push_back(static_cast<float>(h));
  EXPECT_EQ(got, (std::vector<float>{5, 6, 3, 4, -1, -2, -3, -4}));
  EXPECT_EQ(Values<int64_t>(top_at), (std::vector<int64_t>{1, 0, 2, 2, 0, 1, 2, 2}));
}

TEST(TopKTest, IndicesOutputMayBeUnused) {
  HostTensor values(DType::kUInt8, {2});
  std::vector<const HostTensor*> in;
  const HostTensor x = Make<uint8_t>(DType::kUInt8, {4}, {7, 200, 3, 9});
  in.push_back(&x);
  std::vector<HostTensor*> out = {&values};
  ASSERT_TRUE(RunHostNode(MakeNode("TopK", {{"axis", int64_t{0}}, {"largest", int64_t{1}}}), in,
                          out)
                  .ok());
  EXPECT_EQ(Values<uint8_t>(values), (std::vector<uint8_t>{200, 9}));
}

// ---------------------------------------------------------------------------
// Resize (Note [Resize sampling tables] in runtime/ops/resize.cc)
// ---------------------------------------------------------------------------

// Tables written by hand: dim 0 of [2, 3] grows to 3 rows (nearest: rows 0,
// 1, and -1, outside), dim 1 shrinks to 2 columns (linear: 0.25 x[0] + 0.75
// x[1], then x[2] alone).
Attributes ResizeAttrs() {
  return {{"axes", std::vector<int64_t>{0, 1}},
          {"taps", std::vector<int64_t>{1, 2}},
          {"extrapolation_value", 7.0f}};
}

TEST(ResizeKernelTest, SumsOneEntryPerResizedDimAndExtrapolatesOutside) {
  HostTensor out = RunOk(MakeNode("Resize", ResizeAttrs()),
                         {Floats({2, 3}, {0, 4, 8, 12, 16, 20}),
                          Ints({7}, {0, 1, -1, 0, 1, 2, 2}),
                          Floats({7}, {1, 1, 1, 0.25, 0.75, 1, 0})},
                         DType::kFloat32, {3, 2});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{3, 8, 15, 20, 7, 7}));
}

TEST(ResizeKernelTest, RefusesTablesThatDoNotFitTheInput) {
  const HostTensor x = Floats({2, 3}, {0, 4, 8, 12, 16, 20});
  // Index 3 of a dim of 3.
  const absl::Status outside = RunStatus(
      MakeNode("Resize", ResizeAttrs()),
      {x, Ints({7}, {0, 1, -1, 0, 1, 3, 2}), Floats({7}, {1, 1, 1, 0.25, 0.75, 1, 0})},
      DType::kFloat32, {3, 2});
  EXPECT_TRUE(absl::IsInvalidArgument(outside)) << outside;
  // Tables one entry short.
  const absl::Status short_tables =
      RunStatus(MakeNode("Resize", ResizeAttrs()),
                {x, Ints({6}, {0, 1, -1, 0, 1, 2}), Floats({6}, {1, 1, 1, 0.25, 0.75, 1})},
                DType::kFloat32, {3, 2});
  EXPECT_TRUE(absl::IsInvalidArgument(short_tables)) << short_tables;
}

}  // namespace
}  // namespace graphserve
