#include "client/datatype.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"

namespace graphserve {

absl::StatusOr<size_t> DatatypeByteSize(absl::string_view datatype) {
  struct Entry {
    absl::string_view name;
    size_t bytes;
  };
  // The protocol's fixed-size types; BF16 and FP16 travel as their 2-byte
  // patterns even though the client has no arithmetic for them.
  static constexpr Entry kEntries[] = {
      {"BOOL", 1},   {"UINT8", 1}, {"INT8", 1},   {"UINT16", 2}, {"INT16", 2},
      {"FP16", 2},   {"BF16", 2},  {"UINT32", 4}, {"INT32", 4},  {"FP32", 4},
      {"UINT64", 8}, {"INT64", 8}, {"FP64", 8},
  };
  for (const Entry& entry : kEntries) {
    if (entry.name == datatype) return entry.bytes;
  }
  if (datatype == "BYTES") {
    return absl::InvalidArgumentError(
        "datatype BYTES has variable-length elements; only fixed-size datatypes are supported");
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown datatype '", datatype, "'"));
}

absl::StatusOr<int64_t> ElementCount(absl::Span<const int64_t> shape) {
  int64_t count = 1;
  for (const int64_t dim : shape) {
    if (dim < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", FormatShape(shape), " has a variable dimension (", dim, ")"));
    }
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", FormatShape(shape), " has too many elements"));
    }
    count *= dim;
  }
  return count;
}

absl::StatusOr<int64_t> TensorByteSize(absl::string_view datatype,
                                       absl::Span<const int64_t> shape) {
  ASSIGN_OR_RETURN(const size_t element_bytes, DatatypeByteSize(datatype));
  ASSIGN_OR_RETURN(const int64_t count, ElementCount(shape));
  const auto bytes = static_cast<int64_t>(element_bytes);
  if (count > std::numeric_limits<int64_t>::max() / bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(datatype, " tensor of shape ", FormatShape(shape), " is too large"));
  }
  return count * bytes;
}

std::string FormatShape(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

}  // namespace graphserve
