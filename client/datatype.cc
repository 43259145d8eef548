#include "client/datatype.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/dtype.h"
#include "common/status.h"

namespace graphserve {

absl::StatusOr<size_t> DatatypeByteSize(absl::string_view datatype) {
  // Every fixed-size type of the protocol is a row of the datatype table;
  // FP16 and BF16 travel as their 2-byte patterns.
  const absl::StatusOr<DType> dtype = DTypeFromKServe(datatype);
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("datatype '", datatype, "' ", dtype.status().message()));
  }
  return DTypeSize(*dtype);
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
