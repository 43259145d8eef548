// Convolutional-network ops: Conv, BatchNormalization, pooling, Pad, Clip,
// HardSigmoid, HardSwish, Dropout.
// The OpDefs of this family (Note [Op registry] in runtime/op_registry.h) and
// their bind rules; the kernels are in runtime/host/nn_kernels.cc and
// runtime/cuda/nn_ops.cc. Canonical forms: runtime/nn_node_params.h.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "common/status.h"
#include "runtime/bind_context.h"
#include "runtime/host/nn_kernels.h"
#include "runtime/host/nn_reference.h"
#include "runtime/ir.h"
#include "runtime/nn_params.h"
#include "runtime/ops/families.h"

namespace graphserve {

namespace {

// The element types of the convolutional ops: cuDNN's data types and the
// pooling and epilogue kernels' (all computed in float).
const std::vector<DType> kNnTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

// The spatial window of a Conv or pool node, per spatial dim, after auto_pad.
struct Window {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads_begin;
  std::vector<int64_t> pads_end;
};

// Reads kernel_shape (or `kernel` when the weights give it), strides,
// dilations, pads and auto_pad for `spatial` = input dims [2:].
absl::StatusOr<Window> ReadWindow(const BindContext& ctx, const Dims& spatial,
                                  std::vector<int64_t> kernel) {
  const size_t rank = spatial.size();
  Window w;
  ASSIGN_OR_RETURN(w.kernel, ctx.IntsAttrOr("kernel_shape", kernel));
  if (w.kernel.size() != rank) {
    return ctx.Error("kernel_shape [", absl::StrJoin(w.kernel, ","), "] should have ", rank,
                     " values for input spatial dims ", DimsToString(spatial));
  }
  if (!kernel.empty() && w.kernel != kernel) {
    return ctx.Error("kernel_shape [", absl::StrJoin(w.kernel, ","),
                     "] differs from the weights' spatial dims [", absl::StrJoin(kernel, ","), "]");
  }
  ASSIGN_OR_RETURN(w.strides, ctx.IntsAttrOr("strides", std::vector<int64_t>(rank, 1)));
  ASSIGN_OR_RETURN(w.dilations, ctx.IntsAttrOr("dilations", std::vector<int64_t>(rank, 1)));
  ASSIGN_OR_RETURN(std::vector<int64_t> pads,
                   ctx.IntsAttrOr("pads", std::vector<int64_t>(2 * rank, 0)));
  ASSIGN_OR_RETURN(std::string auto_pad, ctx.StringAttrOr("auto_pad", "NOTSET"));
  if (w.strides.size() != rank || w.dilations.size() != rank || pads.size() != 2 * rank) {
    return ctx.Error("strides, dilations and pads should have ", rank, ", ", rank, " and ",
                     2 * rank, " values");
  }
  for (size_t d = 0; d < rank; ++d) {
    if (w.kernel[d] < 1 || w.strides[d] < 1 || w.dilations[d] < 1) {
      return ctx.Error("kernel_shape, strides and dilations should be >= 1, got [",
                       absl::StrJoin(w.kernel, ","), "], [", absl::StrJoin(w.strides, ","), "], [",
                       absl::StrJoin(w.dilations, ","), "]");
    }
  }
  w.pads_begin.assign(pads.begin(), pads.begin() + rank);
  w.pads_end.assign(pads.begin() + rank, pads.end());
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    // Output = ceil(in / stride); the extra pad goes at the end (UPPER) or
    // the beginning (LOWER).
    for (size_t d = 0; d < rank; ++d) {
      const int64_t out = (spatial[d] + w.strides[d] - 1) / w.strides[d];
      const int64_t extent = (w.kernel[d] - 1) * w.dilations[d] + 1;
      const int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[d] + extent - spatial[d]);
      const int64_t small = total / 2;
      w.pads_begin[d] = auto_pad == "SAME_UPPER" ? small : total - small;
      w.pads_end[d] = total - w.pads_begin[d];
    }
  } else if (auto_pad == "VALID") {
    std::fill(w.pads_begin.begin(), w.pads_begin.end(), 0);
    std::fill(w.pads_end.begin(), w.pads_end.end(), 0);
  } else if (auto_pad != "NOTSET") {
    return ctx.Error("auto_pad '", auto_pad.substr(0, 16),
                     "' should be NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  }
  for (size_t d = 0; d < rank; ++d) {
    if (w.pads_begin[d] < 0 || w.pads_end[d] < 0) {
      return ctx.Error("pads [", absl::StrJoin(pads, ","), "] should be non-negative");
    }
  }
  return w;
}

// Output size of one spatial dim; ceil_mode drops a last window that would
// start in the end padding (PyTorch's and ONNX's rule).
int64_t PooledSize(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_begin,
                   int64_t pad_end, bool ceil_mode) {
  const int64_t span = in + pad_begin + pad_end - ((kernel - 1) * dilation + 1);
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

// [h, w] of a 1-D (w only) or 2-D window vector, for the canonical attrs.
std::vector<int64_t> AsHW(const std::vector<int64_t>& v, int64_t one) {
  return v.size() == 1 ? std::vector<int64_t>{one, v[0]} : v;
}

absl::Status CheckSpatialRank(const BindContext& ctx, const Dims& x) {
  if (x.size() != 3 && x.size() != 4) {
    return ctx.Unsupported("input ", DimsToString(x),
                           " is not 1-D or 2-D NC(H)W; 3-D and higher are not supported");
  }
  return absl::OkStatus();
}

// A Conv's input as cuDNN takes it: its descriptor pads both sides of a dim
// alike, so where `before` and `after` differ the excess becomes an explicit
// Pad first ("<node>/asymmetric_pad"), and the Conv keeps the symmetric part.
struct ConvInput {
  ValueId value;
  Dims dims;                  // after the Pad, if any
  std::vector<int64_t> pads;  // the Conv's, per spatial dim (both sides)
};

absl::StatusOr<ConvInput> PadForConv(BindContext& ctx, ValueId input, const Dims& dims, DType dtype,
                                     const std::vector<int64_t>& before,
                                     const std::vector<int64_t>& after) {
  const size_t rank = before.size();
  ConvInput conv{input, dims, std::vector<int64_t>(rank)};
  std::vector<int64_t> excess(2 * dims.size(), 0);
  bool asymmetric = false;
  for (size_t d = 0; d < rank; ++d) {
    conv.pads[d] = std::min(before[d], after[d]);
    excess[2 + d] = before[d] - conv.pads[d];
    excess[dims.size() + 2 + d] = after[d] - conv.pads[d];
    conv.dims[2 + d] += excess[2 + d] + excess[dims.size() + 2 + d];
    asymmetric |= before[d] != after[d];
  }
  if (asymmetric) {
    ASSIGN_OR_RETURN(conv.value,
                     ctx.EmitHelper("asymmetric_pad", "Pad", {input},
                                    {{"mode", int64_t{static_cast<int64_t>(PadMode::kConstant)}},
                                     {"pads", std::move(excess)},
                                     {"value", 0.0f}},
                                    dtype, conv.dims));
  }
  return conv;
}

absl::Status BindConv(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kNnTypes));
  for (size_t i = 1; i < ctx.num_inputs(); ++i) RETURN_IF_ERROR(ctx.CheckSameDType(0, i));
  const DType dtype = ctx.in_dtype(0);
  // Copies: emitting the Pad below adds values, which may move the one these read.
  const Dims x = ctx.in_dims(0);
  const Dims w = ctx.in_dims(1);
  RETURN_IF_ERROR(CheckSpatialRank(ctx, x));
  if (w.size() != x.size()) {
    return ctx.Error("W ", DimsToString(w), " should have the rank of X ", DimsToString(x));
  }
  ASSIGN_OR_RETURN(int64_t group, ctx.IntAttrOr("group", 1));
  if (group < 1 || x[1] % group != 0 || w[0] % group != 0 || w[1] * group != x[1]) {
    return ctx.Error("group ", group, " does not fit X ", DimsToString(x), " (C=", x[1], ") and W ",
                     DimsToString(w), " (expected W dim 1 = C / group)");
  }
  if (ctx.has_input(2) && ctx.in_dims(2) != Dims{w[0]}) {
    return ctx.Error("B ", DimsToString(ctx.in_dims(2)), " should be [", w[0], "]");
  }
  const Dims spatial(x.begin() + 2, x.end());
  ASSIGN_OR_RETURN(Window win,
                   ReadWindow(ctx, spatial, std::vector<int64_t>(w.begin() + 2, w.end())));
  ASSIGN_OR_RETURN(const ConvInput in,
                   PadForConv(ctx, ctx.input(0), x, dtype, win.pads_begin, win.pads_end));
  Dims out = {x[0], w[0]};
  for (size_t d = 0; d < spatial.size(); ++d) {
    const int64_t size = PooledSize(in.dims[2 + d], win.kernel[d], win.strides[d], win.dilations[d],
                                    in.pads[d], in.pads[d], false);
    if (size < 1) {
      return ctx.Error("the kernel [", absl::StrJoin(win.kernel, ","), "] with dilations [",
                       absl::StrJoin(win.dilations, ","), "] does not fit input ", DimsToString(x));
    }
    out.push_back(size);
  }
  std::vector<ValueId> inputs = {in.value, ctx.input(1)};
  if (ctx.has_input(2)) inputs.push_back(ctx.input(2));
  return ctx.EmitSimple(std::move(inputs),
                        {{"group", group},
                         {"strides", AsHW(win.strides, 1)},
                         {"dilations", AsHW(win.dilations, 1)},
                         {"pads", AsHW(in.pads, 0)}},
                        dtype, std::move(out));
}

// Note [ConvTranspose as a Conv]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// ConvTranspose scatters each input element, times the kernel, into the
// output: y[o] += x[i] * w[k] where o = i * stride + k * dilation - pad_begin
// (per spatial dim; per group, w is [C_in, C_out / group, k...]). That is a
// Conv of stride 1 over x with stride - 1 zeros inserted between its
// elements, padded by (K - 1) * dilation - pad_begin before and
// (K - 1) * dilation - pad_end + output_padding after (a negative amount
// crops), with the kernel flipped in every spatial dim and its two channel
// dims swapped per group. Binding writes it so, and the convolution runs on
// the Conv path cuDNN already tunes and the host reference already checks:
// the zeros are a Reshape that gives each element its own row, a Pad of
// those rows to the stride, and a Reshape back, so no kernel of its own is
// needed. The price is the multiplications by the inserted zeros (3 in 4 at
// stride 2), on the decoders' upsampling layers only.

// ConvTranspose's pads per spatial dim: explicit, or from output_shape or
// auto_pad as ONNX writes (the odd unit at the end for SAME_UPPER, at the
// beginning otherwise). A negative pad extends the output instead.
absl::Status ReadTransposedPads(const BindContext& ctx, const Dims& spatial, Window& win,
                                const std::vector<int64_t>& output_padding) {
  const size_t rank = spatial.size();
  ASSIGN_OR_RETURN(std::vector<int64_t> output_shape, ctx.IntsAttrOr("output_shape", {}));
  ASSIGN_OR_RETURN(const std::string auto_pad, ctx.StringAttrOr("auto_pad", "NOTSET"));
  if (output_shape.size() == rank + 2)
    output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (output_shape.empty() && same) {
    for (size_t d = 0; d < rank; ++d) output_shape.push_back(spatial[d] * win.strides[d]);
  }
  if (output_shape.empty()) return absl::OkStatus();  // ReadWindow's pads (VALID: 0)
  if (output_shape.size() != rank) {
    return ctx.Error("output_shape [", absl::StrJoin(output_shape, ","), "] should have ", rank,
                     " values");
  }
  for (size_t d = 0; d < rank; ++d) {
    const int64_t total = win.strides[d] * (spatial[d] - 1) + output_padding[d] +
                          (win.kernel[d] - 1) * win.dilations[d] + 1 - output_shape[d];
    // Rounded down, as ONNX's reference does: an output_shape larger than
    // the convolution makes (total < 0) pads negatively, extending the
    // output with rows that only the bias reaches.
    const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
    win.pads_begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
    win.pads_end[d] = total - win.pads_begin[d];
  }
  return absl::OkStatus();
}

// w [C_in, C_out / group, k...] as the Conv's [C_out, C_in / group, k...],
// flipped in every spatial dim (Note [ConvTranspose as a Conv]).
HostTensor FlippedConvWeights(const HostTensor& w, int64_t group) {
  const Dims& dims = w.dims();
  const int64_t in_per_group = dims[0] / group;
  const int64_t out_per_group = dims[1];
  const int64_t taps = Product(dims, 2, dims.size());
  Dims conv_dims = dims;
  conv_dims[0] = out_per_group * group;
  conv_dims[1] = in_per_group;
  HostTensor out(w.dtype(), conv_dims);
  const size_t size = DTypeSize(w.dtype());
  const auto* from = static_cast<const unsigned char*>(w.raw());
  auto* to = static_cast<unsigned char*>(out.raw());
  for (int64_t g = 0; g < group; ++g) {
    for (int64_t ic = 0; ic < in_per_group; ++ic) {
      for (int64_t oc = 0; oc < out_per_group; ++oc) {
        const int64_t source = ((g * in_per_group + ic) * out_per_group + oc) * taps;
        const int64_t target = ((g * out_per_group + oc) * in_per_group + ic) * taps;
        // Reversing the taps' flat order flips every spatial dim at once.
        for (int64_t k = 0; k < taps; ++k) {
          std::memcpy(to + (target + taps - 1 - k) * size, from + (source + k) * size, size);
        }
      }
    }
  }
  return out;
}

absl::Status BindConvTranspose(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kNnTypes));
  for (size_t i = 1; i < ctx.num_inputs(); ++i) RETURN_IF_ERROR(ctx.CheckSameDType(0, i));
  const DType dtype = ctx.in_dtype(0);
  const Dims x = ctx.in_dims(0);
  const Dims w = ctx.in_dims(1);
  RETURN_IF_ERROR(CheckSpatialRank(ctx, x));
  ASSIGN_OR_RETURN(const int64_t group, ctx.IntAttrOr("group", 1));
  if (w.size() != x.size() || group < 1 || w[0] != x[1] || x[1] % group != 0) {
    return ctx.Error("W ", DimsToString(w), " should be [C, C_out / group, k...] for X ",
                     DimsToString(x), " and group ", group);
  }
  const int64_t out_channels = w[1] * group;
  if (ctx.has_input(2) && ctx.in_dims(2) != Dims{out_channels}) {
    return ctx.Error("B ", DimsToString(ctx.in_dims(2)), " should be [", out_channels, "]");
  }
  const Dims spatial(x.begin() + 2, x.end());
  const size_t rank = spatial.size();
  ASSIGN_OR_RETURN(Window win,
                   ReadWindow(ctx, spatial, std::vector<int64_t>(w.begin() + 2, w.end())));
  ASSIGN_OR_RETURN(const std::vector<int64_t> output_padding,
                   ctx.IntsAttrOr("output_padding", std::vector<int64_t>(rank, 0)));
  if (output_padding.size() != rank) {
    return ctx.Error("output_padding should have ", rank, " values");
  }
  for (size_t d = 0; d < rank; ++d) {
    if (output_padding[d] < 0 || output_padding[d] >= std::max(win.strides[d], win.dilations[d])) {
      return ctx.Error("output_padding [", absl::StrJoin(output_padding, ","),
                       "] should be below the stride or the dilation");
    }
  }
  RETURN_IF_ERROR(ReadTransposedPads(ctx, spatial, win, output_padding));
  const HostTensor conv_weights = FlippedConvWeights(*ctx.in(1).constant, group);
  const std::optional<ValueId> bias =
      ctx.has_input(2) ? std::optional<ValueId>(ctx.input(2)) : std::nullopt;

  // The zeros between elements: [N, C, H, W] viewed as [N, C, H, 1, W, 1],
  // padded to [N, C, H, s_h, W, s_w], viewed as [N, C, H * s_h, W * s_w].
  ValueId input = ctx.input(0);
  Dims stretched = x;
  const bool strided =
      std::any_of(win.strides.begin(), win.strides.end(), [](int64_t s) { return s > 1; });
  if (strided) {
    Dims rows = {x[0], x[1]};
    for (size_t d = 0; d < rank; ++d) rows.insert(rows.end(), {spatial[d], 1});
    std::vector<int64_t> pads(2 * rows.size(), 0);
    Dims padded_rows = rows;
    for (size_t d = 0; d < rank; ++d) {
      pads[rows.size() + 3 + 2 * d] = win.strides[d] - 1;
      padded_rows[3 + 2 * d] = win.strides[d];
      stretched[2 + d] = spatial[d] * win.strides[d];
    }
    ASSIGN_OR_RETURN(input, ctx.EmitHelper("rows", "Reshape", {input}, {}, dtype, rows));
    ASSIGN_OR_RETURN(input,
                     ctx.EmitHelper("zeros_between", "Pad", {input},
                                    {{"mode", int64_t{static_cast<int64_t>(PadMode::kConstant)}},
                                     {"pads", std::move(pads)},
                                     {"value", 0.0f}},
                                    dtype, padded_rows));
    ASSIGN_OR_RETURN(input, ctx.EmitHelper("stretched", "Reshape", {input}, {}, dtype, stretched));
  }
  // The Conv's pads before and after; the stretched input already ends in
  // stride - 1 zeros. A negative pad crops.
  std::vector<int64_t> pad_before(rank), pad_after(rank), crop_begin(rank), crop_end(rank);
  bool crops = false;
  Dims cropped = stretched;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t reach = (win.kernel[d] - 1) * win.dilations[d];
    const int64_t before = reach - win.pads_begin[d];
    const int64_t after = reach - win.pads_end[d] + output_padding[d] - (win.strides[d] - 1);
    pad_before[d] = std::max<int64_t>(0, before);
    pad_after[d] = std::max<int64_t>(0, after);
    crop_begin[d] = std::max<int64_t>(0, -before);
    crop_end[d] = std::max<int64_t>(0, -after);
    cropped[2 + d] -= crop_begin[d] + crop_end[d];
    crops |= crop_begin[d] + crop_end[d] > 0;
    if (cropped[2 + d] < 1 || cropped[2 + d] + pad_before[d] + pad_after[d] - reach < 1) {
      return ctx.Error("pads [", absl::StrJoin(win.pads_begin, ","), "], [",
                       absl::StrJoin(win.pads_end, ","), "] leave no output of input ",
                       DimsToString(x));
    }
  }
  if (crops) {
    std::vector<int64_t> starts(x.size(), 0);
    for (size_t d = 0; d < rank; ++d) starts[2 + d] = crop_begin[d];
    ASSIGN_OR_RETURN(input, ctx.EmitHelper("cropped", "Slice", {input},
                                           {{"starts", std::move(starts)},
                                            {"steps", std::vector<int64_t>(x.size(), 1)}},
                                           dtype, cropped));
  }
  ASSIGN_OR_RETURN(const ConvInput in,
                   PadForConv(ctx, input, cropped, dtype, pad_before, pad_after));
  Dims out = {x[0], out_channels};
  for (size_t d = 0; d < rank; ++d) {
    out.push_back(in.dims[2 + d] + 2 * in.pads[d] - (win.kernel[d] - 1) * win.dilations[d]);
  }
  const ValueId weights = ctx.AddConstant(ctx.name() + "/conv_weights", conv_weights);
  std::vector<ValueId> inputs = {in.value, weights};
  if (bias) inputs.push_back(*bias);
  return ctx.EmitModelNode("Conv", std::move(inputs),
                           {{"group", group},
                            {"strides", AsHW(std::vector<int64_t>(rank, 1), 1)},
                            {"dilations", AsHW(win.dilations, 1)},
                            {"pads", AsHW(in.pads, 0)}},
                           {OutputSpec{"", dtype, std::move(out)}});
}

