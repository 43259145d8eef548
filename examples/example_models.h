#pragma once
// The example models GraphServe's demos, tests and benchmarks use, built in
// code with the ONNX protobuf API so that no Python or PyTorch is needed to
// make them. Weights come from a fixed-seed generator, so every build of a
// model is byte-identical.
//
//  mlp.onnx         x [batch,512] float32 -> Gemm 512-1024-512-256-1 with
//                   Relu between and Sigmoid at the end -> y [batch,1].
//  dlrm_dense.onnx  The dense part of DLRM: dense [batch,13] and the looked-up
//                   embeddings sparse_emb [batch,26,16] -> prob [batch,1]. See
//                   Note [DLRM dense interaction] in example_models.cc.
//
// The batch dim of every input and output is dim_param "batch".

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace graphserve {

// Seed of the weight generator that the written model files use.
inline constexpr uint64_t kExampleModelSeed = 20240611;

onnx::ModelProto MakeMlpModel(uint64_t seed = kExampleModelSeed);
onnx::ModelProto MakeDlrmDenseModel(uint64_t seed = kExampleModelSeed);
// Not written to files: a ranking model with independent branches, for the
// multi-stream schedules' tests. x [batch,256] -> four towers, each Gemm
// 256-512-256-64 with Relu after every layer -> Concat [batch,256] -> Gemm
// 256-1 -> Sigmoid -> y [batch,1].
onnx::ModelProto MakeMultiTowerModel(uint64_t seed = kExampleModelSeed);
// Not written to files: a model with a shape dim (Note [Shape dims] in
// runtime/ir.h). x [batch, sequence, 16] -> MatMul 16x16 -> Softmax over the
// sequence -> y [batch, sequence, 16]: every output depends on the
// sequence's extent, so a graph bound at another extent cannot match.
onnx::ModelProto MakeSequenceSoftmaxModel(uint64_t seed = kExampleModelSeed);
// Not written to files: the same with an attention mask, as an encoder has.
// x [batch, sequence, 16], mask [batch, sequence] int64 (1 real, 0 padding)
// -> MatMul 16x16, plus (mask - 1) * 1e4 on every feature -> Softmax over
// the sequence -> y [batch, sequence, 16]: positions whose mask is 0 weigh
// exactly nothing, so padding with mask 0 leaves the real positions' outputs
// as they were (Note [Shape buckets] in server/shape_buckets.h).
onnx::ModelProto MakeMaskedSequenceModel(uint64_t seed = kExampleModelSeed);
// Not written to files: a model with an input with a default (Note [Inputs
// with defaults] in runtime/ir.h), as Triton's qa/L0_initializer_as_input
// has, that batches. x [batch, 16] -> MatMul 16x16 -> Add bias -> y [batch,
// 16], where bias [batch, 16] is a graph input and also an initializer of
// one row, [1, 16]: its default.
onnx::ModelProto MakeInputWithDefaultModel(uint64_t seed = kExampleModelSeed);
// Not written to files: a preprocessing step whose output is the MLP's
// input, for pipelines (capture/pipeline_graphs.h). x [batch, 512] ->
// (x - mean) * scale, each [512] -> Relu -> x_normalized [batch, 512].
onnx::ModelProto MakeFeatureNormalizeModel(uint64_t seed = kExampleModelSeed);
// A dim written this way in the builders' dims is the dynamic "sequence".
inline constexpr int64_t kSequenceDim = -2;

// The flat indices into a row-major [n,n] matrix of its strictly lower
// triangle (i > j), row by row: n*(n-1)/2 of them.
std::vector<int64_t> LowerTriangleIndices(int64_t n);

// Writes mlp.onnx and dlrm_dense.onnx into `dir` (created if missing) and
// returns their paths through `written` (optional). Errors name the file.
absl::Status WriteExampleModels(const std::string& dir,
                                std::vector<std::string>* written = nullptr);

}  // namespace graphserve
