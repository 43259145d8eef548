#include "client/shared_memory_layout.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "client/datatype.h"

namespace graphserve {
namespace {

int64_t AlignUp(int64_t bytes) {
  return (bytes + kSharedMemoryTensorAlignment - 1) / kSharedMemoryTensorAlignment *
         kSharedMemoryTensorAlignment;
}

}  // namespace

absl::StatusOr<SharedMemoryLayout> PlanSharedMemory(const InferRequest& request,
                                                    absl::Span<const ExpectedOutput> outputs,
                                                    int64_t output_byte_size) {
  if (output_byte_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--output-shared-memory-size must be at least 1 byte, got ", output_byte_size));
  }
  if (request.inputs.empty() && outputs.empty()) {
    return absl::InvalidArgumentError("a request without inputs or outputs needs no shared memory");
  }
  SharedMemoryLayout layout;
  int64_t end = 0;
  auto place = [&end](const std::string& name, int64_t byte_size) {
    TensorPlacement placement{.name = name, .offset = AlignUp(end), .byte_size = byte_size};
    end = placement.offset + byte_size;
    return placement;
  };
  for (const InferTensor& input : request.inputs) {
    if (input.shared_memory.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("input ", input.name,
                                                     " is in shared memory region ",
                                                     input.shared_memory->region, " already"));
    }
    layout.inputs.push_back(place(input.name, static_cast<int64_t>(input.data.size())));
  }
  for (const ExpectedOutput& output : outputs) {
    const int64_t bytes = output.byte_size.value_or(output_byte_size);
    if (bytes > output_byte_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output ", output.name, " (", output.datatype, " ", FormatShape(output.shape), ") needs ",
          bytes, " bytes of shared memory but --output-shared-memory-size is ", output_byte_size,
          "; pass --output-shared-memory-size ", bytes, " or more"));
    }
    layout.outputs.push_back(place(output.name, bytes));
  }
  layout.byte_size = end;
  return layout;
}

InferRequest PlaceInRegion(const InferRequest& request, const SharedMemoryLayout& layout,
                           const std::string& region) {
  // Built field by field: a copy of `request` would copy the input bytes
  // only to drop them.
  InferRequest placed{
      .model_name = request.model_name, .model_version = request.model_version, .id = request.id};
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const InferTensor& input = request.inputs[i];
    placed.inputs.push_back(
        InferTensor{.name = input.name,
                    .datatype = input.datatype,
                    .shape = input.shape,
                    .shared_memory = SharedMemoryRange{.region = region,
                                                       .offset = layout.inputs[i].offset,
                                                       .byte_size = layout.inputs[i].byte_size}});
  }
  for (const TensorPlacement& output : layout.outputs) {
    placed.requested_outputs.push_back(output.name);
    placed.output_shared_memory[output.name] =
        SharedMemoryRange{.region = region, .offset = output.offset, .byte_size = output.byte_size};
  }
  return placed;
}

}  // namespace graphserve
