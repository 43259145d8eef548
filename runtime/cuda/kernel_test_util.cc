#include "runtime/cuda/kernel_test_util.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
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

namespace {

// Calls fn(T{}) with T the host type of the three floating-point types a
// GEMM or convolution stores.
template <typename Fn>
absl::Status VisitStorageType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      fn(float{});
      return absl::OkStatus();
    case DType::kFloat16:
      fn(Half{});
      return absl::OkStatus();
    case DType::kBFloat16:
      fn(BFloat16{});
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("test data of ", DTypeName(dtype), " is not supported"));
  }
}

}  // namespace

absl::StatusOr<std::vector<uint8_t>> RoundToDType(DType dtype, std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * DTypeSize(dtype));
  RETURN_IF_ERROR(VisitStorageType(dtype, [&](auto zero) {
    using T = decltype(zero);
    for (size_t i = 0; i < values.size(); ++i) {
      const T stored = Narrow<T>(values[i]);
      values[i] = static_cast<float>(Widen(stored));
      std::memcpy(bytes.data() + i * sizeof(T), &stored, sizeof(T));
    }
  }));
  return bytes;
}

absl::StatusOr<DeviceBuffer> UploadAs(DType dtype, std::vector<float>& values) {
  ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, RoundToDType(dtype, values));
  ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::Allocate(bytes.size()));
  RETURN_IF_ERROR(CopyToDeviceAndWait(buffer.get(), bytes.data(), bytes.size()));
  return buffer;
}

absl::StatusOr<std::vector<float>> DownloadAs(DType dtype, const DeviceBuffer& buffer,
                                              size_t count) {
  std::vector<uint8_t> bytes(count * DTypeSize(dtype));
  if (buffer.bytes() < bytes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("a buffer of ", buffer.bytes(),
                                                   " bytes holds fewer than ", count, " ",
                                                   DTypeName(dtype), " elements"));
  }
  CUDA_RETURN_IF_ERROR(
      cudaMemcpy(bytes.data(), buffer.get(), bytes.size(), cudaMemcpyDeviceToHost));
  std::vector<float> values(count);
  RETURN_IF_ERROR(VisitStorageType(dtype, [&](auto zero) {
    using T = decltype(zero);
    for (size_t i = 0; i < count; ++i) {
      T stored;
      std::memcpy(&stored, bytes.data() + i * sizeof(T), sizeof(T));
      values[i] = static_cast<float>(Widen(stored));
    }
  }));
  return values;
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

double DTypeFloor(DType dtype) { return dtype == DType::kFloat16 ? 0x1p-24 : double{FLT_MIN}; }

double UnitRoundoff(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return 0x1p-11;
    case DType::kBFloat16:
      return 0x1p-8;
    default:
      return 0x1p-24;
  }
}

std::vector<float> Abs(std::vector<float> v) {
  for (float& x : v) x = std::fabs(x);
  return v;
}

::testing::AssertionResult MatchesReference(const std::vector<float>& got,
                                            const std::vector<float>& want, double rtol,
                                            const std::vector<float>& scale, double floor) {
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
      ok = std::fabs(g - w) <= std::max(rtol * magnitude, floor);
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
