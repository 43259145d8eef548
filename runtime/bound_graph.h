#pragma once
// A model bound to one batch size: every dim concrete, every shape-computing
// subgraph folded to constants, every node's attributes in canonical form.
// Executors (host and CUDA) and the memory planner work on this, never on the
// Model. See Note [Canonical bound nodes] for what each op's node carries.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/ir.h"
#include "common/tensor.h"

namespace graphserve {

using ValueId = int32_t;

struct BoundValue {
  std::string name;
  DType dtype = DType::kFloat32;
  Dims dims;  // concrete
  // Set when the value is known at plan time: an initializer, a Constant, or
  // the output of a folded subgraph. No node produces such a value; executors
  // read it from their weight store.
  std::shared_ptr<const HostTensor> constant;

  [[nodiscard]] bool is_constant() const { return constant != nullptr; }
  [[nodiscard]] size_t bytes() const {
    return static_cast<size_t>(NumElements(dims)) * DTypeSize(dtype);
  }
};

struct BoundNode {
  std::string name;
  std::string op_type;
  std::vector<ValueId> inputs;   // data inputs only, see the Note
  std::vector<ValueId> outputs;  // only outputs the model uses or returns
  Attributes attributes;         // canonical, see the Note
};

struct BoundGraph {
  int64_t batch_size = 1;
  std::map<std::string, int64_t> dim_values;  // BindOptions::dim_values
  std::vector<BoundValue> values;  // indexed by ValueId
  std::vector<BoundNode> nodes;    // a topological order: the eager execution order
  std::vector<ValueId> inputs;     // graph inputs, in the model's order
  std::vector<ValueId> outputs;    // graph outputs, in the model's order

