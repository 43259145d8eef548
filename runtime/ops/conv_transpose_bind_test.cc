// ConvTranspose bound as a Conv (Note [ConvTranspose as a Conv] in
// runtime/ops/nn.cc): the bound graph run by the host executor against a
// direct scatter written here from ONNX's definition, for the layers
// decoders and detectors export (PyTorch's ConvTranspose2d with stride 2 and
// output_padding, DCGAN's k4 s2 p1, U-Net's k2 s2), groups with dilations,
// 1-D, pads that crop, output_shape and auto_pad.

#include <cstdint>
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

using ::testing::HasSubstr;

struct Transposed {
  std::string label;
  Dims x;  // [N, C_in, spatial...]
  int64_t out_per_group;
  std::vector<int64_t> kernel;
  Attributes attrs;
  bool bias = true;
};

// ONNX's definition, directly: every input element, times the kernel,
// added into the output at o = i * stride + k * dilation - pad_begin.
std::vector<double> Scatter(const HostTensor& x, const HostTensor& w, const HostTensor* b,
                            int64_t group, const std::vector<int64_t>& strides,
                            const std::vector<int64_t>& dilations,
                            const std::vector<int64_t>& pads_begin, const Dims& out_dims) {
  const Dims& xd = x.dims();
  const Dims& wd = w.dims();
  const size_t rank = xd.size() - 2;
  const int64_t in_per_group = xd[1] / group;
  const int64_t out_per_group = wd[1];
  std::vector<double> y(NumElements(out_dims), 0.0);
  const int64_t in_h = rank == 2 ? xd[2] : 1, in_w = xd.back();
  const int64_t k_h = rank == 2 ? wd[2] : 1, k_w = wd.back();
  const int64_t out_h = rank == 2 ? out_dims[2] : 1, out_w = out_dims.back();
  const int64_t s_h = rank == 2 ? strides[0] : 1, s_w = strides.back();
  const int64_t d_h = rank == 2 ? dilations[0] : 1, d_w = dilations.back();
  const int64_t p_h = rank == 2 ? pads_begin[0] : 0, p_w = pads_begin.back();
  for (int64_t n = 0; n < xd[0]; ++n) {
    for (int64_t c = 0; c < xd[1]; ++c) {
      const int64_t g = c / in_per_group;
      for (int64_t ih = 0; ih < in_h; ++ih) {
        for (int64_t iw = 0; iw < in_w; ++iw) {
          const double v = x.data<float>()[((n * xd[1] + c) * in_h + ih) * in_w + iw];
          for (int64_t oc = 0; oc < out_per_group; ++oc) {
            for (int64_t kh = 0; kh < k_h; ++kh) {
              for (int64_t kw = 0; kw < k_w; ++kw) {
                const int64_t oh = ih * s_h + kh * d_h - p_h;
                const int64_t ow = iw * s_w + kw * d_w - p_w;
                if (oh < 0 || oh >= out_h || ow < 0 || ow >= out_w) continue;
                const int64_t channel = g * out_per_group + oc;
                y[((n * out_dims[1] + channel) * out_h + oh) * out_w + ow] +=
                    v * w.data<float>()[((c * out_per_group + oc) * k_h + kh) * k_w + kw];
              }
            }
          }
        }
      }
    }
  }
  if (b != nullptr) {
    const int64_t plane = out_h * out_w;
    for (size_t i = 0; i < y.size(); ++i) {
      y[i] += b->data<float>()[(static_cast<int64_t>(i) / plane) % out_dims[1]];
    }
  }
  return y;
}

std::vector<int64_t> Ints(const Attributes& attrs, const std::string& name,
                          std::vector<int64_t> otherwise) {
  const auto it = attrs.find(name);
  return it == attrs.end() ? otherwise : std::get<std::vector<int64_t>>(it->second);
}

absl::StatusOr<BoundGraph> Bind(const Model& model) {
  BindOptions options;
  options.batch_size = model.inputs[0].dims[0];
  return BindModel(model, options);
}

Model TransposedModel(const Transposed& t, const HostTensor& w, const HostTensor& b) {
  Model model;
  model.name = "conv_transpose";
  model.opset = 17;
  model.inputs = {{"x", DType::kFloat32, t.x}};
  model.outputs = {{"y", DType::kFloat32, {}}};
  model.initializers["w"] = std::make_shared<const HostTensor>(w);
  std::vector<std::string> inputs = {"x", "w"};
  if (t.bias) {
    model.initializers["b"] = std::make_shared<const HostTensor>(b);
    inputs.push_back("b");
  }
  model.nodes = {{"up", "ConvTranspose", inputs, {"y"}, t.attrs}};
  return model;
}

