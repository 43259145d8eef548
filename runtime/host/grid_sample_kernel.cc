// The host kernel of the canonical GridSample node (Note [GridSample
// coordinates] in runtime/ops/grid_sample.cc), in double: the reference the
// CUDA kernel is tested against, written from the Note's steps one by one.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "common/status.h"
#include "runtime/data_movement_params.h"
#include "runtime/host/data_movement_kernels.h"
#include "runtime/host/kernel_args.h"

namespace graphserve {
namespace {

struct GridSampleMode {
  GridInterpolation interpolation = GridInterpolation::kLinear;
  GridPadding padding = GridPadding::kZeros;
  bool align_corners = false;
};

// One spatial dim of X: its length and valid coordinate range (step 1).
struct SpatialDim {
  int64_t length = 0;
  double lo = 0;
  double hi = 0;
};

SpatialDim MakeSpatialDim(int64_t length, bool align_corners) {
  const double d = static_cast<double>(length);
  return align_corners ? SpatialDim{length, 0.0, d - 1} : SpatialDim{length, -0.5, d - 0.5};
}

// x reflected off lo and hi until it lies between them.
double Reflect(double x, const SpatialDim& dim) {
  const double range = dim.hi - dim.lo;
  if (range <= 0) return dim.lo;  // one element with align_corners: it is all there is
  if (x >= dim.lo && x <= dim.hi) return x;
  const double beyond = x < dim.lo ? dim.lo - x : x - dim.hi;
  const double flips = std::floor(beyond / range);
  const double rest = beyond - flips * range;
  const bool even = std::fmod(flips, 2.0) == 0;
  // An even number of flips leaves x on the side it left from.
  if (x < dim.lo) return even ? dim.lo + rest : dim.hi - rest;
  return even ? dim.hi - rest : dim.lo + rest;
}

// Steps 1 to 3 of the Note, and its rule for coordinates that are not finite.
double SourceCoordinate(double g, const SpatialDim& dim, const GridSampleMode& mode) {
  const double d = static_cast<double>(dim.length);
  double x = mode.align_corners ? (g + 1) / 2 * (d - 1) : ((g + 1) * d - 1) / 2;
  if (mode.interpolation == GridInterpolation::kNearest) x = std::nearbyint(x);
  if (x < dim.lo || x > dim.hi) {
    if (mode.padding == GridPadding::kBorder) x = std::clamp(x, 0.0, d - 1);
    if (mode.padding == GridPadding::kReflection) x = Reflect(x, dim);
  }
  constexpr double kMaxCoordinate = 1 << 30;
  if (!std::isfinite(x) || std::abs(x) > kMaxCoordinate) x = -100;
  return x;
}

// Step 5: the element tap `index` reads, or -1 for a zero.
int64_t TapIndex(int64_t index, const SpatialDim& dim, GridPadding padding) {
  if (index >= 0 && index < dim.length) return index;
  switch (padding) {
    case GridPadding::kZeros:
      return -1;
    case GridPadding::kBorder:
      return std::clamp<int64_t>(index, 0, dim.length - 1);
    case GridPadding::kReflection:
      return std::clamp<int64_t>(static_cast<int64_t>(Reflect(static_cast<double>(index), dim)), 0,
                                 dim.length - 1);
  }
  return -1;
}

// Keys' cubic convolution weight at distance s, a = -0.75.
double CubicWeight(double s) {
  constexpr double a = -0.75;
  s = std::abs(s);
  if (s <= 1) return ((a + 2) * s - (a + 3)) * s * s + 1;
  if (s < 2) return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
  return 0;
}

// Step 4 along one dim: the taps' element indices (step 5 applied) and weights.
struct Taps {
  int count = 0;
  std::array<int64_t, 4> index{};
  std::array<double, 4> weight{};
};

Taps TapsAt(double x, const SpatialDim& dim, const GridSampleMode& mode) {
  Taps taps;
  const double first = std::floor(x);
  const double t = x - first;
  auto add = [&](double position, double weight) {
    taps.index[taps.count] = TapIndex(static_cast<int64_t>(position), dim, mode.padding);
    taps.weight[taps.count] = weight;
    ++taps.count;
  };
  switch (mode.interpolation) {
    case GridInterpolation::kNearest:
      add(x, 1.0);
      break;
    case GridInterpolation::kLinear:
      add(first, 1 - t);
      add(first + 1, t);
      break;
    case GridInterpolation::kCubic:
      for (int k = -1; k <= 2; ++k) add(first + k, CubicWeight(t - k));
      break;
  }
  return taps;
}

absl::StatusOr<GridSampleMode> ReadMode(const HostKernelArgs& args) {
  ASSIGN_OR_RETURN(const int64_t interpolation, OptionalIntAttr(args, "interpolation", 1));
  ASSIGN_OR_RETURN(const int64_t padding, OptionalIntAttr(args, "padding", 0));
  ASSIGN_OR_RETURN(const int64_t align_corners, OptionalIntAttr(args, "align_corners", 0));
  if (interpolation < 0 || interpolation > 2 || padding < 0 || padding > 2) {
    return args.Invalid("interpolation ", interpolation, " and padding ", padding,
                        " should each be 0, 1 or 2");
  }
  return GridSampleMode{static_cast<GridInterpolation>(interpolation),
                        static_cast<GridPadding>(padding), align_corners != 0};
}

}  // namespace

absl::Status HostGridSample(const HostKernelArgs& args) {
  const HostTensor& x = args.in(0);
  const HostTensor& grid = args.in(1);
  HostTensor& y = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, x, y));
  ASSIGN_OR_RETURN(const GridSampleMode mode, ReadMode(args));
  const Dims& x_dims = x.dims();
  const Dims& grid_dims = grid.dims();
  const std::optional<Dims> expected_out = GridSampleOutputDims(x_dims, grid_dims);
  if (!expected_out || y.dims() != *expected_out) {
    return args.Invalid("X ", DimsToString(x_dims), ", grid ", DimsToString(grid_dims),
                        " and output ", DimsToString(y.dims()), " do not make a GridSample");
  }
  const int64_t spatial = static_cast<int64_t>(x_dims.size()) - 2;
  std::vector<SpatialDim> dims;
  for (int64_t s = 0; s < spatial; ++s) {
    dims.push_back(MakeSpatialDim(x_dims[2 + s], mode.align_corners));
  }
  const std::vector<int64_t> x_strides = DenseStrides(x_dims);
  const int64_t batch = x_dims[0];
  const int64_t channels = x_dims[1];
  int64_t points = 1;  // sample points per image: O1 * .. * Or
  for (size_t d = 1; d + 1 < grid_dims.size(); ++d) points *= grid_dims[d];
  return VisitFloatTypes(args, x.dtype(), [&](auto x_tag) {
    using T = decltype(x_tag);
    return VisitFloatTypes(args, grid.dtype(), [&](auto grid_tag) {
      using G = decltype(grid_tag);
      const T* src = x.data<T>();
      const G* coordinates = grid.data<G>();
      T* dst = y.data<T>();
      std::vector<Taps> taps(dims.size());
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t p = 0; p < points; ++p) {
          // The grid's values run innermost dim first.
          const G* point = coordinates + (n * points + p) * spatial;
          int64_t combinations = 1;
          for (int64_t s = 0; s < spatial; ++s) {
            const double g = static_cast<double>(Widen(point[spatial - 1 - s]));
            taps[s] = TapsAt(SourceCoordinate(g, dims[s], mode), dims[s], mode);
            combinations *= taps[s].count;
          }
          for (int64_t c = 0; c < channels; ++c) {
            const int64_t base = n * x_strides[0] + c * x_strides[1];
            double sum = 0;
            for (int64_t k = 0; k < combinations; ++k) {
              int64_t choice = k;
              int64_t offset = base;
              double weight = 1;
              bool zero = false;
              for (int64_t s = spatial - 1; s >= 0; --s) {
                const Taps& along = taps[s];
                const int64_t tap = choice % along.count;
                choice /= along.count;
                zero = zero || along.index[tap] < 0;
                offset += along.index[tap] * x_strides[2 + s];
                weight *= along.weight[tap];
              }
              if (!zero) sum += weight * static_cast<double>(Widen(src[offset]));
            }
            dst[(n * channels + c) * points + p] = Narrow<T>(sum);
          }
        }
      }
      return absl::OkStatus();
    });
  });
}

}  // namespace graphserve
