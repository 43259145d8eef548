#include "capture/reference_plans.h"

#include <cuda_runtime.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/cuda_status.h"
#include "common/status.h"
#include "runtime/bind.h"
#include "runtime/cuda/cuda_executor.h"

namespace graphserve {

ReferenceRunner PlainCudaReference(std::shared_ptr<const Model> model) {
  return [model = std::move(model)](const GraphKey& key, absl::Span<const HostTensor> inputs)
             -> absl::StatusOr<std::vector<HostTensor>> {
    int device = 0;
    CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
    CudaExecutorOptions plain;
    plain.device = device;
    plain.allow_tf32 = false;
    plain.fuse_epilogues = false;
    plain.fuse_attention = FuseAttention::kNone;
    plain.autotune_gemms = false;
    ASSIGN_OR_RETURN(const BindOptions bind, BindOptionsAt(*model, key));
    absl::StatusOr<BoundGraph> graph = BindModel(*model, bind);
    if (!graph.ok()) {
      return AnnotateStatus(graph.status(),
                            absl::StrCat("the reference model at ", GraphKeyString(key)));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<CudaExecutor> executor,
                     CudaExecutor::Create(*std::move(graph), plain));
    return executor->Run(inputs);
  };
}

double ReferenceTolerance(ModelPrecision precision) {
  switch (precision) {
    case ModelPrecision::kFp32:
      return 1e-4;
    case ModelPrecision::kTf32:
      return 1e-2;
    case ModelPrecision::kFp16:
      return 3e-2;
    case ModelPrecision::kBf16:
      return 6e-2;
  }
  return 1e-4;
}

}  // namespace graphserve
