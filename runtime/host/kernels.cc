#include "runtime/host/kernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"

namespace graphserve {

namespace {

// ---------------------------------------------------------------------------
// Kernel arguments and errors
// ---------------------------------------------------------------------------

struct KernelArgs {
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

std::string DTypeString(DType dtype) { return std::string(DTypeName(dtype)); }

absl::Status UnsupportedDType(const KernelArgs& args, DType dtype) {
  return args.Unimplemented("no host kernel for dtype ", DTypeString(dtype));
}

absl::Status RequireDType(const KernelArgs& args, const HostTensor& tensor, DType dtype,
                          const char* what) {
  if (tensor.dtype() == dtype) return absl::OkStatus();
  return args.Invalid(what, " should be ", DTypeString(dtype), ", got ",
                      DTypeString(tensor.dtype()));
}

absl::Status RequireSameDType(const KernelArgs& args, const HostTensor& a, const HostTensor& b) {
  if (a.dtype() == b.dtype()) return absl::OkStatus();
  return args.Invalid("operand dtypes differ: ", DTypeString(a.dtype()), " and ",
                      DTypeString(b.dtype()));
}

absl::Status RequireSameElementCount(const KernelArgs& args, const HostTensor& in,
                                     const HostTensor& out) {
  if (in.num_elements() == out.num_elements()) return absl::OkStatus();
  return args.Invalid("input ", DimsToString(in.dims()), " and output ", DimsToString(out.dims()),
                      " differ in element count");
}

// Binding writes every attribute out, but the scalar ones that ONNX gives a
// default are read with that default, so that a node built by hand (or a
// binding gap) still computes what ONNX would rather than multiplying by 0.
absl::StatusOr<float> OptionalFloatAttr(const KernelArgs& args, const std::string& name,
                                        float onnx_default) {
  absl::StatusOr<float> value = GetFloatAttr(args.node.attributes, name, onnx_default);
  if (!value.ok()) return args.Invalid(value.status().message());
  return value;
}

absl::StatusOr<int64_t> OptionalIntAttr(const KernelArgs& args, const std::string& name,
                                        int64_t onnx_default) {
  absl::StatusOr<int64_t> value = GetIntAttr(args.node.attributes, name, onnx_default);
  if (!value.ok()) return args.Invalid(value.status().message());
  return value;
}

// Calls fn(T{}) with the C++ type of `dtype`, limited to the types an op
// accepts so that each instantiation only sees operations its type supports.
template <typename Fn>
absl::Status VisitFloat(const KernelArgs& args, DType dtype, Fn&& fn) {
  if (dtype == DType::kFloat32) return fn(float{});
  return UnsupportedDType(args, dtype);
}

template <typename Fn>
absl::Status VisitNumeric(const KernelArgs& args, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      return fn(float{});
    case DType::kInt64:
      return fn(int64_t{});
    case DType::kBool:
      break;
  }
  return UnsupportedDType(args, dtype);
}

template <typename Fn>
absl::Status VisitAny(const KernelArgs& args, DType dtype, Fn&& fn) {
  if (dtype == DType::kBool) return fn(bool{});
  return VisitNumeric(args, dtype, std::forward<Fn>(fn));
}

// ---------------------------------------------------------------------------
// Strided index walking: broadcasting, Expand, Transpose and Slice
// ---------------------------------------------------------------------------

// Row-major strides of a dense tensor.
std::vector<int64_t> DenseStrides(const Dims& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * dims[d + 1];
  }
  return strides;
}

// Whether `in` broadcasts to `out` under ONNX (numpy) rules: dims aligned on
// the right, each input dim equal to the output dim or 1.
bool BroadcastsTo(const Dims& in, const Dims& out) {
  if (in.size() > out.size()) return false;
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] != out[lead + d] && in[d] != 1) return false;
  }
  return true;
}

// One stride per output dim for reading a dense `in` that broadcasts to
// `out`: 0 for the dims `in` lacks or holds once.
std::vector<int64_t> BroadcastStrides(const Dims& in, const Dims& out) {
  const std::vector<int64_t> dense = DenseStrides(in);
  std::vector<int64_t> strides(out.size(), 0);
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] != 1) strides[lead + d] = dense[d];
  }
  return strides;
}

absl::Status RequireBroadcast(const KernelArgs& args, const HostTensor& in, const Dims& out) {
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

// ---------------------------------------------------------------------------
// Elementwise ops
// ---------------------------------------------------------------------------

// Wrapping int64 arithmetic: ONNX leaves overflow unspecified, and signed
// overflow must not be undefined behaviour in the oracle.
int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t WrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t WrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// Truncating division; the caller has ruled out b == 0.
int64_t TruncDiv(int64_t a, int64_t b) {
  if (b == -1) return WrapSub(0, a);  // INT64_MIN / -1 overflows
  return a / b;
}

// C's remainder, with the sign of the dividend; the caller has ruled out
// b == 0.
int64_t TruncMod(int64_t a, int64_t b) {
  if (b == -1) return 0;  // INT64_MIN % -1 overflows
  return a % b;
}

// Python's %, with the sign of the divisor; the caller has ruled out b == 0.
int64_t FloorMod(int64_t a, int64_t b) {
  const int64_t r = TruncMod(a, b);
  // r and b differ in sign here, so r + b cannot overflow.
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

// a^b, exact for b >= 0; for b < 0 the truncation of the real result.
int64_t IntPow(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent % 2 == 0) ? 1 : -1;
    return 0;
  }
  int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = WrapMul(result, base);
    base = WrapMul(base, base);
    exponent >>= 1;
  }
  return result;
}

