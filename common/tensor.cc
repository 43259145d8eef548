#include "common/tensor.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

#include "absl/strings/str_join.h"

namespace graphserve {

int64_t NumElements(const Dims& dims) {
  int64_t count = 1;
  for (int64_t dim : dims) count *= dim;
  return count;
}

std::string DimsToString(const Dims& dims) {
  return "[" + absl::StrJoin(dims, ",") + "]";
}

HostTensor::HostTensor(DType dtype, Dims dims)
    : dtype_(dtype),
      dims_(std::move(dims)),
      bytes_(static_cast<size_t>(NumElements(dims_)) * DTypeSize(dtype)) {}

void HostTensor::Reshape(Dims dims) {
  assert(NumElements(dims) == NumElements(dims_));
  dims_ = std::move(dims);
}

double RelativeError(const HostTensor& got, const HostTensor& want) {
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  if (got.dtype() != DType::kFloat32 || want.dtype() != DType::kFloat32 ||
      got.num_elements() != want.num_elements()) {
    return kInfinity;
  }
  double error = 0, norm = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double w = want.data<float>()[i];
    const double d = got.data<float>()[i] - w;
    error += d * d;
    norm += w * w;
  }
  // The floor keeps an all-zero `want` from dividing zero by zero.
  const double relative = std::sqrt(error / std::max(norm, 1e-300));
  return std::isnan(relative) ? kInfinity : relative;
}

HostTensor RandomTensor(DType dtype, Dims dims, uint64_t seed) {
  HostTensor tensor(dtype, std::move(dims));
  std::mt19937_64 generator(seed);
  const int64_t count = tensor.num_elements();
  switch (dtype) {
    case DType::kFloat32: {
      std::normal_distribution<float> normal(0.0f, 1.0f);
      for (int64_t i = 0; i < count; ++i) tensor.data<float>()[i] = normal(generator);
      break;
    }
    case DType::kInt64:
      for (int64_t i = 0; i < count; ++i) tensor.data<int64_t>()[i] = generator() & 1;
      break;
    case DType::kBool:
      for (int64_t i = 0; i < count; ++i) tensor.data<bool>()[i] = (generator() & 1) != 0;
      break;
  }
  return tensor;
}

}  // namespace graphserve
