#include "server/restricted_api.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "server/client_text.h"

namespace graphserve {

// Note [Restricted APIs]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Triton checks the restriction at the start of every handler, before it
// reads the request, and answers:
//   HTTP: 403 {"error": "This API is restricted, expecting header 'KEY'"}
//   gRPC: "This protocol is restricted, expecting header
//         'triton-grpc-protocol-KEY'"
// Scripts match those texts, so they are Triton's. The gRPC status code is
// PERMISSION_DENIED here where Triton answers UNAVAILABLE: UNAVAILABLE is
// the code clients and proxies retry as transient, and a refused key does not
// pass on a retry. The categories of the routes and RPCs are Triton's
// (http_server.cc, grpc_server.cc): health covers ServerLive, ServerReady
// and ModelReady; metadata ServerMetadata and ModelMetadata; inference
// ModelInfer and ModelStreamInfer (a stream is refused when it opens);
// shared-memory the six region RPCs; model-config ModelConfig;
// model-repository the index, load and unload; statistics ModelStatistics.
// grpc.health.v1 (gRPC's own service) and /metrics stay open. A key is
// compared exactly and the value in full: no prefix or case folding, as
// Triton compares them.

namespace {

constexpr std::array<absl::string_view, kApiCategoryCount> kCategoryNames = {
    "health",       "metadata",         "inference",  "shared-memory", "model-config",
    "model-repository", "statistics", "trace", "logging"};

// Triton's prefix of the gRPC metadata key (grpc_server.h
// kRestrictedProtocolHeaderTemplate).
constexpr absl::string_view kGrpcKeyPrefix = "triton-grpc-protocol-";

absl::string_view FlagName(RestrictedProtocol protocol) {
  return protocol == RestrictedProtocol::kGrpc ? "--grpc-restricted-protocol"
                                               : "--http-restricted-api";
}

std::optional<ApiCategory> CategoryNamed(absl::string_view name) {
  for (size_t i = 0; i < kCategoryNames.size(); ++i) {
    if (kCategoryNames[i] == name) return static_cast<ApiCategory>(i);
  }
  return std::nullopt;
}

// An HTTP header name is an RFC 9110 token; gRPC metadata keys are lower
// case, and a key ending in "-bin" carries binary values, which are compared
// as bytes the client encoded: neither fits a key=value flag.
absl::Status CheckKey(RestrictedProtocol protocol, absl::string_view key) {
  const absl::string_view allowed = protocol == RestrictedProtocol::kGrpc
                                        ? "abcdefghijklmnopqrstuvwxyz0123456789-_."
                                        : "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789!#$%&'*+-.^_`|~";
  if (key.find_first_not_of(allowed) != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        FlagName(protocol), ": the key ", QuoteClientText(key), " cannot be ",
        protocol == RestrictedProtocol::kGrpc
            ? "a gRPC metadata key (lower-case letters, digits, '-', '_' and '.')"
            : "an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)"));
  }
  if (protocol == RestrictedProtocol::kGrpc && absl::EndsWith(key, "-bin")) {
    return absl::InvalidArgumentError(absl::StrCat(
        FlagName(protocol), ": the key ", QuoteClientText(key),
        " ends in -bin, which gRPC keeps for binary metadata; choose another key"));
  }
  return absl::OkStatus();
}

// Header values travel as visible ASCII and spaces.
absl::Status CheckValue(RestrictedProtocol protocol, absl::string_view value) {
  for (const char c : value) {
    if (c < 0x20 || c > 0x7e) {
      return absl::InvalidArgumentError(
          absl::StrCat(FlagName(protocol), ": the value for the key must be printable ASCII "
                                           "(a header value), got ",
                       QuoteClientText(value)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view ApiCategoryName(ApiCategory category) {
  return kCategoryNames[static_cast<size_t>(category)];
}

absl::StatusOr<RestrictedApis> RestrictedApis::Parse(RestrictedProtocol protocol,
                                                     const std::vector<std::string>& specs) {
  RestrictedApis apis;
  apis.protocol_ = protocol;
  const absl::string_view flag = FlagName(protocol);
  for (const std::string& spec : specs) {
    // Triton's split: the categories end at the first ':', the key at the
    // first '=' after it; the value is the rest.
    const size_t colon = spec.find(':');
    const size_t equals =
        colon == std::string::npos ? std::string::npos : spec.find('=', colon + 1);
    if (equals == std::string::npos || colon == 0 || equals == colon + 1 ||
        equals + 1 == spec.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " wants <categories>:<key>=<value>, e.g. ", flag,
                       "=model-repository,shared-memory:admin-key=s3cret; got ",
                       QuoteClientText(spec)));
    }
    const std::string key = spec.substr(colon + 1, equals - colon - 1);
    const std::string value = spec.substr(equals + 1);
    if (absl::Status status = CheckKey(protocol, key); !status.ok()) return status;
    if (absl::Status status = CheckValue(protocol, value); !status.ok()) return status;
    for (absl::string_view name : absl::StrSplit(absl::string_view(spec).substr(0, colon), ',')) {
      const std::optional<ApiCategory> category = CategoryNamed(name);
      if (!category.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            flag, ": unknown category ", QuoteClientText(name), " in ", QuoteClientText(spec),
            "; the categories are ", absl::StrJoin(kCategoryNames, ", ")));
      }
      std::optional<ApiRestriction>& slot = apis.restrictions_[static_cast<size_t>(*category)];
      if (slot.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat(flag, ": the category '", name,
                         "' is restricted twice; a category may be in one group only"));
      }
      slot = ApiRestriction{
          protocol == RestrictedProtocol::kGrpc ? absl::StrCat(kGrpcKeyPrefix, key) : key, value};
    }
  }
  return apis;
}

const ApiRestriction* RestrictedApis::Find(ApiCategory category) const {
  const std::optional<ApiRestriction>& slot = restrictions_[static_cast<size_t>(category)];
  return slot.has_value() ? &*slot : nullptr;
}

bool RestrictedApis::empty() const {
  for (const std::optional<ApiRestriction>& slot : restrictions_) {
    if (slot.has_value()) return false;
  }
  return true;
}

absl::Status RestrictedApis::Check(
    ApiCategory category,
    absl::FunctionRef<std::optional<std::string>(absl::string_view key)> header) const {
  const ApiRestriction* restriction = Find(category);
  if (restriction == nullptr) return absl::OkStatus();
  const std::optional<std::string> sent = header(restriction->header);
  if (sent.has_value() && *sent == restriction->value) return absl::OkStatus();
  // Note [Restricted APIs]: Triton's texts.
  return absl::PermissionDeniedError(
      absl::StrCat(protocol_ == RestrictedProtocol::kGrpc ? "This protocol is restricted"
                                                          : "This API is restricted",
                   ", expecting header '", restriction->header, "'"));
}

std::string RestrictedApis::FlagHelp(RestrictedProtocol protocol) {
  const bool grpc = protocol == RestrictedProtocol::kGrpc;
  return absl::StrCat(
      "<categories>:<key>=<value>: the ", grpc ? "gRPC RPCs" : "HTTP/REST routes",
      " of the comma-separated categories answer only calls that carry ",
      grpc ? "the metadata triton-grpc-protocol-<key>" : "the header <key>",
      " with <value>; others get ", grpc ? "PERMISSION_DENIED" : "403",
      ". Categories: ", absl::StrJoin(kCategoryNames, ", "),
      ". Repeat the flag for another key; a category may be in one group only.");
}

}  // namespace graphserve
