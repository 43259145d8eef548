#include "server/client_text.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace graphserve {

namespace {

// A character that may continue a file name: a match of a directory's path
// followed by one is a longer name ("/srv/models2"), not the directory.
bool ContinuesName(char c) { return absl::ascii_isalnum(c) || c == '_' || c == '-' || c == '.'; }

// `text` with `directory` + "/" removed and `directory` alone replaced by
// "the model repository", where it is a whole path component.
std::string CutDirectory(absl::string_view text, absl::string_view directory) {
  std::string out;
  size_t at = 0;
  while (true) {
    const size_t found = text.find(directory, at);
    if (found == absl::string_view::npos) break;
    const size_t end = found + directory.size();
    absl::StrAppend(&out, text.substr(at, found - at));
    const bool starts_path = found == 0 || (!ContinuesName(text[found - 1]) && text[found - 1] != '/');
    if (!starts_path) {
      absl::StrAppend(&out, directory);  // inside another path or word: kept
      at = end;
    } else if (end < text.size() && text[end] == '/') {
      at = end + 1;  // the rest of the path, relative to the directory
    } else if (end < text.size() && ContinuesName(text[end])) {
      absl::StrAppend(&out, directory);  // a longer name: kept
      at = end;
    } else {
      absl::StrAppend(&out, "the model repository");
      at = end;
    }
  }
  absl::StrAppend(&out, text.substr(at));
  return out;
}

}  // namespace

std::string WithoutServerDirectory(absl::string_view text, const std::string& directory) {
  std::string given = std::filesystem::path(directory).lexically_normal().string();
  while (given.size() > 1 && given.back() == '/') given.pop_back();
  if (given.empty() || given == "/" || given == ".") return std::string(text);
  std::error_code error;
  const std::string canonical = std::filesystem::canonical(directory, error).string();
  // The longer first, so one that contains the other is cut whole.
  std::string result(text);
  if (!error && canonical != given && canonical != "/") {
    if (canonical.size() > given.size()) {
      result = CutDirectory(CutDirectory(result, canonical), given);
    } else {
      result = CutDirectory(CutDirectory(result, given), canonical);
    }
  } else {
    result = CutDirectory(result, given);
  }
  return result;
}

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

// The length of the valid UTF-8 sequence at the start of `text`, or 0.
size_t Utf8SequenceLength(absl::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // no overlong forms
    if (lead == 0xed) high = 0x9f;  // no surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  }
  return length;
}

}  // namespace

std::string ValidUtf8(absl::string_view text) {
  std::string valid;
  valid.reserve(text.size());
  while (!text.empty()) {
    const size_t length = Utf8SequenceLength(text);
    if (length == 0) {
      valid += "\xEF\xBF\xBD";  // U+FFFD
      text.remove_prefix(1);
    } else {
      valid.append(text.data(), length);
      text.remove_prefix(length);
    }
  }
  return valid;
}

std::string BoundedErrorText(absl::string_view message) {
  std::string valid = ValidUtf8(message);
  if (valid.size() <= kErrorTextLimit) return valid;
  const std::string note = absl::StrCat("... (message cut: ", valid.size(), " bytes in all)");
  size_t keep = kErrorTextLimit - note.size();
  // Never cut a character in half: back up to a lead byte.
  while (keep > 0 && (static_cast<unsigned char>(valid[keep]) & 0xc0) == 0x80) --keep;
  valid.resize(keep);
  return valid + note;
}

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