absl::Status BindPool(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kNnTypes));
  const Dims& x = ctx.in_dims(0);
  RETURN_IF_ERROR(CheckSpatialRank(ctx, x));
  if (ctx.outputs().size() > 1) return ctx.Unsupported("MaxPool's Indices output");
  if (!ctx.has_attr("kernel_shape")) return ctx.Error("attribute 'kernel_shape' is required");
  const Dims spatial(x.begin() + 2, x.end());
  ASSIGN_OR_RETURN(Window win, ReadWindow(ctx, spatial, {}));
  ASSIGN_OR_RETURN(int64_t ceil_mode, ctx.IntAttrOr("ceil_mode", 0));
  ASSIGN_OR_RETURN(int64_t count_include_pad, ctx.IntAttrOr("count_include_pad", 0));
  ASSIGN_OR_RETURN(int64_t storage_order, ctx.IntAttrOr("storage_order", 0));
  if (storage_order != 0) return ctx.Unsupported("storage_order ", storage_order, " (only 0)");
  const bool average = ctx.op() == "AveragePool";
  for (int64_t d : win.dilations) {
    if (average && d != 1) {
      return ctx.Unsupported("dilations [", absl::StrJoin(win.dilations, ","),
                             "] on AveragePool (only 1)");
    }
  }
  Dims out = {x[0], x[1]};
  for (size_t d = 0; d < spatial.size(); ++d) {
    out.push_back(PooledSize(spatial[d], win.kernel[d], win.strides[d], win.dilations[d],
                             win.pads_begin[d], win.pads_end[d], ceil_mode != 0));
  }
  const std::vector<int64_t> begin = AsHW(win.pads_begin, 0);
  const std::vector<int64_t> end = AsHW(win.pads_end, 0);
  return ctx.EmitSimple({ctx.input(0)},
                        {{"kernel", AsHW(win.kernel, 1)},
                         {"strides", AsHW(win.strides, 1)},
                         {"dilations", AsHW(win.dilations, 1)},
                         {"pads", std::vector<int64_t>{begin[0], begin[1], end[0], end[1]}},
                         {"count_include_pad", int64_t{count_include_pad != 0}}},
                        ctx.in_dtype(0), std::move(out));
}

