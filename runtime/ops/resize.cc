// Resize and Upsample, part of the data movement family
// (runtime/ops/data_movement.cc adds the OpDefs): binding turns ONNX's
// coordinate and interpolation rules into sampling tables (Note [Resize
// sampling tables]); the kernels only gather and weigh.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "runtime/bind_context.h"
#include "runtime/host/data_movement_kernels.h"
#include "runtime/ops/families.h"

namespace graphserve {

// Note [Resize sampling tables]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Resize is separable: each output coordinate y along a resized dim reads a
// fixed set of input coordinates along that dim with fixed weights, whatever
// the other coordinates are. Binding, which knows every dim, computes those
// sets once with ONNX's formulas in double precision (the coordinate
// transformation, the nearest rounding, the linear and cubic coefficients,
// exclude_outside's renormalisation, the clamping of the edges) and hands
// the canonical node two constant tables, so the host and CUDA kernels share
// one definition and compute no coordinates. Canonical Resize:
//   inputs  X (a float type), indices (int64), weights (float32), the tables;
//   attrs   axes: the resized dims, ascending; taps: entries per output
//           coordinate of each (1 nearest, 2 linear, 4 cubic, more when
//           antialiasing stretches the filter); extrapolation_value.
// For the k-th resized dim d, entries [offset_k + y * taps[k], + taps[k])
// of both tables belong to output coordinate y, offset_k being the sum of
// out_dims[axes[j]] * taps[j] over j < k. An output element is the sum, over
// every choice of one entry per resized dim, of the product of the chosen
// weights times X at the chosen indices (its own coordinates elsewhere);
// an index of -1 (tf_crop_and_resize outside the input) makes the element
// extrapolation_value. Weights of 0 are still read, so a NaN beside the
// sampled pixel propagates in linear and cubic modes, as in ONNX's
// reference; nearest reads one pixel.
//
// Where the spec and ONNX's reference (which made the node tests) differ,
// binding follows the reference as ONNX Runtime does: with scales given,
// align_corners and tf_crop_and_resize divide by the fractional output
// length in * scale - 1, and the output length is floor(in * scale) even
// with a roi. Resize-10 and Upsample take asymmetric coordinates and round
// nearest down, which is what PyTorch's "nearest" exported as them means.

namespace {

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
enum class CoordinateMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize,
};

struct ResizeOptions {
  ResizeMode mode = ResizeMode::kNearest;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  CoordinateMode coordinates = CoordinateMode::kHalfPixel;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  // Linear and cubic filters stretched by 1 / scale along shrinking dims.
  bool antialias = false;
};

// One dim of the resize: its lengths, scale and roi.
struct ResizeDim {
  int64_t in = 0;
  int64_t out = 0;
  double scale = 1.0;
  double out_fractional = 0.0;  // in * scale: the reference's output_width
  double roi_start = 0.0;
  double roi_end = 1.0;
};

// The input coordinate output coordinate y samples, or nullopt outside the
// input under tf_crop_and_resize.
std::optional<double> SourceCoordinate(const ResizeOptions& o, const ResizeDim& d, int64_t y) {
  const double x = static_cast<double>(y);
  switch (o.coordinates) {
    case CoordinateMode::kHalfPixel:
      return (x + 0.5) / d.scale - 0.5;
    case CoordinateMode::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(d.out) / d.out_fractional;
      const double offset = static_cast<double>(d.in) / 2 * (1 - adjustment);
      return offset + (x + 0.5) / d.scale - 0.5;
    }
    case CoordinateMode::kPytorchHalfPixel:
      return d.out > 1 ? (x + 0.5) / d.scale - 0.5 : 0.0;
    case CoordinateMode::kAlignCorners:
      return d.out_fractional == 1 ? 0.0
                                   : x * static_cast<double>(d.in - 1) / (d.out_fractional - 1);
    case CoordinateMode::kAsymmetric:
      return x / d.scale;
    case CoordinateMode::kTfHalfPixelForNn:
      return (x + 0.5) / d.scale;
    case CoordinateMode::kTfCropAndResize: {
      const double span = static_cast<double>(d.in - 1);
      const double source =
          d.out_fractional == 1
              ? (d.roi_end - d.roi_start) * span / 2 + d.roi_start * span
              : x * (d.roi_end - d.roi_start) * span / (d.out_fractional - 1) + d.roi_start * span;
      if (source < 0 || source > span) return std::nullopt;
      return source;
    }
  }
  return 0.0;
}

