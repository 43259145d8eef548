#include "server/shape_buckets.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/dtype_table.h"
#include "common/status.h"
#include "runtime/bind.h"

namespace graphserve {

namespace {

absl::Status Annotated(const absl::Status& status, const std::string& context) {
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

// The buckets of a config that gives a shape dim as -1 and lists none: every
// open dim at each of these extents together.
constexpr int64_t kDefaultBucketExtents[] = {16, 32, 64, 128, 256, 512};

// A bucket's positions: the product of its extents.
int64_t Positions(const std::vector<int64_t>& bucket) {
  int64_t positions = 1;
  for (int64_t extent : bucket) positions *= extent;
  return positions;
}

// Per shape dim (`names` order): the extent config.pbtxt gives it, -1 when it
// leaves it to requests. Inputs sharing a dim must agree.
absl::StatusOr<std::vector<int64_t>> ConfigExtents(const Model& model,
                                                   const ModelInterface& interface,
                                                   const std::vector<std::string>& names) {
  std::map<std::string, std::pair<int64_t, std::string>> given;  // extent, input
  const size_t batch_dims = interface.batching ? 1 : 0;
  for (size_t i = 0; i < model.inputs.size() && i < interface.inputs.size(); ++i) {
    const ValueInfo& input = model.inputs[i];
    const TensorSpec& spec = interface.inputs[i];
    const Dims& dims = spec.model_dims.value_or(spec.dims);
    for (size_t d = batch_dims; d < input.dim_names.size(); ++d) {
      const std::string& name = input.dim_names[d];
      if (name.empty() || d - batch_dims >= dims.size()) continue;
      const int64_t extent = dims[d - batch_dims];
      const auto [it, inserted] = given.try_emplace(name, extent, input.name);
      if (!inserted && it->second.first != extent) {
        return absl::InvalidArgumentError(absl::StrCat(
            "inputs '", it->second.second, "' and '", input.name, "' share the model's dim '",
            name, "', but config.pbtxt gives it ", it->second.first, " and ", extent));
      }
    }
  }
  std::vector<int64_t> extents;
  for (const std::string& name : names) {
    const auto it = given.find(name);
    if (it == given.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the model's dynamic dim '", name, "' has no extent in config.pbtxt"));
    }
    extents.push_back(it->second.first);
  }
  return extents;
}

// The capture section's buckets, completed with the config's fixed extents,
// in `names` order, smallest first.
constexpr int64_t kMaxExtent = int64_t{1} << 24;

// capture.eager_extents per shape dim of `names` (a dim the config fixes at
// its extent); empty when the config gives none.
absl::StatusOr<std::vector<int64_t>> EagerExtentsFromCapture(
    const inference::ModelCapture& capture, const std::vector<std::string>& names,
    const std::vector<int64_t>& given, const std::vector<std::vector<int64_t>>& buckets) {
  if (capture.eager_extents().empty()) return std::vector<int64_t>{};
  std::vector<std::string> order(capture.shape_dims().begin(), capture.shape_dims().end());
  if (order.empty()) {
    for (size_t s = 0; s < names.size(); ++s) {
      if (given[s] == -1) order.push_back(names[s]);
    }
  }
  if (static_cast<size_t>(capture.eager_extents_size()) != order.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.pbtxt capture.eager_extents gives ", capture.eager_extents_size(),
        " extents; it takes one for each of the dims [", absl::StrJoin(order, ", "), "]"));
  }
  std::vector<int64_t> limits = given;
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t s =
        static_cast<size_t>(std::find(names.begin(), names.end(), order[k]) - names.begin());
    if (s == names.size() || given[s] != -1) {
      return absl::InvalidArgumentError(absl::StrCat("config.pbtxt capture.shape_dims names '",
                                                     order[k],
                                                     "', which is not a dim config.pbtxt gives "
                                                     "as -1"));
    }
    int64_t largest = 0;
    for (const std::vector<int64_t>& bucket : buckets) largest = std::max(largest, bucket[s]);
    const int64_t limit = capture.eager_extents(static_cast<int>(k));
    if (limit < largest || limit > kMaxExtent) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config.pbtxt capture.eager_extents gives ", limit, " for dim '", order[k],
          "'; it takes from the largest bucket's extent, ", largest, ", to ", kMaxExtent));
    }
    limits[s] = limit;
  }
  return limits;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> BucketsFromCapture(
    const inference::ModelCapture& capture, const std::vector<std::string>& names,
    const std::vector<int64_t>& given) {
  std::vector<std::string> open;  // the dims config.pbtxt gives as -1
  for (size_t s = 0; s < names.size(); ++s) {
    if (given[s] == -1) open.push_back(names[s]);
  }
  const std::string example = absl::StrCat(
      "capture { shape_dims: [\"", absl::StrJoin(open, "\", \""), "\"] buckets { extents: [",
      absl::StrJoin(std::vector<int>(open.size(), 128), ", "), "] } }");
  if (capture.buckets().empty()) {
    // Triton's configs give a sequence as -1 and nothing more: serve them.
    std::vector<std::vector<int64_t>> buckets;
    for (int64_t extent : kDefaultBucketExtents) {
      std::vector<int64_t> bucket = given;
      for (int64_t& e : bucket) {
        if (e == -1) e = extent;
      }
      buckets.push_back(std::move(bucket));
    }
    return buckets;
  }
  std::vector<size_t> position;  // per capture.shape_dims entry: its index in `names`
  for (const std::string& name : capture.shape_dims()) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end() || given[it - names.begin()] != -1 ||
        std::count(capture.shape_dims().begin(), capture.shape_dims().end(), name) > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config.pbtxt capture.shape_dims names '", name,
          "', which is not a dim config.pbtxt gives as -1 once; those are: ",
          absl::StrJoin(open, ", ")));
    }
    position.push_back(static_cast<size_t>(it - names.begin()));
  }
  if (position.size() != open.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.pbtxt capture.shape_dims must list the dims config.pbtxt gives as -1 (",
        absl::StrJoin(open, ", "), "), in the order bucket extents give them; e.g. ", example));
  }
  std::vector<std::vector<int64_t>> buckets;
  for (int b = 0; b < capture.buckets_size(); ++b) {
    const auto& extents = capture.buckets(b).extents();
    if (static_cast<size_t>(extents.size()) != position.size() ||
        std::any_of(extents.begin(), extents.end(),
                    [](int64_t e) { return e < 1 || e > kMaxExtent; })) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config.pbtxt capture.buckets[", b, "] extents [", absl::StrJoin(extents, ","),
          "] must give one extent from 1 to ", kMaxExtent, " for each of capture.shape_dims [",
          absl::StrJoin(capture.shape_dims(), ","), "]"));
    }
    std::vector<int64_t> bucket = given;
    for (size_t k = 0; k < position.size(); ++k) bucket[position[k]] = extents[static_cast<int>(k)];
    buckets.push_back(std::move(bucket));
  }
  std::sort(buckets.begin(), buckets.end(), [](const auto& a, const auto& b) {
    return std::make_pair(Positions(a), a) < std::make_pair(Positions(b), b);
  });
  if (std::adjacent_find(buckets.begin(), buckets.end()) != buckets.end()) {
    return absl::InvalidArgumentError("config.pbtxt capture.buckets lists a bucket twice");
  }
  // Each bucket holds the one before, so that the largest holds any set of
  // requests a chunk merges (with one shape dim, always so).
  for (size_t b = 1; b < buckets.size(); ++b) {
    for (size_t s = 0; s < names.size(); ++s) {
      if (buckets[b][s] < buckets[b - 1][s]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config.pbtxt capture.buckets [", absl::StrJoin(buckets[b - 1], ","), "] and [",
            absl::StrJoin(buckets[b], ","),
            "]: with several shape dims, each bucket must hold the smaller ones in every dim "
            "(e.g. [224,224], [320,320])"));
      }
    }
  }
  return buckets;
}

