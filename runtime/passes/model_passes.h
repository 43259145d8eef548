#pragma once
// The rewrites of an imported model that run once per model, before any
// batch size is bound (Note [Model passes]).

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/ir.h"
#include "runtime/passes/autocast.h"
#include "runtime/passes/precision.h"

namespace graphserve {

// What the model's config asks of the passes.
struct ModelPassOptions {
  // What the model computes in (precision.h): fp16, bf16 and auto rewrite
  // it, fp32 (the default) and tf32 leave the IR as imported.
  ModelPrecision precision = ModelPrecision::kFp32;
  // precision auto's calibration batch (autocast.h): the executors it runs
  // on (the host's by default), its extents and inputs. Unread otherwise.
  CalibrationOptions calibration;
  // precision auto: when not null, set to the nodes the calibration keeps in
  // float32 and why, in model order, for the caller to report. Owned by the
  // caller; null by default.
  std::vector<Float32Node>* float32_nodes = nullptr;
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
//     precision]). For auto, ChooseFloat32Nodes (autocast.h) first runs
//     the float32 model, folded, on one calibration batch and names the
//     nodes that stay float32 beside that list (Note [Automatic
//     precision]); the rest is float16's rewrite.
// Errors: the precision pass's, naming the precision (a model whose values
// do not bind, or an op it cannot convert); auto's calibration batch's,
// naming the batch.
absl::Status RunModelPasses(Model& model, const ModelPassOptions& options = {});

}  // namespace graphserve