// Max and Min propagate NaN, as numpy's maximum/minimum (ONNX's reference).
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

// kFmod and kMod are ONNX Mod with fmod=1 and fmod=0 (Note [Canonical bound
// nodes]).
enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFmod, kMod, kPow, kMax, kMin };

template <typename T>
T ApplyBinary(BinaryOp op, T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    switch (op) {
      case BinaryOp::kAdd:
        return a + b;
      case BinaryOp::kSub:
        return a - b;
      case BinaryOp::kMul:
        return a * b;
      case BinaryOp::kDiv:
        return a / b;
      case BinaryOp::kMod:  // float32 is fmod=1 only: RunMod refuses kMod for it
      case BinaryOp::kFmod:
        return std::fmod(a, b);
      case BinaryOp::kPow:
        return static_cast<float>(std::pow(static_cast<double>(a), static_cast<double>(b)));
      case BinaryOp::kMax:
        return PropagatingMax(a, b);
      case BinaryOp::kMin:
        return PropagatingMin(a, b);
    }
  } else {
    switch (op) {
      case BinaryOp::kAdd:
        return WrapAdd(a, b);
      case BinaryOp::kSub:
        return WrapSub(a, b);
      case BinaryOp::kMul:
        return WrapMul(a, b);
      case BinaryOp::kDiv:
        return TruncDiv(a, b);
      case BinaryOp::kFmod:
        return TruncMod(a, b);
      case BinaryOp::kMod:
        return FloorMod(a, b);
      case BinaryOp::kPow:
        return IntPow(a, b);
      case BinaryOp::kMax:
        return PropagatingMax(a, b);
      case BinaryOp::kMin:
        return PropagatingMin(a, b);
    }
  }
  return T{};
}

// out[i] = fn(a[...], b[...]) with both operands broadcast to out's dims.
template <typename In, typename Out, typename Fn>
void BroadcastBinary(const HostTensor& a, const HostTensor& b, HostTensor& out, Fn fn) {
  const In* a_data = a.data<In>();
  const In* b_data = b.data<In>();
  Out* out_data = out.data<Out>();
  StridedWalker<2> walker(out.dims(), {StridedView{0, BroadcastStrides(a.dims(), out.dims())},
                                       StridedView{0, BroadcastStrides(b.dims(), out.dims())}});
  for (int64_t i = 0, n = out.num_elements(); i < n; ++i, walker.Next()) {
    out_data[i] = fn(a_data[walker.offset(0)], b_data[walker.offset(1)]);
  }
}

absl::Status CheckBinaryOperands(const KernelArgs& args) {
  RETURN_IF_ERROR(RequireSameDType(args, args.in(0), args.in(1)));
  RETURN_IF_ERROR(RequireBroadcast(args, args.in(0), args.out(0).dims()));
  return RequireBroadcast(args, args.in(1), args.out(0).dims());
}

absl::Status RunBinaryArithmetic(const KernelArgs& args, BinaryOp op) {
  RETURN_IF_ERROR(CheckBinaryOperands(args));
  RETURN_IF_ERROR(RequireSameDType(args, args.in(0), args.out(0)));
  return VisitNumeric(args, args.in(0).dtype(), [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, int64_t>) {
      // Every divisor element reaches some output element unless the output
      // is empty, so checking up front is exact.
      const bool divides = op == BinaryOp::kDiv || op == BinaryOp::kFmod || op == BinaryOp::kMod;
      if (divides && args.out(0).num_elements() > 0) {
        const int64_t* divisor = args.in(1).data<int64_t>();
        for (int64_t i = 0, n = args.in(1).num_elements(); i < n; ++i) {
          if (divisor[i] == 0) {
            return args.Invalid(op == BinaryOp::kDiv ? "integer division by zero"
                                                     : "integer modulo by zero");
          }
        }
      }
    }
    BroadcastBinary<T, T>(args.in(0), args.in(1), args.out(0),
                          [op](T a, T b) { return ApplyBinary<T>(op, a, b); });
    return absl::OkStatus();
  });
}

absl::Status RunMod(const KernelArgs& args) {
  ASSIGN_OR_RETURN(const int64_t fmod, OptionalIntAttr(args, "fmod", 0));
  if (fmod != 0 && fmod != 1) return args.Invalid("attribute fmod should be 0 or 1, got ", fmod);
  if (fmod == 0 && args.in(0).dtype() == DType::kFloat32) {
    return args.Invalid("fmod=0 is integer modulo; ONNX requires fmod=1 for float32");
  }
  return RunBinaryArithmetic(args, fmod == 1 ? BinaryOp::kFmod : BinaryOp::kMod);
}

