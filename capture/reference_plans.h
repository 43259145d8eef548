#pragma once
// The independent reference a graph set checks its replays against at load
// (Note [An independent reference]): the model run eagerly on a plain CUDA
// plan, in float32, with none of the choices a served plan makes.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/graph_key.h"
#include "common/tensor.h"
#include "runtime/ir.h"
#include "runtime/passes/model_passes.h"
#include "runtime/passes/precision.h"

namespace graphserve {

// The outputs of the reference model at `key` on `inputs` (one per input of
// the model bound at `key`, in order), on the current CUDA device.
using ReferenceRunner = std::function<absl::StatusOr<std::vector<HostTensor>>(
    const GraphKey& key, absl::Span<const HostTensor> inputs)>;

// Runs `model` at each key on its own plain CUDA plan, made when asked for
// and dropped after the run (the weights are uploaded once per device and
// kept until the runner is destroyed): float32 exactly (no TF32), no fusion (epilogues, pointwise
// regions, attention), each GEMM's and convolution's first heuristic
// algorithm (no autotuning), one lane. `model` is the served model before
// its precision pass.
ReferenceRunner PlainCudaReference(std::shared_ptr<const Model> model);

// The model a reference runs for `served`, imported from `path` with
// `passes`: a copy of `served` when its precision pass left it as written
// (fp32, tf32), else the file imported again with the same passes in fp32,
// named and batching as `served`.
absl::StatusOr<Model> ModelBeforePrecisionPass(const Model& served, const std::string& path,
                                               ModelPassOptions passes);

// The precision a model's replays compute in, for the check: `precision`,
// but tf32 for a float32 model whose plans may use TF32 (the server's
// --allow-tf32, prepare's).
ModelPrecision CheckedPrecision(ModelPrecision precision, bool allow_tf32);

// The largest relative error against the reference accepted for replays
// computing in `precision` (CheckedPrecision; Note [An independent
// reference]).
double ReferenceTolerance(ModelPrecision precision);

// Note [An independent reference]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The load-time check of Note [Checking a captured graph] compares a replay
// with an eager run of the same plan: it proves the capture, not the plan. A
// wrong autotuned cuDNN engine or cuBLASLt algorithm, a broken fusion or a
// bad precision conversion would agree with itself and be served. So slot
// 0's graph of every key is also compared, on the check's random input, with
// the model run on a plan that shares none of those choices: the model
// before the precision pass, exactly float32, unfused, each library call on
// its first heuristic algorithm. What the two still share is the op kernels
// (checked against the host reference kernels, op by op, in CI's and the GPU
// check's tests) and binding. The host reference executor would share even
// less, but it takes minutes on a BERT-base at batch 8, where the plain plan
// takes milliseconds; its weights live only while the model loads, its
// arena only while it runs.
//
// The tolerance follows the precision the model's replays compute in
// (capture.reference_tolerance overrides it; a negative value turns the
// check off): 1e-4 for float32 (rounding order only), 1e-2 for TF32 (a
// 10-bit mantissa in every product), 3e-2 for float16 and auto, 6e-2 for bfloat16
// (the served model's rounding of weights and activations, three bits fewer
// for bfloat16). A wrong algorithm or kernel gives errors near 1. Float
// outputs are compared by relative error; integer and bool outputs (an
// ArgMax, a mask) only when the model runs in float32, since a 16-bit model
// may legitimately flip a near tie.
}  // namespace graphserve
