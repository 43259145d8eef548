#pragma once
// The rewrites of an imported model that run once per model, before any
// batch size is bound (Note [Model passes]).

#include <set>
#include <string>

#include "absl/status/status.h"
#include "runtime/ir.h"
#include "runtime/passes/precision.h"

namespace graphserve {

// What the model's config asks of the passes.
struct ModelPassOptions {
  // What the model computes in (precision.h): fp16 and bf16 rewrite it, fp32
  // (the default) and tf32 leave the IR as imported.
  ModelPrecision precision = ModelPrecision::kFp32;
  // The inputs config.pbtxt declares, by name: an input with a default among
  // them stays an input (Note [Inputs with defaults] in runtime/ir.h), the
  // other inputs with a default become constants. None by default.
  std::set<std::string> declared_inputs;
};

// Note [Model passes]
// ~~~~~~~~~~~~~~~~~~~
// A model pass rewrites the IR (runtime/ir.h) of one imported model: its
// nodes, and its initializers, which the weight store then uploads once per
// device for every captured size and stream. Each pass is one file of
// runtime/passes/; RunModelPasses runs them in this order, and import
// (runtime/onnx_import.cc) runs RunModelPasses with the options it is given
// (the server's from the model's config, graphserve-capture's from its
// flags), so the server and the CLI see the same rewritten model:
//
//  1. FoldInputDefaults (input_defaults.h): the inputs with a default that
//     the config does not declare become the weights they are (Note [Inputs
//     with defaults] in runtime/ir.h), first, so that the passes after it
//     rewrite them as weights, and never a declared one.
//  2. FoldBatchNormsIntoConvs (fold_batch_norms.h): inference BatchNorm
//     into the Conv before it, in float32, while the weights are still the
//     model's own.
//  3. ConvertPrecision (precision.h), after folding (so folded weights are
//     converted once, from float32) and before binding (so each node binds
//     in its final dtype and finds its CUDA kernel by (op, dtype)): weights
//     converted and Casts inserted for the model's precision (float16,
//     bfloat16), with the one list of ops kept in float32 (Note [Model
//     precision]).
// Errors: the precision pass's, naming the precision (a model whose values
// do not bind, or an op it cannot convert).
absl::Status RunModelPasses(Model& model, const ModelPassOptions& options = {});

}  // namespace graphserve
