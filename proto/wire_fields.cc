#include "proto/wire_fields.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"

namespace graphserve {

absl::StatusOr<std::vector<WireField>> DecodeWireFields(absl::string_view message) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(message.data()),
                                            static_cast<int>(message.size()));
  std::vector<WireField> fields;
  while (const uint32_t tag = in.ReadTag()) {
    WireField field;
    field.number = static_cast<int>(tag >> 3);
    const int wire_type = static_cast<int>(tag & 7);
    bool read = false;
    switch (wire_type) {
      case static_cast<int>(WireType::kVarint):
        read = in.ReadVarint64(&field.value);
        break;
      case static_cast<int>(WireType::kI64):
        read = in.ReadLittleEndian64(&field.value);
        break;
      case static_cast<int>(WireType::kLen): {
        uint32_t length = 0;
        read = in.ReadVarint32(&length) && in.ReadString(&field.payload, static_cast<int>(length));
        break;
      }
      case static_cast<int>(WireType::kI32): {
        uint32_t bits = 0;
        read = in.ReadLittleEndian32(&bits);
        field.value = bits;
        break;
      }
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("field ", field.number, " has wire type ", wire_type,
                         " (a group or not a wire type); proto3 messages have none"));
    }
    if (!read) {
      return absl::InvalidArgumentError(
          absl::StrCat("field ", field.number, " is cut short at byte ", in.CurrentPosition()));
    }
    field.wire_type = static_cast<WireType>(wire_type);
    fields.push_back(std::move(field));
  }
  // ReadTag() returns 0 both at the end and on a malformed tag.
  if (!in.ConsumedEntireMessage() || in.CurrentPosition() != static_cast<int>(message.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed tag at byte ", in.CurrentPosition(), " of ", message.size()));
  }
  return fields;
}

std::vector<WireField> FieldsNumbered(const std::vector<WireField>& fields, int number) {
  std::vector<WireField> numbered;
  for (const WireField& field : fields) {
    if (field.number == number) numbered.push_back(field);
  }
  return numbered;
}

std::vector<int> FieldNumbers(const std::vector<WireField>& fields) {
  std::vector<int> numbers;
  numbers.reserve(fields.size());
  for (const WireField& field : fields) numbers.push_back(field.number);
  return numbers;
}

}  // namespace graphserve
