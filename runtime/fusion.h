#pragma once
// The fusion pass: which bound nodes the CUDA executor runs as one step, and
// what each step reads and writes. Pure graph rewriting, no CUDA: the
// executor (runtime/cuda/cuda_executor.cc) builds one kernel per step, and
// tools and tests can see the steps without a GPU. See Note [Fusion].

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/bound_graph.h"
#include "runtime/nn_params.h"

namespace graphserve {

enum class StepKind {
  kKernel,   // one node, the op's own kernel (runtime/cuda/cuda_kernel_registry.h)
  kGemm,     // Gemm/MatMul on cuBLASLt, maybe with scales in alpha and a bias Add in its epilogue
  kConv,     // Conv on cuDNN, maybe with a residual Add and an activation in its epilogue
  kErfGelu,  // PyTorch's five-node exact GELU chain as one kernel
  kPointwise,  // a region of elementwise nodes of one float type as one kernel (Note [Pointwise regions])
  kAddLayerNorm,  // a residual Add and the LayerNormalization (or RMSNormalization) of its sum
  kAttention,     // MatMul, scale, mask Add, Softmax, [NaN guard], MatMul (Note [Fused attention])
  // [mask Add], Softmax over the last axis, [NaN guard]: an attention chain's
  // middle when the chain is not fused whole (Note [Masked softmax] in
  // runtime/cuda/op_kernels_launch.h)
  kMaskedSoftmax,
};

// How a kAttention operand is read (Note [Attention views]): dim i of its
// view is dim perm[i] of the tensor the step reads or writes, that tensor's
// dims right-aligned to four.
using AttentionPerm = std::array<int, 4>;
inline constexpr AttentionPerm kIdentityPerm = {0, 1, 2, 3};

// What a kAttention step computes besides its operands.
struct AttentionFusion {
  float scale = 1.0f;        // of q k^T, from the Muls and Divs the step took
  bool has_mask = false;     // an additive mask, the step's fourth input
  bool nan_to_zero = false;  // Where(IsNaN(p), 0, p) follows the Softmax
  // q, k and v are 16-bit; the scores (cast up after q k^T), the mask and
  // the output float32, v cast up before the context MatMul (the Casts taken).
  bool float_scores = false;
  // Views of q, k^T, v and the output.
  AttentionPerm q_perm = kIdentityPerm;
  AttentionPerm k_perm = kIdentityPerm;
  AttentionPerm v_perm = kIdentityPerm;
  AttentionPerm out_perm = kIdentityPerm;
};

struct FusedStep {
  StepKind kind = StepKind::kKernel;
  // The bound nodes the step runs, ascending; `anchor` is the one whose op
  // the step is (the Gemm, the Conv, the chain's first node).
  std::vector<int> nodes;
  int anchor = 0;
  // Values the step's kernel reads, in the kernel's order, and writes.
  //  kGemm: A, B (unless gemm_weight_transposed), and C when GemmReadsC; kConv: X, W, [B], [residual];
  //  kErfGelu: x; kPointwise: the region's tensor inputs (scalar constants
  //  are compiled in); kAddLayerNorm: the Add's two inputs, then the
  //  LayerNorm's scale and [bias], writing the LayerNorm's output and, when
  //  read elsewhere, the sum; kAttention: q [..., Sq, D], k^T [..., D, Sk],
  //  v [..., Sk, Dv] and [mask], writing [..., Sq, Dv], each seen through
  //  its AttentionPerm; kMaskedSoftmax: the scores and [mask]; kKernel: the
  //  node's inputs.
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  // kGemm: a column bias taken from a following Add (-1: none).
  ValueId gemm_bias = -1;
  // kGemm: the product of the scale constants taken from Muls and Divs
  // around it, into the GEMM's alpha.
  float gemm_scale = 1.0f;
  // kGemm: B is a 2-D constant the kernel reads from a transposed copy of
  // its own (Note [K-major weights]); it is then not among `inputs`, which
  // are A and [C].
  bool gemm_weight_transposed = false;
  // kGemm of a MatMul: A / B is read through a swap of its last two dims, a
  // Transpose the step took (Note [Transposed GEMM operands]); the input is
  // that Transpose's.
  bool gemm_trans_a = false;
  bool gemm_trans_b = false;
  // kGemm, a MatMul of rank-3 operands: A, B (as stored, after any swap of
  // their last two dims) or the result are the Transpose (1 0 2) of the
  // input (output) the step reads (writes) in place (Note [Batch-swapped
  // GEMM operands]).
  bool gemm_swapped_a = false;
  bool gemm_swapped_b = false;
  bool gemm_swapped_d = false;
  // kConv: what follows the convolution in its epilogue.
  bool conv_residual = false;
  ActivationParams conv_activation;
  // kConv: how x, y and the residual lie (Note [Channels-last
  // convolutions]). When x or y is NHWC the kernel reads its own channels-
  // last copy of the constant W, which is then not among `inputs` (X, [B],
  // [residual]).
  ConvLayout conv_x_layout = ConvLayout::kNCHW;
  ConvLayout conv_y_layout = ConvLayout::kNCHW;
  ConvLayout conv_residual_layout = ConvLayout::kNCHW;
  // kKernel of a MaxPool, AveragePool, GlobalAveragePool or GlobalMaxPool:
  // how its x (and a windowed pool's y) lie (Note [Channels-last
  // convolutions]).
  ConvLayout pool_layout = ConvLayout::kNCHW;
  // kAttention: how the chain is read and what it computes.
  AttentionFusion attention;
  // kMaskedSoftmax: whether a mask is added (the second input) and the NaN
  // guard follows.
  bool softmax_has_mask = false;
  bool softmax_nan_to_zero = false;
};

// Which attention chains become kAttention steps (Note [Fused attention]).
enum class FuseAttention {
  kNone,
  // Float16 and bfloat16 chains, which run on cuDNN's fused engines (Note
  // [cuDNN attention]): one kernel where the chain runs ten.
  kHalf,
  // kHalf's, and float32 chains over at most kShortFloat32AttentionKeys
  // keys and of at least kMinFusedFloat32AttentionRows query rows, on our
  // own kernel: over so few keys the chain's GEMMs are small and its
  // launches cost more than the kernel's FMAs, as long as the kernel has
  // rows enough to fill the GPU. The default. On the H200, HF Swin-T in
  // float32 (49-key windows) ran 0.65x / 0.83x of PyTorch's graph at batch
  // 1 / 8 fused, 0.85x / 0.87x unfused; the small encoder of
  // bench/export_models.py (16 keys, 64 or 512 query rows) lost fused: 1.39x
  // against 1.28x at batch 1.
  kHalfAndShort,
  // Every float32 chain too. Over longer sequences our kernel's float FMAs
  // lose to the chain's cuBLASLt GEMMs on the H200: ViT-B/16 (197 keys) in
  // float32 ran 0.75x of PyTorch's graph fused against 0.67x unfused,
  // BERT-base in float16 (on our kernel, before cuDNN's) 1.61x against 1.24x.
  kAll,
};

// The float32 attention FuseAttention::kHalfAndShort fuses: at most this
// many keys, and at least this many query rows over the batch and heads (our
// kernel gives a block 16 rows: 2048 rows are about one wave of blocks over
// an H200's 132 SMs).
inline constexpr int64_t kShortFloat32AttentionKeys = 64;
inline constexpr int64_t kMinFusedFloat32AttentionRows = 2048;

struct FusionOptions {
  // Fuse across nodes at all; off gives one step per node (and still lets a
  // Gemm take its own C as a bias, which is not fusion across nodes).
  bool fuse = true;
  FuseAttention fuse_attention = FuseAttention::kHalfAndShort;
  // Float32 GEMMs read their constant 2-D weights K-major (Note [K-major
  // weights]): what TF32 on Hopper's tensor cores wants.
  bool k_major_float32_weights = false;
  // 16-bit convolutions hand each other their outputs channels last (Note
  // [Channels-last convolutions]); off: every value NCHW.
  bool channels_last_convs = true;
};

// Note [Transposed GEMM operands]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// cuBLASLt reads either operand transposed at no cost. So a MatMul takes a
// Transpose of its operand that swaps the last two dims, or the dynamo
// exporter's batched swap (Reshape to three dims, Transpose 0 2 1, Reshape
// back: its k^T), when the MatMul is its only reader, and reads the
// Transpose's input with op(T): attention's q k^T in a chain not fused whole
// loses a copy of k per layer (BERT-base, ViT under TF32 and float32).
//
// Note [Batch-swapped GEMM operands]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// nn.MultiheadAttention splits its heads by folding them into the batch:
// q [seq, batch * heads, d] is transposed (1 0 2) to [batch * heads, seq,
// d] for the batched MatMuls, as are k and v, and their output goes back
// through the same Transpose: four copies per layer. cuBLASLt reads a batch
// of matrices at any stride and their rows at any leading dimension, so a
// MatMul of two rank-3 operands with one batch takes such a Transpose of
// either operand (after the swap of its last two dims, Note [Transposed GEMM
// operands]) when it is the Transpose's only reader, and of its result when
// the Transpose is the result's only reader: a stored [rows, batch, cols]
// value is read (written) with batches cols elements apart and rows batch *
// cols apart. Neither side's Transpose is a graph output's last copy: a
// taken Transpose's output that is a graph output stays a step.

// Note [K-major weights]
// ~~~~~~~~~~~~~~~~~~~~~~
// Hopper's warpgroup MMA reads TF32 operands only K-major (16-bit operands
// either way). An exported MatMul weight is [K, N], N-major: with it
// cuBLASLt falls back to Ampere's TF32 kernels and, for BERT-base's first
// FFN GEMM at batch 1, to a float FMA kernel 3x slower than PyTorch's (H200
// profile, bench/results/2026-11-29_*_tf32_*). PyTorch's Linear keeps its
// weight [N, K]. So under TF32 a float32 MatMul, or a Gemm without transB,
// whose B is a 2-D constant reads a transposed copy the weight store keeps
// once per model (WeightLayout::kTransposed), with op(B) = B^T: the same
// products, summed in the kernel's own order.

// Note [Channels-last convolutions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// cuDNN's tensor-core engines for 16-bit convolutions read and write NHWC
// (channels innermost). Given NCHW, as ONNX lays tensors out, they
// transpose x, w and y around each convolution in kernels of their own: on
// the H200, ResNet-50 in float16 at batch 1 spent 224 of its 860 us of
// kernel time (ncu) in 54 such transposes, and at batch 8 311 of 1515 us;
// 5 more convolutions fell back to an NCHW kernel without tensor cores
// (bench/results/2026-11-30_bf4fc72_channels_last_h200, call 50). PyTorch's
// channels_last and torch.compile keep such a network NHWC throughout.
// Here the bound graph stays NCHW, and only values that pass from one
// convolution to the next may change layout. Eligible: the output of a
// float16 or bfloat16 Conv step (4-D, after its epilogue, W a constant, not
// depthwise) that only such Conv steps read, as their x or as the residual
// of their epilogue, and that is no graph output and no alias op (Reshape,
// Flatten) reads. Whether an eligible value goes NHWC is a count of the
// transposes it saves: a convolution that is no GEMM over NCHW data wants
// both its x and y NHWC (one saved per side), while a 1x1 convolution of
// stride 1 and one group reads NCHW as it lies, so only a change of layout
// between its x and y costs one; an epilogue reading its residual in the
// other layout costs half (a strided read). Values that such a change would
// separate are decided together (a component), NHWC when the component
// saves more than it costs. So ResNet's stages go NHWC end to end, while in
// MobileNet's and EfficientNet's inverted residuals, whose 1x1 convolutions
// sit between depthwise ones and squeeze-excitation, everything stays NCHW.
// Depthwise convolutions were measured slower NHWC at batch 1 (H200, the
// same folder, call 52: EfficientNet-B0 622 against 509 us, MobileNetV3
// 452 against 365 us, with depthwise steps NHWC), as were those 1x1
// convolutions made to change layout (579 and 437 us without depthwise
// steps, under a rule without the count); with the count both run as NCHW
// (call 53), and ResNet-50 at 0.72x of its all-NCHW time. Everything else
// (pointwise regions, Concat, graph outputs, pools but as below) sees NCHW. A Conv
// step with x or y NHWC reads w as [K, R, S, C/groups], a copy the weight
// store keeps once (WeightLayout::kChannelsLast). cuDNN takes each
// tensor's layout from its strides, so a step whose x is NCHW (after a
// MaxPool) and y NHWC is one operation graph; the epilogue indexes y in its
// layout and the residual in its own.
//
// Pools between convolutions pass the layout on. In ResNet-50 the stem's
// output goes through a 3x3 MaxPool to the first stage, and the last stage's
// through a GlobalAveragePool to the classifier: with both NCHW the stem's
// 7x7 convolution ran on an Ampere kernel (377 us at batch 64 in float16 on
// the H200, against 118 us for torch.compile's channels-last one) and cuDNN
// transposed around it and the stages' ends (294 us), call 90 in
// bench/results/2026-12-01_ef12d95_ensemble_device_tensors_depthwise_h200.
// So a 16-bit 4-D MaxPool or AveragePool reads and writes NHWC when its x
// is a channels-last value (its x and y are decided together, one layout for
// both), and a global pool reads either layout, its [N, C, 1, 1] output the
// same bytes in both; our own pool kernels read channels in 16-byte packs
// there. ResNet-50 in float16 then replayed at batch 64 in 2803 against 3054
// us, Inception-v3 at batch 8 in 1341 against 1399-1411, others unchanged
// (same run, call 94 in bench/results/2026-12-01_d7c19d7_channels_last_pools_h200).
// The host reference and every other kernel never see an NHWC value.

struct FusionPlan {
  std::vector<FusedStep> steps;  // in a topological (issue) order
  // Per value: the value owning its bytes. Alias ops (Identity, Reshape,
  // Flatten, Squeeze, Unsqueeze) get no step; their output is their input's
  // root. So does a Transpose left to a step of its own that moves only
  // dims of extent 1 (a batch of one between batch-first and sequence-first
  // layouts), which changes no byte. So do contiguous views (Note [Contiguous views]), whose bytes
  // start alias_offset bytes into their root's (0 for every other value).
  std::vector<ValueId> alias_root;
  std::vector<size_t> alias_offset;
  int contiguous_views = 0;     // Gathers read in place (Note [Contiguous views])
  int gemm_bias_epilogues = 0;  // GEMM steps with a bias in their epilogue
  int gemm_scales = 0;          // GEMM steps with scale constants in their alpha
  int transposed_weights = 0;   // GEMM steps reading a transposed weight
  int gemm_transposes = 0;      // Transposes taken into GEMMs as op(T)
  int erf_gelus = 0;
  int pointwise_regions = 0;
  int add_layer_norms = 0;
  int attentions = 0;
  int masked_softmaxes = 0;
  int fused_into_pointwise = 0;  // nodes run inside pointwise regions
  int conv_steps = 0;
  int fused_into_convs = 0;  // nodes (Add, activations) absorbed into Conv epilogues
  int channels_last_values = 0;  // conv and pool outputs stored NHWC
};

FusionPlan PlanFusion(const BoundGraph& graph, const FusionOptions& options);

// The highest rank of the scores a kMaskedSoftmax step takes: four dims
// before the softmax axis (runtime/cuda/op_kernels_launch.h's SoftmaxMask).
inline constexpr size_t kMaxMaskedSoftmaxRank = 5;

// Facts about a Gemm/MatMul node the pass and the GEMM kernel share.
// A constant of a GEMM type (float32, float16, bfloat16) adding one value per
// output column of a [..., n] result.
bool IsColumnBias(const BoundValue& value, int64_t n);
// The output columns n.
int64_t GemmColumns(const BoundGraph& graph, const BoundNode& node);
// Gemm's own C goes into the epilogue as a bias: beta 1 and a column bias.
bool GemmCIsBias(const BoundGraph& graph, const BoundNode& node);
// Gemm's C is broadcast into the output and beta-accumulated (not a bias).
bool GemmReadsC(const BoundGraph& graph, const BoundNode& node);

// Ops whose output is their input's bytes under new dims.
bool IsAliasOp(const std::string& op_type);

// Note [Contiguous views]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A Gather of one constant index along a dim that only dims of extent 1
// precede takes a contiguous block of its data: q, k and v selected from a
// fused projection stacked [3, ...] (PyTorch's nn.MultiheadAttention, as
// both exporters write it; three copies per layer). Such a Gather gets no
// step: its output is a view alias_offset bytes into its data's root, and
// the steps that read it read there. The memory planner keeps the root
// alive while any view of it is read (it plans roots, and a reader of a
// view reads the root). Not a view: an offset that is not a multiple of
// kViewAlignment (library kernels and vector loads assume the arena's
// alignment), and a Gather whose output reaches a graph output through
// alias ops only (a graph output owns its device buffer, whole).
inline constexpr size_t kViewAlignment = 256;

// The types whose fused steps (the erf GELU, pointwise regions, scales in a
// GEMM's alpha, attention) compute in float and round once to the type:
// float32, float16, bfloat16 (Note [16-bit fusions]).
bool ComputesInFloat(DType dtype);

// The one element of a constant of a type that ComputesInFloat, widened to
// float (exactly); nullopt for anything else. What the pass takes as a scalar
// constant is what the pointwise compiler (runtime/cuda/pointwise_kernel.h)
// compiles in.
std::optional<float> FloatScalar(const BoundValue& value);

// The elementwise ops a pointwise region may hold (the instructions of
// runtime/cuda/pointwise.h).
bool IsPointwiseOp(const std::string& op_type);
inline constexpr size_t kMaxPointwiseInputs = 4;  // kPointwiseMaxInputs
inline constexpr size_t kMaxPointwiseNodes = 32;  // kPointwiseMaxInstructions

// Note [Fusion]
// ~~~~~~~~~~~~~
// A step absorbs the nodes after its anchor only when nothing else reads the
// intermediate values and they are no graph outputs, so no value a fused
// node would have written is ever needed. Fused epilogues keep ONNX's NaN
// semantics: a GEMM takes only a bias (cuBLASLt does not promise that its
// RELU epilogue propagates NaN), a Conv's epilogue is our kernel, which does.
// Each step takes the place of its last node in the issue order, so every
// input it reads is written before it.

// Residual Add + LayerNorm: a LayerNormalization (its output only; no mean
// or inverse deviation) or an RMSNormalization (the pre-norm residual stream
// of today's decoders) of an Add of two tensors of its input's dims and
// dtype (float32, float16, bfloat16) becomes one step; the sum is still written when anything else reads it
// (the residual stream's next Add) or it is a graph output, and every such
// reader must come after the LayerNorm in the node order, where the step
// runs.

// Note [Fused attention]
// ~~~~~~~~~~~~~~~~~~~~~~
// Scaled dot-product attention as exporters write it, one kernel instead of
// six to nine (runtime/cuda/fused_attention.h), when FusionOptions asks:
//   s = MatMul(q', k') [Mul or Div of s by a constant]   q' = q | q * c,
//   [s = Add(s, mask)]                                    k' = k^T | k^T * c
//   p = Softmax(s, axis -1) [p = Where(IsNaN(p), 0, p)]
//   o = MatMul(p, v)
// The TorchScript exporter scales the scores (Div by sqrt(d)); the dynamo
// exporter's decomposition of scaled_dot_product_attention scales q and k
// by d^-1/4 each and guards fully masked rows with the Where; opset 23's
// Attention binds into the same chain. The TorchScript exporter's float16
// SDPA casts the scores up to float32 after the first MatMul (and v before
// the second), so the Softmax and the output are float32: the step takes
// both Casts and reads q, k and v in their 16-bit type (float_scores).
// Every intermediate must have the one reader the chain gives it and be no
// graph output, every value one float type (but for float_scores), the
// operands rank 3 or 4 with k and v broadcasting over q's batch
// dims, the mask broadcasting to the scores, D and Dv at most
// kMaxFusedAttentionHeadDim. The kernel computes in float and rounds only
// its output: the unfused chain rounds the scores, the masked scores and
// the probabilities to the model's type as well (float16's 2^-11 each).
// A Softmax row is NaN as a whole or not at all (a NaN, or a max of +inf or
// -inf, makes the row's sum NaN), so the kernel answers such a row with NaN,
// or with 0 where the Where guard follows, as the chain would.
// 16-bit steps run on cuDNN's fused engines (Note [cuDNN attention] in
// runtime/cuda/cudnn_attention.h), which compute the same way on the tensor
// cores; our own kernel (runtime/cuda/fused_attention.h) runs what cuDNN
// cannot, and float32 steps: it is right (the CUDA executor's tests check it
// against the host reference in all three types, with masked and NaN rows)
// but its float FMAs lose to the chain's GEMMs over long sequences, so by
// default only float32 chains over few keys fuse (FuseAttention).
inline constexpr int64_t kMaxFusedAttentionHeadDim = 128;

// Note [Attention views]
// ~~~~~~~~~~~~~~~~~~~~~~
// Exporters split the heads with Transposes: q, k and v leave their
// projections as [batch, seq, heads, d] (a Reshape, no copy) and are
// transposed to [batch, heads, seq, d] (k to [batch, heads, d, seq]) for the
// MatMuls, and the output goes back through the inverse Transpose before the
// heads merge: four copies per layer, 48 kernels of BERT-base. The attention
// kernels read strided operands, so a kAttention step takes those
// Transposes too: going back from q, k^T and v (and forward from the output)
// it absorbs each Transpose that is the value's producer (reader)
// and the value's only reader (producer), composing their perms, and reads
// (writes) the Transpose's input (output) through the composed perm. A
// Reshape between them ends the walk, except in the dynamo exporter's k^T:
// a rank-3 Transpose (0 2 1) between two Reshapes that merge and split the
// batch and head dims is the rank-4 swap of the last two dims it computes.
// Operands of rank 3 (heads folded into the batch) are read alike, their
// dims and perms right-aligned to four. The views keep the innermost dim
// where cuDNN wants it (runtime/cuda/cudnn_attention.h) for the layouts
// exporters write.

// Note [Pointwise regions]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// After the GEMM and Conv steps have taken their epilogues, the remaining
// elementwise nodes (IsPointwiseOp) are grouped into regions of one type that
// ComputesInFloat (no Cast inside; Note [16-bit fusions]), each
// run as one kernel (Note [Pointwise programs] in runtime/cuda/pointwise.h).
// A region grows backwards from its last node: the producer of a value it
// reads joins when it is pointwise, every reader of that value is already in
// the region, and the value is no graph output; so a region has one output,
// and nothing outside needs a value it keeps in registers. Every value in a
// region has the output's dims: its inputs are tensors of those dims (no
// broadcasting, at most kMaxPointwiseInputs) or scalar constants, compiled
// into the program. Sinks are taken last node first, so a chain becomes one
// region, not several. A region of one node stays that node's own kernel.

// Note [16-bit fusions]
// ~~~~~~~~~~~~~~~~~~~~~
// A model exported in float16 or bfloat16 (Hugging Face models after
// .half()) gets the same fusions as its float32 twin: the erf GELU chain,
// pointwise regions, scale constants in a GEMM's alpha, the residual Add with
// its LayerNorm, and attention. Its scalar constants are the exporter's
// double constants rounded once to the model's type, so the GELU matcher
// takes sqrt(2) within half a unit in the last place of that type (1.4140625
// in both), and a scale goes into alpha, which is float, exactly as stored.
//
// The fused kernels widen each element to float, compute the whole step in
// float and round the result once to the type; the unfused chain rounds to
// the type after every node (each of its kernels computes in float too). So
// the two differ by the chain's own roundings and never by more, and the
// fused result is the more accurate one. With u the type's unit roundoff
// (2^-11 for float16, 2^-8 for bfloat16) and s the magnitude of the step's
// inputs, the CUDA tests hold a fused step
//   - to a float64 evaluation of the step rounded once to the type: within
//     2u |y| + 8 * 2^-24 s, one unit in the last place of the type (the two
//     roundings may fall on either side of a rounding boundary) plus float's
//     own error, a few 2^-24 of the intermediates, which cancellations such
//     as GELU's 1 + erf(x) near x = -4 leave at the scale of x, not of y;
//   - to the unfused chain of n nodes (the host reference rounds every node
//     too): within n u s more, each rounding being at most u times an
//     intermediate whose error reaches y no larger than s;
//   - end to end, norm-wise within four units in the last place of the host
//     reference, as every 16-bit model test is.
// The fused GELU's constant is float's 1/sqrt(2), not the chain's rounded
// sqrt(2): 1.1e-4 relative in erf's argument, under float16's u of 4.9e-4.
// A scale in alpha saves the chain one or two roundings (the product's or the
// scaled operand's) and keeps unscaled scores that would pass 65504 from
// becoming +Inf in float16.
//
// At the edges of the range the same holds: where an intermediate of the
// chain overflows the type (PyTorch's GELU chain computes x * (1 + erf) = 2x,
// +Inf in float16 from x = 32768 on, then times 0.5), the fused step's float
// intermediate does not, and it answers the function's value, as ONNX's Gelu
// op and PyTorch's own half-precision kernels (which compute in float) do.
// NaN and Inf inputs give what the chain gives. In float32 nothing changes:
// a pointwise program is bitwise its unfused nodes (Note [Pointwise
// programs]). A Cast is no pointwise op and a region holds one type, so a
// region never mixes types: the nodes on either side of a Cast make regions
// of their own.

}  // namespace graphserve
