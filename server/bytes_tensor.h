#pragma once
// The KServe v2 protocol's BYTES tensors: how their elements, each a string
// of its own length, travel.
//
// Note [BYTES serialization]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Wherever a tensor's data is one block of bytes (gRPC's raw_input_contents
// and raw_output_contents, Triton's HTTP binary data extension, system and
// CUDA shared memory), a BYTES tensor is its elements back to back in
// row-major order, each a 4-byte little-endian length and then that many
// bytes, with no terminator and no padding. gRPC's typed contents carry one
// bytes_contents entry per element instead, and HTTP's JSON one string per
// element. A block's size says nothing about its element count, so reading
// one is a walk that must stop at the block's end whatever the lengths
// claim: SplitBytesElements checks each length against what remains before
// it steps, and sizes nothing by a count a client chose. Triton's core
// (ValidateBytesInputs) checks the same framing, and its texts name the
// cases: an incomplete length indicator, too many elements, too few.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphserve {

// The protocol's name of the type.
inline constexpr char kBytesDatatype[] = "BYTES";

// Bytes of an element's length prefix.
inline constexpr size_t kBytesLengthSize = 4;

// Appends `element` serialized (Note [BYTES serialization]) to `out`.
// `element` is shorter than 4 GiB (every element the server writes is).
void AppendBytesElement(absl::string_view element, std::string* out);

// The elements serialized in `data`, which must hold exactly `count` of them
// and nothing after: views into `data`. InvalidArgument otherwise, whose
// message is a clause to follow the tensor's name: a length prefix cut off
// by the end, an element longer than what remains, more elements than
// `count`, or fewer. Never reads outside `data`, and reserves room for no
// more elements than `data` can hold (a count from a client's shape may be
// huge).
absl::StatusOr<std::vector<absl::string_view>> SplitBytesElements(absl::string_view data,
                                                                  int64_t count);

}  // namespace graphserve
