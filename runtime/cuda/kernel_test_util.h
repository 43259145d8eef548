#pragma once
// What the GPU kernel tests share: special values to inject into inputs,
// and the comparison with a host reference.

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/cuda_handles.h"
#include "common/dtype_table.h"
#include "gtest/gtest.h"

namespace graphserve {

inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kInf = std::numeric_limits<float>::infinity();
// Finite, but its products and sums dwarf every other value.
inline constexpr float kLarge = 1e30f;

// Replaces elements by NaN, +Inf, -Inf, +1e30 and -1e30 (at least two of
// each) so that about `affected` of the outputs, each reading `taps` inputs,
// see one and the rest still check the arithmetic.
void InjectSpecials(std::vector<float>& v, int64_t taps, double affected, std::mt19937& rng);

// Copies `bytes` from host to device memory and waits until they have
// landed. cudaMemcpy from pageable memory may return before its DMA
// completes, and the tests' kernels run on non-blocking streams, which do
// not wait for it: on the H100 a Pad test once read part of its poison fill
// (0xCD) back where the kernel had written.
absl::Status CopyToDeviceAndWait(void* device, const void* host, size_t bytes);

// A device copy of `host` (CopyToDeviceAndWait).
absl::StatusOr<DeviceBuffer> Upload(const std::vector<float>& host);

// Rounds each of `values` to `dtype` (float32, float16 or bfloat16; to
// nearest even) in place, so that a reference computed from them reads what
// the device reads, and returns their bytes as the device stores them.
// Any other dtype is an InvalidArgument.
absl::StatusOr<std::vector<uint8_t>> RoundToDType(DType dtype, std::vector<float>& values);

// A device copy of `values` stored as `dtype`, which rounds them in place
// (RoundToDType).
absl::StatusOr<DeviceBuffer> UploadAs(DType dtype, std::vector<float>& values);

// `count` elements of `dtype` (float32, float16 or bfloat16) at the start of
// `buffer`, widened to float (exactly).
absl::StatusOr<std::vector<float>> DownloadAs(DType dtype, const DeviceBuffer& buffer,
                                              size_t count);

// The floor of MatchesReference for results of `dtype`: float16's smallest
// subnormal, FLT_MIN for float32 and bfloat16 (float's exponent range).
double DTypeFloor(DType dtype);

// Half the distance from 1 to the next number of `dtype` (float32, float16,
// bfloat16): the relative error of one rounding to it, 2^-24, 2^-11, 2^-8.
double UnitRoundoff(DType dtype);

// |v| elementwise: the magnitudes rounding errors grow with.
std::vector<float> Abs(std::vector<float> v);

// Compares got with the reference: NaN exactly where the reference is NaN,
// infinities equal, finite values within rtol * max(|want|, scale[i]) (scale
// empty: |want|), where scale[i] is the magnitude the rounding error grows
// with (the mean of |x| for an average), or within `floor`: values below
// FLT_MIN carry no relative precision in float32, and float16's subnormals
// are 2^-24 apart, so a float16 test passes that (DTypeFloor). rtol 0
// demands equality.
::testing::AssertionResult MatchesReference(const std::vector<float>& got,
                                            const std::vector<float>& want, double rtol,
                                            const std::vector<float>& scale = {},
                                            double floor = std::numeric_limits<float>::min());

}  // namespace graphserve
