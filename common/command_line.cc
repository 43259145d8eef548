#include "common/command_line.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace graphserve {

namespace {

// Edits turning `a` into `b`: insertions, deletions, substitutions, and
// swaps of two neighbours (the commonest typo, "--modle") counted as one.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

bool ParseBoolFlag(absl::string_view text, bool* value) {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower == "true" || lower == "on" || lower == "1" || lower == "yes") {
    *value = true;
    return true;
  }
  if (lower == "false" || lower == "off" || lower == "0" || lower == "no") {
    *value = false;
    return true;
  }
  return false;
}

void CommandLine::Add(Flag flag) {
  index_[flag.name] = flags_.size();
  flags_.push_back(std::move(flag));
}

void CommandLine::AddString(std::string name, std::string* value, std::string help) {
  const std::string default_text = value->empty() ? "\"\"" : *value;
  Add({std::move(name), Kind::kString, value, std::move(help), default_text});
}

void CommandLine::AddInt(std::string name, int64_t* value, std::string help) {
  Add({std::move(name), Kind::kInt, value, std::move(help), absl::StrCat(*value)});
}

void CommandLine::AddDouble(std::string name, double* value, std::string help) {
  Add({std::move(name), Kind::kDouble, value, std::move(help), absl::StrCat(*value)});
}

void CommandLine::AddBool(std::string name, bool* value, std::string help) {
  Add({std::move(name), Kind::kBool, value, std::move(help), *value ? "true" : "false"});
}

void CommandLine::AddStringList(std::string name, std::vector<std::string>* values,
                                std::string help) {
  const std::string default_text = values->empty() ? "none" : absl::StrJoin(*values, " ");
  Add({std::move(name), Kind::kStringList, values, std::move(help), default_text});
}

void CommandLine::AddAlias(std::string alias, absl::string_view target) {
  const auto found = index_.find(target);
  if (found == index_.end()) return;  // a programming error the tests of each binary catch
  flags_[found->second].aliases.push_back(alias);
  index_[std::move(alias)] = found->second;
}

void CommandLine::Hide(absl::string_view name) {
  if (const auto found = index_.find(name); found != index_.end()) {
    flags_[found->second].hidden = true;
  }
}

const CommandLine::Flag* CommandLine::Find(absl::string_view name) const {
  const auto found = index_.find(name);
  return found == index_.end() ? nullptr : &flags_[found->second];
}

bool CommandLine::Has(absl::string_view name) const { return Find(name) != nullptr; }

bool CommandLine::Given(absl::string_view name) const {
  const Flag* flag = Find(name);
  return flag != nullptr && given_.contains(flag->name);
}

std::string CommandLine::ClosestFlag(absl::string_view name) const {
  std::string best;
  size_t best_distance = std::max<size_t>(2, name.size() / 3) + 1;  // the most a typo changes
  for (const auto& [known, unused] : index_) {
    const size_t distance = EditDistance(name, known);
    if (distance < best_distance) {
      best = known;
      best_distance = distance;
    }
  }
  if (!best.empty() || name.size() < 3) return best;
  // A flag cut short ("--model-repo") names the one flag it begins.
  std::vector<std::string> extended;
  for (const auto& [known, unused] : index_) {
    if (absl::StartsWith(known, name)) extended.push_back(known);
  }
  return extended.size() == 1 ? extended.front() : "";
}

absl::Status CommandLine::Assign(const Flag& flag, absl::string_view text) {
  switch (flag.kind) {
    case Kind::kString:
      *static_cast<std::string*>(flag.value) = std::string(text);
      return absl::OkStatus();
    case Kind::kStringList: {
      auto* values = static_cast<std::vector<std::string>*>(flag.value);
      // The first occurrence replaces the default.
      if (!given_.contains(flag.name)) values->clear();
      values->emplace_back(text);
      return absl::OkStatus();
    }
    case Kind::kInt:
      if (!absl::SimpleAtoi(text, static_cast<int64_t*>(flag.value))) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag.name, " wants an integer, got '", text, "'"));
      }
      return absl::OkStatus();
    case Kind::kDouble:
      if (!absl::SimpleAtod(text, static_cast<double*>(flag.value))) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag.name, " wants a number, got '", text, "'"));
      }
      return absl::OkStatus();
    case Kind::kBool:
      if (!ParseBoolFlag(text, static_cast<bool*>(flag.value))) {
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
    const Flag* flag = Find(name);
    if (flag == nullptr) {
      const std::string closest = ClosestFlag(name);
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name,
                       closest.empty() ? "" : absl::StrCat(" (did you mean --", closest, "?)"),
                       "; see --help"));
    }
    absl::Status assigned = absl::OkStatus();
    if (has_inline_value) {
      assigned = Assign(*flag, inline_value);
    } else if (flag->kind == Kind::kBool) {
      // `--allow-http false`, as getopt_long reads Triton's booleans; a bare
      // `--allow-http` is true.
      bool value = true;
      if (i + 1 < argc && ParseBoolFlag(argv[i + 1], &value)) ++i;
      *static_cast<bool*>(flag->value) = value;
    } else if (i + 1 >= argc) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
    } else {
      assigned = Assign(*flag, argv[++i]);
    }
    if (!assigned.ok()) return assigned;
    given_.insert(flag->name);
  }
  return absl::OkStatus();
}

std::string CommandLine::Help() const {
  std::string text = absl::StrCat("usage: ", usage_, "\n\nflags:\n");
  for (const Flag& flag : flags_) {
    if (flag.hidden) continue;
    const char* value = flag.kind == Kind::kBool         ? ""
                        : flag.kind == Kind::kStringList ? " VALUE (repeatable)"
                                                         : " VALUE";
    absl::StrAppend(&text, "  --", flag.name, value, "\n      ", flag.help,
                    " (default: ", flag.default_text, ")");
    for (const std::string& alias : flag.aliases) absl::StrAppend(&text, " Also --", alias, ".");
    absl::StrAppend(&text, "\n");
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
