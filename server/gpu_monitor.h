#pragma once
// The GPUs' utilisation, memory and power for the metrics endpoint, through
// NVML. NVML (libnvidia-ml.so.1) ships with the NVIDIA driver, not the CUDA
// toolkit, so it is loaded at run time: a machine without a GPU has none, and
// then there are simply no GPU metrics.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace graphserve {

struct GpuReading {
  std::string uuid;        // "GPU-..." (Triton's gpu_uuid label)
  double utilization = 0;  // fraction of the last sample period busy, 0..1
  uint64_t memory_total_bytes = 0;
  uint64_t memory_used_bytes = 0;
  double power_watts = 0;
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
  explicit GpuMonitor(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

}  // namespace graphserve
