#include "common/grpc_channel_args.h"

#include <cstdint>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace graphserve {

namespace {

bool LooksLikeInteger(absl::string_view value) {
  if (absl::ConsumePrefix(&value, "-") && value.empty()) return false;
  if (value.empty()) return false;
  for (const char c : value) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::vector<GrpcChannelArg>> ParseGrpcChannelArgs(absl::string_view text) {
  std::vector<GrpcChannelArg> args;
  if (text.empty()) return args;
  for (const absl::string_view entry : absl::StrSplit(text, ',')) {
    const std::pair<absl::string_view, absl::string_view> split =
        absl::StrSplit(entry, absl::MaxSplits('=', 1));
    const absl::string_view name = absl::StripAsciiWhitespace(split.first);
    const absl::string_view value = absl::StripAsciiWhitespace(split.second);
    if (name.empty() || split.first.size() == entry.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("gRPC channel argument '", entry,
                       "' is not NAME=VALUE (e.g. grpc.http2.lookahead_bytes=1048576)"));
    }
    if (!LooksLikeInteger(value)) {
      args.push_back({std::string(name), std::string(value)});
      continue;
    }
    int64_t number = 0;
    if (!absl::SimpleAtoi(value, &number) || number < std::numeric_limits<int>::min() ||
        number > std::numeric_limits<int>::max()) {
      return absl::InvalidArgumentError(absl::StrCat("gRPC channel argument '", entry,
                                                     "': an integer value must fit in an int"));
    }
    args.push_back({std::string(name), static_cast<int>(number)});
  }
  return args;
}

}  // namespace graphserve
