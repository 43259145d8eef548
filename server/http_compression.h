#pragma once
// HTTP response compression as Triton's HTTP endpoint does it (Note [HTTP
// response compression] in server/http_endpoint.cc): only inference answers,
// only in an encoding the client's Accept-Encoding asks for, gzip or
// deflate.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphserve {

enum class ContentEncoding {
  kIdentity,  // sent as is
  kGzip,      // RFC 1952
  kDeflate,   // HTTP's "deflate": the zlib format (RFC 1950)
};

// The encoding Triton answers an Accept-Encoding header with: of
// "identity", "gzip" and "deflate", the one with the highest q-value
// ("gzip;q=0.8"; 1 without one), the first on a tie; identity when none
// has a weight above 0. Unknown codings ("br", "*") and malformed entries
// are skipped.
ContentEncoding ResponseEncoding(absl::string_view accept_encoding);

// The Content-Encoding header's value: "gzip" or "deflate" ("" for identity).
absl::string_view ContentEncodingName(ContentEncoding encoding);

// `body` compressed in `encoding` (kIdentity: `body` itself). Internal when
// zlib fails, which only running out of memory makes it do.
absl::StatusOr<std::string> Compress(absl::string_view body, ContentEncoding encoding);

}  // namespace graphserve
