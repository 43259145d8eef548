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

absl::Status RunMatMul(const HostKernelArgs& args) {
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

absl::Status RunGemm(const HostKernelArgs& args) {
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

}  // namespace

absl::Status HostGemm(const HostKernelArgs& args) { return RunGemm(args); }
absl::Status HostMatMul(const HostKernelArgs& args) { return RunMatMul(args); }

}  // namespace graphserve