absl::Status RunEqual(const KernelArgs& args) {
  RETURN_IF_ERROR(CheckBinaryOperands(args));
  RETURN_IF_ERROR(RequireDType(args, args.out(0), DType::kBool, "output"));
  return VisitAny(args, args.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    BroadcastBinary<T, bool>(args.in(0), args.in(1), args.out(0), [](T a, T b) { return a == b; });
    return absl::OkStatus();
  });
}

absl::Status RunWhere(const KernelArgs& args) {
  const HostTensor& cond = args.in(0);
  const HostTensor& x = args.in(1);
  const HostTensor& y = args.in(2);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireDType(args, cond, DType::kBool, "condition"));
  RETURN_IF_ERROR(RequireSameDType(args, x, y));
  RETURN_IF_ERROR(RequireSameDType(args, x, out));
  for (const HostTensor* operand : {&cond, &x, &y}) {
    RETURN_IF_ERROR(RequireBroadcast(args, *operand, out.dims()));
  }
  return VisitAny(args, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const bool* c = cond.data<bool>();
    const T* x_data = x.data<T>();
    const T* y_data = y.data<T>();
    T* out_data = out.data<T>();
    StridedWalker<3> walker(out.dims(), {StridedView{0, BroadcastStrides(cond.dims(), out.dims())},
                                         StridedView{0, BroadcastStrides(x.dims(), out.dims())},
                                         StridedView{0, BroadcastStrides(y.dims(), out.dims())}});
    for (int64_t i = 0, n = out.num_elements(); i < n; ++i, walker.Next()) {
      out_data[i] = c[walker.offset(0)] ? x_data[walker.offset(1)] : y_data[walker.offset(2)];
    }
    return absl::OkStatus();
  });
}

// out[i] = fn(in[i]) over same-shaped tensors.
template <typename T, typename Fn>
void MapElements(const HostTensor& in, HostTensor& out, Fn fn) {
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  for (int64_t i = 0, n = in.num_elements(); i < n; ++i) dst[i] = fn(src[i]);
}

absl::Status CheckUnaryOperand(const KernelArgs& args) {
  RETURN_IF_ERROR(RequireSameDType(args, args.in(0), args.out(0)));
  return RequireSameElementCount(args, args.in(0), args.out(0));
}

// Transcendental float ops: computed in double, rounded once to float.
absl::Status RunFloatMath(const KernelArgs& args, double (*fn)(double)) {
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  return VisitFloat(args, args.in(0).dtype(), [&](float) {
    MapElements<float>(args.in(0), args.out(0),
                       [fn](float x) { return static_cast<float>(fn(static_cast<double>(x))); });
    return absl::OkStatus();
  });
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double Sqrt(double x) { return std::sqrt(x); }
double Exp(double x) { return std::exp(x); }
double Log(double x) { return std::log(x); }
double Tanh(double x) { return std::tanh(x); }
double Erf(double x) { return std::erf(x); }

template <typename T>
T Relu(T x) {
  return x < T{0} ? T{0} : x;  // NaN passes through, as numpy's maximum(x, 0)
}
template <typename T>
T Abs(T x) {
  if constexpr (std::is_same_v<T, float>) return std::fabs(x);
  return x < 0 ? WrapSub(0, x) : x;
}
template <typename T>
T Neg(T x) {
  if constexpr (std::is_same_v<T, float>) return -x;
  return WrapSub(0, x);
}

enum class SignOp { kRelu, kAbs, kNeg };

absl::Status RunSignOp(const KernelArgs& args, SignOp op) {
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  return VisitNumeric(args, args.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    MapElements<T>(args.in(0), args.out(0), [op](T x) {
      switch (op) {
        case SignOp::kRelu:
          return Relu(x);
        case SignOp::kAbs:
          return Abs(x);
        case SignOp::kNeg:
          return Neg(x);
      }
      return x;
    });
    return absl::OkStatus();
  });
}

absl::Status RunLeakyRelu(const KernelArgs& args) {
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  ASSIGN_OR_RETURN(const float alpha, OptionalFloatAttr(args, "alpha", 0.01f));
  return VisitFloat(args, args.in(0).dtype(), [&](float) {
    MapElements<float>(args.in(0), args.out(0),
                       [alpha](float x) { return x < 0.0f ? alpha * x : x; });
    return absl::OkStatus();
  });
}

absl::Status RunCast(const KernelArgs& args) {
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameElementCount(args, in, out));
  const int64_t to = IntAttr(args.node.attributes, "to");
  if (to != static_cast<int64_t>(out.dtype())) {
    return args.Invalid("attribute to=", to, " does not match output dtype ",
                        DTypeString(out.dtype()));
  }
  return VisitAny(args, in.dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    return VisitAny(args, out.dtype(), [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* src = in.data<From>();
      To* dst = out.data<To>();
      for (int64_t i = 0, n = in.num_elements(); i < n; ++i) {
        const From x = src[i];
        if constexpr (std::is_same_v<To, bool>) {
          dst[i] = x != From{0};  // NaN is non-zero: true
        } else if constexpr (std::is_same_v<From, float> && std::is_same_v<To, int64_t>) {
          // Truncation toward zero; NaN and out-of-range values, which ONNX
          // leaves undefined, saturate instead of being undefined behaviour.
          constexpr float kLimit = 9.2233720368547758e18f;  // 2^63
          if (std::isnan(x)) {
            dst[i] = 0;
          } else if (x >= kLimit) {
            dst[i] = std::numeric_limits<int64_t>::max();
          } else if (x < -kLimit) {
            dst[i] = std::numeric_limits<int64_t>::min();
          } else {
            dst[i] = static_cast<int64_t>(x);
          }
        } else {
          dst[i] = static_cast<To>(x);
        }
      }
      return absl::OkStatus();
    });
  });
}

