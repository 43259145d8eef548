#pragma once
// Canonical parameters of data movement nodes that binding writes
// (runtime/ops/data_movement.cc) and both the host and the CUDA kernels read.
// Plain C++ with no library headers, so that nvcc compiles it into the .cu
// files too.

#include <cstdint>
#include <optional>
#include <vector>

namespace graphserve {

// How ScatterND and ScatterElements combine an update with the element it
// lands on: the canonical attribute 'reduction' holds the enum's value.
// ONNX names them "none", "add", "mul" (opset 16) and "max", "min" (opset
// 18). Arithmetic happens in the element type (integers wrap), the 16-bit
// floats in float rounded back after each update; max and min propagate NaN
// as numpy's maximum and minimum (and ONNX's Max and Min) do, returning the
// NaN operand itself. Duplicate indices apply their updates in index order.
enum class ScatterReduction : int32_t { kNone = 0, kAdd = 1, kMul = 2, kMax = 3, kMin = 4 };

inline constexpr int64_t kScatterReductionCount = 5;

// ONNX's spelling of each reduction, indexed by the enum's value.
inline constexpr const char* kScatterReductionNames[kScatterReductionCount] = {"none", "add", "mul",
                                                                              "max", "min"};

// GridSample's canonical attributes 'interpolation' and 'padding' hold these
// enums' values (Note [GridSample coordinates] in runtime/ops/grid_sample.cc).
// ONNX spells them "nearest", "linear" ("bilinear" before opset 20), "cubic"
// ("bicubic"); and "zeros", "border", "reflection".
enum class GridInterpolation : int32_t { kNearest = 0, kLinear = 1, kCubic = 2 };
enum class GridPadding : int32_t { kZeros = 0, kBorder = 1, kReflection = 2 };

// The most spatial dims GridSample takes (ONNX allows any; PyTorch 2 and 3).
inline constexpr int32_t kMaxGridSpatialDims = 3;

// GridSample's output dims for X [N, C, D1..Dr] and grid [N, O1..Or, r]:
// [N, C, O1..Or]; nullopt when they do not fit, r is outside 1 to
// kMaxGridSpatialDims, or an image is empty (nothing to sample). Binding,
// the host kernel and the CUDA factory all check with it.
inline std::optional<std::vector<int64_t>> GridSampleOutputDims(const std::vector<int64_t>& x,
                                                                const std::vector<int64_t>& grid) {
  const int64_t spatial = static_cast<int64_t>(x.size()) - 2;
  if (spatial < 1 || spatial > kMaxGridSpatialDims || grid.size() != x.size() || grid[0] != x[0] ||
      grid.back() != spatial) {
    return std::nullopt;
  }
  for (size_t d = 2; d < x.size(); ++d) {
    if (x[d] == 0) return std::nullopt;
  }
  std::vector<int64_t> out = {x[0], x[1]};
  out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
  return out;
}

}  // namespace graphserve
