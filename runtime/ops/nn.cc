// Convolutional-network ops: Conv, BatchNormalization, pooling, Pad, Clip,
// HardSigmoid, HardSwish, Dropout.

#include <vector>

#include "runtime/ops/families.h"

namespace graphserve {

void AddNnOps(std::vector<OpDef>& ops) {}

}  // namespace graphserve
