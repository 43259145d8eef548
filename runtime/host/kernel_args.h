#pragma once
// What a host kernel receives (HostKernelArgs), and the helpers every host
// kernel family shares: dtype dispatch, attribute defaults, and the strided
// walker behind broadcasting, Expand, Transpose, Slice and reductions.
// Private to runtime/host: kernels are reached through the op registry
// (runtime/op_registry.h) and RunHostNode (kernels.h).

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "common/tensor.h"
#include "runtime/bound_graph.h"
#include "runtime/ir.h"

namespace graphserve {

// ---------------------------------------------------------------------------
// Kernel arguments and errors
// ---------------------------------------------------------------------------

struct HostKernelArgs {
  const BoundNode& node;
  absl::Span<const HostTensor* const> inputs;
  absl::Span<HostTensor* const> outputs;

  [[nodiscard]] const HostTensor& in(size_t i) const { return *inputs[i]; }
  [[nodiscard]] HostTensor& out(size_t i) const { return *outputs[i]; }
  [[nodiscard]] bool has_output(size_t i) const {
    return i < outputs.size() && outputs[i] != nullptr;
  }

  // "node 'x' (Op): <message>", so every error can be traced to its node.
  template <typename... Parts>
  [[nodiscard]] std::string Describe(const Parts&... parts) const {
    return absl::StrCat("node '", node.name, "' (", node.op_type, "): ", parts...);
  }
  template <typename... Parts>
  [[nodiscard]] absl::Status Invalid(const Parts&... parts) const {
    return absl::InvalidArgumentError(Describe(parts...));
  }
  template <typename... Parts>
  [[nodiscard]] absl::Status Unimplemented(const Parts&... parts) const {
    return absl::UnimplementedError(Describe(parts...));
  }
};

inline std::string DTypeString(DType dtype) { return std::string(DTypeName(dtype)); }

inline absl::Status UnsupportedDType(const HostKernelArgs& args, DType dtype) {
  return args.Unimplemented("no host kernel for dtype ", DTypeString(dtype));
}

inline absl::Status RequireDType(const HostKernelArgs& args, const HostTensor& tensor, DType dtype,
                                 const char* what) {
  if (tensor.dtype() == dtype) return absl::OkStatus();
  return args.Invalid(what, " should be ", DTypeString(dtype), ", got ",
                      DTypeString(tensor.dtype()));
}

inline absl::Status RequireSameDType(const HostKernelArgs& args, const HostTensor& a,
                                     const HostTensor& b) {
  if (a.dtype() == b.dtype()) return absl::OkStatus();
  return args.Invalid("operand dtypes differ: ", DTypeString(a.dtype()), " and ",
                      DTypeString(b.dtype()));
}

inline absl::Status RequireSameElementCount(const HostKernelArgs& args, const HostTensor& in,
                                            const HostTensor& out) {
  if (in.num_elements() == out.num_elements()) return absl::OkStatus();
  return args.Invalid("input ", DimsToString(in.dims()), " and output ", DimsToString(out.dims()),
                      " differ in element count");
}

// A one-input op whose output has the input's dtype and element count.
inline absl::Status CheckUnaryOperand(const HostKernelArgs& args) {
  if (absl::Status s = RequireSameDType(args, args.in(0), args.out(0)); !s.ok()) return s;
  return RequireSameElementCount(args, args.in(0), args.out(0));
}

// Binding writes every attribute out, but the scalar ones that ONNX gives a
// default are read with that default, so that a node built by hand (or a
// binding gap) still computes what ONNX would rather than multiplying by 0.
inline absl::StatusOr<float> OptionalFloatAttr(const HostKernelArgs& args, const std::string& name,
                                               float onnx_default) {
  absl::StatusOr<float> value = GetFloatAttr(args.node.attributes, name, onnx_default);
  if (!value.ok()) return args.Invalid(value.status().message());
  return value;
}

inline absl::StatusOr<int64_t> OptionalIntAttr(const HostKernelArgs& args, const std::string& name,
                                               int64_t onnx_default) {
  absl::StatusOr<int64_t> value = GetIntAttr(args.node.attributes, name, onnx_default);
  if (!value.ok()) return args.Invalid(value.status().message());
  return value;
}

// Calls fn(T{}) with the C++ type of `dtype`, limited to the types an op
// accepts so that each instantiation only sees operations its type supports.
// The four float types (Half and BFloat16 are storage: kernels compute
// through Widen and Narrow, common/half.h).
template <typename Fn>
absl::Status VisitFloatTypes(const HostKernelArgs& args, DType dtype, Fn&& fn) {
  if (dtype == DType::kFloat32) return fn(float{});
  if (dtype == DType::kFloat64) return fn(double{});
  if (dtype == DType::kFloat16) return fn(Half{});
  if (dtype == DType::kBFloat16) return fn(BFloat16{});
  return UnsupportedDType(args, dtype);
}

// The types with a sign: the four float types, int64 and int32.
template <typename Fn>
absl::Status VisitSignedTypes(const HostKernelArgs& args, DType dtype, Fn&& fn) {
  if (dtype == DType::kInt64) return fn(int64_t{});
  if (dtype == DType::kInt32) return fn(int32_t{});
  return VisitFloatTypes(args, dtype, fn);
}

// Every row of the datatype table: for ops that move, select or compare
// elements (Half and BFloat16 compare as their values).
template <typename Fn>
absl::Status VisitAny(const HostKernelArgs&, DType dtype, Fn&& fn) {
  return VisitDType(dtype, [&](auto tag) { return fn(typename decltype(tag)::Host{}); });
}

// Max and Min propagate NaN, as numpy's maximum/minimum (ONNX's reference)
// do: the elementwise Max and Min, and ReduceMax and ReduceMin.
template <typename T>
T PropagatingMax(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  }
  return a < b ? b : a;
}
template <typename T>
T PropagatingMin(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  }
  return b < a ? b : a;
}

