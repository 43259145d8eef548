#pragma once
// Private to //runtime/cuda:op_kernels: the parameter structs that the
// <family>_ops.cc factories compute at plan time, and the launch functions the
// .cu files define. Plain C++ and CUDA runtime types only, so that the
// factories compile without nvcc.
//
// Every launch function enqueues its kernel(s) on `stream` and returns
// cudaGetLastError(); none allocates, synchronises or copies between host and
// device. Device pointers are owned by the caller and must stay valid until
// the stream has run the work. A launch with no elements enqueues nothing.

#include <cuda_runtime.h>

#include <cstdint>

#include "common/dtype_table.h"
#include "runtime/data_movement_params.h"

namespace graphserve {
namespace op_kernels_internal {

// The largest tensor rank the kernels index; the factory refuses larger ones.
inline constexpr int kMaxRank = 8;
// Where reads three inputs; every other elementwise op fewer.
inline constexpr int kMaxMappedInputs = 3;
// Inputs one Concat launch copies; longer lists take several launches.
inline constexpr int kMaxConcatInputsPerLaunch = 8;

// Note [Strided layouts]
// ~~~~~~~~~~~~~~~~~~~~~~
// Elementwise ops, and the pure data movers (Expand, Transpose, Slice), map
// each element i of a dense row-major output to one element of each input at
// offset sum_d idx_d(i) * strides[input][d], where idx_d(i) decomposes i over
// `dims`. Broadcast dims have stride 0, a Transpose permutes the input's
// strides, a Slice multiplies them by its steps (possibly negative) and moves
// the base pointer to its start. At plan time, output dims of 1 are dropped
// and neighbouring dims that every input walks contiguously are merged, so
// [M,N]+[N] becomes a rank-2 "row bias" layout, x*scalar a rank-1 layout with
// no index arithmetic at all, and same-shape operands the contiguous (and
// vectorised) path.
struct StridedLayout {
  int64_t num_elements = 0;  // of the output
  int32_t rank = 1;          // after merging; at least 1
  // Every input reads element i for output element i.
  bool contiguous = false;
  // num_elements fits 31 bits: index decomposition may use 32-bit division.
  bool index32 = true;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxMappedInputs][kMaxRank] = {};  // in elements
};

enum class UnaryOp : int32_t {
  kCopy,  // same type; Expand, Transpose, Slice and a Cast to the same type
  kCast,  // any row of the datatype table to any other; contiguous layouts only
  kSqrt,
  kExp,
  kLog,
  kAbs,
  kNeg,
  kRelu,
  kLeakyRelu,
  kSigmoid,
  kTanh,
  kErf,
  kReciprocal,
  kGelu,      // 0.5 x (1 + erf(x / sqrt 2))
  kGeluTanh,  // Gelu's approximate="tanh" form
  kNot,       // bool -> bool
  kIsNaN,     // a float type -> bool
  kIsInf,     // a float type -> bool, as detect_negative / detect_positive say
  // Every float type, computed in float (double for float64), as the host
  // reference's formulas (runtime/host/elementwise_kernels.cc).
  kFloor,
  kCeil,
  kRound,  // halves to even
  kSin,
  kCos,
  kSoftplus,
  kSoftsign,
  kMish,
  kElu,              // alpha
  kSelu,             // alpha, gamma
  kCelu,             // alpha
  kThresholdedRelu,  // alpha
  kSign,             // the float types, int32 and int64
};

struct UnaryParams {
  UnaryOp op = UnaryOp::kCopy;
  DType input_type = DType::kFloat32;
  DType output_type = DType::kFloat32;
  float alpha = 0.0f;           // LeakyRelu, Elu, Selu, Celu, ThresholdedRelu
  float gamma = 0.0f;           // Selu
  bool detect_negative = true;  // IsInf
  bool detect_positive = true;  // IsInf
  StridedLayout layout;
};

cudaError_t LaunchUnary(const UnaryParams& params, const void* input, void* output,
                        cudaStream_t stream);

// kFmod and kMod are ONNX Mod with fmod=1 (float32 and int64) and fmod=0
// (int64 only). A kernel cannot report an error, so an int64 Mod by zero
// writes 0 (the host kernel refuses it instead).
enum class BinaryOp : int32_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFmod,
  kMod,
  kPow,
  kMax,
  kMin,
  // Comparisons: any input type (ordered ones not bool), output bool.
  kEqual,
  kLess,
  kGreater,
  kLessOrEqual,
  kGreaterOrEqual,
  // Logical ops: bool inputs and output.
  kAnd,
  kOr,
  kXor,
  // x for x > 0, else slope * x: the float types, int32 and int64 (the
  // slope, input b, broadcast to x).
  kPRelu,
};

