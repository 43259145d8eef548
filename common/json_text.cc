#include "common/json_text.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace graphserve {

std::string JsonString(absl::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", static_cast<int>(c));
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  return absl::StrFormat("%.3f", value);
}

std::string JsonSignificant(double value) {
  if (!std::isfinite(value)) return "null";
  return absl::StrFormat("%.3g", value);
}

}  // namespace graphserve
