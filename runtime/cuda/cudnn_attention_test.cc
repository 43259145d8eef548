// CudnnAttention against attention computed in double on the host from the
// same 16-bit inputs (Note [cuDNN attention]): contiguous and strided
// (transposed) operands, broadcast masks, shared k/v heads, both 16-bit
// types, and the rows where NaN and -inf decide the result. Skips without a
// GPU.

#include "runtime/cuda/cudnn_attention.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <random>
#include <vector>

#include "common/cuda_handles.h"
#include "gtest/gtest.h"
#include "runtime/cuda/kernel_test_util.h"

namespace graphserve {
namespace {

// `lhs = *expr` once expr (a StatusOr) is OK; fails the test otherwise.
#define GS_CONCAT_INNER(a, b) a##b
#define GS_CONCAT(a, b) GS_CONCAT_INNER(a, b)
#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                                \
  auto GS_CONCAT(status_or_, __LINE__) = (expr);                                       \
  ASSERT_TRUE(GS_CONCAT(status_or_, __LINE__).ok()) << GS_CONCAT(status_or_, __LINE__).status(); \
  lhs = *std::move(GS_CONCAT(status_or_, __LINE__))

bool HaveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

// Where an operand's element [b, h, r, c] lies, from its view's strides.
int64_t At(const AttentionStrides& s, int64_t b, int64_t h, int64_t r, int64_t c) {
  return b * s.batch + h * s.head + r * s.row + c * s.col;
}

// The attention in double: softmax(scale q k^T + mask) v per (b, h) row, NaN
// for a row whose scores are NaN or all -inf, and that row 0 under
// nan_to_zero (ONNX's chain, Where(IsNaN(p), 0, p) included).
std::vector<double> Reference(const FusedAttentionParams& p, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<float>* mask, size_t out_count) {
  std::vector<double> out(out_count, 0.0);
  std::vector<double> scores(p.key_rows);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads; ++h) {
      for (int64_t i = 0; i < p.query_rows; ++i) {
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < p.key_rows; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < p.head_dim; ++d) {
            dot += double(q[At(p.q, b, h, i, d)]) * double(k[At(p.k, b, h, j, d)]);
          }
          scores[j] = dot * p.scale + (mask ? double((*mask)[At(p.mask, b, h, i, j)]) : 0.0);
          max = std::max(max, scores[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < p.key_rows; ++j) sum += std::exp(scores[j] - max);
        for (int64_t c = 0; c < p.value_dim; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < p.key_rows; ++j) {
            acc += std::exp(scores[j] - max) / sum * double(v[At(p.v, b, h, j, c)]);
          }
          if (std::isnan(acc) && p.nan_to_zero) acc = 0;
          out[At(p.out, b, h, i, c)] = acc;
        }
      }
    }
  }
  return out;
}

// Contiguous strides of dims [d0, d1, d2, d3] read through `order`: view
// dim i is stored dim order[i] (a transposed layout such as BSHD).
AttentionStrides Layout(std::array<int64_t, 4> view_dims, std::array<int, 4> order) {
  std::array<int64_t, 4> stored;
  for (int i = 0; i < 4; ++i) stored[order[i]] = view_dims[i];
  std::array<int64_t, 4> stored_strides;
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    stored_strides[i] = stride;
    stride *= stored[i];
  }
  return {stored_strides[order[0]], stored_strides[order[1]], stored_strides[order[2]],
          stored_strides[order[3]]};
}

int64_t Extent(const AttentionStrides& s, std::array<int64_t, 4> dims) {
  return 1 + (dims[0] - 1) * s.batch + (dims[1] - 1) * s.head + (dims[2] - 1) * s.row +
         (dims[3] - 1) * s.col;
}

struct Case {
  FusedAttentionParams params;
  bool has_mask = true;
  // Mask: the last `masked_keys` keys of every row get `mask_value`, and
  // with `fully_masked_row` row 0 of batch 0 gets -inf everywhere.
  int64_t masked_keys = 0;
  float mask_value = -65504.0f;
  bool fully_masked_row = false;
  bool nan_in_q = false;
};

FusedAttentionParams Params(DType dtype, int64_t b, int64_t h, int64_t sq, int64_t sk,
                            int64_t d) {
  FusedAttentionParams p;
  p.dtype = dtype;
  p.batch = b;
  p.heads = h;
  p.query_rows = sq;
  p.key_rows = sk;
  p.head_dim = d;
  p.value_dim = d;
  p.scale = 1.0f / std::sqrt(float(d));
  const std::array<int, 4> bhsd = {0, 1, 2, 3};
  p.q = Layout({b, h, sq, d}, bhsd);
  p.k = Layout({b, h, sk, d}, bhsd);
  p.v = Layout({b, h, sk, d}, bhsd);
  p.out = Layout({b, h, sq, d}, bhsd);
  // [b, 1, 1, sk], as transformers' extended attention mask.
  p.mask = {sk, 0, 0, 1};
  return p;
}

