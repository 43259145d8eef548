#pragma once
// The rewrites of an imported model that run once per model, before any
// batch size is bound (Note [Model passes]).

#include "runtime/ir.h"

namespace graphserve {

// Note [Model passes]
// ~~~~~~~~~~~~~~~~~~~
// A model pass rewrites the IR (runtime/ir.h) of one imported model: its
// nodes, and its initializers, which the weight store then uploads once per
// device for every captured size and stream. Each pass is one file of
// runtime/passes/; RunModelPasses runs them in this order, and import
// (runtime/onnx_import.cc) runs RunModelPasses, so the server and the CLI
// see the same rewritten model:
//
//  1. FoldBatchNormsIntoConvs (fold_batch_norms.h): inference BatchNorm
//     into the Conv before it, in float32, while the weights are still the
//     model's own.
//  2. The precision pass belongs here, after folding (so folded weights are
//     converted once, from float32) and before binding (so each node binds
//     in its final dtype and finds its CUDA kernel by (op, dtype)). It will
//     convert weights and insert the Casts at the edges of a model's
//     requested precision (float16, bfloat16), and it holds the one list of
//     ops kept in float32 (PyTorch autocast's lists play this part); since
//     the precision comes from the model's config, RunModelPasses takes the
//     config's options then.
void RunModelPasses(Model& model);

}  // namespace graphserve
