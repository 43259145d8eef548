#include "runtime/tensor.h"

#include <cassert>

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

}  // namespace graphserve