absl::Status BindGlobalPool(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kNnTypes));
  const Dims& x = ctx.in_dims(0);
  if (x.size() < 3) return ctx.Error("input ", DimsToString(x), " should be N x C x spatial");
  Dims out = x;
  std::fill(out.begin() + 2, out.end(), 1);
  return ctx.EmitSimple({ctx.input(0)}, {}, ctx.in_dtype(0), std::move(out));
}

// Inference BatchNormalization becomes a per-channel affine (scale, shift)
// here, where import's FoldBatchNormsIntoConvs (runtime/passes/) has not
// already folded it into the Conv before it: computed in float from the
// statistics, then held in X's type (the epilogue kernels read one type).
absl::Status BindBatchNorm(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kNnTypes));
  for (size_t i = 1; i < ctx.num_inputs(); ++i) RETURN_IF_ERROR(ctx.CheckSameDType(0, i));
  const DType dtype = ctx.in_dtype(0);
  ASSIGN_OR_RETURN(int64_t training, ctx.IntAttrOr("training_mode", 0));
  if (training != 0) return ctx.Unsupported("training_mode=1 (inference only)");
  ASSIGN_OR_RETURN(int64_t spatial, ctx.IntAttrOr("spatial", 1));
  if (spatial != 1) return ctx.Unsupported("spatial=0 (per-element statistics)");
  ASSIGN_OR_RETURN(float epsilon, ctx.FloatAttrOr("epsilon", 1e-5f));
  const Dims x = ctx.in_dims(0);  // a copy: AddConstant below may move values
  if (x.size() < 2) return ctx.Error("X ", DimsToString(x), " should be N x C x ...");
  const int64_t channels = x[1];
  const char* const kNames[] = {"scale", "B", "input_mean", "input_var"};
  HostTensor stats[4];
  for (size_t i = 1; i <= 4; ++i) {
    if (!ctx.is_constant(ctx.input(i))) {
      return ctx.Unsupported(kNames[i - 1], " (value '", ctx.in(i).name,
                             "') must be an initializer or constant");
    }
    if (NumElements(ctx.in_dims(i)) != channels) {
      return ctx.Error(kNames[i - 1], " ", DimsToString(ctx.in_dims(i)), " should hold ", channels,
                       " values (C of X ", DimsToString(x), ")");
    }
    stats[i - 1] = ConvertFloats(*ctx.in(i).constant, DType::kFloat32);
  }
  HostTensor scale(DType::kFloat32, {channels});
  HostTensor shift(DType::kFloat32, {channels});
  BatchNormAffine(channels, stats[0].data<float>(), stats[1].data<float>(),
                  stats[2].data<float>(), stats[3].data<float>(), epsilon, scale.data<float>(),
                  shift.data<float>());
  const ValueId scale_id = ctx.AddConstant(ctx.name() + "/scale", ConvertFloats(scale, dtype));
  const ValueId shift_id = ctx.AddConstant(ctx.name() + "/shift", ConvertFloats(shift, dtype));
  return ctx.EmitSimple({ctx.input(0), scale_id, shift_id}, {}, dtype, x);
}