int64_t NearestIndex(NearestMode mode, double x) {
  const double below = std::floor(x);
  const double ratio = x - below;
  switch (mode) {
    case NearestMode::kRoundPreferFloor:
      return static_cast<int64_t>(ratio <= 0.5 ? below : below + 1);
    case NearestMode::kRoundPreferCeil:
      return static_cast<int64_t>(ratio < 0.5 ? below : below + 1);
    case NearestMode::kFloor:
      return static_cast<int64_t>(below);
    case NearestMode::kCeil:
      return static_cast<int64_t>(std::ceil(x));
  }
  return 0;
}

// The linear or cubic (Keys, with cubic_a) filter at `distance` pixels.
double Filter(const ResizeOptions& o, double distance) {
  const double x = std::fabs(distance);
  if (o.mode == ResizeMode::kLinear) return std::max(1 - x, 0.0);
  const double a = o.cubic_a;
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Entries per output coordinate along a dim: 1 nearest, 2 linear, 4 cubic;
// antialiased and shrinking, the filter's support stretched by 1 / scale.
int64_t TapsOf(const ResizeOptions& o, const ResizeDim& d) {
  if (o.mode == ResizeMode::kNearest) return 1;
  const double support = o.mode == ResizeMode::kLinear ? 1 : 2;
  if (!o.antialias || d.scale >= 1) return 2 * static_cast<int64_t>(support);
  // ONNX's reference: the window starts floor(-support / scale) + 1 pixels
  // from the pixel left of the source (capped so that an absurd scale
  // converts, and binding refuses the tables' size).
  const double first = std::max(std::floor(-support / d.scale) + 1, -double{1 << 30});
  return 2 - 2 * static_cast<int64_t>(first);
}

// Appends one resized dim's entries to the tables.
void AppendTable(const ResizeOptions& o, const ResizeDim& d, std::vector<int64_t>& indices,
                 std::vector<float>& weights) {
  const int64_t taps = TapsOf(o, d);
  const double stretch = o.antialias ? std::min(d.scale, 1.0) : 1.0;
  for (int64_t y = 0; y < d.out; ++y) {
    const std::optional<double> source = SourceCoordinate(o, d, y);
    if (!source) {
      indices.insert(indices.end(), taps, -1);
      weights.insert(weights.end(), taps, 0.0f);
      continue;
    }
    std::vector<int64_t> at;
    std::vector<double> w;
    if (o.mode == ResizeMode::kNearest) {
      at = {NearestIndex(o.nearest, *source)};
      w = {1.0};
    } else {
      // `taps` pixels around the source, the pixel left of it (the one
      // before it when it lies on a pixel, as in ONNX's reference) the
      // (taps/2)-th; the source lies `ratio` in (0, 1] past that pixel.
      double left = std::floor(*source);
      if (left == *source) left -= 1;
      const double ratio = *source - left;
      const int64_t first = static_cast<int64_t>(left) - taps / 2 + 1;
      double sum = 0;
      for (int64_t t = 0; t < taps; ++t) {
        at.push_back(first + t);
        w.push_back(Filter(o, stretch * (static_cast<double>(t - taps / 2 + 1) - ratio)));
        sum += w.back();
      }
      // The stretched filters are normalised, as the reference does; the
      // plain ones sum to 1 already.
      if (stretch < 1 && sum != 0) {
        for (double& weight : w) weight /= sum;
      }
    }
    if (o.exclude_outside) {
      double sum = 0;
      for (size_t t = 0; t < at.size(); ++t) {
        if (at[t] < 0 || at[t] >= d.in) w[t] = 0;
        sum += w[t];
      }
      if (sum != 0) {
        for (double& weight : w) weight /= sum;
      }
    }
    for (size_t t = 0; t < at.size(); ++t) {
      indices.push_back(std::clamp<int64_t>(at[t], 0, d.in - 1));
      weights.push_back(static_cast<float>(w[t]));
    }
  }
}

// The values of a constant input of any float type, in double; empty when
// the input is omitted or empty (ONNX's way of leaving scales out before
// sizes at opsets 11 and 12).
absl::StatusOr<std::vector<double>> ConstantFloats(const BindContext& ctx, size_t input) {
  if (!ctx.has_input(input)) return std::vector<double>{};
  const BoundValue& v = ctx.in(input);
  if (!Contains(kFloatDTypes, v.dtype)) {
    return ctx.Error("input ", input, " '", v.name, "' should be a float type, got ",
                     DTypeName(v.dtype));
  }
  std::vector<double> values;
  VisitDType(v.dtype, [&](auto tag) {
    using T = typename decltype(tag)::Host;
    if constexpr (IsFloatingDType(decltype(tag)::value)) {
      for (int64_t i = 0; i < v.constant->num_elements(); ++i) {
        values.push_back(static_cast<double>(Widen(v.constant->data<T>()[i])));
      }
    }
  });
  return values;
}

absl::StatusOr<ResizeOptions> ReadOptions(const BindContext& ctx, bool upsample) {
  ResizeOptions o;
  static constexpr std::pair<const char*, ResizeMode> kModes[] = {
      {"nearest", ResizeMode::kNearest},
      {"linear", ResizeMode::kLinear},
      {"cubic", ResizeMode::kCubic},
      {"bilinear", ResizeMode::kLinear}};
  ASSIGN_OR_RETURN(o.mode, EnumAttr(ctx, "mode", "nearest", kModes));
  if (upsample || ctx.opset() < 11) {
    // Upsample and Resize-10: "nearest" and "linear" ("bilinear" in
    // Upsample-7's spelling), asymmetric coordinates.
    if (o.mode == ResizeMode::kCubic) return ctx.Error("mode 'cubic' needs Resize at opset 11");
    o.coordinates = CoordinateMode::kAsymmetric;
    o.nearest = NearestMode::kFloor;
    return o;
  }
  static constexpr std::pair<const char*, NearestMode> kNearestModes[] = {
      {"round_prefer_floor", NearestMode::kRoundPreferFloor},
      {"round_prefer_ceil", NearestMode::kRoundPreferCeil},
      {"floor", NearestMode::kFloor},
      {"ceil", NearestMode::kCeil}};
  ASSIGN_OR_RETURN(o.nearest, EnumAttr(ctx, "nearest_mode", "round_prefer_floor", kNearestModes));
  static constexpr std::pair<const char*, CoordinateMode> kCoordinateModes[] = {
      {"half_pixel", CoordinateMode::kHalfPixel},
      {"half_pixel_symmetric", CoordinateMode::kHalfPixelSymmetric},
      {"pytorch_half_pixel", CoordinateMode::kPytorchHalfPixel},
      {"align_corners", CoordinateMode::kAlignCorners},
      {"asymmetric", CoordinateMode::kAsymmetric},
      {"tf_half_pixel_for_nn", CoordinateMode::kTfHalfPixelForNn},
      {"tf_crop_and_resize", CoordinateMode::kTfCropAndResize}};
  ASSIGN_OR_RETURN(o.coordinates,
                   EnumAttr(ctx, "coordinate_transformation_mode", "half_pixel", kCoordinateModes));
  if (o.coordinates == CoordinateMode::kTfHalfPixelForNn && ctx.opset() >= 13) {
    return ctx.Error("coordinate_transformation_mode 'tf_half_pixel_for_nn' ends at opset 12");
  }
  if (o.coordinates == CoordinateMode::kHalfPixelSymmetric && ctx.opset() < 19) {
    return ctx.Error("coordinate_transformation_mode 'half_pixel_symmetric' needs opset 19");
  }
  ASSIGN_OR_RETURN(const float a, ctx.FloatAttrOr("cubic_coeff_a", -0.75f));
  o.cubic_a = a;
  ASSIGN_OR_RETURN(const int64_t exclude, ctx.IntAttrOr("exclude_outside", 0));
  o.exclude_outside = exclude != 0;
  return o;
}

// Upsample-7's scales attribute, or the scales input (Upsample-9, Resize-10
// input 1, Resize-11 input 2).
absl::StatusOr<std::vector<double>> ReadScales(const BindContext& ctx, bool upsample) {
  if (upsample && ctx.opset() < 9) {
    if (!ctx.has_attr("scales")) return ctx.Error("attribute 'scales' is required");
    const auto* scales = std::get_if<std::vector<float>>(&ctx.attrs().at("scales"));
    if (scales == nullptr) return ctx.Error("attribute 'scales' should be floats");
    return std::vector<double>(scales->begin(), scales->end());
  }
  return ConstantFloats(ctx, upsample || ctx.opset() < 11 ? 1 : 2);
}

// The dims of the resize from scales or sizes, axes, keep_aspect_ratio_policy
// and roi.
absl::StatusOr<std::vector<ResizeDim>> ReadDims(const BindContext& ctx, bool upsample,
                                                const ResizeOptions& o) {
  const Dims& in = ctx.in_dims(0);
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes;
  if (ctx.has_attr("axes")) {
    ASSIGN_OR_RETURN(std::vector<int64_t> given, ctx.IntsAttrOr("axes", {}));
    for (int64_t& axis : given) {
      ASSIGN_OR_RETURN(axis, ctx.NormalizeAxis(axis, rank, "axes"));
    }
    axes = std::move(given);
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  std::vector<ResizeDim> dims(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    dims[d] = ResizeDim{in[d], in[d], 1.0, static_cast<double>(in[d])};
  }
  ASSIGN_OR_RETURN(const std::vector<double> scales, ReadScales(ctx, upsample));
  std::vector<int64_t> sizes;
  if (!upsample && ctx.opset() >= 11 && ctx.has_input(3)) {
    ASSIGN_OR_RETURN(sizes, ctx.ConstantInts(3));
  }
  if (scales.empty() == sizes.empty()) {
    return ctx.Error("exactly one of scales and sizes should be given, got ", scales.size(),
                     " scales and ", sizes.size(), " sizes");
  }
  const size_t count = scales.empty() ? sizes.size() : scales.size();
  if (count != axes.size()) {
    return ctx.Error(scales.empty() ? "sizes" : "scales", " should have ", axes.size(),
                     " entries (one per resized axis), got ", count);
  }
  if (!scales.empty()) {
    for (size_t i = 0; i < axes.size(); ++i) {
      ResizeDim& d = dims[static_cast<size_t>(axes[i])];
      if (!(scales[i] > 0) || !std::isfinite(scales[i])) {
        return ctx.Error("scale ", scales[i], " should be positive");
      }
      d.scale = scales[i];
      d.out_fractional = static_cast<double>(d.in) * d.scale;
      if (d.out_fractional >= 0x1p62) return ctx.Error("scale ", scales[i], " is too large");
      d.out = static_cast<int64_t>(std::floor(d.out_fractional));
    }
  } else {
    ASSIGN_OR_RETURN(const std::string policy,
                     ctx.StringAttrOr("keep_aspect_ratio_policy", "stretch"));
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller") {
      return ctx.Error("keep_aspect_ratio_policy '", policy,
                       "' is not one of stretch, not_larger, not_smaller");
    }
    std::vector<double> ratios;
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t length = dims[static_cast<size_t>(axes[i])].in;
      if (sizes[i] < 0 || length == 0) {
        return ctx.Error("size ", sizes[i], " cannot resize a dim of ", length);
      }
      ratios.push_back(static_cast<double>(sizes[i]) / static_cast<double>(length));
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      ResizeDim& d = dims[static_cast<size_t>(axes[i])];
      if (policy == "stretch") {
        d.scale = ratios[i];
        d.out = sizes[i];
      } else {
        d.scale = policy == "not_larger" ? *std::min_element(ratios.begin(), ratios.end())
                                         : *std::max_element(ratios.begin(), ratios.end());
        const double length = d.scale * static_cast<double>(d.in) + 0.5;
        if (length >= 0x1p62) return ctx.Error("sizes ask for a dim of ", length);
        d.out = static_cast<int64_t>(length);
      }
      d.out_fractional = d.scale * static_cast<double>(d.in);
    }
  }
  if (o.coordinates == CoordinateMode::kTfCropAndResize) {
    ASSIGN_OR_RETURN(const std::vector<double> roi, ConstantFloats(ctx, 1));
    if (roi.size() != 2 * axes.size()) {
      return ctx.Error("roi should hold ", 2 * axes.size(),
                       " values (starts, then ends) for tf_crop_and_resize, got ", roi.size());
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      dims[static_cast<size_t>(axes[i])].roi_start = roi[i];
      dims[static_cast<size_t>(axes[i])].roi_end = roi[axes.size() + i];
    }
  }
  return dims;
}

// Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9): Note [Resize
// sampling tables].
absl::Status BindResizeOrUpsample(BindContext& ctx, bool upsample) {
  const DType dtype = ctx.in_dtype(0);
  if (!Contains(kFloatDTypes, dtype)) {
    return ctx.Unsupported("Resize of ", DTypeName(dtype), " is not implemented; float types are");
  }
  for (const char* attr : {"axes", "keep_aspect_ratio_policy", "antialias"}) {
    if (ctx.has_attr(attr) && ctx.opset() < 18) {
      return ctx.Error("attribute '", attr, "' needs opset 18, the model imports ", ctx.opset());
    }
  }
  ASSIGN_OR_RETURN(ResizeOptions options, ReadOptions(ctx, upsample));
  ASSIGN_OR_RETURN(const int64_t antialias, ctx.IntAttrOr("antialias", 0));
  options.antialias = antialias != 0;
  ASSIGN_OR_RETURN(const std::vector<ResizeDim> dims, ReadDims(ctx, upsample, options));
  Dims out;
  int64_t count = 1;
  for (const ResizeDim& dim : dims) {
    out.push_back(dim.out);
    if (__builtin_mul_overflow(count, dim.out, &count)) {
      return ctx.Error("output dims hold more than 2^63 elements");
    }
  }
  std::vector<int64_t> axes;
  std::vector<int64_t> taps;
  std::vector<int64_t> indices;
  std::vector<float> weights;
  for (size_t d = 0; d < dims.size(); ++d) {
    const ResizeDim& dim = dims[d];
    const bool identity = dim.out == dim.in && dim.scale == 1.0 &&
                          (options.coordinates != CoordinateMode::kTfCropAndResize ||
                           (dim.roi_start == 0.0 && dim.roi_end == 1.0));
    if (identity) continue;
    if (dim.in == 0) return ctx.Error("cannot resize dim ", d, " of length 0 to ", dim.out);
    // The plan-time tables are constants like any folded one (an absurd
    // scale, or an antialiased filter stretched over a whole huge dim, would
    // ask for any amount of host memory): an int64 index and a float weight
    // per entry, counted against the binding's bound.
    const int64_t dim_taps = TapsOf(options, dim);
    constexpr int64_t kEntryBytes = sizeof(int64_t) + sizeof(float);
    if (dim_taps >
        static_cast<int64_t>(kMaxTensorBytes) / kEntryBytes / std::max<int64_t>(dim.out, 1)) {
      return ctx.Error("resizing dim ", d, " from ", dim.in, " to ", dim.out,
                       " needs sampling tables past any tensor's size");
    }
    RETURN_IF_ERROR(ctx.ReserveConstantBytes(static_cast<uint64_t>(dim.out) *
                                             static_cast<uint64_t>(dim_taps) * kEntryBytes));
    axes.push_back(static_cast<int64_t>(d));
    taps.push_back(dim_taps);
    AppendTable(options, dim, indices, weights);
  }
  if (axes.empty()) return ctx.EmitIdentity(0);
  HostTensor index_table(DType::kInt64, {static_cast<int64_t>(indices.size())});
  std::copy(indices.begin(), indices.end(), index_table.data<int64_t>());
  HostTensor weight_table(DType::kFloat32, {static_cast<int64_t>(weights.size())});
  std::copy(weights.begin(), weights.end(), weight_table.data<float>());
  const ValueId x = ctx.input(0);
  const ValueId index_id =
      ctx.AddConstant(absl::StrCat(ctx.name(), "/resize_indices"), std::move(index_table));
  const ValueId weight_id =
      ctx.AddConstant(absl::StrCat(ctx.name(), "/resize_weights"), std::move(weight_table));
  ASSIGN_OR_RETURN(const float extrapolation, ctx.FloatAttrOr("extrapolation_value", 0.0f));
  return ctx.EmitModelNode("Resize", {x, index_id, weight_id},
                           {{"axes", std::move(axes)},
                            {"taps", std::move(taps)},
                            {"extrapolation_value", extrapolation}},
                           {OutputSpec{"", dtype, std::move(out)}});
}

