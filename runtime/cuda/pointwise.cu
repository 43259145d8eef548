#include "runtime/cuda/pointwise.h"

#include <math_constants.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "runtime/cuda/dtype_dispatch.cu.h"

namespace graphserve {
namespace {

constexpr int kThreadsPerBlock = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 16;

// Each case is what the node's own kernel computes (op_kernels_unary.cu,
// op_kernels_binary.cu), without contraction (Note [Pointwise programs]).
__device__ __forceinline__ float Apply(const PointwiseInstruction& in, float a, float b) {
  switch (in.op) {
    case PointwiseOp::kAdd:
      return __fadd_rn(a, b);
    case PointwiseOp::kSub:
      return __fsub_rn(a, b);
    case PointwiseOp::kMul:
      return __fmul_rn(a, b);
    case PointwiseOp::kDiv:
      return __fdiv_rn(a, b);
    case PointwiseOp::kPow:
      return powf(a, b);
    case PointwiseOp::kMax:
      return isnan(a) || isnan(b) ? CUDART_NAN_F : (a < b ? b : a);
    case PointwiseOp::kMin:
      return isnan(a) || isnan(b) ? CUDART_NAN_F : (b < a ? b : a);
    case PointwiseOp::kSqrt:
      return sqrtf(a);
    case PointwiseOp::kExp:
      return expf(a);
    case PointwiseOp::kLog:
      return logf(a);
    case PointwiseOp::kSigmoid: {
      if (a >= 0.0f) return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-a)));
      const float e = expf(a);
      return __fdiv_rn(e, __fadd_rn(1.0f, e));
    }
    case PointwiseOp::kTanh:
      return tanhf(a);
    case PointwiseOp::kErf:
      return erff(a);
    case PointwiseOp::kRelu:
      return a < 0.0f ? 0.0f : a;
    case PointwiseOp::kAbs:
      return fabsf(a);
    case PointwiseOp::kNeg:
      return -a;
    case PointwiseOp::kReciprocal:
      return __fdiv_rn(1.0f, a);
    case PointwiseOp::kLeakyRelu:
      return a < 0.0f ? __fmul_rn(in.imm, a) : a;
  }
  return CUDART_NAN_F;
}

// A thread runs the program over kLanes consecutive elements at once, so
// that decoding each instruction and reading its operands from the register
// file (indexed at run time, so it lives in local memory) is shared by
// kLanes elements: one 16-byte access where there were four of 4 bytes.
// Each element sees the same float operations as alone, in the same order.
constexpr int kLanes = 4;

__device__ __forceinline__ float4 Splat(float v) { return make_float4(v, v, v, v); }

// Grid-stride over groups of kLanes elements of T; the registers are float.
// No __restrict__: the output may be an input, and each element is read and
// written by the same thread (all its inputs before its output).
template <typename T>
__global__ void PointwiseKernel(const PointwiseProgram program, const PointwiseInputs inputs,
                                T* out, int64_t count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * kLanes;
  for (int64_t first = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kLanes;
       first < count; first += stride) {
    const int lanes = count - first < kLanes ? static_cast<int>(count - first) : kLanes;
    float4 r[kPointwiseMaxRegisters];
    for (int k = 0; k < program.num_inputs; ++k) {
      const T* in = static_cast<const T*>(inputs.data[k]) + first;
      float v[kLanes];
#pragma unroll
      for (int l = 0; l < kLanes; ++l) v[l] = l < lanes ? static_cast<float>(in[l]) : 0.0f;
      r[k] = make_float4(v[0], v[1], v[2], v[3]);
    }
    for (int k = 0; k < program.num_instructions; ++k) {
      const PointwiseInstruction& in = program.code[k];
      const float4 a = in.a == kPointwiseImmediate ? Splat(in.imm) : r[in.a];
      const float4 b = in.b == kPointwiseImmediate ? Splat(in.imm) : r[in.b];
      r[in.dst] = make_float4(Apply(in, a.x, b.x), Apply(in, a.y, b.y), Apply(in, a.z, b.z),
                              Apply(in, a.w, b.w));
    }
    const float4 result = r[program.result];
    const float o[kLanes] = {result.x, result.y, result.z, result.w};
#pragma unroll
    for (int l = 0; l < kLanes; ++l) {
      if (l < lanes) out[first + l] = static_cast<T>(o[l]);  // the one rounding to T
    }
  }
}

}  // namespace

bool IsWellFormed(const PointwiseProgram& program) {
  if (program.num_inputs < 0 || program.num_inputs > kPointwiseMaxInputs ||
      program.num_instructions < 0 || program.num_instructions > kPointwiseMaxInstructions) {
    return false;
  }
  int written = program.num_inputs;  // registers [0, written) hold values
  for (int k = 0; k < program.num_instructions; ++k) {
    const PointwiseInstruction& in = program.code[k];
    const bool unary = in.op >= PointwiseOp::kSqrt;
    const auto readable = [&](uint8_t operand) {
      return operand == kPointwiseImmediate || operand < written;
    };
    if (in.dst != written || !readable(in.a) || (!unary && !readable(in.b))) return false;
    if (in.a == kPointwiseImmediate && (unary || in.b == kPointwiseImmediate)) return false;
    ++written;
  }
  return program.result >= 0 && program.result < written;
}

cudaError_t LaunchPointwise(DType dtype, const PointwiseProgram& program,
                            const PointwiseInputs& inputs, void* out, int64_t count,
                            cudaStream_t stream) {
  using op_kernels_internal::ComputeType;
  using op_kernels_internal::kIsFloatType;
  if (count < 0 || !IsWellFormed(program)) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const int64_t groups = (count + kLanes - 1) / kLanes;
  const int64_t blocks =
      std::min<int64_t>((groups + kThreadsPerBlock - 1) / kThreadsPerBlock, kMaxBlocks);
  return op_kernels_internal::VisitDeviceType(dtype, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::Type;
    // The types that compute in float (float64 would lose its precision).
    if constexpr (kIsFloatType<T> && std::is_same_v<ComputeType<T>, float>) {
      PointwiseKernel<T><<<static_cast<unsigned int>(blocks), kThreadsPerBlock, 0, stream>>>(
          program, inputs, static_cast<T*>(out), count);
      return cudaGetLastError();
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

}  // namespace graphserve
