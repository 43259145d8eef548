#pragma once
// Profiler ranges (NVTX) for the request path and capture: Nsight Systems
// then shows, per thread, where a chunk's time went (staging, launch,
// completion) beside the GPU's own timeline, as Triton's NVTX_RANGE does for
// its batcher. NVTX3 is header-only and ships with the CUDA toolkit.
//
// With no tool attached, NVTX's first call finds none and every later push
// and pop returns at once (a call through a null-checked pointer): the
// ranges stay on in release builds. Their names are built once, when a
// graph set is captured (capture/graph_set.h), never per request.

#include <nvtx3/nvToolsExt.h>

#include <string>

namespace graphserve {

// The domain GraphServe's ranges are in ("GraphServe" in Nsight Systems).
// Created on first use, after a tool (if any) has attached; null without
// one, which NVTX's no-op functions accept. Inline, as NVTX itself is: its
// state is per shared object, so the domain must be created in the one
// that pushes to it.
inline nvtxDomainHandle_t GraphServeNvtxDomain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("GraphServe");
  return domain;
}

// A range on the calling thread for the object's scope, named `name` (which
// the tool copies at the push; it need not outlive the range).
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = name;
    nvtxDomainRangePushEx(GraphServeNvtxDomain(), &attributes);
  }
  explicit NvtxRange(const std::string& name) : NvtxRange(name.c_str()) {}
  ~NvtxRange() { nvtxDomainRangePop(GraphServeNvtxDomain()); }

  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
  NvtxRange(NvtxRange&&) = delete;
  NvtxRange& operator=(NvtxRange&&) = delete;
};

}  // namespace graphserve
