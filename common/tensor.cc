#include "common/tensor.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

#include "absl/strings/str_join.h"
#include "common/half.h"

namespace graphserve {

int64_t NumElements(const Dims& dims) {
  int64_t count = 1;
  for (int64_t dim : dims) count *= dim;
  return count;
}

std::optional<uint64_t> TensorBytes(const Dims& dims, DType dtype) {
  uint64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0) return std::nullopt;
    if (dim != 0 && count > kMaxTensorBytes / static_cast<uint64_t>(dim)) return std::nullopt;
    count *= static_cast<uint64_t>(dim);
  }
  const uint64_t size = DTypeSize(dtype);
  if (size != 0 && count > kMaxTensorBytes / size) return std::nullopt;
  return count * size;
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
  if (got.dtype() != want.dtype() || !IsFloatingDType(want.dtype()) ||
      got.num_elements() != want.num_elements()) {
    return kInfinity;
  }
  double error = 0, norm = 0;
  VisitDType(want.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::Host;
    if constexpr (IsFloatingDType(decltype(tag)::value)) {
      for (int64_t i = 0; i < want.num_elements(); ++i) {
        const double w = static_cast<double>(Widen(want.data<T>()[i]));
        const double d = static_cast<double>(Widen(got.data<T>()[i])) - w;
        error += d * d;
        norm += w * w;
      }
    }
  });
  // The floor keeps an all-zero `want` from dividing zero by zero.
  const double relative = std::sqrt(error / std::max(norm, 1e-300));
  return std::isnan(relative) ? kInfinity : relative;
}

HostTensor ConvertFloats(const HostTensor& tensor, DType to) {
  assert(IsFloatingDType(tensor.dtype()) && IsFloatingDType(to));
  HostTensor out(to, tensor.dims());
  const int64_t count = tensor.num_elements();
  VisitDType(tensor.dtype(), [&](auto from_tag) {
    using From = typename decltype(from_tag)::Host;
    VisitDType(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::Host;
      if constexpr (IsFloatingDType(decltype(from_tag)::value) &&
                    IsFloatingDType(decltype(to_tag)::value)) {
        const From* src = tensor.data<From>();
        To* dst = out.data<To>();
        // Through double: exact for every source, one rounding to `To`.
        for (int64_t i = 0; i < count; ++i) {
          dst[i] = Narrow<To>(static_cast<double>(Widen(src[i])));
        }
      }
    });
  });
  return out;
}

HostTensor RandomTensor(DType dtype, Dims dims, uint64_t seed) {
  HostTensor tensor(dtype, std::move(dims));
  std::mt19937_64 generator(seed);
  const int64_t count = tensor.num_elements();
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::Host;
    T* data = tensor.data<T>();
    if constexpr (IsFloatingDType(decltype(tag)::value)) {
      std::normal_distribution<float> normal(0.0f, 1.0f);
      for (int64_t i = 0; i < count; ++i) data[i] = static_cast<T>(normal(generator));
    } else {
      for (int64_t i = 0; i < count; ++i) data[i] = static_cast<T>(generator() & 1);
    }
  });
  return tensor;
}

}  // namespace graphserve
