#pragma once
// The masked sequence model (examples/example_models.h,
// MakeMaskedSequenceModel) as the server's tests load it with shape buckets,
// and its host reference at a request's exact shape.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "proto/model_config.pb.h"
#include "runtime/ir.h"
#include "server/model_interface.h"

namespace graphserve {

// Its config: x [-1, 16] FP32 and mask [-1] INT64 in, y [-1, 16] out, batch
// up to 4, with `capture`, a capture section in text format (its buckets,
// eager extents, batch sizes).
inference::ModelConfig MaskedModelConfig(const std::string& capture);

struct MaskedModel {
  std::shared_ptr<const Model> model;
  ModelInterface interface;
};

// The model imported and arranged as MaskedModelConfig(capture) declares it,
// its shape buckets attached; a failure fails the calling test.
MaskedModel LoadMaskedModel(const std::string& capture);

// y [rows, length, 16] for x [rows, length, 16] and mask [rows, length], on
// the host executor with `model` bound at exactly that shape.
std::vector<float> MaskedReference(const Model& model, int64_t rows, int64_t length,
                                   const std::vector<float>& x, const std::vector<int64_t>& mask);

}  // namespace graphserve
