#include "runtime/passes/model_passes.h"

#include "runtime/passes/fold_batch_norms.h"

namespace graphserve {

void RunModelPasses(Model& model) { FoldBatchNormsIntoConvs(model); }

}  // namespace graphserve
