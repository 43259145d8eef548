// Host test: a tool linked into this binary (NVTX's static injection,
// nvtxDetail/nvtxInit.h) records the ranges NvtxRange pushes and pops.
#include <cstdint>

// This file defines the injection (at the end of the file): NVTX then skips
// its weak null definition and its loader reads this one.
#define NVTX_STATIC_INJECTION_IMPL
extern "C" int (*InitializeInjectionNvtx2_fnptr)(const void* (*)(uint32_t));

#include "common/nvtx.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace graphserve {
namespace {

// What the recording tool saw, in order: "create:<domain>", "push:<name>",
// "pop".
std::vector<std::string>& Events() {
  static std::vector<std::string> events;
  return events;
}
// The domain handle the tool hands out: any non-null value it recognises.
nvtxDomainHandle_t RecorderDomain() {
  static int tag = 0;
  return reinterpret_cast<nvtxDomainHandle_t>(&tag);
}

nvtxDomainHandle_t NVTX_API RecordCreate(const char* name) {
  Events().push_back(std::string("create:") + name);
  return RecorderDomain();
}
int NVTX_API RecordPush(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  EXPECT_EQ(domain, RecorderDomain());
  EXPECT_EQ(attributes->messageType, NVTX_MESSAGE_TYPE_ASCII);
  Events().push_back(std::string("push:") + attributes->message.ascii);
  return 0;
}
int NVTX_API RecordPop(nvtxDomainHandle_t domain) {
  EXPECT_EQ(domain, RecorderDomain());
  Events().push_back("pop");
  return 0;
}

int NVTX_API InitializeRecorder(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) == 0 ||
      size <= NVTX_CBID_CORE2_DomainCreateA) {
    return 0;
  }
  *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(&RecordCreate);
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&RecordPush);
  *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(&RecordPop);
  return 1;
}

}  // namespace
}  // namespace graphserve

// The strong definition NVTX's weak one yields to.
extern "C" {
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = &graphserve::InitializeRecorder;
}

namespace graphserve {
namespace {

TEST(NvtxRangeTest, RangesNestInGraphServesDomainWithTheirNames) {
  Events().clear();
  {
    const NvtxRange outer("mlp b16 slot 0 start");
    const std::string inner_name = "mlp b16 slot 0 launch";
    const NvtxRange inner(inner_name);
  }
  const std::vector<std::string> want = {"create:GraphServe", "push:mlp b16 slot 0 start",
                                         "push:mlp b16 slot 0 launch", "pop", "pop"};
  EXPECT_EQ(Events(), want);
}

}  // namespace
}  // namespace graphserve
