#pragma once
// The fusion pass: which bound nodes the CUDA executor runs as one step, and
// what each step reads and writes. Pure graph rewriting, no CUDA: the
// executor (runtime/cuda/cuda_executor.cc) builds one kernel per step, and
// tools and tests can see the steps without a GPU. See Note [Fusion].

#include <cstdint>
#include <vector>

#include "runtime/bound_graph.h"
#include "runtime/nn_params.h"

namespace graphserve {

enum class StepKind {
  kKernel,   // one node, the op's own kernel (runtime/cuda/cuda_kernel_registry.h)
  kGemm,     // Gemm/MatMul on cuBLASLt, maybe with a following bias Add in its epilogue
  kConv,     // Conv on cuDNN, maybe with a residual Add and an activation in its epilogue
  kErfGelu,  // PyTorch's five-node exact GELU chain as one kernel
};

struct FusedStep {
  StepKind kind = StepKind::kKernel;
  // The bound nodes the step runs, ascending; `anchor` is the one whose op
  // the step is (the Gemm, the Conv, the chain's first node).
  std::vector<int> nodes;
  int anchor = 0;
  // Values the step's kernel reads, in the kernel's order, and writes.
  //  kGemm: A, B, and C when GemmReadsC; kConv: X, W, [B], [residual];
  //  kErfGelu: x; kKernel: the node's inputs.
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  // kGemm: a column bias taken from a following Add (-1: none).
  ValueId gemm_bias = -1;
  // kConv: what follows the convolution in its epilogue.
  bool conv_residual = false;
  ActivationParams conv_activation;
};

struct FusionOptions {
  // Fuse across nodes at all; off gives one step per node (and still lets a
  // Gemm take its own C as a bias, which is not fusion across nodes).
  bool fuse = true;
};

struct FusionPlan {
  std::vector<FusedStep> steps;  // in a topological (issue) order
  // Per value: the value owning its bytes. Alias ops (Identity, Reshape,
  // Flatten, Squeeze, Unsqueeze) get no step; their output is their input's
  // root.
  std::vector<ValueId> alias_root;
  int gemm_bias_epilogues = 0;  // GEMM steps with a bias in their epilogue
  int erf_gelus = 0;
  int conv_steps = 0;
  int fused_into_convs = 0;  // nodes (Add, activations) absorbed into Conv epilogues
};

FusionPlan PlanFusion(const BoundGraph& graph, const FusionOptions& options);

// Facts about a Gemm/MatMul node the pass and the GEMM kernel share.
// A float32 constant adding one value per output column of a [..., n] result.
bool IsColumnBias(const BoundValue& value, int64_t n);
// The output columns n.
int64_t GemmColumns(const BoundGraph& graph, const BoundNode& node);
// Gemm's own C goes into the epilogue as a bias: beta 1 and a column bias.
bool GemmCIsBias(const BoundGraph& graph, const BoundNode& node);
// Gemm's C is broadcast into the output and beta-accumulated (not a bias).
bool GemmReadsC(const BoundGraph& graph, const BoundNode& node);

// Ops whose output is their input's bytes under new dims.
bool IsAliasOp(const std::string& op_type);

// Note [Fusion]
// ~~~~~~~~~~~~~
// A step absorbs the nodes after its anchor only when nothing else reads the
// intermediate values and they are no graph outputs, so no value a fused
// node would have written is ever needed. Fused epilogues keep ONNX's NaN
// semantics: a GEMM takes only a bias (cuBLASLt does not promise that its
// RELU epilogue propagates NaN), a Conv's epilogue is our kernel, which does.
// Each step takes the place of its last node in the issue order, so every
// input it reads is written before it.

}  // namespace graphserve
