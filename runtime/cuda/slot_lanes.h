#pragma once
// The lanes of one stream slot (Note [Schedules] in runtime/schedule.h): the
// slot's own stream is lane 0, and lanes 1..L-1 are side streams created
// here, once per slot. The events fork the side lanes from the slot's stream,
// order steps across lanes, and join the lanes back. Library workspaces are
// not the lanes': each step has its own in the arena (Note [Step
// workspaces]), so two library calls running at once never share one.
//
// Shared by the slot's N plans: they run one at a time, so one set of
// streams and events serves them all. Grown at plan time only (Reserve),
// like the arena.

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/cuda_handles.h"

namespace graphserve {

class SlotLanes {
 public:
  // One lane (the slot's stream, whose stream this does not own) and no
  // events, on `device`.
  static absl::StatusOr<std::shared_ptr<SlotLanes>> Create(int device);

  // Grows to at least `lanes` lanes and `events` events; never shrinks.
  // Creates streams and events on this object's device.
  absl::Status Reserve(int lanes, int events);

  [[nodiscard]] int lanes() const { return static_cast<int>(side_streams_.size()) + 1; }
  [[nodiscard]] int events() const { return static_cast<int>(events_.size()); }
  // The side stream of lane 1 <= lane < lanes().
  [[nodiscard]] const CudaStream& side_stream(int lane) const { return side_streams_[lane - 1]; }
  [[nodiscard]] const CudaEvent& event(int index) const { return events_[index]; }
  [[nodiscard]] int device() const { return device_; }

 private:
  explicit SlotLanes(int device) : device_(device) {}

  int device_;
  std::vector<CudaStream> side_streams_;
  std::vector<CudaEvent> events_;
};

}  // namespace graphserve