absl::Status BindResize(BindContext& ctx) { return BindResizeOrUpsample(ctx, false); }
absl::Status BindUpsample(BindContext& ctx) { return BindResizeOrUpsample(ctx, true); }

}  // namespace

void AddResizeOps(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{
      .name = "Resize",
      .family = "data_movement",
      .since_opset = 10,
      .attributes = {"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                     "exclude_outside", "extrapolation_value", "axes", "keep_aspect_ratio_policy",
                     "antialias"},
      .arity = {{1, {2, 2}}, {11, {1, 4}}},
      .plan_time_operands = {1, 2, 3},
      .omissible_input = 1,
      .bind = BindResize,
      .host = HostResize,
      .kernel_inputs = {3, 3},
      .summary = "float types; nearest, linear, cubic; scales or sizes known at plan time; every "
                 "coordinate mode, axes, keep_aspect_ratio_policy, antialias",
      .input_names = {"X", "roi", "scales", "sizes"}});
  ops.push_back(OpDef{.name = "Upsample",
                      .family = "data_movement",
                      .since_opset = 7,
                      .attributes = {"mode", "scales"},
                      .arity = {{1, {1, 1}}, {9, {2, 2}}},
                      .plan_time_operands = {1},
                      .bind = BindUpsample,
                      .summary = "float types; nearest, linear; bound as Resize",
                      .input_names = {"X", "scales"}});
}

}  // namespace graphserve
