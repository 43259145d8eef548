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
void AddAttentionOps(std::vector<OpDef>& ops);

}  // namespace graphserve
