#pragma once
// A region of elementwise nodes of one float type as one kernel: the fusion pass
// (runtime/fusion.h, StepKind::kPointwise) finds the region, PointwiseKernel
// compiles its nodes into a PointwiseProgram, and one launch runs the program
// on every element, reading each input and writing the output once instead
// of once per node. See Note [Pointwise programs].
//
// Plain C++ and CUDA runtime types only, so callers compile without nvcc.

#include <cuda_runtime.h>

#include <cstdint>

#include "common/dtype_table.h"

namespace graphserve {

inline constexpr int kPointwiseMaxInputs = 4;
inline constexpr int kPointwiseMaxInstructions = 32;
inline constexpr int kPointwiseMaxRegisters = kPointwiseMaxInputs + kPointwiseMaxInstructions;

enum class PointwiseOp : uint8_t {
  // Two operands.
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMax,
  kMin,
  // One operand (a).
  kSqrt,
  kExp,
  kLog,
  kSigmoid,
  kTanh,
  kErf,
  kRelu,
  kAbs,
  kNeg,
  kReciprocal,
  kLeakyRelu,  // alpha in imm
};

// An operand that is the instruction's immediate instead of a register.
inline constexpr uint8_t kPointwiseImmediate = 0xFF;

// r[dst] = op(a, b), in float, where an operand is r[index] or, for
// kPointwiseImmediate, `imm` (a scalar constant of the model, widened to
// float).
struct PointwiseInstruction {
  PointwiseOp op = PointwiseOp::kAdd;
  uint8_t dst = 0;
  uint8_t a = 0;
  uint8_t b = 0;
  float imm = 0.0f;
};

// Registers 0 .. num_inputs-1 hold the inputs' elements; each instruction
// writes a fresh register; the output is r[result].
struct PointwiseProgram {
  int32_t num_inputs = 0;
  int32_t num_instructions = 0;
  int32_t result = 0;
  PointwiseInstruction code[kPointwiseMaxInstructions];
};

// Device addresses of the inputs' elements, each of the launch's dtype.
struct PointwiseInputs {
  const void* data[kPointwiseMaxInputs] = {};
};

// Enqueues out[i] = program(inputs[0][i], ...) for i in [0, count), every
// input and the output of `dtype` (float32, float16 or bfloat16): each
// element widened to float, the program run in float, the result rounded
// once to `dtype` (Note [16-bit fusions] in runtime/fusion.h). The output may
// be one of the inputs (each element is read and written by one thread).
// Returns cudaGetLastError() after the launch; a count of 0 enqueues nothing;
// an ill-formed program, a negative count or another dtype is
// cudaErrorInvalidValue.
cudaError_t LaunchPointwise(DType dtype, const PointwiseProgram& program,
                            const PointwiseInputs& inputs, void* out, int64_t count,
                            cudaStream_t stream);

// Whether `program` only reads registers written before (inputs or earlier
// instructions) and writes within bounds: what LaunchPointwise checks.
bool IsWellFormed(const PointwiseProgram& program);

// Note [Pointwise programs]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Transformer exports spell activations out node by node: GPT-2's tanh GELU
// is eight (Pow, Mul, Add, Mul, Tanh, Add, Mul, Mul) over a [batch, seq,
// 3072] tensor, each a kernel reading and writing all of it. Interpreting the
// region per element (a switch per instruction, registers in a small array)
// costs a few instructions per element against memory traffic divided by the
// region's size. Each instruction computes exactly what the node's own kernel
// computes, with the same CUDA math functions, and the arithmetic uses the
// round-to-nearest intrinsics (__fadd_rn, ...) that the compiler never
// contracts into fused multiply-adds, so in float32 the fused region's
// results are bitwise those of the unfused nodes, NaN and Inf included. In
// float16 and bfloat16 the registers stay float and only the result is
// rounded, where each unfused node rounds its own output: the fused region is
// the unfused nodes without their intermediate roundings (Note [16-bit
// fusions] in runtime/fusion.h).

}  // namespace graphserve
