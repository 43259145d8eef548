// GridSample, part of the data movement family (runtime/ops/data_movement.cc
// adds the OpDef): binding checks the shapes and spells the modes as enums
// (runtime/data_movement_params.h); the kernels compute each sample's
// coordinates from the grid at run time (Note [GridSample coordinates]).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/status.h"
#include "runtime/bind_context.h"
#include "runtime/data_movement_params.h"
#include "runtime/host/data_movement_kernels.h"
#include "runtime/ops/families.h"

namespace graphserve {

// Note [GridSample coordinates]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// X is [N, C, D1..Dr], grid [N, O1..Or, r], the output [N, C, O1..Or]: output
// element (n, c, o) samples X[n, c] at the point grid[n, o], whose r values
// run innermost dim first (x, then y, then z), each in [-1, 1] across the
// dim. Resize's coordinates are known when binding (Note [Resize sampling
// tables]); these are data, so both kernels compute them, per spatial dim of
// length d, as ONNX's reference does (it follows PyTorch's GridSampler.h):
//
//   1. Unnormalize: align_corners: x = (g + 1) / 2 * (d - 1), so -1 and 1 are
//      the centres of the end elements; otherwise x = ((g + 1) * d - 1) / 2,
//      so they are the ends' outer edges. The valid range [lo, hi] is
//      [0, d - 1] or [-0.5, d - 0.5] likewise.
//   2. Nearest rounds x half to even (PyTorch's nearbyint).
//   3. Outside [lo, hi], border clamps x to [0, d - 1] and reflection
//      reflects it off lo and hi until inside; zeros leaves it.
//   4. Taps: nearest reads x; linear floor(x) and the next, weights 1 - t and
//      t (t = x - floor(x)); cubic floor(x) - 1 .. floor(x) + 2 with Keys'
//      weights at a = -0.75. A point's weight is the product over its dims.
//   5. A tap outside [0, d - 1] reads 0 (zeros), the clamped element
//      (border), or the element at the reflected index (reflection).
//
// ONNX leaves a NaN coordinate undefined (its reference raises). Here, as in
// PyTorch, a coordinate that is not finite after step 3, or beyond 2^30,
// samples as if it were -100: zeros padding reads 0 there.

namespace {

absl::StatusOr<GridInterpolation> ReadInterpolation(const BindContext& ctx) {
  // Opset 20 renamed bilinear and bicubic to linear and cubic (and made the
  // op N-dimensional).
  if (ctx.opset() < 20) {
    static constexpr std::pair<const char*, GridInterpolation> kModes[] = {
        {"bilinear", GridInterpolation::kLinear},
        {"nearest", GridInterpolation::kNearest},
        {"bicubic", GridInterpolation::kCubic}};
    return EnumAttr(ctx, "mode", "bilinear", kModes);
  }
  static constexpr std::pair<const char*, GridInterpolation> kModes[] = {
      {"linear", GridInterpolation::kLinear},
      {"nearest", GridInterpolation::kNearest},
      {"cubic", GridInterpolation::kCubic}};
  return EnumAttr(ctx, "mode", "linear", kModes);
}

absl::StatusOr<GridPadding> ReadPadding(const BindContext& ctx) {
  static constexpr std::pair<const char*, GridPadding> kPaddings[] = {
      {"zeros", GridPadding::kZeros},
      {"border", GridPadding::kBorder},
      {"reflection", GridPadding::kReflection}};
  return EnumAttr(ctx, "padding_mode", "zeros", kPaddings);
}

// GridSample (opsets 16, 20, 22): Note [GridSample coordinates].
absl::Status BindGridSample(BindContext& ctx) {
  const DType dtype = ctx.in_dtype(0);
  if (!Contains(kFloatDTypes, dtype)) {
    return ctx.Unsupported("GridSample of ", DTypeName(dtype),
                           " is not implemented; float types are");
  }
  RETURN_IF_ERROR(
      ctx.CheckDType(1, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}));
  const Dims x = ctx.in_dims(0);
  const Dims grid = ctx.in_dims(1);
  const int64_t spatial = static_cast<int64_t>(x.size()) - 2;
  const int64_t max_spatial = ctx.opset() < 20 ? 2 : kMaxGridSpatialDims;
  if (spatial < 1 || spatial > max_spatial) {
    return ctx.Error("X ", DimsToString(x),
                     " should be [N, C, D1..Dr] with 1 <= r <= ", max_spatial, " at opset ",
                     ctx.opset());
  }
  std::optional<Dims> out = GridSampleOutputDims(x, grid);
  if (!out) {
    if (std::count(x.begin() + 2, x.end(), 0) > 0) {
      return ctx.Error("X ", DimsToString(x), " has no element to sample");
    }
    return ctx.Error("grid ", DimsToString(grid), " should be [", x[0], ", O1..O", spatial, ", ",
                     spatial, "] for X ", DimsToString(x));
  }
  ASSIGN_OR_RETURN(const GridInterpolation interpolation, ReadInterpolation(ctx));
  ASSIGN_OR_RETURN(const GridPadding padding, ReadPadding(ctx));
  ASSIGN_OR_RETURN(const int64_t align_corners, ctx.IntAttrOr("align_corners", 0));
  return ctx.EmitModelNode("GridSample", {ctx.input(0), ctx.input(1)},
                           {{"interpolation", static_cast<int64_t>(interpolation)},
                            {"padding", static_cast<int64_t>(padding)},
                            {"align_corners", static_cast<int64_t>(align_corners != 0)}},
                           {OutputSpec{"", dtype, *std::move(out)}});
}

}  // namespace

void AddGridSampleOp(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{.name = "GridSample",
                      .family = "data_movement",
                      .since_opset = 16,
                      .attributes = {"align_corners", "mode", "padding_mode"},
                      .arity = {{1, {2, 2}}},
                      .bind = BindGridSample,
                      .host = HostGridSample,
                      .kernel_inputs = {2, 2},
                      .summary = "float types; nearest, linear, cubic; zeros, border, "
                                 "reflection padding; 1 to 3 spatial dims (2 before opset 20)",
                      .input_names = {"X", "grid"}});
}

}  // namespace graphserve