// ---------------------------------------------------------------------------
// Products
// ---------------------------------------------------------------------------

// A read-only float matrix with arbitrary element strides (a transposed
// operand is the same data with row and column strides swapped).
struct MatrixView {
  const float* data = nullptr;
  int64_t row_stride = 0;
  int64_t col_stride = 0;

  [[nodiscard]] float at(int64_t row, int64_t col) const {
    return data[row * row_stride + col * col_stride];
  }
};

// acc[j] = sum_k a(i, k) * b[k, j] in float64 for j < n. `b` is dense
// row-major [k_size, n]; the i-k-j order streams its rows contiguously.
void ProductRow(const MatrixView& a, int64_t i, const float* b, int64_t k_size, int64_t n,
                std::vector<double>& acc) {
  std::fill(acc.begin(), acc.end(), 0.0);
  for (int64_t k = 0; k < k_size; ++k) {
    const double a_ik = a.at(i, k);
    const float* b_row = b + k * n;
    for (int64_t j = 0; j < n; ++j) acc[j] += a_ik * static_cast<double>(b_row[j]);
  }
}

absl::Status RunMatMul(const KernelArgs& args) {
  const HostTensor& a = args.in(0);
  const HostTensor& b = args.in(1);
  HostTensor& out = args.out(0);
  for (const HostTensor* t : {&a, &b, static_cast<const HostTensor*>(&out)}) {
    RETURN_IF_ERROR(RequireDType(args, *t, DType::kFloat32, "operand"));
  }
  if (a.dims().empty() || b.dims().empty()) return args.Invalid("MatMul of a scalar");

  // numpy semantics: a 1-D A is a row [1, K], a 1-D B a column [K, 1]; the
  // added dim is not in the output.
  Dims a_dims = a.dims();
  Dims b_dims = b.dims();
  if (a_dims.size() == 1) a_dims.insert(a_dims.begin(), 1);
  if (b_dims.size() == 1) b_dims.push_back(1);
  const int64_t m = a_dims[a_dims.size() - 2];
  const int64_t k_size = a_dims.back();
  const int64_t n = b_dims.back();
  if (b_dims[b_dims.size() - 2] != k_size) {
    return args.Invalid("inner dims differ: A ", DimsToString(a.dims()), ", B ",
                        DimsToString(b.dims()));
  }

  const Dims a_batch(a_dims.begin(), a_dims.end() - 2);
  const Dims b_batch(b_dims.begin(), b_dims.end() - 2);
  Dims batch(std::max(a_batch.size(), b_batch.size()), 1);
  for (size_t d = 0; d < batch.size(); ++d) {
    const size_t from_right = batch.size() - d;
    const int64_t a_dim = from_right <= a_batch.size() ? a_batch[a_batch.size() - from_right] : 1;
    const int64_t b_dim = from_right <= b_batch.size() ? b_batch[b_batch.size() - from_right] : 1;
    batch[d] = a_dim == 1 ? b_dim : a_dim;
  }
  if (!BroadcastsTo(a_batch, batch) || !BroadcastsTo(b_batch, batch)) {
    return args.Invalid("batch dims do not broadcast: A ", DimsToString(a.dims()), ", B ",
                        DimsToString(b.dims()));
  }
  if (NumElements(batch) * m * n != out.num_elements()) {
    return args.Invalid("output ", DimsToString(out.dims()), " does not hold A ",
                        DimsToString(a.dims()), " x B ", DimsToString(b.dims()));
  }

  // Batch offsets in units of whole matrices, then scaled to elements.
  StridedWalker<2> walker(batch, {StridedView{0, BroadcastStrides(a_batch, batch)},
                                  StridedView{0, BroadcastStrides(b_batch, batch)}});
  std::vector<double> acc(n);
  float* out_data = out.data<float>();
  for (int64_t batch_index = 0, count = NumElements(batch); batch_index < count;
       ++batch_index, walker.Next()) {
    const MatrixView a_matrix{a.data<float>() + walker.offset(0) * m * k_size, k_size, 1};
    const float* b_matrix = b.data<float>() + walker.offset(1) * k_size * n;
    float* out_matrix = out_data + batch_index * m * n;
    for (int64_t i = 0; i < m; ++i) {
      ProductRow(a_matrix, i, b_matrix, k_size, n, acc);
      for (int64_t j = 0; j < n; ++j) out_matrix[i * n + j] = static_cast<float>(acc[j]);
    }
  }
  return absl::OkStatus();
}

