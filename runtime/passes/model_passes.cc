#include "runtime/passes/model_passes.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/passes/fold_batch_norms.h"
#include "runtime/passes/input_defaults.h"

namespace graphserve {

absl::Status RunModelPasses(Model& model, const ModelPassOptions& options) {
  FoldInputDefaults(model, options.declared_inputs);
  FoldBatchNormsIntoConvs(model);
  if (options.precision != ModelPrecision::kAuto) {
    return ConvertPrecision(model, options.precision);
  }
  absl::StatusOr<std::vector<Float32Node>> kept = ChooseFloat32Nodes(model, options.calibration);
  if (!kept.ok()) {
    return absl::Status(kept.status().code(),
                        absl::StrCat("precision auto: ", kept.status().message()));
  }
  absl::Status converted = ConvertPrecision(model, options.precision, NodeNames(*kept));
  if (converted.ok() && options.float32_nodes != nullptr) *options.float32_nodes = *std::move(kept);
  return converted;
}

}  // namespace graphserve
