#include "runtime/cuda/slot_lanes.h"

#include "common/cuda_device_guard.h"
#include "common/status.h"

namespace graphserve {

absl::StatusOr<std::shared_ptr<SlotLanes>> SlotLanes::Create(int device) {
  auto lanes = std::shared_ptr<SlotLanes>(new SlotLanes(device));
  RETURN_IF_ERROR(lanes->Reserve(1, 0));
  return lanes;
}

absl::Status SlotLanes::Reserve(int lanes, int events) {
  CudaDeviceGuard guard(device_);
  RETURN_IF_ERROR(guard.status());
  while (this->lanes() < lanes) {
    ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
    side_streams_.push_back(std::move(stream));
  }
  while (this->events() < events) {
    ASSIGN_OR_RETURN(CudaEvent event, CudaEvent::Create());
    events_.push_back(std::move(event));
  }
  return absl::OkStatus();
}

}  // namespace graphserve
