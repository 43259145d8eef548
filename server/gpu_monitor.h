#pragma once
// The GPUs' utilisation, memory and power for the metrics endpoint, through
// NVML. NVML (libnvidia-ml.so.1) ships with the NVIDIA driver, not the CUDA
// toolkit, so it is loaded at run time: a machine without a GPU has none, and
// then there are simply no GPU metrics.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace graphserve {

struct GpuReading {
  std::string uuid;        // "GPU-..." (Triton's gpu_uuid label)
  double utilization = 0;  // fraction of the last sample period busy, 0..1
  uint64_t memory_total_bytes = 0;
  uint64_t memory_used_bytes = 0;
  double power_watts = 0;
  double power_limit_watts = 0;  // the enforced limit; 0 where NVML reports none
  // Since the monitor opened, i.e. since the server started, as Triton's
  // nv_energy_consumption counts; 0 on GPUs without an energy counter.
  double energy_joules = 0;
};

class GpuMonitor {
 public:
  // Null when NVML cannot be loaded or initialised (said once in the log).
  static std::unique_ptr<GpuMonitor> Open();
  // One reading per GPU NVML sees; a GPU whose query fails is left out.
  [[nodiscard]] std::vector<GpuReading> Read() const;
  ~GpuMonitor();

  // Implementation details follow.
  struct Api;

 private:
  GpuMonitor(std::unique_ptr<Api> api, std::vector<std::optional<uint64_t>> energy_at_open_mj);

  std::unique_ptr<Api> api_;
  // Each GPU's energy counter when the monitor opened, by NVML index.
  const std::vector<std::optional<uint64_t>> energy_at_open_mj_;
};

}  // namespace graphserve