// Whether config.pbtxt gives some tensor a -1 dim.
bool HasOpenDim(const ModelInterface& interface) {
  for (const std::vector<TensorSpec>* side : {&interface.inputs, &interface.outputs}) {
    for (const TensorSpec& spec : *side) {
      if (std::find(spec.dims.begin(), spec.dims.end(), -1) != spec.dims.end()) return true;
    }
  }
  return false;
}

// The largest extent of each shape dim over the buckets.
std::vector<int64_t> LargestExtents(const std::vector<std::vector<int64_t>>& buckets) {
  std::vector<int64_t> largest = buckets.front();
  for (const std::vector<int64_t>& bucket : buckets) {
    for (size_t s = 0; s < bucket.size(); ++s) largest[s] = std::max(largest[s], bucket[s]);
  }
  return largest;
}

// Per output (model order): its dims bound at one row of `extents`, the
// batch left out.
absl::StatusOr<std::vector<Dims>> OutputDimsAt(const Model& model, bool batching,
                                               const std::vector<int64_t>& extents) {
  ASSIGN_OR_RETURN(const BindOptions options, BindOptionsAt(model, GraphKey{1, extents}));
  absl::StatusOr<BoundGraph> graph = BindModel(model, options);
  if (!graph.ok()) {
    return Annotated(graph.status(),
                          absl::StrCat("binding at extents [", absl::StrJoin(extents, ","), "]"));
  }
  std::vector<Dims> dims;
  for (ValueId id : graph->outputs) {
    const Dims& full = graph->value(id).dims;
    dims.emplace_back(full.begin() + (batching && !full.empty() ? 1 : 0), full.end());
  }
  return dims;
}