// Both inputs have `input_type`; the output too, except the comparisons'
// and logical ops' (bool).
struct BinaryParams {
  BinaryOp op = BinaryOp::kAdd;
  DType input_type = DType::kFloat32;
  StridedLayout layout;
};

cudaError_t LaunchBinary(const BinaryParams& params, const void* a, const void* b, void* output,
                         cudaStream_t stream);

// cond (bool), x and y (value_type); the output has value_type.
struct WhereParams {
  DType value_type = DType::kFloat32;
  StridedLayout layout;
};

cudaError_t LaunchWhere(const WhereParams& params, const void* cond, const void* x,
                        const void* y, void* output, cudaStream_t stream);

// Note [Masked softmax]
// ~~~~~~~~~~~~~~~~~~~~~
// The middle of an attention chain that is not fused whole (a float32 one
// under FuseAttention::kHalf, Note [Fused attention]): Softmax over the last
// axis of Add(scores, mask), the mask broadcast to the scores, and the
// dynamo exporter's Where(IsNaN(p), 0, p), as one kernel (StepKind::
// kMaskedSoftmax): per layer three launches and four passes over the scores
// fewer. Each element is the unfused chain's: the sum is rounded to the type
// as the Add's output was, the Softmax is the same code, and a NaN output
// becomes 0.
inline constexpr int kMaxSoftmaxMaskDims = 4;

// Where row r of the scores [rows, cols] finds its mask: the sum over the
// scores' dims before the last (outermost first) of r's coordinate times the
// mask's element stride along that dim (0 where it broadcasts), then
// col_stride per column.
struct SoftmaxMask {
  int rank = 0;
  int64_t dims[kMaxSoftmaxMaskDims] = {};
  int64_t strides[kMaxSoftmaxMaskDims] = {};
  int64_t col_stride = 0;
  // Rows and mask offsets fit 32 bits: the row's coordinates use 32-bit
  // division, a quarter of the 64-bit one's instructions (which made the
  // kernel 2.4x the plain Softmax's time on BERT-base's scores, H200).
  bool index32 = false;
};

// float32 input viewed as [outer, axis_size, inner].
struct SoftmaxParams {
  DType dtype = DType::kFloat32;  // float32, float16 or bfloat16, computed in float
  int64_t outer = 0;
  int64_t axis_size = 0;
  int64_t inner = 0;
  // LogSoftmax: x - max - log(sum(exp(x - max))) instead of the quotient.
  bool log = false;
  // Note [Masked softmax]; inner 1 only. `mask` is read when LaunchSoftmax
  // gets one.
  SoftmaxMask mask;
  bool nan_to_zero = false;
};

// `mask` (of params.dtype, may be null): see Note [Masked softmax].
cudaError_t LaunchSoftmax(const SoftmaxParams& params, const void* input, void* output,
                          cudaStream_t stream, const void* mask = nullptr);

// Hardmax: `dtype` (a float type) viewed as [outer, axis_size, inner], as
// Softmax; the output has the input's dtype.
struct HardmaxParams {
  DType dtype = DType::kFloat32;
  int64_t outer = 0;
  int64_t axis_size = 0;
  int64_t inner = 0;
};

cudaError_t LaunchHardmax(const HardmaxParams& params, const void* input, void* output,
                          cudaStream_t stream);