  [[nodiscard]] const BoundValue& value(ValueId id) const { return values[id]; }
};

// Note [Canonical bound nodes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Binding (runtime/bind.h) resolves ONNX's many spellings of an op (opset
// differences, negative axes, defaults, attributes that became inputs) into
// one form per op, so kernels read parameters without re-deriving them. After
// binding:
//  * No node has only constant inputs: such nodes were run on the host at bind
//    time and their outputs became constants. Constant and Shape never appear.
//  * Inputs that ONNX uses to describe a shape (Reshape's `shape`, Expand's
//    `shape`, Slice's starts/ends/axes/steps, Unsqueeze's and Squeeze's `axes`,
//    the Reduce* ops' `axes` input) are consumed by binding; the node keeps its
//    data input only and its output dims say the rest. Omitted optional inputs
//    are dropped from the end of the input list.
//  * Every dim is concrete; output dims are the ONNX-inferred dims.
//  * All elementwise inputs share one dtype (binding inserts a Cast where
//    ONNX allows mixed types, e.g. Pow's exponent).
//
// Per op (T = float32 | int64 | bool as ONNX allows; "any" = all three):
//  Gemm       inputs A, B[, C]. Attrs transA, transB (0/1), alpha, beta (float).
//             C broadcasts to [M, N] (unidirectional). float32.
//  MatMul     inputs A, B; numpy matmul semantics: 1-D operands promoted and
//             the added dim removed, batch dims broadcast. float32.
//  Add Sub Mul Div Pow Max Min
//             two inputs, multidirectional broadcasting to the output dims.
//             float32 and int64 (int64 Div truncates toward zero). A variadic
//             Max/Min of n > 2 inputs is bound as a chain of two-input nodes;
//             of one input, as Identity.
//  Mod        two inputs, broadcast, float32 and int64; attr fmod (0/1).
//             fmod=1: C fmod (sign of the dividend); fmod=0: integer modulo
//             with the sign of the divisor (Python %), int64 only (ONNX
//             requires fmod=1 for floats). An int64 divisor of 0 is an
//             InvalidArgument on the host and yields 0 on the GPU, where a
//             kernel cannot report it.
//  Equal      two inputs of any T, broadcast; output bool.
//  Where      inputs cond (bool), X, Y of any T; broadcast over all three.
//  Sqrt Exp Log Sigmoid Tanh Erf Relu
//             one float32 input. Relu and Abs, Neg also accept int64.
//  Abs Neg    one input, float32 or int64.
//  LeakyRelu  one float32 input; attr alpha (float).
//  Floor Ceil Round Sin Cos Softplus Softsign Mish
//             one input of a float type (float16, bfloat16, float32, float64).
//  Elu Selu Celu ThresholdedRelu
//             the same; attrs alpha (and Selu's gamma), floats written out
//             with ONNX's defaults.
//  Sign       one input of a float type, int32 or int64.
//  PRelu      inputs X and slope of one type (a float type, int32, int64);
//             the slope broadcasts to X (unidirectional), Y has X's dims.
//  Identity Reshape Flatten Squeeze Unsqueeze
//             one input of any T; a pure reinterpretation of the same bytes
//             with the output dims. Executors may alias input and output.
//  Cast       one input; attr `to` (ONNX type number: 1 float32, 7 int64,
//             9 bool). float->int64 truncates toward zero; x->bool is x != 0.
//  Softmax    one float32 input viewed as [outer, axis_size, inner]; attrs
//             outer, axis_size, inner (ints). Softmax runs over axis_size for
//             each (outer, inner). (Opset < 13 flattens from `axis` to the end;
//             binding expresses both semantics in these three numbers.)
//  LayerNormalization
//             inputs X, Scale[, B]; X viewed as [outer, inner] rows; Scale and
//             B hold `inner` elements. Attrs outer, inner (ints), epsilon
//             (float). Outputs Y[, Mean, InvStdDev] (Mean and InvStdDev have
//             `outer` elements; only present when the model uses them).
//  RMSNormalization
//             inputs X, Scale: LayerNormalization's form without B (Scale
//             holds `inner` elements of X's dtype); attrs outer, inner,
//             epsilon; output Y. Note [RMS normalization] in
//             runtime/host/normalization_kernels.h.
//  RotaryEmbedding
//             inputs X, cos_cache, sin_cache[, position_ids (int64)]; attrs
//             batch, seq, heads, head_size, rotary_dim, interleaved,
//             heads_outer. Note [Rotary embedding] in
//             runtime/host/attention_kernels.h.
//  ReduceSum ReduceMean ReduceProd ReduceMax ReduceMin ReduceL1 ReduceL2
//  ReduceSumSquare ReduceLogSum ReduceLogSumExp
//             one input; attrs axes (sorted, non-negative; "all axes" is
//             spelled out; empty: each element reduced alone), keepdims
//             (0/1). Note [Reductions] in runtime/host/normalization_kernels.h.
//  ArgMax ArgMin
//             one input; attrs axis (non-negative), keepdims (0/1),
//             select_last_index (0/1); output int64.
//  Concat     n >= 1 inputs of any T; attr axis (non-negative).
//  Transpose  one input of any T; attr perm (full, explicit).
//  Slice      one data input of any T; attrs starts, steps (one per input dim,
//             starts already clamped into range, steps non-zero). Output element
//             with index i reads input index starts[d] + i[d] * steps[d] in each
//             dim d; the output dims give the counts.
//  Expand     one input of any T, broadcast to the output dims.
//  Gather     inputs data (any T), indices (int64, may be negative: index + dim
//             at run time); attr axis (non-negative).
//  Tile       one input of any T; each output dim is the input's times its
//             repeat (binding consumes the repeats).
//  Trilu      one input of any T, rank >= 2; attrs upper (0/1), k (clamped to
//             [-rows, cols] of the innermost two dims).
//  ScatterND  inputs data (any T), indices (int64, may be negative), updates;
//             attr reduction (ScatterReduction, runtime/data_movement_params.h).
//  ScatterElements
//             inputs data (any T), indices (int64, may be negative), updates
//             (the indices' dims); attrs axis (non-negative), reduction.
//  OneHot     inputs indices (int64), values [off, on] of any T; attrs axis
//             (of the output, non-negative), wrap_negative (0/1); the output
//             dims give the depth.
//  TopK       one input of a numeric T; attrs axis (non-negative), largest
//             (0/1); outputs values and (if used) int64 indices, k in their
//             dims; always sorted (Note [TopK order] in
//             runtime/host/data_movement_kernels.cc).
//  DepthToSpace and SpaceToDepth bind as Reshape -> Transpose -> Reshape.
//  Resize     inputs X (a float type), indices (int64), weights (float32):
//             sampling tables binding computed; attrs axes (the resized
//             dims, ascending), taps (entries per output coordinate of each),
//             extrapolation_value (float). Upsample binds as Resize. Note
//             [Resize sampling tables] in runtime/ops/resize.cc.
//  Einsum binds as ReduceSum, Transpose, Reshape, Slice and MatMul (Note
//             [Einsum lowering] in runtime/ops/einsum.cc).
//  Attention binds into MatMul, Softmax and elementwise nodes (Note
//  [Attention lowering] in runtime/ops/attention.cc).

}  // namespace graphserve
