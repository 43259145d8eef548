#pragma once
// NumPy's .npy format (versions 1.0 to 3.0 read, 1.0 written) for the three
// element types GraphServe computes with: little-endian float32 ('<f4'),
// int64 ('<i8') and bool ('|b1'), C order. The benchmark uses it to exchange
// inputs and outputs with the PyTorch side (np.save / np.load).

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/tensor.h"

namespace graphserve {

// Reads a .npy file. NotFound when it cannot be opened; InvalidArgument, naming
// the file and what is wrong, for a bad magic or header, an unsupported dtype
// (e.g. '<f8': save float32 instead), Fortran order, or a data size that does
// not match the shape.
absl::StatusOr<HostTensor> ReadNpyFile(const std::string& path);

// Writes `tensor` as a version 1.0 .npy file (header padded to 64 bytes, as
// NumPy does). Internal error naming the file when it cannot be written.
absl::Status WriteNpyFile(const std::string& path, const HostTensor& tensor);

// The same, on the bytes of a file; `name` is used in error messages.
absl::StatusOr<HostTensor> ParseNpy(absl::string_view bytes, absl::string_view name);
std::string SerializeNpy(const HostTensor& tensor);

}  // namespace graphserve