// float32 X viewed as [rows, cols]; scale and bias hold `cols` elements.
struct LayerNormParams {
  // X, Scale, B and Y: float32, float16 or bfloat16, computed in float; the
  // statistics (Mean, InvStdDev) are float32.
  DType dtype = DType::kFloat32;
  int64_t rows = 0;
  int64_t cols = 0;
  float epsilon = 0.0f;
  // False: the row's mean is taken as 0, which makes this RMSNormalization
  // (Note [RMS normalization] in runtime/host/normalization_kernels.h).
  bool subtract_mean = true;
};

// `bias`, `mean` and `inv_std_dev` may be null (absent input / unused output).
cudaError_t LaunchLayerNorm(const LayerNormParams& params, const void* x, const void* scale,
                            const void* bias, void* y, float* mean, float* inv_std_dev,
                            cudaStream_t stream);

// A residual Add and the LayerNormalization of its result in one launch
// (the fusion pass's kAddLayerNorm): y = LayerNorm(a + b) over rows of
// `cols`, the sum rounded as the Add's own kernel rounds it; `sum`, when not
// null, receives a + b for the sum's other readers. `bias` may be null.
cudaError_t LaunchAddLayerNorm(const LayerNormParams& params, const void* a, const void* b,
                               const void* scale, const void* bias, void* y, void* sum,
                               cudaStream_t stream);

// InstanceNormalization and GroupNormalization (Note [Group normalization]
// in runtime/host/normalization_kernels.h): float32 X [batch, channels,
// spatial], normalised per (batch, group) row; scale and bias hold one value
// per group (affine_per_group) or per channel.
struct GroupNormParams {
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t groups = 1;
  int64_t spatial = 0;
  float epsilon = 0.0f;
  bool affine_per_group = false;
};

// Each row is split into chunks that blocks take side by side (Note [Group
// normalization on many blocks]); `partials` is device scratch of
// GroupNormWorkspaceBytes(params).
size_t GroupNormWorkspaceBytes(const GroupNormParams& params);
cudaError_t LaunchGroupNorm(const GroupNormParams& params, const float* x, const float* scale,
                            const float* bias, float* y, double* partials, cudaStream_t stream);

// Note [Reductions] in runtime/host/normalization_kernels.h.
enum class ReduceOp : int32_t {
  kSum,
  kMean,
  kProd,
  kMax,
  kMin,
  kL1,
  kL2,
  kSumSquare,
  kLogSum,
  kLogSumExp,
};

// Output element t reads the input at kept offset(t) + reduced offset(r) for
// every r < reduce_count; offsets decompose over the (merged) dims below.
// The float types accumulate in double, int32 and int64 (Sum, Prod, Max, Min,
// L1, SumSquare) in 64 bits, wrapping as the element type does.
struct ReduceParams {
  ReduceOp op = ReduceOp::kSum;
  DType dtype = DType::kFloat32;  // of the input and the output
  int64_t num_outputs = 0;
  int64_t reduce_count = 0;  // 0: every output is the op's empty value
  // The input is [num_outputs, reduce_count] row-major: the reduced axes are
  // the innermost ones. Rows are then reduced by a warp or a block each.
  bool rows_contiguous = false;
  int32_t kept_rank = 1;
  int64_t kept_dims[kMaxRank] = {};
  int64_t kept_strides[kMaxRank] = {};
  int32_t reduced_rank = 1;
  int64_t reduced_dims[kMaxRank] = {};
  int64_t reduced_strides[kMaxRank] = {};
};

cudaError_t LaunchReduce(const ReduceParams& params, const void* input, void* output,
                         cudaStream_t stream);

// ArgMax (is_max) or ArgMin of `dtype` (the float types, int32, int64)
// viewed as [outer, axis_dim, inner], to int64 [outer, inner]: the first
// winner, or the last with select_last; a NaN wins over every number.
struct ArgReduceParams {
  DType dtype = DType::kFloat32;
  bool is_max = true;
  bool select_last = false;
  int64_t outer = 0;
  int64_t axis_dim = 0;  // at least 1 when outer * inner > 0
  int64_t inner = 0;
};