absl::Status BindPad(BindContext& ctx) {
  const Dims& x = ctx.in_dims(0);
  const size_t rank = x.size();
  if (rank > static_cast<size_t>(kMaxPadRank)) {
    return ctx.Unsupported("rank ", rank, " (at most ", kMaxPadRank, ")");
  }
  ASSIGN_OR_RETURN(std::string mode_name, ctx.StringAttrOr("mode", "constant"));
  PadMode mode;
  if (mode_name == "constant") {
    mode = PadMode::kConstant;
  } else if (mode_name == "reflect") {
    mode = PadMode::kReflect;
  } else if (mode_name == "edge") {
    mode = PadMode::kEdge;
  } else {
    return ctx.Unsupported("mode '", mode_name.substr(0, 16),
                           "' (supported: constant, reflect, edge)");
  }
  std::vector<int64_t> given;
  float value = 0.0f;
  std::vector<int64_t> axes;
  if (ctx.opset() < 11) {
    ASSIGN_OR_RETURN(given, ctx.IntsAttrOr("pads", {}));
    ASSIGN_OR_RETURN(value, ctx.FloatAttrOr("value", 0.0f));
  } else {
    ASSIGN_OR_RETURN(given, ctx.ConstantInts(1));
    if (ctx.has_input(2)) {
      const BoundValue& v = ctx.in(2);
      if (v.constant->num_elements() != 1 || v.dtype != ctx.in_dtype(0)) {
        return ctx.Error("constant_value should be one value of X's dtype");
      }
      if (v.dtype == DType::kFloat32) {
        value = v.constant->data<float>()[0];
      } else if (v.dtype == DType::kInt64) {
        value = static_cast<float>(v.constant->data<int64_t>()[0]);
      } else {
        value = v.constant->data<bool>()[0] ? 1.0f : 0.0f;
      }
    }
    if (ctx.has_input(3)) {
      ASSIGN_OR_RETURN(axes, ctx.ConstantInts(3));
      ASSIGN_OR_RETURN(axes, ctx.NormalizeAxes(std::move(axes), static_cast<int64_t>(rank)));
    }
  }
  if (axes.empty()) {
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  if (given.size() != 2 * axes.size()) {
    return ctx.Error("pads has ", given.size(), " values, expected ", 2 * axes.size());
  }
  std::vector<int64_t> pads(2 * rank, 0);
  Dims out = x;
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t d = static_cast<size_t>(axes[i]);
    pads[d] = given[i];
    pads[rank + d] = given[axes.size() + i];
    out[d] += pads[d] + pads[rank + d];
    if (out[d] < 0) {
      return ctx.Error("pads [", absl::StrJoin(given, ","), "] crop dim ", d, " below 0");
    }
    if (mode == PadMode::kReflect && (pads[d] >= x[d] || pads[rank + d] >= x[d])) {
      return ctx.Unsupported("reflect pads [", absl::StrJoin(given, ","),
                             "] as large as the input dim ", x[d]);
    }
  }
  return ctx.EmitSimple({ctx.input(0)},
                        {{"mode", static_cast<int64_t>(mode)}, {"pads", pads}, {"value", value}},
                        ctx.in_dtype(0), std::move(out));
}

