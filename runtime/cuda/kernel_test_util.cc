#include "runtime/cuda/kernel_test_util.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/cuda_status.h"
#include "common/status.h"

namespace graphserve {

absl::Status CopyToDeviceAndWait(void* device, const void* host, size_t bytes) {
  CUDA_RETURN_IF_ERROR(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
  CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return absl::OkStatus();
}

absl::StatusOr<DeviceBuffer> Upload(const std::vector<float>& host) {
  ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::Allocate(host.size() * sizeof(float)));
  RETURN_IF_ERROR(CopyToDeviceAndWait(buffer.get(), host.data(), host.size() * sizeof(float)));
  return buffer;
}

void InjectSpecials(std::vector<float>& v, int64_t taps, double affected, std::mt19937& rng) {
  if (v.empty()) return;
  const float specials[] = {kNaN, kInf, -kInf, kLarge, -kLarge};
  constexpr int64_t kAtLeast = 10;  // two of each
  const auto count = std::max<int64_t>(
      kAtLeast,
      static_cast<int64_t>(static_cast<double>(v.size()) * affected / static_cast<double>(taps)));
  std::uniform_int_distribution<size_t> position(0, v.size() - 1);
  for (int64_t i = 0; i < count; ++i) v[position(rng)] = specials[i % 5];
}

std::vector<float> Abs(std::vector<float> v) {
  for (float& x : v) x = std::fabs(x);
  return v;
}

::testing::AssertionResult MatchesReference(const std::vector<float>& got,
                                            const std::vector<float>& want, double rtol,
                                            const std::vector<float>& scale) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << "sizes " << got.size() << " vs " << want.size();
  }
  int64_t mismatches = 0;
  std::string examples;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i];
    const double w = want[i];
    bool ok;
    if (std::isnan(w)) {
      ok = std::isnan(g);
    } else if (std::isinf(w)) {
      ok = g == w;
    } else if (!std::isfinite(g)) {
      ok = false;
    } else if (rtol == 0) {
      ok = g == w;
    } else {
      double magnitude = std::fabs(w);
      if (!scale.empty() && std::isfinite(scale[i]))
        magnitude = std::max(magnitude, std::fabs(double{scale[i]}));
      ok = std::fabs(g - w) <= std::max(rtol * magnitude, double{FLT_MIN});
    }
    if (!ok && ++mismatches <= 5) {
      char line[128];
      std::snprintf(line, sizeof(line), " [%zu] got %.9g want %.9g;", i, g, w);
      examples += line;
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << mismatches << " of " << got.size() << " elements differ:" << examples;
}

}  // namespace graphserve