cudaError_t LaunchArgReduce(const ArgReduceParams& params, const void* input, int64_t* output,
                            cudaStream_t stream);

// One Concat launch: the output viewed as [outer, out_row] elements, of which
// this launch writes columns [col_begin, col_begin + width), taken from up to
// kMaxConcatInputsPerLaunch inputs viewed as [outer, in_row[k]]. Input k
// covers launch-relative columns [col_start[k], col_start[k + 1]).
struct ConcatLaunch {
  int32_t elem_size = 4;  // bytes: 1, 2, 4 or 8
  int32_t count = 0;
  int64_t outer = 0;
  int64_t out_row = 0;
  int64_t col_begin = 0;
  int64_t width = 0;
  const void* inputs[kMaxConcatInputsPerLaunch] = {};  // set at enqueue
  int64_t in_row[kMaxConcatInputsPerLaunch] = {};
  int64_t col_start[kMaxConcatInputsPerLaunch + 1] = {};
};

cudaError_t LaunchConcat(const ConcatLaunch& launch, void* output, cudaStream_t stream);

// A Transpose that swaps the two innermost (merged) dims: the output is
// [batch, rows, cols] and the input [batch, cols, rows]. Goes through shared
// memory tiles so that both the reads and the writes coalesce.
struct TiledTransposeParams {
  int32_t elem_size = 4;  // bytes: 1, 2, 4 or 8
  int64_t batch = 0;
  int64_t rows = 0;
  int64_t cols = 0;
};

// The grid limits of the tiled kernel: larger problems use the strided map.
bool TiledTransposeFits(const TiledTransposeParams& params);

cudaError_t LaunchTiledTranspose(const TiledTransposeParams& params, const void* input,
                                 void* output, cudaStream_t stream);

// data viewed as [outer, axis_dim, inner]; the output as [outer, num_indices,
// inner]. An index outside [-axis_dim, axis_dim) yields zero bytes rather
// than an out-of-bounds read.
struct GatherParams {
  int32_t elem_size = 4;  // bytes: 1, 2, 4 or 8
  int64_t outer = 0;
  int64_t axis_dim = 0;
  int64_t num_indices = 0;
  int64_t inner = 0;
};

cudaError_t LaunchGather(const GatherParams& params, const void* data, const int64_t* indices,
                         void* output, cudaStream_t stream);

// GatherElements: output element i (of `dims`, the indices' dims) reads data
// at the same coordinates but along `axis`, where it takes indices[i]. An
// index outside [-axis_dim, axis_dim) yields zero bytes.
struct GatherElementsParams {
  int32_t elem_size = 4;  // bytes: 1, 2, 4 or 8
  int32_t rank = 1;
  int32_t axis = 0;
  int64_t num_elements = 0;
  int64_t axis_dim = 0;
  int64_t dims[kMaxRank] = {};          // of the output and the indices
  int64_t data_strides[kMaxRank] = {};  // in elements
};

cudaError_t LaunchGatherElements(const GatherElementsParams& params, const void* data,
                                 const int64_t* indices, void* output, cudaStream_t stream);

// GatherND: the output viewed as [batch, tuples, slice], the data as
// [batch, ...]; tuple t of batch b reads `index_count` indices and copies the
// slice at sum_j index_j * indexed_strides[j] of its batch. An index outside
// [-indexed_dims[j], indexed_dims[j]) yields zero bytes.
struct GatherNDParams {
  int32_t elem_size = 4;  // bytes: 1, 2, 4 or 8
  int32_t index_count = 1;
  int64_t batch = 1;
  int64_t tuples = 0;
  int64_t slice = 1;
  int64_t data_batch_stride = 0;  // in elements
  int64_t indexed_dims[kMaxRank] = {};
  int64_t indexed_strides[kMaxRank] = {};  // in elements
};

cudaError_t LaunchGatherND(const GatherNDParams& params, const void* data,
                           const int64_t* indices, void* output, cudaStream_t stream);