absl::Status RunGemm(const KernelArgs& args) {
  const HostTensor& a = args.in(0);
  const HostTensor& b = args.in(1);
  const HostTensor* c = args.inputs.size() > 2 ? args.inputs[2] : nullptr;
  HostTensor& out = args.out(0);
  for (const HostTensor* t : {&a, &b, static_cast<const HostTensor*>(&out), c}) {
    if (t != nullptr) RETURN_IF_ERROR(RequireDType(args, *t, DType::kFloat32, "operand"));
  }
  if (a.dims().size() != 2 || b.dims().size() != 2) {
    return args.Invalid("A ", DimsToString(a.dims()), " and B ", DimsToString(b.dims()),
                        " should be 2-D");
  }
  ASSIGN_OR_RETURN(const int64_t trans_a_attr, OptionalIntAttr(args, "transA", 0));
  ASSIGN_OR_RETURN(const int64_t trans_b_attr, OptionalIntAttr(args, "transB", 0));
  ASSIGN_OR_RETURN(const double alpha, OptionalFloatAttr(args, "alpha", 1.0f));
  ASSIGN_OR_RETURN(const double beta, OptionalFloatAttr(args, "beta", 1.0f));
  const bool trans_a = trans_a_attr != 0;
  const bool trans_b = trans_b_attr != 0;

  const int64_t m = trans_a ? a.dims()[1] : a.dims()[0];
  const int64_t k_size = trans_a ? a.dims()[0] : a.dims()[1];
  const int64_t b_rows = trans_b ? b.dims()[1] : b.dims()[0];
  const int64_t n = trans_b ? b.dims()[0] : b.dims()[1];
  if (b_rows != k_size) {
    return args.Invalid("inner dims differ: A ", DimsToString(a.dims()), ", B ",
                        DimsToString(b.dims()), ", transA=", trans_a, ", transB=", trans_b);
  }
  const Dims out_dims = {m, n};
  if (out.dims() != out_dims) {
    return args.Invalid("output ", DimsToString(out.dims()), " should be ", DimsToString(out_dims));
  }
  if (c != nullptr) RETURN_IF_ERROR(RequireBroadcast(args, *c, out_dims));

  // A transposed is a strided view; B transposed is copied once into row-major
  // [K, N] so that the i-k-j loop reads it contiguously.
  const MatrixView a_view =
      trans_a ? MatrixView{a.data<float>(), 1, m} : MatrixView{a.data<float>(), k_size, 1};
  std::vector<float> b_transposed;
  const float* b_data = b.data<float>();
  if (trans_b) {
    b_transposed.resize(k_size * n);
    for (int64_t k = 0; k < k_size; ++k) {
      for (int64_t j = 0; j < n; ++j) b_transposed[k * n + j] = b_data[j * k_size + k];
    }
    b_data = b_transposed.data();
  }

  std::optional<StridedWalker<1>> c_walker;
  if (c != nullptr) {
    c_walker.emplace(out_dims, std::array{StridedView{0, BroadcastStrides(c->dims(), out_dims)}});
  }
  std::vector<double> acc(n);
  float* out_data = out.data<float>();
  for (int64_t i = 0; i < m; ++i) {
    ProductRow(a_view, i, b_data, k_size, n, acc);
    for (int64_t j = 0; j < n; ++j) {
      double y = alpha * acc[j];
      if (c_walker) {
        y += beta * static_cast<double>(c->data<float>()[c_walker->offset(0)]);
        c_walker->Next();
      }
      out_data[i * n + j] = static_cast<float>(y);
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Normalisations and reductions
// ---------------------------------------------------------------------------

absl::Status RunSoftmax(const KernelArgs& args) {
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  RETURN_IF_ERROR(RequireDType(args, args.in(0), DType::kFloat32, "input"));
  const int64_t outer = IntAttr(args.node.attributes, "outer");
  const int64_t axis_size = IntAttr(args.node.attributes, "axis_size");
  const int64_t inner = IntAttr(args.node.attributes, "inner");
  if (outer * axis_size * inner != args.in(0).num_elements()) {
    return args.Invalid("outer=", outer, " axis_size=", axis_size, " inner=", inner,
                        " do not cover input ", DimsToString(args.in(0).dims()));
  }
  const float* x = args.in(0).data<float>();
  float* y = args.out(0).data<float>();
  std::vector<double> exps(axis_size);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      const int64_t base = o * axis_size * inner + in;
      // Subtracting the max keeps exp() in range for large inputs.
      double max_value = -std::numeric_limits<double>::infinity();
      for (int64_t a = 0; a < axis_size; ++a) {
        max_value = std::max(max_value, static_cast<double>(x[base + a * inner]));
      }
      double sum = 0.0;
      for (int64_t a = 0; a < axis_size; ++a) {
        exps[a] = std::exp(static_cast<double>(x[base + a * inner]) - max_value);
        sum += exps[a];
      }
      for (int64_t a = 0; a < axis_size; ++a) {
        y[base + a * inner] = static_cast<float>(exps[a] / sum);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RunLayerNormalization(const KernelArgs& args) {
  const HostTensor& x = args.in(0);
  const HostTensor& scale = args.in(1);
  const HostTensor* bias = args.inputs.size() > 2 ? args.inputs[2] : nullptr;
  const int64_t outer = IntAttr(args.node.attributes, "outer");
  const int64_t inner = IntAttr(args.node.attributes, "inner");
  ASSIGN_OR_RETURN(const double epsilon, OptionalFloatAttr(args, "epsilon", 1e-5f));
  for (const HostTensor* t : {&x, &scale, bias, static_cast<const HostTensor*>(&args.out(0))}) {
    if (t != nullptr) RETURN_IF_ERROR(RequireDType(args, *t, DType::kFloat32, "operand"));
  }
  RETURN_IF_ERROR(RequireSameElementCount(args, x, args.out(0)));
  if (outer * inner != x.num_elements()) {
    return args.Invalid("outer=", outer, " inner=", inner, " do not cover input ",
                        DimsToString(x.dims()));
  }
  for (const HostTensor* t : {&scale, bias}) {
    if (t != nullptr && t->num_elements() != inner) {
      return args.Invalid("Scale and B should hold inner=", inner, " elements, got ",
                          DimsToString(t->dims()));
    }
  }
  // Mean and InvStdDev (outputs 1 and 2) are optional; a null slot is unused.
  float* mean_out = nullptr;
  float* inv_std_out = nullptr;
  for (size_t slot : {size_t{1}, size_t{2}}) {
    if (!args.has_output(slot)) continue;
    RETURN_IF_ERROR(RequireDType(args, args.out(slot), DType::kFloat32, "statistics output"));
    if (args.out(slot).num_elements() != outer) {
      return args.Invalid("statistics output ", DimsToString(args.out(slot).dims()),
                          " should hold outer=", outer, " elements");
    }
    (slot == 1 ? mean_out : inv_std_out) = args.out(slot).data<float>();
  }

  const float* x_data = x.data<float>();
  const float* scale_data = scale.data<float>();
  const float* bias_data = bias != nullptr ? bias->data<float>() : nullptr;
  float* y = args.out(0).data<float>();
  for (int64_t row = 0; row < outer; ++row) {
    const float* x_row = x_data + row * inner;
    double sum = 0.0;
    for (int64_t i = 0; i < inner; ++i) sum += x_row[i];
    const double mean = sum / static_cast<double>(inner);
    double squares = 0.0;
    for (int64_t i = 0; i < inner; ++i) {
      const double centred = x_row[i] - mean;
      squares += centred * centred;
    }
    const double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(inner) + epsilon);
    for (int64_t i = 0; i < inner; ++i) {
      double value = (x_row[i] - mean) * inv_std * scale_data[i];
      if (bias_data != nullptr) value += bias_data[i];
      y[row * inner + i] = static_cast<float>(value);
    }
    if (mean_out != nullptr) mean_out[row] = static_cast<float>(mean);
    if (inv_std_out != nullptr) inv_std_out[row] = static_cast<float>(inv_std);
  }
  return absl::OkStatus();
}

absl::Status RunReduceMean(const KernelArgs& args) {
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, in, out));
  RETURN_IF_ERROR(RequireDType(args, in, DType::kFloat32, "input"));
  // The output with reduced dims kept as 1 broadcasts to the input: walking
  // the input, each element accumulates into the output element it reduces to.
  Dims kept = in.dims();
  for (int64_t axis : IntsAttr(args.node.attributes, "axes")) {
    if (axis < 0 || axis >= static_cast<int64_t>(kept.size())) {
      return args.Invalid("axis ", axis, " out of range for input ", DimsToString(in.dims()));
    }
    kept[axis] = 1;
  }
  if (NumElements(kept) != out.num_elements()) {
    return args.Invalid("output ", DimsToString(out.dims()), " does not match reducing ",
                        DimsToString(in.dims()));
  }
  std::vector<double> sums(out.num_elements(), 0.0);
  const float* src = in.data<float>();
  StridedWalker<1> walker(in.dims(), {StridedView{0, BroadcastStrides(kept, in.dims())}});
  for (int64_t i = 0, n = in.num_elements(); i < n; ++i, walker.Next()) {
    sums[walker.offset(0)] += src[i];
  }
  // An empty reduction divides 0 by 0: NaN, as numpy's mean.
  const double count =
      out.num_elements() == 0 ? 1.0 : static_cast<double>(in.num_elements()) / out.num_elements();
  float* dst = out.data<float>();
  for (size_t i = 0; i < sums.size(); ++i) dst[i] = static_cast<float>(sums[i] / count);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Data movement
// ---------------------------------------------------------------------------

// Identity, Reshape, Flatten, Squeeze, Unsqueeze: the same bytes, new dims.
absl::Status RunReinterpret(const KernelArgs& args) {
  RETURN_IF_ERROR(RequireSameDType(args, args.in(0), args.out(0)));
  RETURN_IF_ERROR(RequireSameElementCount(args, args.in(0), args.out(0)));
  if (args.in(0).bytes() > 0) {
    std::memcpy(args.out(0).raw(), args.in(0).raw(), args.in(0).bytes());
  }
  return absl::OkStatus();
}

absl::Status RunConcat(const KernelArgs& args) {
  HostTensor& out = args.out(0);
  const int64_t axis = IntAttr(args.node.attributes, "axis");
  const int64_t rank = static_cast<int64_t>(out.dims().size());
  if (axis < 0 || axis >= rank) {
    return args.Invalid("axis ", axis, " out of range for output ", DimsToString(out.dims()));
  }
  int64_t axis_total = 0;
  for (const HostTensor* in : args.inputs) {
    RETURN_IF_ERROR(RequireSameDType(args, *in, out));
    bool matches = static_cast<int64_t>(in->dims().size()) == rank;
    for (int64_t d = 0; matches && d < rank; ++d) {
      matches = d == axis || in->dims()[d] == out.dims()[d];
    }
    if (!matches) {
      return args.Invalid("input ", DimsToString(in->dims()), " does not fit output ",
                          DimsToString(out.dims()), " on axis ", axis);
    }
    axis_total += in->dims()[axis];
  }
  if (axis_total != out.dims()[axis]) {
    return args.Invalid("inputs sum to ", axis_total, " on axis ", axis, ", output has ",
                        out.dims()[axis]);
  }
  // Each input contributes one contiguous block of bytes per outer index.
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out.dims()[d];
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (const HostTensor* in : args.inputs) {
      const size_t block = in->bytes() / static_cast<size_t>(outer);
      if (block == 0) continue;
      std::memcpy(dst, static_cast<const std::byte*>(in->raw()) + o * block, block);
      dst += block;
    }
  }
  return absl::OkStatus();
}

absl::Status RunTranspose(const KernelArgs& args) {
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, in, out));
  const std::vector<int64_t>& perm = IntsAttr(args.node.attributes, "perm");
  const size_t rank = in.dims().size();
  bool valid = perm.size() == rank && out.dims().size() == rank;
  std::vector<bool> seen(rank, false);
  for (size_t d = 0; valid && d < rank; ++d) {
    valid = perm[d] >= 0 && perm[d] < static_cast<int64_t>(rank) && !seen[perm[d]] &&
            out.dims()[d] == in.dims()[perm[d]];
    if (valid) seen[perm[d]] = true;
  }
  if (!valid) {
    return args.Invalid("perm [", absl::StrJoin(perm, ","), "] does not map input ",
                        DimsToString(in.dims()), " to output ", DimsToString(out.dims()));
  }
  // Output dim d walks input dim perm[d].
  const std::vector<int64_t> in_strides = DenseStrides(in.dims());
  StridedView view;
  for (size_t d = 0; d < rank; ++d) view.strides.push_back(in_strides[perm[d]]);
  return VisitAny(args, in.dtype(), [&](auto tag) {
    GatherStrided<decltype(tag)>(in, view, out);
    return absl::OkStatus();
  });
}

