#pragma once
// The precision pass: a float32 model computed in float16 or bfloat16, with
// the ops that need float32's range and precision kept in it (Note [Model
// precision]); the third model pass (Note [Model passes]).

#include <optional>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/ir.h"

namespace graphserve {

// What a model computes in, per model (config.pbtxt's capture.precision,
// graphserve-capture prepare --precision).
enum class ModelPrecision {
  kFp32,  // as written: float32 exactly (the default)
  kTf32,  // as written, with float32 GEMMs and convolutions on TF32 tensor cores
  kFp16,  // converted to float16 by ConvertPrecision
  kBf16,  // converted to bfloat16 by ConvertPrecision
  // converted to float16 by ConvertPrecision, except the nodes one
  // calibration batch keeps in float32 (Note [Automatic precision] in
  // runtime/passes/autocast.h)
  kAuto,
};

// "fp32", "tf32", "fp16", "bf16", "auto": the spelling configs and flags use.
const char* ModelPrecisionName(ModelPrecision precision);

// The config's or the command line's spelling; empty is fp32. Any other
// text is InvalidArgument listing the choices; callers put the field or flag
// in front.
absl::StatusOr<ModelPrecision> ParseModelPrecision(absl::string_view text);

// Whether a model's float32 GEMMs and convolutions may use TF32 tensor
// cores: when its precision is tf32, or when the server allows it for every
// model (--allow-tf32, the switch before precision was per model). Under
// auto that switch reaches the GEMMs auto keeps in float32 too.
bool AllowsTf32(ModelPrecision precision, bool server_allows_tf32);

// Whether the precision pass keeps `op_type` in float32 (Note [Ops kept in
// float32]), whatever else it is told.
bool KeptInFloat32(const std::string& op_type);

// Whether the float32 output of `op_type` takes the dtype its readers want
// rather than the precision's (Constant, ConstantOfShape, Cast: Note [Model
// precision]). Such a node computes nothing in 16 bits: precision auto does
// not judge it (Note [Automatic precision]).
bool ChoosesOutputDType(const std::string& op_type);

// Whether `node` reads its input `input` in whatever dtype it comes, so that
// the pass leaves it as it is: a Cast's source, CastLike's input, what Shape
// and Size measure.
bool ReadsAnyDType(const Node& node, size_t input);

// Rewrites `model` to compute in `precision` (Note [Model precision]); fp32
// and tf32 leave it as it is, auto computes in float16. The nodes named in
// `float32_nodes` (by Node::name; a name two nodes share keeps both) stay in
// float32 as KeptInFloat32's ops do: precision auto's choice
// (ChooseFloat32Nodes, runtime/passes/autocast.h), or none. The model's
// values must bind (at batch 1, every shape dim at 1): binding's error
// otherwise, naming the node. Internal when the rewritten model's dtypes are
// not the ones the pass meant, naming the value (an op whose float output
// does not follow its float inputs, which the pass does not know).
absl::Status ConvertPrecision(Model& model, ModelPrecision precision,
                              const std::set<std::string>& float32_nodes = {});

// For a model served as written (fp32, tf32) that holds 16-bit float values
// (a graph input or an initializer) yet computes GEMMs or convolutions in
// float32: a sentence for the load's log saying how many, and that precision
// fp16 or bf16 computes them in the 16-bit type (Note [Half-precision models
// written in float32]). nullopt for any other model, for other precisions,
// and for a model whose values do not bind (binding names that problem later).
std::optional<std::string> Float32GemmsOfHalfModel(const Model& model, ModelPrecision precision);

// Note [Half-precision models written in float32]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch's TorchScript exporter writes a .half() transformer as a float32
// model from where a float16 value first meets a float32 one: in BERT, the
// first attention's scores, Cast up to add the float32 mask (a Where of
// float32 constants). Its type promotion carries float32 onwards and
// constant folding stores every weight it reaches as float32: BERT-base's
// file holds 71 float32 and 8 float16 initializers and computes 92 of its
// 96 MatMuls in float32 (DistilBERT 44 of 48, GPT-2 70 of 72,
// ViT-B/16 92 of 97). Run as written, which is what ONNX says and what ONNX
// Runtime computes, it took 2.0-5.4x of PyTorch's float16 graph on an H200;
// served with precision fp16 it took 0.92-1.11x at PyTorch's float16 error
// (bench/results/2026-11-30_0bcc3c3_ts_half_h200), and 0.87-1.00x once
// binding dropped the Casts and repeated nodes the rewrite left (Note
// [Repeated nodes] in runtime/bind.cc; bench/results/
// 2026-11-30_530947a_repeated_nodes_h200). The dynamo exporter
// writes float16 throughout. The server cannot tell such a file from a
// deliberate mixed-precision model, so it says so at load and computes as
// written.

// Note [Model precision]
// ~~~~~~~~~~~~~~~~~~~~~~
// fp16 and bf16 are a rewrite of the IR before binding, so that every node
// binds in its final dtype and the executors find its kernel by (op, dtype)
// as for a model exported in half precision; TensorRT's strongly typed mode
// reads precision the same way, as explicit Casts. Only float32 values
// change: float64, integers and the 16-bit floats a model already uses stay
// as written, so a model exported with .half() or with its own Casts runs
// as written.
//
// Each float32 value of the model gets a stored dtype, by its producer:
//  - a graph input: float32. Clients send the declared type; a Cast to the
//    target type right after it feeds the readers that compute in it, on
//    the device, inside the graph.
//  - a node kept in float32 (an op of KeptInFloat32, or a node named in
//    float32_nodes: one predicate, PrecisionRewrite::Kept, for both) and
//    any of its float outputs, such as LayerNormalization's Mean and
//    InvStdDev, which ONNX fixes to float32 anyway: float32.
//  - any other node: the target type.
//  - a constant (an initializer, a Constant, a ConstantOfShape) or a Cast to
//    float32, whose dtype the pass chooses: float32 when every reader wants
//    float32, else the target. Constants are converted once, here, rounded
//    once from float32 (ConvertFloats, common/tensor.h); a reader that wants
//    the other type gets its own copy, also rounded once from the source (the
//    float32 original for a constant, the same input for a Cast), rather than
//    a Cast that binding would fold again at every batch size.
// Readers want: a node kept in float32, float32; a graph output, float32 (its
// declared type: a Cast back at the end); Cast, CastLike's input and Shape,
// Size, whatever they are given; every other node, the target. Where a
// reader wants what the value is not stored as, one Cast per value and type
// serves all such readers. Casts are placed by what readers want, so none is
// made that a later step would cancel: a chain of kept ops (Softmax into
// Log, Exp into ReduceSum) stays in float32 without bouncing through the
// target, and a graph input read only by kept ops, or a kept op's result
// that is a graph output, has no Cast at all.
//
// The dtypes come from binding the float32 model at batch 1, every shape dim
// at 1 (InferValueDTypes: any extent binds for types, 1 is the smallest);
// binding the result again checks that every value has the dtype the pass
// meant.
//
// Note [Ops kept in float32]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// One list, in KeptInFloat32, modelled on PyTorch's autocast float32 list
// (aten/src/ATen/autocast_mode.cpp: exp, log, pow, reciprocal, softplus,
// layer_norm, group_norm, softmax, log_softmax, cumsum, sum, prod, norms,
// logsumexp), in ONNX's names: Exp, Log, Pow, Reciprocal, Softplus;
// LayerNormalization, GroupNormalization; Softmax, LogSoftmax; CumSum; the
// Reduce* ops that add or multiply (ReduceSum, ReduceMean, ReduceProd,
// ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp). Their
// float16 results overflow (exp, pow, sums of many terms: float16's largest
// value is 65504) or lose what the next op divides by. ReduceMax, ReduceMin
// and ArgMax select an element, exact in any type, and stay in the target;
// so do GEMMs and convolutions (tensor cores accumulate in float32) and the
// rest of the elementwise math, as in autocast.
//
// Note [Listed ops between 16-bit neighbours]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The list says where float32 values are needed; our kernels for its ops
// compute in float32 whatever their data's type, and round each output once
// to it (the README says so of every kernel; op_kernels_test checks each
// 16-bit kernel against the host's double-precision one). So a listed node
// whose float inputs are all 16-bit results of converted nodes (or weights
// the target type holds) and whose one output only converted nodes read
// gains nothing from float32: Cast up (exact), compute in float32, Cast down
// (one rounding) gives the bits the node gives in the target type, at two
// more kernels. Worse, the Casts break the chains the executors fuse: a
// Softmax in float32 between the scores' and the context's float16 GEMMs is
// no attention chain of one type, so cuDNN's fused attention cannot take it
// (BERT-base from a float32 export served in fp16 ran 1.36-1.75x of
// PyTorch's float16 graph on the H200, the same model exported in float16
// 0.87-0.97x). Such a node runs in the target type; a listed node that reads
// a graph input or another float32 node's value, or feeds a graph output, a
// float32 reader or a float32 operand (Resize's scales), stays in float32,
// so the chains the list protects (Exp into ReduceSum, a LayerNorm's result
// returned) keep their float32 values. The nodes precision auto keeps for
// their values (float32_nodes) always stay.

}  // namespace graphserve
