#include "server/bytes_tensor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace graphserve {

void AppendBytesElement(absl::string_view element, std::string* out) {
  const auto length = static_cast<uint32_t>(element.size());
  char prefix[kBytesLengthSize];
  for (size_t b = 0; b < kBytesLengthSize; ++b) {
    prefix[b] = static_cast<char>((length >> (8 * b)) & 0xff);
  }
  out->append(prefix, sizeof(prefix));
  out->append(element.data(), element.size());
}

absl::StatusOr<std::vector<absl::string_view>> SplitBytesElements(absl::string_view data,
                                                                  int64_t count) {
  if (count < 0) return absl::InvalidArgumentError(absl::StrCat("has ", count, " elements"));
  // Every element takes at least its length prefix: a count beyond that is
  // refused before anything is sized by it.
  const uint64_t most = data.size() / kBytesLengthSize;
  if (static_cast<uint64_t>(count) > most) {
    return absl::InvalidArgumentError(absl::StrCat(
        "holds ", data.size(), " bytes, too few for the ", count,
        " elements of its shape (each takes at least its ", kBytesLengthSize,
        "-byte length); expected ", count, " string elements"));
  }
  std::vector<absl::string_view> elements;
  elements.reserve(static_cast<size_t>(count));
  size_t at = 0;
  while (at < data.size()) {
    if (elements.size() == static_cast<size_t>(count)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "has ", data.size() - at, " bytes after its ", count,
          " elements: unexpected number of string elements (more than the shape's ", count, ")"));
    }
    const size_t remaining = data.size() - at;
    if (remaining < kBytesLengthSize) {
      return absl::InvalidArgumentError(absl::StrCat(
          "has an incomplete string length indicator for element ", elements.size(),
          ", expecting ", kBytesLengthSize, " bytes but only ", remaining, " bytes available"));
    }
    uint32_t length = 0;
    for (size_t b = 0; b < kBytesLengthSize; ++b) {
      length |= static_cast<uint32_t>(static_cast<unsigned char>(data[at + b])) << (8 * b);
    }
    at += kBytesLengthSize;
    if (length > data.size() - at) {
      return absl::InvalidArgumentError(
          absl::StrCat("has element ", elements.size(), " of length ", length, " but only ",
                       data.size() - at, " bytes after its length indicator"));
    }
    elements.push_back(data.substr(at, length));
    at += length;
  }
  if (elements.size() != static_cast<size_t>(count)) {
    return absl::InvalidArgumentError(absl::StrCat("holds ", elements.size(),
                                                   " string elements, expected ", count,
                                                   " for its shape"));
  }
  return elements;
}

}  // namespace graphserve
