#pragma once
// Element types as the KServe v2 / Open Inference Protocol spells them
// ("FP32", "INT64", "BOOL", ...): what the client needs to size, fill and
// print a tensor's raw little-endian bytes.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace graphserve {

// Bytes per element of a fixed-size datatype: "BOOL" 1 ... "FP64" 8.
// InvalidArgument for "BYTES" (its elements have no fixed size) and for names
// the protocol does not define.
absl::StatusOr<size_t> DatatypeByteSize(absl::string_view datatype);

// The number of elements of `shape`. InvalidArgument for a negative (variable)
// dimension or a product that overflows int64.
absl::StatusOr<int64_t> ElementCount(absl::Span<const int64_t> shape);

// ElementCount(shape) * DatatypeByteSize(datatype), with the same errors.
absl::StatusOr<int64_t> TensorByteSize(absl::string_view datatype, absl::Span<const int64_t> shape);

// "[2,4]", for messages and printed results.
std::string FormatShape(absl::Span<const int64_t> shape);

}  // namespace graphserve