// Fills the inputs' shape_dim_of (from the model's dim names) and the fixed
// dims the model has where config.pbtxt says -1.
absl::Status AttachInputDims(const Model& model, ModelInterface* interface) {
  const size_t batch_dims = interface->batching ? 1 : 0;
  for (size_t i = 0; i < interface->inputs.size(); ++i) {
    TensorSpec& spec = interface->inputs[i];
    const ValueInfo& input = model.inputs[i];
    if (input.dims.size() != spec.dims.size() + batch_dims) continue;  // CheckInterfacesMatch says
    spec.shape_dim_of.assign(spec.dims.size(), -1);
    for (size_t d = 0; d < spec.dims.size(); ++d) {
      if (spec.dims[d] != -1) continue;
      const std::string& name =
          d + batch_dims < input.dim_names.size() ? input.dim_names[d + batch_dims] : "";
      const auto it = std::find(interface->shape_dims.begin(), interface->shape_dims.end(), name);
      if (!name.empty() && it != interface->shape_dims.end()) {
        spec.shape_dim_of[d] = static_cast<int>(it - interface->shape_dims.begin());
      } else if (input.dims[d + batch_dims] > 0) {
        spec.dims[d] = input.dims[d + batch_dims];  // the model fixes it
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "config.pbtxt gives input '", spec.name, "' dims[", d,
            "] as -1, which the model file leaves dynamic without a name"));
      }
    }
  }
  return absl::OkStatus();
}