absl::Status RunSlice(const KernelArgs& args) {
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, in, out));
  const std::vector<int64_t>& starts = IntsAttr(args.node.attributes, "starts");
  const std::vector<int64_t>& steps = IntsAttr(args.node.attributes, "steps");
  const size_t rank = in.dims().size();
  if (starts.size() != rank || steps.size() != rank || out.dims().size() != rank) {
    return args.Invalid("starts and steps should have one entry per dim of input ",
                        DimsToString(in.dims()));
  }
  // Output index i reads input index starts + i * steps in every dim; check
  // that the first and last index of each non-empty dim are in range.
  const std::vector<int64_t> in_strides = DenseStrides(in.dims());
  StridedView view;
  for (size_t d = 0; d < rank; ++d) {
    if (out.dims()[d] > 0) {
      const int64_t last = starts[d] + (out.dims()[d] - 1) * steps[d];
      if (starts[d] < 0 || starts[d] >= in.dims()[d] || last < 0 || last >= in.dims()[d]) {
        return args.Invalid("dim ", d, ": start ", starts[d], " step ", steps[d], " count ",
                            out.dims()[d], " leaves input ", DimsToString(in.dims()));
      }
      view.base += starts[d] * in_strides[d];
    }
    view.strides.push_back(in_strides[d] * steps[d]);
  }
  return VisitAny(args, in.dtype(), [&](auto tag) {
    GatherStrided<decltype(tag)>(in, view, out);
    return absl::OkStatus();
  });
}

