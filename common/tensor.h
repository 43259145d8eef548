#pragma once
// Dense row-major tensors in host memory, and the dims helpers every module
// shares.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace graphserve {

// Tensor dimensions, outermost first. In a Model (before binding), -1 marks the
// batch dimension; in a BoundGraph every dim is concrete.
using Dims = std::vector<int64_t>;

// Product of the dims (1 for a scalar, 0 if any dim is 0).
int64_t NumElements(const Dims& dims);

// The most bytes one tensor may hold: far above any model served, and far
// below what a 64-bit product of dims can claim, so that dims read from a
// file or computed from one are refused before anything is allocated.
constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 40;

// The bytes of a tensor of `dims` and `dtype`, computed without overflow; none
// when a dim is negative or they pass kMaxTensorBytes.
std::optional<uint64_t> TensorBytes(const Dims& dims, DType dtype);

// "[2,3,4]"; "[]" for a scalar.
std::string DimsToString(const Dims& dims);

class HostTensor {
 public:
  HostTensor() = default;
  // Zero-filled tensor of the given type and dims.
  HostTensor(DType dtype, Dims dims);

  [[nodiscard]] DType dtype() const { return dtype_; }
  [[nodiscard]] const Dims& dims() const { return dims_; }
  [[nodiscard]] int64_t num_elements() const { return NumElements(dims_); }
  [[nodiscard]] size_t bytes() const { return bytes_.size(); }

  // Typed views; T must match dtype() (float, int64_t, bool).
  template <typename T>
  [[nodiscard]] T* data() { return reinterpret_cast<T*>(bytes_.data()); }
  template <typename T>
  [[nodiscard]] const T* data() const { return reinterpret_cast<const T*>(bytes_.data()); }
  [[nodiscard]] void* raw() { return bytes_.data(); }
  [[nodiscard]] const void* raw() const { return bytes_.data(); }

  // Same bytes, new dims with the same element count (Reshape on the host).
  void Reshape(Dims dims);

 private:
  DType dtype_ = DType::kFloat32;
  Dims dims_;
  // std::vector's allocation is aligned for any scalar type.
  std::vector<std::byte> bytes_;
};

// ||got - want|| / ||want|| over the elements of two tensors of one float
// type, in double precision: how far an executor's output is from a
// reference. Returns infinity when the result would be NaN (a NaN in either
// tensor) and when the tensors are not of one float type with the same
// element count, so that a
// `RelativeError(got, want) < tolerance` check fails. An all-zero `want` is
// matched only by an all-zero `got`.
double RelativeError(const HostTensor& got, const HostTensor& want);

// `tensor` (of a float type: float32, float16, bfloat16, float64) as float
// type `to`, each element rounded to nearest even (exact when `to` is wider;
// float64 to a 16-bit float rounds through float32, as Narrow does). The same
// dtype gives a copy.
HostTensor ConvertFloats(const HostTensor& tensor, DType to);

// Seeded random test data: the float types from the standard normal
// distribution (rounded to the type); the integer types and bool 0 or 1
// (valid as indices into any non-empty axis, and never all zeros, which would
// hide unwritten outputs). The same seed gives the same tensor.
HostTensor RandomTensor(DType dtype, Dims dims, uint64_t seed);

}  // namespace graphserve