// Fills the outputs' shape_dim_of by binding the model at the largest
// extents and, per open shape dim, at a second extent: an output dim that
// moves with exactly one shape dim, and equals its extent, follows it.
absl::Status AttachOutputDims(const Model& model, const std::vector<std::vector<int64_t>>& buckets,
                              const std::vector<int64_t>& given, ModelInterface* interface) {
  const std::vector<int64_t> largest = LargestExtents(buckets);
  ASSIGN_OR_RETURN(const std::vector<Dims> at_largest,
                   OutputDimsAt(model, interface->batching, largest));
  std::vector<std::vector<int64_t>> probes;   // per open shape dim
  std::vector<std::vector<Dims>> probed;
  std::vector<size_t> probed_dim;
  for (size_t s = 0; s < given.size(); ++s) {
    if (given[s] != -1) continue;
    // Another extent the buckets use, else one below (or above 1).
    int64_t other = largest[s] > 1 ? largest[s] - 1 : 2;
    for (const std::vector<int64_t>& bucket : buckets) {
      if (bucket[s] != largest[s]) other = bucket[s];
    }
    std::vector<int64_t> probe = largest;
    probe[s] = other;
    ASSIGN_OR_RETURN(std::vector<Dims> dims, OutputDimsAt(model, interface->batching, probe));
    probes.push_back(std::move(probe));
    probed.push_back(std::move(dims));
    probed_dim.push_back(s);
  }
  for (size_t o = 0; o < interface->outputs.size() && o < at_largest.size(); ++o) {
    TensorSpec& spec = interface->outputs[o];
    const Dims& dims = at_largest[o];
    if (dims.size() != spec.dims.size()) continue;  // CheckInterfacesMatch says
    spec.shape_dim_of.assign(dims.size(), -1);
    for (size_t d = 0; d < dims.size(); ++d) {
      std::vector<size_t> moved;  // indices into probes
      for (size_t p = 0; p < probes.size(); ++p) {
        if (probed[p][o][d] != dims[d]) moved.push_back(p);
      }
      if (moved.empty()) {
        if (spec.dims[d] == -1) spec.dims[d] = dims[d];
        continue;
      }
      const size_t p = moved.front(), s = probed_dim[p];
      if (moved.size() > 1 || dims[d] != largest[s] || probed[p][o][d] != probes[p][s]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "output '", spec.name, "' dims[", d, "] is ", dims[d], " at extents [",
            absl::StrJoin(largest, ","), "] and ", probed[p][o][d], " at [",
            absl::StrJoin(probes[p], ","),
            "]: neither fixed nor one shape dim's extent, so requests of other extents cannot be "
            "sliced out of a bucket; give the model's shape dims fixed extents in config.pbtxt"));
      }
      if (spec.dims[d] != -1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config.pbtxt gives output '", spec.name, "' dims[", d, "] as ", spec.dims[d],
            ", but it is the model's dim '", interface->shape_dims[s],
            "', which requests choose; give it as -1"));
      }
      spec.shape_dim_of[d] = static_cast<int>(s);
    }
  }
  return absl::OkStatus();
}

// Every tensor's rows at the largest extents, max_batch_size of them, must
// have a byte count an int64 holds (as InterfaceFromConfig checks for fixed
// dims), so that request validation multiplies without overflow.
absl::Status CheckAddressable(const ModelInterface& interface, const std::vector<int64_t>& largest) {
  for (const std::vector<TensorSpec>* side : {&interface.inputs, &interface.outputs}) {
    for (const TensorSpec& spec : *side) {
      int64_t bytes = std::max<int64_t>(interface.max_batch_size, 1) *
                      static_cast<int64_t>(DTypeSize(spec.dtype));
      for (int64_t dim : spec.DimsAt(largest)) {
        if (dim > 0 && __builtin_mul_overflow(bytes, dim, &bytes)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "tensor '", spec.name, "' at the largest bucket [", absl::StrJoin(largest, ","),
              "] and max_batch_size ", interface.max_batch_size, " is too large to address"));
        }
      }
    }
  }
  return absl::OkStatus();
}

// A request's extents strictly inside `bucket` in every shape dim it can
// be: three quarters of each extent (at least 1).
std::vector<int64_t> ShorterThan(const std::vector<int64_t>& bucket) {
  std::vector<int64_t> shorter;
  for (int64_t extent : bucket) shorter.push_back(std::max<int64_t>(1, extent * 3 / 4));
  return shorter;
}

// Inputs for the padding check: floats standard normal, every other type 1.
HostTensor CheckInput(DType dtype, const Dims& dims, uint64_t seed) {
  if (IsFloatingDType(dtype)) return RandomTensor(dtype, dims, seed);
  HostTensor tensor(dtype, dims);
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::Host;
    std::fill_n(tensor.data<T>(), tensor.num_elements(), static_cast<T>(1));
  });
  return tensor;
}

// Runs `model` at one row of `extents` on `inputs`.
absl::StatusOr<std::vector<HostTensor>> RunAt(const Model& model,
                                              const std::vector<int64_t>& extents,
                                              const std::vector<HostTensor>& inputs,
                                              const ExecutorFactory& make_executor) {
  ASSIGN_OR_RETURN(const BindOptions options, BindOptionsAt(model, GraphKey{1, extents}));
  ASSIGN_OR_RETURN(BoundGraph graph, BindModel(model, options));
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, make_executor(std::move(graph)));
  return executor->Run(inputs);
}