absl::Status BindClip(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kNnTypes));
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
  if (ctx.opset() < 11) {
    ASSIGN_OR_RETURN(min, ctx.FloatAttrOr("min", min));
    ASSIGN_OR_RETURN(max, ctx.FloatAttrOr("max", max));
  } else {
    ASSIGN_OR_RETURN(std::optional<float> lo, ctx.ConstantScalar(1));
    ASSIGN_OR_RETURN(std::optional<float> hi, ctx.ConstantScalar(2));
    if (lo) min = *lo;
    if (hi) max = *hi;
  }
  return ctx.EmitSimple({ctx.input(0)}, {{"min", min}, {"max", max}}, ctx.in_dtype(0),
                        ctx.in_dims(0));
}

absl::Status BindHardSigmoid(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kNnTypes));
  ASSIGN_OR_RETURN(float alpha, ctx.FloatAttrOr("alpha", 0.2f));
  ASSIGN_OR_RETURN(float beta, ctx.FloatAttrOr("beta", 0.5f));
  return ctx.EmitSimple({ctx.input(0)}, {{"alpha", alpha}, {"beta", beta}}, ctx.in_dtype(0),
                        ctx.in_dims(0));
}

absl::Status BindHardSwish(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kNnTypes));
  return ctx.EmitSimple({ctx.input(0)}, {}, ctx.in_dtype(0), ctx.in_dims(0));
}

