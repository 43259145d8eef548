#pragma once
// The one place in the server where an absl::Status becomes the grpc::Status a
// client receives. Everything below the gRPC service speaks absl::Status;
// converting here, once, keeps the code and the message a module chose intact
// all the way to the client.

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace graphserve {

// The same code (absl and gRPC share the canonical numbering, but each code is
// mapped by name, not cast) and the same message. A code outside the canonical
// set becomes UNKNOWN.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace graphserve