// CumSum of `dtype` (float32, float64, int32, int64) viewed as [outer,
// axis_dim, inner]: one thread a line, summing in the element type (float32
// in float32, as PyTorch's and ONNX Runtime's do).
struct CumSumParams {
  DType dtype = DType::kFloat32;
  int64_t outer = 0;
  int64_t axis_dim = 0;
  int64_t inner = 0;
  bool exclusive = false;
  bool reverse = false;
};

cudaError_t LaunchCumSum(const CumSumParams& params, const void* input, void* output,
                         cudaStream_t stream);

// RotaryEmbedding (Note [Rotary embedding] in
// runtime/host/attention_kernels.h): X, the caches and Y of `dtype` (float32,
// float16 or bfloat16, computed in float); one thread an output element.
struct RotaryParams {
  DType dtype = DType::kFloat32;
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t heads = 0;
  int64_t head_size = 0;
  int64_t rotary_dim = 0;
  int64_t cache_rows = 0;  // rows of the caches (max_position with position ids)
  bool interleaved = false;
  bool heads_outer = false;
};

// `position_ids` may be null (caches per (batch, seq) row).
cudaError_t LaunchRotaryEmbedding(const RotaryParams& params, const void* x, const void* cos_cache,
                                  const void* sin_cache, const int64_t* position_ids, void* y,
                                  cudaStream_t stream);

// Tile: output element i (of out_dims) reads the input at every coordinate
// modulo in_dims. The factory merges each dim whose repeat is 1 into its
// outer neighbour.
struct TileParams {
  int32_t elem_size = 4;  // bytes: 1, 2, 4 or 8
  int32_t rank = 1;
  int64_t num_elements = 0;  // of the output
  int64_t out_dims[kMaxRank] = {};
  int64_t in_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};  // in elements
};

cudaError_t LaunchTile(const TileParams& params, const void* input, void* output,
                       cudaStream_t stream);

// Trilu over `matrices` of [rows, cols]: element (i, j) is copied where
// j - i >= k (upper) or j - i <= k (lower), else zero bytes.
struct TriluParams {
  int32_t elem_size = 4;  // bytes: 1, 2, 4 or 8
  bool upper = true;
  int64_t k = 0;  // in [-rows, cols]
  int64_t matrices = 0;
  int64_t rows = 0;
  int64_t cols = 0;
};

cudaError_t LaunchTrilu(const TriluParams& params, const void* input, void* output,
                        cudaStream_t stream);

// Note [Scatter kernels]
// ~~~~~~~~~~~~~~~~~~~~~~
// A scatter launch copies the data into the output (one device-to-device
// copy, skipped when they are one buffer), then writes the updates:
//  * reduction none: one thread per update element, in parallel. ONNX
//    leaves duplicate indices undefined here; the GPU keeps one of them.
//  * add, mul, max, min: one thread per output position that updates can
//    collide on (ScatterND: an element of the slice; ScatterElements: a line
//    along the axis) walks its updates in index order, so duplicates
//    combine in the host's order and a replay gives the same bits as the
//    eager run, which atomics would not for floats. Its cost is the number
//    of updates per position, serially.
// A kernel cannot report an error: an index outside [-dim, dim) at run time
// (the host kernel's InvalidArgument) skips its update, so nothing is
// written out of bounds.

// ScatterND: data and output `data_elements` long; tuple t of `index_count`
// int64 indices addresses the slice at sum_j index_j * indexed_strides[j],
// which updates[t * slice, +slice) replace or reduce into.
struct ScatterNDParams {
  DType dtype = DType::kFloat32;
  ScatterReduction reduction = ScatterReduction::kNone;
  int32_t index_count = 1;
  int64_t data_elements = 0;
  int64_t tuples = 0;
  int64_t slice = 1;
  int64_t indexed_dims[kMaxRank] = {};
  int64_t indexed_strides[kMaxRank] = {};  // in elements
};

cudaError_t LaunchScatterND(const ScatterNDParams& params, const void* data,
                            const int64_t* indices, const void* updates, void* output,
                            cudaStream_t stream);