// ---------------------------------------------------------------------------
// Strided index walking: broadcasting, Expand, Transpose and Slice
// ---------------------------------------------------------------------------

// Row-major strides of a dense tensor.
inline std::vector<int64_t> DenseStrides(const Dims& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * dims[d + 1];
  }
  return strides;
}

// Whether `in` broadcasts to `out` under ONNX (numpy) rules: dims aligned on
// the right, each input dim equal to the output dim or 1.
inline bool BroadcastsTo(const Dims& in, const Dims& out) {
  if (in.size() > out.size()) return false;
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] != out[lead + d] && in[d] != 1) return false;
  }
  return true;
}

// One stride per output dim for reading a dense `in` that broadcasts to
// `out`: 0 for the dims `in` lacks or holds once.
inline std::vector<int64_t> BroadcastStrides(const Dims& in, const Dims& out) {
  const std::vector<int64_t> dense = DenseStrides(in);
  std::vector<int64_t> strides(out.size(), 0);
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] != 1) strides[lead + d] = dense[d];
  }
  return strides;
}

inline absl::Status RequireBroadcast(const HostKernelArgs& args, const HostTensor& in,
                                     const Dims& out) {
  if (BroadcastsTo(in.dims(), out)) return absl::OkStatus();
  return args.Invalid("input ", DimsToString(in.dims()), " does not broadcast to ",
                      DimsToString(out));
}

// How an operand is read while walking the output: a base offset plus one
// stride per output dim.
struct StridedView {
  int64_t base = 0;
  std::vector<int64_t> strides;
};

// Walks the elements of an output of `dims` in row-major order and keeps, for
// each of N operands, the offset of the element that output element reads.
// Every op that reads its inputs in an order other than their own (all
// broadcasting ops, Expand, Transpose, Slice, ReduceMean's accumulation) is
// expressed as strides for this one walker.
template <size_t N>
class StridedWalker {
 public:
  StridedWalker(const Dims& dims, std::array<StridedView, N> views)
      : dims_(dims), index_(dims.size(), 0), views_(std::move(views)) {
    for (size_t i = 0; i < N; ++i) offsets_[i] = views_[i].base;
  }

  [[nodiscard]] int64_t offset(size_t operand) const { return offsets_[operand]; }

  // Moves to the next output element; an odometer over the dims, innermost
  // first.
  void Next() {
    for (int64_t d = static_cast<int64_t>(dims_.size()) - 1; d >= 0; --d) {
      ++index_[d];
      for (size_t i = 0; i < N; ++i) offsets_[i] += views_[i].strides[d];
      if (index_[d] < dims_[d]) return;
      for (size_t i = 0; i < N; ++i) offsets_[i] -= views_[i].strides[d] * dims_[d];
      index_[d] = 0;
    }
  }

 private:
  const Dims dims_;  // a copy: callers often pass a temporary
  std::vector<int64_t> index_;
  std::array<StridedView, N> views_;
  std::array<int64_t, N> offsets_{};
};

// out[i] = in[walker offset of i]: the body of Expand, Transpose and Slice.
template <typename T>
void GatherStrided(const HostTensor& in, const StridedView& view, HostTensor& out) {
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  StridedWalker<1> walker(out.dims(), {view});
  for (int64_t i = 0, n = out.num_elements(); i < n; ++i, walker.Next()) {
    dst[i] = src[walker.offset(0)];
  }
}

}  // namespace graphserve
