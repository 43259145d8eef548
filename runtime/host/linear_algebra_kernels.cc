#include "runtime/host/linear_algebra_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "runtime/host/kernel_args.h"

namespace graphserve {

namespace {

// ---------------------------------------------------------------------------
// Products
// ---------------------------------------------------------------------------

// The products take float32, float16 and bfloat16 operands (binding's
// types; float64 too) and accumulate in float64, each output rounded once to
// its type.

// A read-only matrix of T with arbitrary element strides (a transposed
// operand is the same data with row and column strides swapped).
template <typename T>
struct MatrixView {
  const T* data = nullptr;
  int64_t row_stride = 0;
  int64_t col_stride = 0;

  [[nodiscard]] double at(int64_t row, int64_t col) const {
    return static_cast<double>(Widen(data[row * row_stride + col * col_stride]));
  }
};

// acc[j] = sum_k a(i, k) * b[k, j] in float64 for j < n. `b` is dense
// row-major [k_size, n]; the i-k-j order streams its rows contiguously.
template <typename T>
void ProductRow(const MatrixView<T>& a, int64_t i, const T* b, int64_t k_size, int64_t n,
                std::vector<double>& acc) {
  std::fill(acc.begin(), acc.end(), 0.0);
  for (int64_t k = 0; k < k_size; ++k) {
    const double a_ik = a.at(i, k);
    const T* b_row = b + k * n;
    for (int64_t j = 0; j < n; ++j) acc[j] += a_ik * static_cast<double>(Widen(b_row[j]));
  }
}

absl::Status RunMatMul(const HostKernelArgs& args) {
  const HostTensor& a = args.in(0);
  const HostTensor& b = args.in(1);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, a, b));
  RETURN_IF_ERROR(RequireSameDType(args, a, out));
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
  return VisitFloatTypes(args, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<double> acc(n);
    T* out_data = out.data<T>();
    for (int64_t batch_index = 0, count = NumElements(batch); batch_index < count;
         ++batch_index, walker.Next()) {
      const MatrixView<T> a_matrix{a.data<T>() + walker.offset(0) * m * k_size, k_size, 1};
      const T* b_matrix = b.data<T>() + walker.offset(1) * k_size * n;
      T* out_matrix = out_data + batch_index * m * n;
      for (int64_t i = 0; i < m; ++i) {
        ProductRow(a_matrix, i, b_matrix, k_size, n, acc);
        for (int64_t j = 0; j < n; ++j) out_matrix[i * n + j] = Narrow<T>(acc[j]);
      }
    }
    return absl::OkStatus();
  });
}

absl::Status RunGemm(const HostKernelArgs& args) {
  const HostTensor& a = args.in(0);
  const HostTensor& b = args.in(1);
  const HostTensor* c = args.inputs.size() > 2 ? args.inputs[2] : nullptr;
  HostTensor& out = args.out(0);
  for (const HostTensor* t : {&b, static_cast<const HostTensor*>(&out), c}) {
    if (t != nullptr) RETURN_IF_ERROR(RequireSameDType(args, a, *t));
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

  return VisitFloatTypes(args, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // A transposed is a strided view; B transposed is copied once into
    // row-major [K, N] so that the i-k-j loop reads it contiguously.
    const MatrixView<T> a_view =
        trans_a ? MatrixView<T>{a.data<T>(), 1, m} : MatrixView<T>{a.data<T>(), k_size, 1};
    std::vector<T> b_transposed;
    const T* b_data = b.data<T>();
    if (trans_b) {
      b_transposed.resize(k_size * n);
      for (int64_t k = 0; k < k_size; ++k) {
        for (int64_t j = 0; j < n; ++j) b_transposed[k * n + j] = b_data[j * k_size + k];
      }
      b_data = b_transposed.data();
    }

    std::optional<StridedWalker<1>> c_walker;
    if (c != nullptr) {
      c_walker.emplace(out_dims,
                       std::array{StridedView{0, BroadcastStrides(c->dims(), out_dims)}});
    }
    std::vector<double> acc(n);
    T* out_data = out.data<T>();
    for (int64_t i = 0; i < m; ++i) {
      ProductRow(a_view, i, b_data, k_size, n, acc);
      for (int64_t j = 0; j < n; ++j) {
        double y = alpha * acc[j];
        if (c_walker) {
          y += beta * static_cast<double>(Widen(c->data<T>()[c_walker->offset(0)]));
          c_walker->Next();
        }
        out_data[i * n + j] = Narrow<T>(y);
      }
    }
    return absl::OkStatus();
  });
}

}  // namespace

absl::Status HostGemm(const HostKernelArgs& args) { return RunGemm(args); }
absl::Status HostMatMul(const HostKernelArgs& args) { return RunMatMul(args); }

}  // namespace graphserve
