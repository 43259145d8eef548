#include "runtime/passes/model_passes.h"

#include "runtime/passes/fold_batch_norms.h"

namespace graphserve {

absl::Status RunModelPasses(Model& model, const ModelPassOptions& options) {
  FoldBatchNormsIntoConvs(model);
  return ConvertPrecision(model, options.precision);
}

}  // namespace graphserve
