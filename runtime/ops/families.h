#pragma once
// Private to //runtime:op_registry: each family file adds its OpDefs.

#include <vector>

#include "runtime/op_registry.h"

namespace graphserve {

void AddElementwiseOps(std::vector<OpDef>& ops);
void AddDataMovementOps(std::vector<OpDef>& ops);
void AddLinearAlgebraOps(std::vector<OpDef>& ops);
void AddNormalizationOps(std::vector<OpDef>& ops);
void AddNnOps(std::vector<OpDef>& ops);
// Resize and Upsample (runtime/ops/resize.cc), added by AddDataMovementOps.
void AddResizeOps(std::vector<OpDef>& ops);
// GridSample (runtime/ops/grid_sample.cc), added by AddDataMovementOps.
void AddGridSampleOp(std::vector<OpDef>& ops);
// Einsum (runtime/ops/einsum.cc), added by AddLinearAlgebraOps.
void AddEinsumOp(std::vector<OpDef>& ops);
// Opset 23's RotaryEmbedding and Attention (runtime/ops/attention.cc).
void AddAttentionOps(std::vector<OpDef>& ops);

}  // namespace graphserve