// Binds t, checks the output dims, runs it on the host and compares it with
// the scatter at `pads_begin` (what ONNX's rules give for its attributes).
void ExpectMatchesScatter(const Transposed& t, const Dims& expected_out,
                          const std::vector<int64_t>& pads_begin) {
  SCOPED_TRACE(t.label);
  const size_t rank = t.x.size() - 2;
  const int64_t group = t.attrs.count("group") ? std::get<int64_t>(t.attrs.at("group")) : 1;
  Dims w_dims = {t.x[1], t.out_per_group};
  w_dims.insert(w_dims.end(), t.kernel.begin(), t.kernel.end());
  const HostTensor w = RandomTensor(DType::kFloat32, w_dims, 7);
  const HostTensor b = RandomTensor(DType::kFloat32, {t.out_per_group * group}, 8);
  const HostTensor x = RandomTensor(DType::kFloat32, t.x, 9);
  absl::StatusOr<BoundGraph> graph = Bind(TransposedModel(t, w, b));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->value(graph->outputs[0]).dims, expected_out);
  absl::StatusOr<std::unique_ptr<HostExecutor>> executor = HostExecutor::Create(*graph);
  ASSERT_TRUE(executor.ok()) << executor.status();
  absl::StatusOr<std::vector<HostTensor>> out = (*executor)->Run({x});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<double> want = Scatter(
      x, w, t.bias ? &b : nullptr, group, Ints(t.attrs, "strides", std::vector<int64_t>(rank, 1)),
      Ints(t.attrs, "dilations", std::vector<int64_t>(rank, 1)), pads_begin, expected_out);
  const HostTensor& y = (*out)[0];
  ASSERT_EQ(static_cast<size_t>(y.num_elements()), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(y.data<float>()[i], want[i], 1e-4) << "element " << i;
  }
}

using Ints64 = std::vector<int64_t>;

TEST(ConvTransposeBindTest, PyTorchsStrideTwoWithOutputPadding) {
  // ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1): doubles 5x6.
  ExpectMatchesScatter({"k3s2p1op1", {2, 8, 5, 6}, 4, {3, 3},
                        {{"strides", Ints64{2, 2}}, {"pads", Ints64{1, 1, 1, 1}},
                         {"output_padding", Ints64{1, 1}}}},
                       {2, 4, 10, 12}, {1, 1});
}

TEST(ConvTransposeBindTest, DcganAndUnetUpsampling) {
  ExpectMatchesScatter({"k4s2p1", {1, 3, 4, 4}, 5, {4, 4},
                        {{"strides", Ints64{2, 2}}, {"pads", Ints64{1, 1, 1, 1}}}},
                       {1, 5, 8, 8}, {1, 1});
  ExpectMatchesScatter({"k2s2", {2, 6, 3, 5}, 3, {2, 2}, {{"strides", Ints64{2, 2}}}, false},
                       {2, 3, 6, 10}, {0, 0});
}

TEST(ConvTransposeBindTest, GroupsDilationsAndUnequalStrides) {
  ExpectMatchesScatter({"groups", {1, 4, 5, 4}, 3, {3, 2},
                        {{"group", int64_t{2}}, {"dilations", Ints64{2, 1}},
                         {"strides", Ints64{1, 3}}, {"pads", Ints64{0, 1, 2, 0}}}},
                       {1, 6, 7, 10}, {0, 1});
}

TEST(ConvTransposeBindTest, OneDimensionalAndPadsThatCrop) {
  // pads of 3 on a kernel of 3 (reach 2): the Conv's pad is -1, a crop.
  ExpectMatchesScatter({"1d_crop", {2, 3, 7}, 2, {3},
                        {{"strides", Ints64{2}}, {"pads", Ints64{3, 3}}}},
                       {2, 2, 9}, {3});
}

TEST(ConvTransposeBindTest, OutputShapeAndAutoPadPlaceTheOddPad) {
  // 4 * 2 - 2 + 3 = 9 made, 8 asked: total pad 1, at the end for
  // SAME_UPPER, at the beginning otherwise.
  ExpectMatchesScatter({"same_upper", {1, 2, 4, 4}, 2, {3, 3},
                        {{"strides", Ints64{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}},
                       {1, 2, 8, 8}, {0, 0});
  ExpectMatchesScatter({"output_shape", {1, 2, 4, 4}, 2, {3, 3},
                        {{"strides", Ints64{2, 2}}, {"output_shape", Ints64{8, 8}}}},
                       {1, 2, 8, 8}, {1, 1});
  // Larger than it makes (9 x 7 for ONNX's test_convtranspose_output_shape):
  // rows at the end that only the bias reaches.
  ExpectMatchesScatter({"output_shape_larger", {1, 1, 3, 3}, 2, {3, 3},
                        {{"strides", Ints64{3, 2}}, {"output_shape", Ints64{10, 8}}}},
                       {1, 2, 10, 8}, {0, 0});
}

TEST(ConvTransposeBindTest, RefusesWhatDoesNotFit) {
  const HostTensor w = RandomTensor(DType::kFloat32, {3, 2, 3, 3}, 1);
  const HostTensor b = RandomTensor(DType::kFloat32, {2}, 2);
  auto refused = [&](const Transposed& t, const std::string& why) {
    absl::StatusOr<BoundGraph> graph = Bind(TransposedModel(t, w, b));
    ASSERT_FALSE(graph.ok()) << t.label;
    EXPECT_THAT(std::string(graph.status().message()), HasSubstr(why)) << graph.status();
  };
  refused({"channels", {1, 4, 5, 5}, 2, {3, 3}, {}}, "should be [C, C_out / group, k...]");
  refused({"output_padding", {1, 3, 5, 5}, 2, {3, 3}, {{"output_padding", Ints64{1, 1}}}},
          "should be below the stride or the dilation");
  refused({"no_output", {1, 3, 5, 5}, 2, {3, 3}, {{"pads", Ints64{4, 4, 4, 4}}}},
          "leave no output");
}

}  // namespace
}  // namespace graphserve
