#include "common/command_line.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace graphserve {

void CommandLine::AddString(std::string name, std::string* value, std::string help) {
  const std::string default_text = value->empty() ? "\"\"" : *value;
  flags_.push_back({std::move(name), Kind::kString, value, std::move(help), default_text});
}

void CommandLine::AddInt(std::string name, int64_t* value, std::string help) {
  flags_.push_back({std::move(name), Kind::kInt, value, std::move(help), absl::StrCat(*value)});
}

void CommandLine::AddBool(std::string name, bool* value, std::string help) {
  flags_.push_back(
      {std::move(name), Kind::kBool, value, std::move(help), *value ? "true" : "false"});
}

absl::Status CommandLine::Assign(const Flag& flag, absl::string_view text) const {
  switch (flag.kind) {
    case Kind::kString:
      *static_cast<std::string*>(flag.value) = std::string(text);
      return absl::OkStatus();
    case Kind::kInt:
      if (!absl::SimpleAtoi(text, static_cast<int64_t*>(flag.value))) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag.name, " wants an integer, got '", text, "'"));
      }
      return absl::OkStatus();
    case Kind::kBool:
      if (!absl::SimpleAtob(text, static_cast<bool*>(flag.value))) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag.name, " wants true or false, got '", text, "'"));
      }
      return absl::OkStatus();
  }
  return absl::InternalError("unknown flag kind");
}

absl::Status CommandLine::Parse(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help_requested_ = true;
      continue;
    }
    if (!absl::StartsWith(arg, "--")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg, "' (flags start with --; see --help)"));
    }
    absl::string_view name = arg.substr(2);
    absl::string_view inline_value;
    bool has_inline_value = false;
    if (const size_t eq = name.find('='); eq != absl::string_view::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_inline_value = true;
    }
    const Flag* flag = nullptr;
    for (const Flag& candidate : flags_) {
      if (candidate.name == name) flag = &candidate;
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name, " (see --help)"));
    }
    if (has_inline_value) {
      if (absl::Status status = Assign(*flag, inline_value); !status.ok()) return status;
      continue;
    }
    if (flag->kind == Kind::kBool) {
      *static_cast<bool*>(flag->value) = true;
      continue;
    }
    if (i + 1 >= argc) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
    }
    if (absl::Status status = Assign(*flag, argv[++i]); !status.ok()) return status;
  }
  return absl::OkStatus();
}

std::string CommandLine::Help() const {
  std::string text = absl::StrCat("usage: ", usage_, "\n\nflags:\n");
  for (const Flag& flag : flags_) {
    absl::StrAppend(&text, "  --", flag.name, flag.kind == Kind::kBool ? "" : " VALUE", "\n      ",
                    flag.help, " (default: ", flag.default_text, ")\n");
  }
  absl::StrAppend(&text, "  --help\n      Print this text and exit.\n");
  return text;
}

absl::StatusOr<std::vector<int64_t>> ParseIntList(absl::string_view text, int64_t min_value) {
  std::vector<int64_t> values;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(part, &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", part, "' in list '", text, "' is not an integer"));
    }
    if (value < min_value) {
      return absl::InvalidArgumentError(
          absl::StrCat(value, " in list '", text, "' is below the minimum ", min_value));
    }
    values.push_back(value);
  }
  if (text.empty()) return absl::InvalidArgumentError("empty list");
  return values;
}

}  // namespace graphserve
