#include "server/client_text.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace graphserve {

namespace {

// `text` escaped, cut at kClientTextQuoteLimit characters; `cut` says
// whether anything was left out.
std::string EscapedPrefix(absl::string_view text, bool* cut) {
  std::string escaped;
  size_t used = 0;  // bytes of `text` escaped so far
  while (used < text.size()) {
    // One byte at a time, so that an escape sequence is never cut in half.
    const std::string next = absl::CHexEscape(text.substr(used, 1));
    if (escaped.size() + next.size() > kClientTextQuoteLimit) break;
    escaped += next;
    ++used;
  }
  *cut = used < text.size();
  return escaped;
}

}  // namespace

std::string QuoteClientText(absl::string_view text) {
  bool cut = false;
  const std::string escaped = EscapedPrefix(text, &cut);
  if (!cut) return absl::StrCat("'", escaped, "'");
  return absl::StrCat("'", escaped, "...' (", text.size(), " bytes)");
}

std::string ClientTextPrefix(absl::string_view text) {
  bool cut = false;
  const std::string escaped = EscapedPrefix(text, &cut);
  if (!cut) return escaped;
  return absl::StrCat(escaped, "... (", text.size(), " bytes)");
}

}  // namespace graphserve