// ScatterElements: update i (of `dims`, the indices' and updates' dims)
// lands on the data at its own coordinates with coordinate `axis` replaced
// by indices[i].
struct ScatterElementsParams {
  DType dtype = DType::kFloat32;
  ScatterReduction reduction = ScatterReduction::kNone;
  int32_t rank = 1;
  int32_t axis = 0;
  int64_t data_elements = 0;
  int64_t num_updates = 0;
  int64_t axis_dim = 0;  // of the data
  int64_t dims[kMaxRank] = {};
  int64_t data_strides[kMaxRank] = {};  // in elements
};

cudaError_t LaunchScatterElements(const ScatterElementsParams& params, const void* data,
                                  const int64_t* indices, const void* updates, void* output,
                                  cudaStream_t stream);

// OneHot: the output viewed as [outer, depth, inner], the int64 indices as
// [outer, inner]; values holds [off, on] on the device.
struct OneHotParams {
  int32_t elem_size = 4;  // bytes: 1, 2, 4 or 8
  bool wrap_negative = true;
  int64_t outer = 0;
  int64_t depth = 0;
  int64_t inner = 0;
};

cudaError_t LaunchOneHot(const OneHotParams& params, const int64_t* indices, const void* values,
                         void* output, cudaStream_t stream);

// TopK of `dtype` (any but bool) viewed as [outer, axis_dim, inner]: the
// first k of each line in Note [TopK order]'s total order
// (runtime/host/data_movement_kernels.cc), into values and (unless null)
// int64 indices viewed as [outer, k, inner]. Lines up to kTopKSortLimit
// long sort in shared memory; longer ones pick their k elements one pass
// each.
inline constexpr int64_t kTopKSortLimit = 2048;

struct TopKParams {
  DType dtype = DType::kFloat32;
  bool largest = true;
  int64_t outer = 0;
  int64_t axis_dim = 0;
  int64_t inner = 0;
  int64_t k = 0;
};

cudaError_t LaunchTopK(const TopKParams& params, const void* input, void* values,
                       int64_t* indices, cudaStream_t stream);

// Resize through binding's sampling tables (Note [Resize sampling tables] in
// runtime/ops/resize.cc): output element i (of out_dims) sums, over every
// choice of one table entry per resized dim, the product of the chosen
// weights times the input at the chosen indices (its own coordinates in the
// other dims); a chosen index of -1 makes it extrapolation_value. Float
// types, computed in float (double for float64).
struct ResizeParams {
  DType dtype = DType::kFloat32;
  int32_t rank = 1;
  int32_t resized = 0;       // resized dims
  int64_t combinations = 1;  // product of their taps
  int64_t num_elements = 0;  // of the output
  float extrapolation_value = 0.0f;
  int64_t out_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};  // in elements
  // The k-th resized dim: its index, taps and first table entry.
  int32_t axis[kMaxRank] = {};
  int64_t taps[kMaxRank] = {};
  int64_t table_offset[kMaxRank] = {};
};

cudaError_t LaunchResize(const ResizeParams& params, const void* input, const int64_t* indices,
                         const float* weights, void* output, cudaStream_t stream);

// GridSample (Note [GridSample coordinates] in runtime/ops/grid_sample.cc):
// X [batch, channels, D1..Dr] of dtype, grid [batch, points.., r] of
// grid_dtype, output [batch, channels, points..]; computed in float (double
// for float64 X).
struct GridSampleParams {
  DType dtype = DType::kFloat32;
  DType grid_dtype = DType::kFloat32;
  GridInterpolation interpolation = GridInterpolation::kLinear;
  GridPadding padding = GridPadding::kZeros;
  bool align_corners = false;
  int32_t spatial = 2;  // r
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t points = 0;                         // per image: O1 * .. * Or
  int64_t in_dims[kMaxGridSpatialDims] = {};  // D1..Dr
};

cudaError_t LaunchGridSample(const GridSampleParams& params, const void* x, const void* grid,
                             void* output, cudaStream_t stream);

}  // namespace op_kernels_internal
}  // namespace graphserve
