#pragma once
// Shape dims a request chooses: which buckets of extents a model is captured
// at, how a request's extents map into them, and the load-time check that
// padding into a bucket leaves a model's answers unchanged.

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/model_config.pb.h"
#include "runtime/executor.h"
#include "runtime/ir.h"
#include "server/model_interface.h"
#include "server/row_shape.h"

namespace graphserve {

// Note [Shape buckets]
// ~~~~~~~~~~~~~~~~~~~~
// A model's shape dims (Note [Shape dims] in runtime/ir.h) that config.pbtxt
// gives as -1 are chosen by each request: input_ids [batch, -1] takes 12
// tokens in one request and 300 in the next. A CUDA graph has fixed shapes,
// so the model is captured at a few buckets (config.pbtxt's
// `capture { shape_dims: "sequence" buckets { extents: 64 } buckets {
// extents: 512 } }`), every batch size at every bucket, and a request runs
// in the smallest bucket that holds it (a config that lists none gets every
// open dim at 16, 32, 64, 128, 256 and 512): its rows are padded into the
// bucket's on the way in (each input's pad value, capture.padding, 0 by
// default) and its outputs sliced back out on the way out, along the output
// dims that follow a shape dim; by the device's pitched copies where it can
// (Note [Pitched row copies] in capture/graph_set.h), else by the host. Requests of different lengths merge into one
// chunk of the bucket that holds the longest, as dynamic batching merges
// rows of one shape; with several shape dims each bucket must hold the ones
// before it, so that some bucket always holds a merged chunk.
//
// Padding is exact only for models that ignore what lies past a request's
// positions: an encoder whose attention mask is padded with 0, a causal
// decoder padded at the end. A model whose real positions see the padding
// (an image classifier pooling the whole image, an encoder without a mask)
// would answer wrongly, so it is checked, not assumed: at load, for each
// bucket, a request shorter in every shape dim is run at its exact extents
// and padded into the bucket, and the outputs on its real positions must
// agree within float rounding (CheckPaddingExact). A model that fails, and
// any with `shape_padding: "exact"`, serves requests whose extents are a
// bucket's only; other extents are refused naming the buckets, or run
// eagerly at their own extents within capture.eager_extents (Note [Eager
// fallback] in server/eager_fallback.h). An output
// dim that is neither fixed nor one shape dim's extent (an image model's
// H/32 feature map) cannot be sliced, and such a model is refused.
//
// A model served without a batch dim (config.pbtxt's max_batch_size 0) has
// its dynamic dim 0 among its shape dims, and is bucketed over those alone,
// one request a chunk (Note [Models without a batch dim] in runtime/ir.h).
//
// A config.pbtxt that fixes every shape dim (dims [128]) has one bucket, and
// its interface no shape dims: clients send exactly those extents. The
// planner plans each bucket with its own timed costs (Note [Planning by
// total cost] in planning/batch_planner.h); metrics count batch sizes, not
// buckets.

// The buckets of `model`'s graphs, each with one extent per ShapeDimNames
// entry, smallest (fewest positions) first; one bucket, empty, for a model
// without shape dims. When config.pbtxt gives a shape dim as -1, also fills
// `interface`'s shape_dims (every shape dim of the model, ShapeDimNames
// order), buckets, each tensor's shape_dim_of, and the fixed dims the model
// has where the config says -1. Reads the capture section's shape_dims and
// buckets; `model`'s inputs and outputs must be arranged as `interface`
// declares them (ArrangeModelAsDeclared), and model.batches must be
// interface->batching (CompleteConfigFromModel sets it), else
// FailedPrecondition. InvalidArgument naming the field for a config whose
// buckets do not fit the model.
absl::StatusOr<std::vector<std::vector<int64_t>>> AttachShapeBuckets(
    const Model& model, const inference::ModelCapture& capture, ModelInterface* interface);

// Per interface input, what its padded positions hold: capture.padding's
// value in the input's type, 0 for an input not listed. InvalidArgument for
// an unknown input or a value the type cannot hold.
absl::StatusOr<std::vector<PadElement>> PadElementsFromConfig(
    const ModelInterface& interface, const inference::ModelCapture& capture);

// OK when padding is exact for every bucket of `interface` (Note [Shape
// buckets]); FailedPrecondition naming the bucket and the first output that
// differs otherwise. Inputs: floats standard normal, integers and booleans 1
// (a valid token id, an attention mask that admits every real position).
absl::Status CheckPaddingExact(const Model& model, const ModelInterface& interface,
                               const std::vector<PadElement>& pads,
                               const ExecutorFactory& make_executor);

// The rows of a request of `extents` to `interface` (any extents for an
// interface without shape dims).
RowShape RowShapeAt(const ModelInterface& interface, const std::vector<int64_t>& extents);

// Whether every request's rows of `interface` are the leading blocks of any
// bucket's rows that hold them (a tensor's shape dims, if any, its first row
// dim alone), and every input's pad in `pads` one repeated byte: then the
// device pads and slices rows itself (Note [Pitched row copies] in
// capture/graph_set.h), and CUDA shared memory stays on the device. True
// for an interface without shape dims.
bool DevicePadsRows(const ModelInterface& interface, const std::vector<PadElement>& pads);

}  // namespace graphserve
