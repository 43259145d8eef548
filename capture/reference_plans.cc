#include "capture/reference_plans.h"

#include <cuda_runtime.h>

#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "common/capture_exclusion.h"
#include "common/cuda_status.h"
#include "common/status.h"
#include "runtime/bind.h"
#include "runtime/cuda/algorithm_choices.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/onnx_import.h"
#include "tensor_holder/weight_store.h"

namespace graphserve {

ReferenceRunner PlainCudaReference(std::shared_ptr<const Model> model) {
  // The weights, uploaded once per device for every key's plan, and the
  // plans' library choices (cuBLASLt's proposals asked once per problem),
  // the runner's own, not the graphs'; they live as long as the runner,
  // which a load drops when its checks are done.
  auto weights = std::make_shared<std::map<int, std::shared_ptr<WeightStore>>>();
  auto choices = std::make_shared<std::map<int, std::shared_ptr<AlgorithmChoices>>>();
  return [model = std::move(model), weights, choices](const GraphKey& key,
                                                      absl::Span<const HostTensor> inputs)
             -> absl::StatusOr<std::vector<HostTensor>> {
    int device = 0;
    CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
    ASSIGN_OR_RETURN(const BindOptions bind, BindOptionsAt(*model, key));
    absl::StatusOr<BoundGraph> graph = BindModel(*model, bind);
    if (!graph.ok()) {
      return AnnotateStatus(graph.status(),
                            absl::StrCat("the reference model at ", GraphKeyString(key)));
    }
    // A load runs the reference on a thread beside its captures (Note [The
    // reference beside the captures] in capture/graph_set.cc). Binding is
    // host work; planning, uploading and freeing a plan may synchronise the
    // device, so all of that holds the device's captures off, all but the
    // wait for the run (Note [Captures and device-wide synchronisation]).
    CaptureLock beside_captures(device, CaptureLock::kSynchronising);
    std::shared_ptr<WeightStore>& store = (*weights)[device];
    if (!store) {
      ASSIGN_OR_RETURN(store, WeightStore::Create(device));
    }
    std::shared_ptr<AlgorithmChoices>& chosen = (*choices)[device];
    if (!chosen) chosen = std::make_shared<AlgorithmChoices>();
    ExecutionResources resources;
    resources.weights = store;
    resources.algorithm_choices = chosen;
    CudaExecutorOptions plain;
    plain.device = device;
    plain.allow_tf32 = false;
    plain.fuse_epilogues = false;
    plain.fuse_attention = FuseAttention::kNone;
    plain.autotune_gemms = false;
    ASSIGN_OR_RETURN(std::unique_ptr<CudaExecutor> executor,
                     CudaExecutor::Create(*std::move(graph), plain, std::move(resources)));
    return executor->Run(inputs, [&beside_captures](cudaStream_t stream) {
      return beside_captures.WhileReleased([stream] {
        return CudaErrorToStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      });
    });
  };
}

absl::StatusOr<Model> ModelBeforePrecisionPass(const Model& served, const std::string& path,
                                               ModelPassOptions passes) {
  if (passes.precision == ModelPrecision::kFp32 || passes.precision == ModelPrecision::kTf32) {
    return served;
  }
  passes.precision = ModelPrecision::kFp32;
  passes.float32_nodes = nullptr;  // the served model's report, not this one's
  absl::StatusOr<Model> original = ImportOnnxFile(path, passes);
  if (!original.ok()) return AnnotateStatus(original.status(), "the float32 reference model");
  original->name = served.name;
  original->batches = served.batches;
  return original;
}

ModelPrecision CheckedPrecision(ModelPrecision precision, bool allow_tf32) {
  return allow_tf32 && precision == ModelPrecision::kFp32 ? ModelPrecision::kTf32 : precision;
}

double ReferenceTolerance(ModelPrecision precision) {
  switch (precision) {
    case ModelPrecision::kFp32:
      return 1e-4;
    case ModelPrecision::kTf32:
      return 1e-2;
    case ModelPrecision::kFp16:
    case ModelPrecision::kAuto:  // float16 where it converts
      return 3e-2;
    case ModelPrecision::kBf16:
      return 6e-2;
  }
  return 1e-4;
}

}  // namespace graphserve
