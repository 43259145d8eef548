#pragma once
// Precision auto's choice: which nodes of a float32 model stay in float32
// while the rest computes in float16, decided from one calibration batch by
// rules after NVIDIA's AutoCast (Note [Automatic precision]).

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tensor.h"
#include "runtime/executor.h"
#include "runtime/ir.h"

namespace graphserve {

// The extent a shape dim gets in the calibration batch when
// CalibrationOptions::dim_values does not give one: the smallest bucket a
// config without buckets is captured at (Note [Shape buckets] in
// server/shape_buckets.h), so that the batch sees the lengths served.
inline constexpr int64_t kCalibrationExtent = 16;

// AutoCast's thresholds, its data_max and init_max (Note [Automatic
// precision]). A node that reads or writes a computed float32 value beyond
// kMaxFloat16Activation in magnitude is kept: float16's largest value is 128
// times more, the headroom for what the next ops multiply or sum it into.
inline constexpr double kMaxFloat16Activation = 512;
// A node reading a float32 constant beyond this is kept: float16's largest
// finite value, past which the weight would round to infinity.
inline constexpr double kMaxFloat16Weight = 65504;
// A float32 value whose largest magnitude is below this, and not zero, is
// kept from float16 as the overflowing ones are: float16's smallest normal
// value (2^-14), below which it has fewer than 11 significant bits, and none
// below 6e-8 (Note [Automatic precision], the underflow rule).
inline constexpr double kMinFloat16Normal = 6.103515625e-05;
// A float32 value this large (within a factor 2 of float32's largest) is an
// infinity's stand-in, as finfo(float32).min in an attention mask is, and is
// judged as the infinity it stands for.
inline constexpr double kFloat32InfinityStandIn = 1.7014118346046923e38;  // 2^127

// The calibration batch.
struct CalibrationOptions {
  // Makes the executor the batch runs on, in float32 (TF32 off: the values
  // judged are float32's); null: the host reference executor. The server
  // gives its CUDA executors when the model loads on a GPU, where a
  // BERT-size batch takes milliseconds instead of the host's seconds.
  ExecutorFactory make_executor;
  // The extent of each shape dim (Note [Shape dims] in runtime/ir.h), by
  // name; a dim not given gets kCalibrationExtent, a name the model lacks is
  // binding's error.
  std::map<std::string, int64_t> dim_values;
  // One tensor per graph input, in Model::inputs order, of batch 1 and the
  // extents above. Empty: drawn by RandomInputs (runtime/executor.h) from
  // `seed`, floats standard normal, integers and booleans 0 or 1.
  std::vector<HostTensor> inputs;
  uint64_t seed = 1;
};

// Which rule keeps a node in float32 (Note [Automatic precision]).
enum class Float32Rule {
  kOp,        // its op is in KeptInFloat32, as under fp16
  kPromoted,  // it reads a float32 value, as autocast promotes (Note [Autocast's promotion])
  kValues,    // its values on the calibration batch
};

// A node precision auto keeps in float32.
struct Float32Node {
  std::string name;     // Node::name
  std::string op_type;  // for reports
  Float32Rule rule;     // the first that holds: kOp, then kValues, then kPromoted
  // Why, one clause per value rule that holds, "; " between: "op Softmax
  // kept in float32", "output max |x| 1.3e3 > 512", "input 'h' max |x|
  // 7.1e2 > 512", "weight 'w' max |w| 7.0e4 > 65504", "output inf from
  // finite inputs", "output max |x| 3.0e-9 < 6.1e-5"; or one of the
  // promotion: "reads float32 'ln'", "reads float32 weight 'pos'".
  std::string reason;
};

// Runs `model` (as imported, float32) on one calibration batch and returns
// the nodes to keep in float32, each with its reason, in model order; the
// rest go to float16 (ConvertPrecision with ModelPrecision::kAuto and these
// names). Errors: binding's, the executor's, and the run's (an integer
// input that the drawn 0 and 1 do not fit: give CalibrationOptions::inputs),
// after "calibration batch <batch and extents>: ".
absl::StatusOr<std::vector<Float32Node>> ChooseFloat32Nodes(const Model& model,
                                                            const CalibrationOptions& options = {});

// "precision auto keeps 40 nodes in float32: 25 for their op (as fp16), 10
// as autocast promotes and 5 for their values on the calibration batch: 'a'
// (reason), ... and 2 more": what a load logs of ChooseFloat32Nodes'
// answer, the first few nodes kept for their values named.
std::string Float32NodesSummary(const std::vector<Float32Node>& nodes);

// The names of the nodes of `nodes` kept for their values or promoted:
// ConvertPrecision's float32_nodes. The list's ops are ConvertPrecision's
// own to keep, and to run in the target between 16-bit neighbours (Note
// [Listed ops between 16-bit neighbours] in precision.h), as under fp16.
std::set<std::string> NodeNames(const std::vector<Float32Node>& nodes);

// Note [Automatic precision]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// fp16 keeps a fixed list of ops in float32 (Note [Ops kept in float32] in
// precision.h); a list cannot know the values a given model computes. A
// model whose residual stream grows past a few thousand, or that adds a
// -3.4e38 attention bias (torch.finfo(float32).min, as Hugging Face's
// exports do), overflows float16 in ops the list lets through. auto decides
// per node from one calibration batch, with the rules of NVIDIA's AutoCast
// for TensorRT (modelopt.onnx.autocast: its IORangeRule with data_max 512
// and InitializerRangeRule with init_max 65504) on top of the list. A node
// stays float32 when:
//   - op: its op is in KeptInFloat32, as under fp16; no value is needed.
//   - activations: a float32 value it writes, or a computed one it reads
//     (a graph input, another node's output), exceeds kMaxFloat16Activation
//     (512) in magnitude. Reads count as in AutoCast's rule: the reader of a
//     kept node's 1e5 would otherwise get it through a Cast to float16, as
//     infinity.
//   - weights: a float32 value it reads that is known at plan time (an
//     initializer, a Constant, anything binding folds) exceeds
//     kMaxFloat16Weight (65504): in float16 it would be infinite.
//   - non-finite: it writes NaN or an infinity while every float32 value it
//     reads is finite.
//   - underflow: a float32 value it reads or writes (weights too) is not
//     all zeros, yet all below kMinFloat16Normal in magnitude: in float16
//     it would be subnormal, with few significant bits, or zero. AutoCast
//     has no such rule, and a model whose activations shrink layer by layer
//     broke in float16 with it and without: EfficientNet-B0 with random
//     weights answered zeros (relative error 1.0) under fp16 and auto, and
//     in PyTorch's own float16.
//   - promotion: it reads a float32 value, where autocast would compute in
//     float32 (Note [Autocast's promotion]).
// Magnitudes are over finite elements, a judgement AutoCast does not make
// (its |x| > data_max counts an infinity): infinities carry through float16
// as through float32, so a node that only passes them on (Add of a -inf
// mask, Where choosing -inf) computes as well in float16, and a NaN an input
// brings says nothing about the node; but a node that makes one from finite
// values (a Div by zero, a MatMul past float32's range) is where even
// float32's range ended, and float16's ends sooner.
// Values of kFloat32InfinityStandIn (2^127) or more in magnitude count as
// infinities, in weights and activations alike: exporters write
// `(1 - mask) * finfo(float32).min` for an attention mask, a finite -3.4e38
// that means -inf, which float16 turns into the -inf it means. Judged by
// magnitude, the mask's Mul, its Add to the scores and (Note [Listed ops
// between 16-bit neighbours] in precision.h) the Softmax after it stayed
// float32, and the attention chain of BERT-base was not fused: 1.33-1.46x
// of PyTorch's float16 graph on the H200 where fp16 ran 0.88-0.94x. No
// computation means a value within a factor 2 of float32's largest; it
// overflows float32 at the next doubling anyway.
// Values read are those the node reads in the precision: not what Cast,
// Shape and Size read (ReadsAnyDType). Constant, ConstantOfShape and Cast
// take their readers' type (ChoosesOutputDType) and are not judged: a
// Constant of 1e6 is left to its readers, which the weight rule keeps. A
// node that neither reads nor writes float32 computes nothing in float16.
// Everything else converts to float16, and ConvertPrecision places the
// Casts for the kept nodes as for the list's ops (one predicate,
// PrecisionRewrite::Kept).
//
// The batch: one, as AutoCast's default, at batch 1 and every shape dim at
// kCalibrationExtent unless given; floats standard normal. Integer inputs
// (token ids, token types, attention masks) are drawn as RandomTensor draws
// them, 0 or 1: a random id up to an int64 would be out of range for any
// Gather of an embedding table, while 0 and 1 are rows of every table of two
// or more (a vocabulary, BERT's two token types), and as a mask they admit
// and mask positions at random, as masks of padded requests do. A model
// whose integer inputs mean something else (a length, an index into a table
// of one row), or whose float inputs are not normalized (raw pixels of 0 to
// 255), takes its batch through CalibrationOptions::inputs; the server and
// graphserve-capture always draw theirs.
//
// To see every intermediate value the batch is run on a copy of the model
// whose graph outputs are every float32 node output that a node reads or
// the model returns (binding then keeps every node that makes one, and
// executors already return graph outputs), in float32 exactly, on the
// executors the caller gives: the server's CUDA executor on the model's GPU,
// or the host reference. One batch decides, so values past a threshold on
// other inputs are not seen: the thresholds leave float16 headroom for that,
// as AutoCast's do. The server logs the count and the first kept nodes at
// load; graphserve-capture prepare lists each with its reason in
// capture_report.txt.
//
// Note [Autocast's promotion]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch's autocast sorts ops in three: the GEMMs and convolutions compute
// in float16 whatever they read (its lower_precision_fp list: ONNX's MatMul,
// Gemm, Conv, ConvTranspose, Einsum, PRelu and the recurrent ops); its
// float32 list computes in float32 (KeptInFloat32); every other op computes
// in the widest type it reads. A model's parameters stay float32, so
// Embedding, the position embeddings' Add, a layer scale's Mul and the
// residual Add that reads a LayerNorm's float32 result all compute in
// float32: a transformer's residual stream is float32 from the embeddings
// to the last LayerNorm, and only each GEMM's operands are rounded to
// float16. Without the rule auto ran that stream in float16, as fp16 does,
// and BERT-base, DistilBERT and ViT-B/16 ended 1.7-2.7x as far from float64
// as autocast (H200, bench/results/2026-11-30_d4f8b82_http_framing_autocast_
// h200, call 36); with it, 0.99-1.01x, at 0.43-0.66x of autocast's CUDA
// graph (bench/results/2026-11-30_f1649b8_auto_promotion_h200, call 49).
// So auto keeps a node that is neither lowered nor listed in float32 when
// it reads a float32 value:
//   - a parameter: a float32 constant of more than one element. A single
//     number (a scale, GELU's 0.5, a mask's finfo.min) is what PyTorch's
//     Python scalars are, which do not promote a tensor; a constant a node
//     reads as its configuration rather than as data (BatchNormalization's
//     statistics, Resize's scales, Clip's bounds, Pad's value) neither,
//     as cuDNN's batch norm takes float32 statistics for float16 data; and
//     the bias an Add puts on a lowered op's result is that GEMM's own, the
//     bias torch.nn.Linear adds in float16 and exporters split off.
//   - the result of a node computing in float32: one kept for its values, a
//     promoted one, or one of the list that reads such a result (the list's
//     own parameters, a LayerNorm's scale, do not count: the op computes in
//     float32 anyway, and ConvertPrecision runs it in float16 between 16-bit
//     neighbours, Note [Listed ops between 16-bit neighbours]).
// A graph input is no such value: the client's float32 goes to float16
// right after the input, as a model made .half() reads it. What a model
// does first with its input is to normalize it for a convolution, which
// reads float16 anyway; and a float attention mask given as an input would
// otherwise take the attention chain out of cuDNN's fused kernel.
// Constant, ConstantOfShape and Cast take their readers' type and are no
// float32 value of their own. A list node that ConvertPrecision keeps for
// its readers only (a graph output, Exp read by ReduceSum) does not promote
// them; they get its result through a Cast, as under fp16.

}  // namespace graphserve
