#pragma once
// Folding BatchNormalization into the Conv before it: the second model pass
// (Note [Model passes] in runtime/passes/model_passes.h).

#include "runtime/ir.h"

namespace graphserve {

// Each inference BatchNormalization whose input is a Conv's output read by
// nothing else, with constant weights, bias and statistics of one type
// (float32, or a 16-bit float: folded in float32 and rounded once back), is
// folded into that Conv's weights and bias: new initializers named
// "<bn>/folded_weights" and "<bn>/folded_bias", so that the weight store
// uploads them once for every batch size, and the originals stay for any
// other reader. Every other BatchNormalization stays, for binding to turn
// into a per-channel affine or to refuse by name.
void FoldBatchNormsIntoConvs(Model& model);

}  // namespace graphserve
