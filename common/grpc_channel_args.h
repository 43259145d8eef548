#pragma once
// gRPC channel arguments given on a command line, for tuning the transport
// without a rebuild: `--grpc-channel-args NAME=VALUE,NAME=VALUE`, where NAME
// is a gRPC core argument such as grpc.http2.lookahead_bytes. The server
// hands them to its ServerBuilder, the client to its channels, after their
// own settings, so a given argument wins, except on the server the message
// size limits, which ServerBuilder sets last (--grpc-max-message-bytes sets
// them). gRPC ignores names it does not know; what a name means is gRPC's
// (grpc/impl/codegen/grpc_types.h). A value cannot hold a comma.

#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphserve {

struct GrpcChannelArg {
  std::string name;
  // An integer for a value of decimal digits (with an optional '-'), which
  // is how gRPC reads sizes, counts and switches; the text otherwise.
  std::variant<int, std::string> value;
};

// "a.b=1, c.d=text" -> {{"a.b", 1}, {"c.d", "text"}}; "" -> {}. Spaces around
// names and values are dropped. InvalidArgument, quoting the entry, for an
// entry without '=' or with an empty name, and for an integer out of int's
// range.
absl::StatusOr<std::vector<GrpcChannelArg>> ParseGrpcChannelArgs(absl::string_view text);

// Calls set(name, value) for each argument with its int or std::string
// value: ServerBuilder::AddChannelArgument and ChannelArguments::SetInt /
// SetString both fit.
template <typename Set>
void ForEachGrpcChannelArg(const std::vector<GrpcChannelArg>& args, Set set) {
  for (const GrpcChannelArg& arg : args) {
    std::visit([&](const auto& value) { set(arg.name, value); }, arg.value);
  }
}

}  // namespace graphserve