// Whether `got` matches `want` within float rounding: norm-wise relative
// error 1e-4 for float32 and float64, 1e-2 for the 16-bit floats; other
// types bit for bit.
bool AgreesWithinRounding(const HostTensor& got, const HostTensor& want) {
  if (got.dtype() != want.dtype() || got.bytes() != want.bytes()) return false;
  if (!IsFloatingDType(want.dtype())) return std::memcmp(got.raw(), want.raw(), want.bytes()) == 0;
  const double tolerance = DTypeSize(want.dtype()) == 2 ? 1e-2 : 1e-4;
  return RelativeError(got, want) <= tolerance;
}

// With the batch dim of one row in front when the model batches.
Dims WithBatch(const Dims& row, bool batching) {
  if (!batching) return row;
  Dims dims = {1};
  dims.insert(dims.end(), row.begin(), row.end());
  return dims;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<int64_t>>> AttachShapeBuckets(
    const Model& model, const inference::ModelCapture& capture, ModelInterface* interface) {
  if (model.batches != interface->batching) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model '", interface->name, "' is ", model.batches ? "" : "not ",
        "bound with a batch dim, but config.pbtxt's max_batch_size says the opposite (Note "
        "[Models without a batch dim] in runtime/ir.h: CompleteConfigFromModel sets it)"));
  }
  const std::vector<std::string> names = ShapeDimNames(model);
  std::vector<int64_t> given;  // per shape dim: the config's extent, or -1
  if (!names.empty()) {
    ASSIGN_OR_RETURN(given, ConfigExtents(model, *interface, names));
  }
  const bool open = std::find(given.begin(), given.end(), -1) != given.end();
  std::vector<std::vector<int64_t>> buckets = {given};  // fixed by config.pbtxt
  if (open) {
    ASSIGN_OR_RETURN(buckets, BucketsFromCapture(capture, names, given));
    ASSIGN_OR_RETURN(interface->eager_extents,
                     EagerExtentsFromCapture(capture, names, given, buckets));
    interface->shape_dims = names;
    interface->buckets = buckets;
  } else if (!HasOpenDim(*interface)) {
    return buckets;
  }
  // A -1 for a dim the model fixes (Triton's configs write one) becomes it.
  RETURN_IF_ERROR(AttachInputDims(model, interface));
  RETURN_IF_ERROR(AttachOutputDims(model, buckets, given, interface));
  RETURN_IF_ERROR(CheckAddressable(*interface, LargestExtents(buckets)));
  return buckets;
}

absl::StatusOr<std::vector<PadElement>> PadElementsFromConfig(
    const ModelInterface& interface, const inference::ModelCapture& capture) {
  std::vector<PadElement> pads(interface.inputs.size(), PadElement{});
  for (const inference::CapturePadding& padding : capture.padding()) {
    const auto it = std::find_if(interface.inputs.begin(), interface.inputs.end(),
                                 [&](const TensorSpec& spec) { return spec.name == padding.input(); });
    if (it == interface.inputs.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config.pbtxt capture.padding names input '", padding.input(),
          "', which the model does not have"));
    }
    const double value = padding.value();
    PadElement& pad = pads[static_cast<size_t>(it - interface.inputs.begin())];
    absl::Status status = absl::OkStatus();
    VisitDType(it->dtype, [&](auto tag) {
      using T = typename decltype(tag)::Host;
      T element{};
      if constexpr (IsFloatingDType(decltype(tag)::value)) {
        element = static_cast<T>(static_cast<float>(value));
      } else {
        if (value != std::floor(value) ||
            value < static_cast<double>(std::numeric_limits<T>::lowest()) ||
            value > static_cast<double>(std::numeric_limits<T>::max())) {
          status = absl::InvalidArgumentError(absl::StrCat(
              "config.pbtxt capture.padding value ", value, " of input '", it->name,
              "' is not a ", KServeDatatype(it->dtype), " value"));
        }
        element = static_cast<T>(value);
      }
      static_assert(sizeof(T) <= sizeof(PadElement));
      std::memcpy(pad.data(), &element, sizeof(T));
    });
    RETURN_IF_ERROR(status);
  }
  return pads;
}

