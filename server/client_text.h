#pragma once
// What an error message may quote of text a client sent.
//
// Note [Quoting client text]
// Status messages name what the client got wrong ("unknown model 'x'"), and
// much of what they name is the client's own text: the model name and
// version, input and output names, datatypes, shapes, a URL path, a JSON
// body. Quoted whole, a 64 KiB model name makes a 64 KiB status message, and
// gRPC clients refuse status metadata over their limit (8 KiB by default):
// tritonclient then reports RESOURCE_EXHAUSTED instead of NOT_FOUND and never
// shows the message. So every message that quotes a client's text does it
// through this file: a bounded prefix, non-printable bytes escaped (no raw
// control byte reaches a terminal or a log line), and the full length when
// the text was cut.

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace graphserve {

// The most characters of escaped text either function keeps.
inline constexpr size_t kClientTextQuoteLimit = 64;

// `text` C-escaped (absl::CHexEscape: \n, \', \x01, \xc3) and in single
// quotes: 'mlp'. When the escaped text is longer than kClientTextQuoteLimit,
// the whole escapes that fit, then "..." and the length in bytes:
// 'aaaa...' (65536 bytes). At most kClientTextQuoteLimit + 40 characters.
// For names: model, version, input, output, datatype, URL path.
std::string QuoteClientText(absl::string_view text);

// The same without the quotes, for text that is not a name (a shape the
// client sent, rendered as [4,3,1]): [4,3,1,1,...] (70001 bytes).
std::string ClientTextPrefix(absl::string_view text);

// The most bytes of an error message a client is sent (Note [Bounded error
// texts]).
inline constexpr size_t kErrorTextLimit = 4096;

// `message` as a client may be sent it: at most kErrorTextLimit bytes,
// cut at a UTF-8 character boundary with a note of the full length when it
// is longer, and valid UTF-8 (ValidUtf8).
std::string BoundedErrorText(absl::string_view message);

// `text` with every byte that is not part of a valid UTF-8 sequence
// replaced by U+FFFD, so that protobuf string fields and JSON carrying it
// decode in every client.
std::string ValidUtf8(absl::string_view text);

// `text` without the server's directory `directory` (as given and with its
// links followed): each path under it is left relative to it
// ("/srv/models/mlp/config.pbtxt" -> "mlp/config.pbtxt" for /srv/models),
// and the directory itself reads "the model repository" (Note [Server paths
// in error texts]).
std::string WithoutServerDirectory(absl::string_view text, const std::string& directory);

// Note [Server paths in error texts]
// A model that fails to load keeps its error, which every client reads
// (RepositoryIndex reasons, UNAVAILABLE answers, the load RPC's answer). The
// error texts name the files they are about, and with their full path they
// told any client where the server keeps its models and how its file system
// is laid out (issue 30, finding 8). The registry keeps the full text for
// the server's log and gives clients the text with the repository's path
// cut out: a path relative to the repository names the model and its file,
// which is what the client can act on (Triton shows full paths).

// Note [Bounded error texts]
// Most messages quote client text through QuoteClientText, but some carry
// the server's own text of unbounded length: a config of 10^6 dims made a
// 2 MB message, which gRPC clients refuse (their 8 KiB status metadata
// limit) as RESOURCE_EXHAUSTED, never showing it; and text read from a
// binary config.pbtxt put bytes that are not UTF-8 into RepositoryIndex,
// which broke every client's decoding of the whole index (issue 30,
// finding 8). So the one conversion to a gRPC status and the HTTP error
// body bound every message, and the index's reasons are made valid UTF-8.

}  // namespace graphserve
