#pragma once
// Canonical parameters of data movement nodes that binding writes
// (runtime/ops/data_movement.cc) and both the host and the CUDA kernels read.
// Plain C++ with no library headers, so that nvcc compiles it into the .cu
// files too.

#include <cstdint>

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

}  // namespace graphserve