absl::Status CheckPaddingExact(const Model& model, const ModelInterface& interface,
                               const std::vector<PadElement>& pads,
                               const ExecutorFactory& make_executor) {
  for (const std::vector<int64_t>& bucket : interface.buckets) {
    const std::vector<int64_t> shorter = ShorterThan(bucket);
    if (shorter == bucket) continue;  // every extent 1: nothing shorter to pad
    const RowShape exact = RowShapeAt(interface, shorter);
    const RowShape padded = RowShapeAt(interface, bucket);
    std::vector<HostTensor> exact_inputs, padded_inputs;
    for (size_t i = 0; i < interface.inputs.size(); ++i) {
      const DType dtype = interface.inputs[i].dtype;
      exact_inputs.push_back(CheckInput(dtype, WithBatch(exact.inputs[i].dims, interface.batching),
                                        /*seed=*/i));
      HostTensor& into = padded_inputs.emplace_back(
          dtype, WithBatch(padded.inputs[i].dims, interface.batching));
      PadRows(static_cast<const std::byte*>(exact_inputs.back().raw()), exact.inputs[i],
              static_cast<std::byte*>(into.raw()), padded.inputs[i], pads[i], 1);
    }
    const std::string where = absl::StrCat("padding extents [", absl::StrJoin(shorter, ","),
                                           "] into bucket [", absl::StrJoin(bucket, ","), "]");
    absl::StatusOr<std::vector<HostTensor>> want =
        RunAt(model, shorter, exact_inputs, make_executor);
    if (!want.ok()) return Annotated(want.status(), absl::StrCat(where, ", the exact run"));
    absl::StatusOr<std::vector<HostTensor>> got =
        RunAt(model, bucket, padded_inputs, make_executor);
    if (!got.ok()) return Annotated(got.status(), absl::StrCat(where, ", the padded run"));
    for (size_t o = 0; o < interface.outputs.size() && o < want->size(); ++o) {
      const HostTensor& exact_output = (*want)[o];
      HostTensor sliced(exact_output.dtype(), exact_output.dims());
      SliceRows(static_cast<const std::byte*>((*got)[o].raw()), padded.outputs[o],
                static_cast<std::byte*>(sliced.raw()), exact.outputs[o], 1);
      if (!AgreesWithinRounding(sliced, exact_output)) {
        return absl::FailedPreconditionError(absl::StrCat(
            where, " changes output '", interface.outputs[o].name,
            "' on the real positions (relative error ", RelativeError(sliced, exact_output),
            "): the model sees its padding"));
      }
    }
  }
  return absl::OkStatus();
}

RowShape RowShapeAt(const ModelInterface& interface, const std::vector<int64_t>& extents) {
  RowShape shape;
  if (!interface.shape_dims.empty()) shape.extents = extents;
  for (const TensorSpec& spec : interface.inputs) {
    shape.inputs.push_back(TensorRowOf(spec.DimsAt(extents), DTypeSize(spec.dtype)));
  }
  for (const TensorSpec& spec : interface.outputs) {
    shape.outputs.push_back(TensorRowOf(spec.DimsAt(extents), DTypeSize(spec.dtype)));
  }
  return shape;
}

bool DevicePadsRows(const ModelInterface& interface, const std::vector<PadElement>& pads) {
  const auto first_row_dim_alone = [](const TensorSpec& spec) {
    for (size_t d = 1; d < spec.shape_dim_of.size(); ++d) {
      if (spec.shape_dim_of[d] >= 0) return false;
    }
    return true;
  };
  for (size_t i = 0; i < interface.inputs.size(); ++i) {
    const TensorSpec& spec = interface.inputs[i];
    if (spec.wire != TensorWire::kNumbers || spec.shape_dim_of.empty()) continue;
    if (!first_row_dim_alone(spec) ||
        !RepeatedByte(pads.at(i), DTypeSize(spec.dtype)).has_value()) {
      return false;
    }
  }
  return std::all_of(interface.outputs.begin(), interface.outputs.end(), first_row_dim_alone);
}

}  // namespace graphserve
