#pragma once
// Schema-free decoding of protobuf wire bytes, for tests that hold our .proto
// files to the published protocol: they compare field numbers and wire types
// on the wire with the numbers of the specification, instead of asking our
// own generated code, which would only check the schema against itself.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphserve {

// Wire types as the protobuf encoding numbers them (the low 3 bits of a tag).
// Groups (3, 4) are not used by proto3 and are rejected.
enum class WireType : int {
  kVarint = 0,  // int32/64, uint32/64, bool, enum
  kI64 = 1,     // double, fixed64
  kLen = 2,     // string, bytes, messages, packed repeated scalars
  kI32 = 5,     // float, fixed32
};

// One field occurrence on the wire.
struct WireField {
  int number = 0;                          // the field number of the tag
  WireType wire_type = WireType::kVarint;  // the wire type of the tag
  uint64_t value = 0;                      // kVarint: the value; kI64/kI32: the raw bits
  std::string payload;                     // kLen: the bytes after the length
};

// The top-level fields of `message`, in wire order; a repeated field appears
// once per occurrence (once per packed run). Nested messages stay encoded in
// `payload`, to decode with another call. Fails on malformed bytes and groups.
absl::StatusOr<std::vector<WireField>> DecodeWireFields(absl::string_view message);

// The occurrences of field `number` in `fields`, in wire order.
std::vector<WireField> FieldsNumbered(const std::vector<WireField>& fields, int number);

// The numbers of `fields`, in wire order, e.g. {1, 5, 5, 7} for a request with
// a model name, two inputs and one raw input.
std::vector<int> FieldNumbers(const std::vector<WireField>& fields);

}  // namespace graphserve