void RunCase(const Case& c) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  const FusedAttentionParams& p = c.params;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto fill = [&](const AttentionStrides& s, std::array<int64_t, 4> dims) {
    std::vector<float> values(Extent(s, dims));
    for (float& x : values) x = normal(rng);
    return values;
  };
  std::vector<float> q = fill(p.q, {p.batch, p.heads, p.query_rows, p.head_dim});
  std::vector<float> k = fill(p.k, {p.batch, p.heads, p.key_rows, p.head_dim});
  std::vector<float> v = fill(p.v, {p.batch, p.heads, p.key_rows, p.value_dim});
  if (c.nan_in_q) q[At(p.q, p.batch - 1, 0, 1, 3)] = kNaN;
  std::vector<float> mask(Extent(p.mask, {p.batch, p.heads, p.query_rows, p.key_rows}), 0.0f);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t j = p.key_rows - c.masked_keys; j < p.key_rows; ++j) {
      mask[At(p.mask, b, 0, 0, j)] = c.mask_value;
    }
  }
  if (c.fully_masked_row) {
    for (int64_t j = 0; j < p.key_rows; ++j) mask[At(p.mask, 0, 0, 0, j)] = -kInf;
  }
  const size_t out_count = Extent(p.out, {p.batch, p.heads, p.query_rows, p.value_dim});
  ASSERT_OK_AND_ASSIGN(DeviceBuffer q_d, UploadAs(p.dtype, q));
  ASSERT_OK_AND_ASSIGN(DeviceBuffer k_d, UploadAs(p.dtype, k));
  ASSERT_OK_AND_ASSIGN(DeviceBuffer v_d, UploadAs(p.dtype, v));
  const DType score_type = AttentionScoreType(p);
  ASSERT_OK_AND_ASSIGN(DeviceBuffer mask_d, UploadAs(score_type, mask));
  std::vector<float> poison(out_count, 1234.0f);
  ASSERT_OK_AND_ASSIGN(DeviceBuffer out_d, UploadAs(score_type, poison));
  ASSERT_OK_AND_ASSIGN(CudnnHandle handle, CudnnHandle::Create());
  absl::StatusOr<std::unique_ptr<CudnnAttention>> attention =
      CudnnAttention::Create(handle.get(), p, c.has_mask, nullptr);
  ASSERT_TRUE(attention.ok()) << attention.status();
  ASSERT_OK_AND_ASSIGN(DeviceBuffer workspace,
                       DeviceBuffer::Allocate(std::max<size_t>((*attention)->workspace_bytes(), 1)));
  ASSERT_OK_AND_ASSIGN(CudaStream stream, CudaStream::Create());
  ASSERT_TRUE((*attention)
                  ->Enqueue(q_d.get(), k_d.get(), v_d.get(), c.has_mask ? mask_d.get() : nullptr,
                            out_d.get(), workspace.get(), stream.get())
                  .ok());
  ASSERT_EQ(cudaStreamSynchronize(stream.get()), cudaSuccess);
  ASSERT_OK_AND_ASSIGN(std::vector<float> got, DownloadAs(score_type, out_d, out_count));
  const std::vector<double> want =
      Reference(p, q, k, v, c.has_mask ? &mask : nullptr, out_count);
  // The output is a convex combination of v's rows (|v| <= ~5), rounded once
  // to the 16-bit type: half an ulp of 4 is 2^-9 in float16, 2^-6 in
  // bfloat16; tensor-core products are exact and accumulate in float.
  const double tolerance = p.dtype == DType::kBFloat16 ? 2.0 / 64 : 2.0 / 512;
  int checked = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads; ++h) {
      for (int64_t i = 0; i < p.query_rows; ++i) {
        for (int64_t col = 0; col < p.value_dim; ++col) {
          const int64_t at = At(p.out, b, h, i, col);
          if (std::isnan(want[at])) {
            EXPECT_TRUE(std::isnan(got[at])) << "b=" << b << " h=" << h << " row " << i;
          } else {
            EXPECT_NEAR(got[at], want[at], tolerance) << "b=" << b << " h=" << h << " row " << i
                                                      << " col " << col;
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, p.batch * p.heads * p.query_rows * p.value_dim);
}

TEST(CudnnAttentionTest, BertShapeFloat16) {
  Case c{Params(DType::kFloat16, 2, 4, 128, 128, 64)};
  c.masked_keys = 32;
  RunCase(c);
}

TEST(CudnnAttentionTest, BertShapeBFloat16) {
  Case c{Params(DType::kBFloat16, 2, 4, 128, 128, 64)};
  c.masked_keys = 32;
  c.mask_value = -3.38953139e38f;  // bfloat16's lowest
  RunCase(c);
}

TEST(CudnnAttentionTest, NoMask) {
  Case c{Params(DType::kFloat16, 1, 2, 64, 64, 64)};
  c.has_mask = false;
  RunCase(c);
}

// q, k, v and out as [b, s, h, d] in memory (the heads' Transposes read in
// place), sq != sk.
TEST(CudnnAttentionTest, HeadsInterleavedLayout) {
  FusedAttentionParams p = Params(DType::kFloat16, 2, 3, 40, 72, 64);
  const std::array<int, 4> bshd = {0, 2, 1, 3};
  p.q = Layout({2, 3, 40, 64}, bshd);
  p.k = Layout({2, 3, 72, 64}, bshd);
  p.v = Layout({2, 3, 72, 64}, bshd);
  p.out = Layout({2, 3, 40, 64}, bshd);
  Case c{p};
  c.masked_keys = 10;
  RunCase(c);
}

// A mask per query row, [1, 1, sq, sk] (a causal-style mask shared by the batch).
TEST(CudnnAttentionTest, MaskPerRow) {
  FusedAttentionParams p = Params(DType::kFloat16, 2, 2, 32, 32, 64);
  p.mask = {0, 0, 32, 1};
  Case c{p};
  c.masked_keys = 5;
  RunCase(c);
}

// One k/v head shared by every query head (multi-query attention).
TEST(CudnnAttentionTest, SharedKeyValueHead) {
  FusedAttentionParams p = Params(DType::kFloat16, 2, 4, 16, 24, 64);
  p.k = {24 * 64, 0, 64, 1};
  p.v = {24 * 64, 0, 64, 1};
  Case c{p};
  c.masked_keys = 3;
  RunCase(c);
}

TEST(CudnnAttentionTest, HeadDim128) {
  Case c{Params(DType::kFloat16, 1, 2, 16, 48, 128)};
  c.masked_keys = 4;
  RunCase(c);
}

TEST(CudnnAttentionTest, NanInQueryGivesNanRow) {
  Case c{Params(DType::kFloat16, 2, 2, 8, 16, 64)};
  c.nan_in_q = true;
  RunCase(c);
}

// A row masked with -inf everywhere, behind the chain's NaN guard: 0.
TEST(CudnnAttentionTest, FullyMaskedRowUnderNanGuardIsZero) {
  FusedAttentionParams p = Params(DType::kFloat16, 2, 2, 8, 16, 64);
  p.nan_to_zero = true;
  p.mask = {8 * 16, 0, 16, 1};  // [b, 1, sq, sk]
  Case c{p};
  c.fully_masked_row = true;
  RunCase(c);
}

// The TorchScript exporter's float16 SDPA: a float32 mask and output
// (float_scores), q, k and v [b, s, h, d] in memory; a NaN row under the
// guard.
TEST(CudnnAttentionTest, FloatScoresInterleavedLayout) {
  FusedAttentionParams p = Params(DType::kFloat16, 2, 3, 40, 40, 64);
  const std::array<int, 4> bshd = {0, 2, 1, 3};
  p.q = Layout({2, 3, 40, 64}, bshd);
  p.k = Layout({2, 3, 40, 64}, bshd);
  p.v = Layout({2, 3, 40, 64}, bshd);
  p.out = Layout({2, 3, 40, 64}, bshd);
  p.float_scores = true;
  p.nan_to_zero = true;
  Case c{p};
  c.masked_keys = 9;
  c.mask_value = -3.0e38f;  // beyond float16's range: the mask stays float32
  c.nan_in_q = true;
  RunCase(c);
}

// Without the guard a row of -inf is NaN, as ONNX's Softmax makes it.
TEST(CudnnAttentionTest, FullyMaskedRowWithoutNanGuardIsNan) {
  FusedAttentionParams p = Params(DType::kFloat16, 2, 2, 8, 16, 64);
  p.mask = {8 * 16, 0, 16, 1};  // [b, 1, sq, sk]
  Case c{p};
  c.fully_masked_row = true;
  RunCase(c);
}

// Under the guard a row with a NaN score is 0.
TEST(CudnnAttentionTest, NanInQueryUnderNanGuardIsZero) {
  FusedAttentionParams p = Params(DType::kBFloat16, 2, 2, 8, 16, 64);
  p.nan_to_zero = true;
  Case c{p};
  c.nan_in_q = true;
  RunCase(c);
}

TEST(CudnnAttentionTest, RefusesFloat32AndOddHeadDims) {
  FusedAttentionParams p = Params(DType::kFloat32, 1, 1, 8, 8, 64);
  EXPECT_EQ(CudnnAttention::Create(nullptr, p, true, nullptr).status().code(),
            absl::StatusCode::kUnimplemented);
  p = Params(DType::kFloat16, 1, 1, 8, 8, 60);
  EXPECT_EQ(CudnnAttention::Create(nullptr, p, true, nullptr).status().code(),
            absl::StatusCode::kUnimplemented);
  // k read down its head dim (a materialised k^T).
  p = Params(DType::kFloat16, 1, 1, 8, 8, 64);
  p.k = {8 * 64, 8 * 64, 1, 8};
  EXPECT_EQ(CudnnAttention::Create(nullptr, p, true, nullptr).status().code(),
            absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace graphserve