absl::Status RunExpand(const KernelArgs& args) {
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, in, out));
  RETURN_IF_ERROR(RequireBroadcast(args, in, out.dims()));
  const StridedView view{0, BroadcastStrides(in.dims(), out.dims())};
  return VisitAny(args, in.dtype(), [&](auto tag) {
    GatherStrided<decltype(tag)>(in, view, out);
    return absl::OkStatus();
  });
}

absl::Status RunGather(const KernelArgs& args) {
  const HostTensor& data = args.in(0);
  const HostTensor& indices = args.in(1);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, data, out));
  RETURN_IF_ERROR(RequireDType(args, indices, DType::kInt64, "indices"));
  const int64_t axis = IntAttr(args.node.attributes, "axis");
  if (axis < 0 || axis >= static_cast<int64_t>(data.dims().size())) {
    return args.Invalid("axis ", axis, " out of range for data ", DimsToString(data.dims()));
  }
  // data viewed as [outer, axis_dim, inner]; output as [outer, indices, inner].
  const int64_t axis_dim = data.dims()[axis];
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.dims()[d];
  const int64_t inner = axis_dim == 0 ? 0 : data.num_elements() / outer / axis_dim;
  const int64_t index_count = indices.num_elements();
  if (outer * index_count * inner != out.num_elements()) {
    return args.Invalid("output ", DimsToString(out.dims()), " does not match data ",
                        DimsToString(data.dims()), " gathered by indices ",
                        DimsToString(indices.dims()));
  }
  const int64_t* index_data = indices.data<int64_t>();
  std::vector<int64_t> resolved(index_count);
  for (int64_t j = 0; j < index_count; ++j) {
    const int64_t index = index_data[j];
    resolved[j] = index < 0 ? index + axis_dim : index;
    if (resolved[j] < 0 || resolved[j] >= axis_dim) {
      return args.Invalid("index ", index, " out of range for axis ", axis, " of size ", axis_dim);
    }
  }
  const size_t block = static_cast<size_t>(inner) * DTypeSize(data.dtype());
  if (block == 0) return absl::OkStatus();
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < index_count; ++j) {
      std::memcpy(dst, src + (o * axis_dim + resolved[j]) * block, block);
      dst += block;
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Dispatch
// ---------------------------------------------------------------------------

constexpr size_t kVariadic = std::numeric_limits<size_t>::max();

struct KernelEntry {
  std::function<absl::Status(const KernelArgs&)> run;
  size_t min_inputs;
  size_t max_inputs;  // kVariadic: no upper bound
  size_t max_outputs;
};

const std::map<std::string, KernelEntry>& KernelTable() {
  static const auto* table = [] {
    auto* t = new std::map<std::string, KernelEntry>;
    auto binary = [](BinaryOp op) {
      return KernelEntry{[op](const KernelArgs& a) { return RunBinaryArithmetic(a, op); }, 2, 2, 1};
    };
    auto math = [](double (*fn)(double)) {
      return KernelEntry{[fn](const KernelArgs& a) { return RunFloatMath(a, fn); }, 1, 1, 1};
    };
    auto sign = [](SignOp op) {
      return KernelEntry{[op](const KernelArgs& a) { return RunSignOp(a, op); }, 1, 1, 1};
    };
    auto unary = [](absl::Status (*fn)(const KernelArgs&)) { return KernelEntry{fn, 1, 1, 1}; };

    (*t)["Gemm"] = {RunGemm, 2, 3, 1};
    (*t)["MatMul"] = {RunMatMul, 2, 2, 1};
    (*t)["Add"] = binary(BinaryOp::kAdd);
    (*t)["Sub"] = binary(BinaryOp::kSub);
    (*t)["Mul"] = binary(BinaryOp::kMul);
    (*t)["Div"] = binary(BinaryOp::kDiv);
    (*t)["Mod"] = {RunMod, 2, 2, 1};
    (*t)["Pow"] = binary(BinaryOp::kPow);
    (*t)["Max"] = binary(BinaryOp::kMax);
    (*t)["Min"] = binary(BinaryOp::kMin);
    (*t)["Equal"] = {RunEqual, 2, 2, 1};
    (*t)["Where"] = {RunWhere, 3, 3, 1};
    (*t)["Sqrt"] = math(Sqrt);
    (*t)["Exp"] = math(Exp);
    (*t)["Log"] = math(Log);
    (*t)["Sigmoid"] = math(Sigmoid);
    (*t)["Tanh"] = math(Tanh);
    (*t)["Erf"] = math(Erf);
    (*t)["Relu"] = sign(SignOp::kRelu);
    (*t)["Abs"] = sign(SignOp::kAbs);
    (*t)["Neg"] = sign(SignOp::kNeg);
    (*t)["LeakyRelu"] = unary(RunLeakyRelu);
    (*t)["Cast"] = unary(RunCast);
    (*t)["Softmax"] = unary(RunSoftmax);
    (*t)["LayerNormalization"] = {RunLayerNormalization, 2, 3, 3};
    (*t)["ReduceMean"] = unary(RunReduceMean);
    (*t)["Concat"] = {RunConcat, 1, kVariadic, 1};
    for (const char* op : {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"}) {
      (*t)[op] = unary(RunReinterpret);
    }
    (*t)["Transpose"] = unary(RunTranspose);
    (*t)["Slice"] = unary(RunSlice);
    (*t)["Expand"] = unary(RunExpand);
    (*t)["Gather"] = {RunGather, 2, 2, 1};
    return t;
  }();
  return *table;
}

}  // namespace

absl::Status RunHostNode(const BoundNode& node, absl::Span<const HostTensor* const> inputs,
                         absl::Span<HostTensor* const> outputs) {
  const KernelArgs args{node, inputs, outputs};
  const auto& table = KernelTable();
  auto it = table.find(node.op_type);
  if (it == table.end()) return args.Unimplemented("no host kernel for this op");
  const KernelEntry& entry = it->second;
  if (inputs.size() < entry.min_inputs || inputs.size() > entry.max_inputs) {
    const std::string expected = entry.max_inputs == kVariadic
                                     ? absl::StrCat("at least ", entry.min_inputs)
                                     : absl::StrCat(entry.min_inputs, "..", entry.max_inputs);
    return args.Invalid("expected ", expected, " inputs, got ", inputs.size());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) return args.Invalid("input ", i, " is missing");
  }
  if (outputs.empty() || outputs[0] == nullptr || outputs.size() > entry.max_outputs) {
    return args.Invalid("expected 1..", entry.max_outputs, " outputs with the first present, got ",
                        outputs.size());
  }
  return entry.run(args);
}

}  // namespace graphserve
