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
  int (*power_limit)(Device, unsigned int*) = nullptr; // nvmlDeviceGetEnforcedPowerLimit, mW
  // nvmlDeviceGetTotalEnergyConsumption: mJ since the driver last reloaded.
  int (*energy)(Device, unsigned long long*) = nullptr;

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

// GPU `index`'s total energy counter in millijoules, absent where it has
// none (GPUs before Volta).
std::optional<uint64_t> EnergyMillijoules(const GpuMonitor::Api& api, unsigned int index) {
  GpuMonitor::Api::Device device = nullptr;
  unsigned long long millijoules = 0;
  if (api.handle(index, &device) != 0 || api.energy(device, &millijoules) != 0) {
    return std::nullopt;
  }
  return millijoules;
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
                     Bind(lib, "nvmlDeviceGetPowerUsage", &api->power) &&
                     Bind(lib, "nvmlDeviceGetEnforcedPowerLimit", &api->power_limit) &&
                     Bind(lib, "nvmlDeviceGetTotalEnergyConsumption", &api->energy);
  if (!bound || api->init() != 0) {
    spdlog::warn("NVML is present but did not initialise: no GPU metrics");
    return nullptr;
  }
  Bind(lib, "nvmlShutdown", &api->shutdown);  // only now: Api's destructor calls it
  // NVML's energy counter starts when the driver loads; Triton's counts from
  // its own start, so each GPU's counter now is the zero.
  unsigned int count = 0;
  std::vector<std::optional<uint64_t>> energy_at_open_mj;
  if (api->count(&count) == 0) {
    for (unsigned int i = 0; i < count; ++i) {
      energy_at_open_mj.push_back(EnergyMillijoules(*api, i));
    }
  }
  return std::unique_ptr<GpuMonitor>(new GpuMonitor(std::move(api), std::move(energy_at_open_mj)));
}

GpuMonitor::GpuMonitor(std::unique_ptr<Api> api,
                       std::vector<std::optional<uint64_t>> energy_at_open_mj)
    : api_(std::move(api)), energy_at_open_mj_(std::move(energy_at_open_mj)) {}
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
    if (api_->power_limit(device, &milliwatts) == 0) {
      reading.power_limit_watts = milliwatts / 1000.0;
    }
    const std::optional<uint64_t> energy_mj = EnergyMillijoules(*api_, i);
    if (i < energy_at_open_mj_.size() && energy_at_open_mj_[i].has_value() &&
        energy_mj.has_value() && *energy_mj >= *energy_at_open_mj_[i]) {
      reading.energy_joules = static_cast<double>(*energy_mj - *energy_at_open_mj_[i]) / 1000.0;
    }
    readings.push_back(std::move(reading));
  }
  return readings;
}

}  // namespace graphserve
