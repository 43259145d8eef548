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

}  // namespace graphserve
