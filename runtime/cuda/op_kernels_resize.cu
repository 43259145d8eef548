// Resize: a weighted gather through binding's sampling tables (Note [Resize
// sampling tables] in runtime/ops/resize.cc), one thread per output element.

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "runtime/cuda/dtype_dispatch.cu.h"
#include "runtime/cuda/op_kernels_elementwise.cu.h"
#include "runtime/cuda/op_kernels_launch.h"

namespace graphserve {
namespace op_kernels_internal {
namespace {

template <typename T>
__global__ void __launch_bounds__(kMapThreads)
    ResizeKernel(ResizeParams p, const T* in, const int64_t* indices, const float* weights,
                 T* out) {
  using C = ComputeType<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.num_elements;
       i += step) {
    // The coordinates of output element i; the offset of the dims that are
    // not resized (a resized dim's coordinate picks its table entries).
    int64_t coordinate[kMaxRank];
    int64_t rest = i;
    for (int d = p.rank - 1; d >= 0; --d) {
      coordinate[d] = rest % p.out_dims[d];
      rest /= p.out_dims[d];
    }
    int64_t base = 0;
    for (int d = 0; d < p.rank; ++d) base += coordinate[d] * p.in_strides[d];
    int64_t first_entry[kMaxRank];
    for (int k = 0; k < p.resized; ++k) {
      const int d = p.axis[k];
      base -= coordinate[d] * p.in_strides[d];
      first_entry[k] = p.table_offset[k] + coordinate[d] * p.taps[k];
    }
    C sum = 0;
    bool outside = false;
    for (int64_t c = 0; c < p.combinations && !outside; ++c) {
      int64_t choice = c;
      int64_t offset = base;
      C weight = 1;
      for (int k = 0; k < p.resized; ++k) {
        const int64_t entry = first_entry[k] + choice % p.taps[k];
        choice /= p.taps[k];
        const int64_t index = indices[entry];
        outside = outside || index < 0;
        offset += index * p.in_strides[p.axis[k]];
        weight *= static_cast<C>(weights[entry]);
      }
      if (!outside) sum += weight * static_cast<C>(in[offset]);
    }
    out[i] = static_cast<T>(outside ? static_cast<C>(p.extrapolation_value) : sum);
  }
}

}  // namespace

cudaError_t LaunchResize(const ResizeParams& p, const void* input, const int64_t* indices,
                         const float* weights, void* output, cudaStream_t stream) {
  if (p.num_elements <= 0) return cudaSuccess;
  return VisitDeviceType(p.dtype, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::Type;
    if constexpr (!kIsFloatType<T>) {
      return cudaErrorInvalidValue;  // binding resizes float types only
    } else {
      ResizeKernel<T><<<MapBlocks(p.num_elements), kMapThreads, 0, stream>>>(
          p, static_cast<const T*>(input), indices, weights, static_cast<T*>(output));
      return cudaGetLastError();
    }
  });
}

}  // namespace op_kernels_internal
}  // namespace graphserve
