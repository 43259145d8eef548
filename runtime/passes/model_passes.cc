#include "runtime/passes/model_passes.h"

#include "runtime/passes/fold_batch_norms.h"
#include "runtime/passes/input_defaults.h"

namespace graphserve {

absl::Status RunModelPasses(Model& model, const ModelPassOptions& options) {
  FoldInputDefaults(model, options.declared_inputs);
  FoldBatchNormsIntoConvs(model);
  return ConvertPrecision(model, options.precision);
}

}  // namespace graphserve