// Inference: the identity. A training_mode input known to be true is refused.
absl::Status BindDropout(BindContext& ctx) {
  if (ctx.outputs().size() > 1) {
    return ctx.Unsupported("the mask output (inference graphs do not use it)");
  }
  if (ctx.has_input(2)) {
    const BoundValue& training = ctx.in(2);
    if (!training.is_constant() || training.dtype != DType::kBool ||
        training.constant->data<bool>()[0]) {
      return ctx.Unsupported("training_mode must be a constant false");
    }
  }
  return ctx.EmitIdentity(0);
}

}  // namespace

void AddNnOps(std::vector<OpDef>& ops) {
  ops.push_back(
      OpDef{.name = "Conv",
            .family = "nn",
            .attributes = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"},
            .arity = {{1, {2, 3}}},
            .plan_time_operands = {1, 2},
            .bind = BindConv,
            .host = HostConv,
            .kernel_inputs = {2, 3},
            .summary = "float32 1-D and 2-D on cuDNN (algorithm timed at load); groups, "
                       "depthwise, dilations, auto_pad; bias, BatchNorm, residual Add "
                       "and Relu/Clip/SiLU/HardSwish fused",
            .input_names = {"X", "W", "B"}});
  ops.push_back(OpDef{.name = "ConvTranspose",
                      .family = "nn",
                      .attributes = {"auto_pad", "dilations", "group", "kernel_shape",
                                     "output_padding", "output_shape", "pads", "strides"},
                      .arity = {{1, {2, 3}}},
                      .plan_time_operands = {1, 2},
                      .bind = BindConvTranspose,
                      .summary =
                          "1-D and 2-D; bound as a Conv over the input with zeros between its "
                          "elements (Note [ConvTranspose as a Conv]): groups, dilations, "
                          "output_padding, output_shape, auto_pad",
                      .input_names = {"X", "W", "B"}});
  ops.push_back(OpDef{.name = "BatchNormalization",
                      .family = "nn",
                      .attributes = {"epsilon", "momentum", "spatial", "training_mode"},
                      .arity = {{1, {5, 5}}},
                      .plan_time_operands = {1, 2, 3, 4},
                      .bind = BindBatchNorm,
                      .host = HostBatchNormalization,
                      .kernel_inputs = {3, 3},
                      .summary = "inference; folded into the preceding Conv's weights, a "
                                 "per-channel kernel otherwise",
                      .input_names = {"X", "scale", "B", "input_mean", "input_var"}});
  for (const char* name : {"MaxPool", "AveragePool"}) {
    ops.push_back(OpDef{.name = name,
                        .family = "nn",
                        .attributes = {"auto_pad", "ceil_mode", "count_include_pad", "dilations",
                                       "kernel_shape", "pads", "storage_order", "strides"},
                        .bind = BindPool,
                        .host = HostPool,
                        .summary = "float32 1-D and 2-D; ceil_mode, count_include_pad, "
                                   "asymmetric pads; NaN propagates"});
  }
  for (const char* name : {"GlobalAveragePool", "GlobalMaxPool"}) {
    ops.push_back(OpDef{.name = name,
                        .family = "nn",
                        .bind = BindGlobalPool,
                        .host = HostGlobalPool,
                        .summary = "float32, any spatial rank; NaN propagates"});
  }
  ops.push_back(OpDef{.name = "Pad",
                      .family = "nn",
                      .since_opset = 2,
                      .attributes = {"mode", "pads", "value"},
                      .arity = {{1, {1, 1}}, {11, {2, 3}}, {18, {2, 4}}},
                      .plan_time_operands = {1, 2, 3},
                      .omissible_input = 2,
                      .bind = BindPad,
                      .host = HostPad,
                      .summary = "constant, reflect, edge; pads known at plan time",
                      .input_names = {"data", "pads", "constant_value", "axes"}});
  ops.push_back(OpDef{.name = "Clip",
                      .family = "nn",
                      .since_opset = 6,
                      .attributes = {"min", "max"},
                      .arity = {{1, {1, 1}}, {11, {1, 3}}},
                      .plan_time_operands = {1, 2},
                      .omissible_input = 1,
                      .bind = BindClip,
                      .host = HostActivation,
                      .summary = "float32; min/max known at plan time; NaN propagates; fused "
                                 "after a Conv (ReLU6)",
                      .input_names = {"input", "min", "max"}});
  ops.push_back(OpDef{.name = "HardSigmoid",
                      .family = "nn",
                      .since_opset = 6,
                      .attributes = {"alpha", "beta"},
                      .bind = BindHardSigmoid,
                      .host = HostActivation,
                      .summary = "float32"});
  ops.push_back(OpDef{.name = "HardSwish",
                      .family = "nn",
                      .since_opset = 14,
                      .bind = BindHardSwish,
                      .host = HostActivation,
                      .summary = "float32; fused after a Conv"});
  ops.push_back(OpDef{.name = "Dropout",
                      .family = "nn",
                      .attributes = {"is_test", "ratio", "seed"},
                      .arity = {{1, {1, 1}}, {12, {1, 3}}},
                      .plan_time_operands = {1, 2},
                      .bind = BindDropout,
                      .summary = "inference: the identity"});
}

}  // namespace graphserve
