#include "server/gpu_monitor.h"

#include <dlfcn.h>

#include <utility>

#include "spdlog/spdlog.h"

namespace graphserve {

// The few NVML entry points the metrics need, declared from NVML's public API
// reference (nvml.h is not part of the CUDA toolkit we build with). Every
// call returns nvmlReturn_t, 0 on success; devices are opaque handles.
struct GpuMonitor::Api {
  using Device = void*;
  struct Utilization {  // nvmlUtilization_t
    unsigned int gpu;
    unsigned int memory;
  };
  struct Memory {  // nvmlMemory_t (v1)
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
  };

  void* library = nullptr;
  int (*init)() = nullptr;                             // nvmlInit_v2
  int (*shutdown)() = nullptr;                         // nvmlShutdown
  int (*count)(unsigned int*) = nullptr;               // nvmlDeviceGetCount_v2
  int (*handle)(unsigned int, Device*) = nullptr;      // nvmlDeviceGetHandleByIndex_v2
  int (*uuid)(Device, char*, unsigned int) = nullptr;  // nvmlDeviceGetUUID
  int (*utilization)(Device, Utilization*) = nullptr;  // nvmlDeviceGetUtilizationRates
  int (*memory)(Device, Memory*) = nullptr;            // nvmlDeviceGetMemoryInfo
  int (*power)(Device, unsigned int*) = nullptr;       // nvmlDeviceGetPowerUsage, mW

  ~Api() {
    if (shutdown != nullptr) shutdown();
    if (library != nullptr) dlclose(library);
  }
};

namespace {

template <typename Function>
bool Bind(void* library, const char* name, Function* function) {
  *function = reinterpret_cast<Function>(dlsym(library, name));
  return *function != nullptr;
}

}  // namespace

std::unique_ptr<GpuMonitor> GpuMonitor::Open() {
  auto api = std::make_unique<Api>();
  api->library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (api->library == nullptr) {
    spdlog::info("no NVML (libnvidia-ml.so.1) on this machine: no GPU metrics");
    return nullptr;
  }
  void* lib = api->library;
  const bool bound = Bind(lib, "nvmlInit_v2", &api->init) &&
                     Bind(lib, "nvmlDeviceGetCount_v2", &api->count) &&
                     Bind(lib, "nvmlDeviceGetHandleByIndex_v2", &api->handle) &&
                     Bind(lib, "nvmlDeviceGetUUID", &api->uuid) &&
                     Bind(lib, "nvmlDeviceGetUtilizationRates", &api->utilization) &&
                     Bind(lib, "nvmlDeviceGetMemoryInfo", &api->memory) &&
                     Bind(lib, "nvmlDeviceGetPowerUsage", &api->power);
  if (!bound || api->init() != 0) {
    spdlog::warn("NVML is present but did not initialise: no GPU metrics");
    return nullptr;
  }
  Bind(lib, "nvmlShutdown", &api->shutdown);  // only now: Api's destructor calls it
  return std::unique_ptr<GpuMonitor>(new GpuMonitor(std::move(api)));
}

GpuMonitor::GpuMonitor(std::unique_ptr<Api> api) : api_(std::move(api)) {}
GpuMonitor::~GpuMonitor() = default;

std::vector<GpuReading> GpuMonitor::Read() const {
  std::vector<GpuReading> readings;
  unsigned int count = 0;
  if (api_->count(&count) != 0) return readings;
  for (unsigned int i = 0; i < count; ++i) {
    Api::Device device = nullptr;
    char uuid[96] = {};
    Api::Utilization utilization{};
    Api::Memory memory{};
    unsigned int milliwatts = 0;
    if (api_->handle(i, &device) != 0 || api_->uuid(device, uuid, sizeof(uuid)) != 0 ||
        api_->utilization(device, &utilization) != 0 || api_->memory(device, &memory) != 0) {
      continue;
    }
    GpuReading reading;
    reading.uuid = uuid;
    reading.utilization = utilization.gpu / 100.0;
    reading.memory_total_bytes = memory.total;
    reading.memory_used_bytes = memory.used;
    // Some GPUs (and MIG instances) report no power: 0.
    if (api_->power(device, &milliwatts) == 0) reading.power_watts = milliwatts / 1000.0;
    readings.push_back(std::move(reading));
  }
  return readings;
}

}  // namespace graphserve
