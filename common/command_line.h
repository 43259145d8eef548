#pragma once
// A small command-line flag parser for GraphServe's binaries, so that they
// need no flags library: `--name value`, `--name=value`, and for booleans a
// bare `--name` (true) or `--name true|false|on|off|1|0` as getopt_long reads
// Triton's. Each flag writes into a variable the caller owns; its value
// before Parse() is the default shown by Help(). A list flag may be given
// several times (Triton's --model-repository); any other given twice keeps
// the last value, as getopt_long does.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphserve {

class CommandLine {
 public:
  // `usage` is the first paragraph of Help(), e.g. "runtime_bench --model FILE ...".
  explicit CommandLine(std::string usage) : usage_(std::move(usage)) {}

  // The variables must outlive Parse(). Names are given without "--".
  void AddString(std::string name, std::string* value, std::string help);
  void AddInt(std::string name, int64_t* value, std::string help);
  void AddDouble(std::string name, double* value, std::string help);
  void AddBool(std::string name, bool* value, std::string help);
  // Repeatable: the first occurrence replaces the default list, each one
  // appends its value.
  void AddStringList(std::string name, std::vector<std::string>* values, std::string help);
  // `alias` is another name of the flag `target` (added before): Triton's
  // --model-store for --model-repository. Help() mentions it under `target`.
  void AddAlias(std::string alias, absl::string_view target);
  // Parsed as any other, but left out of Help()'s list (for flags the caller
  // describes in a section of its own).
  void Hide(absl::string_view name);

  // Parses argv[1..argc). InvalidArgument, naming the argument, for an
  // unknown flag (with the closest known one when there is one), a missing
  // or malformed value, or a positional argument. `--help` and `-h` set
  // help_requested() and are not errors.
  absl::Status Parse(int argc, const char* const* argv);

  [[nodiscard]] bool help_requested() const { return help_requested_; }
  // Whether Parse() met the flag `name` (or one of its aliases).
  [[nodiscard]] bool Given(absl::string_view name) const;
  // Whether `name` is a flag (or an alias) of this command line.
  [[nodiscard]] bool Has(absl::string_view name) const;
  // The known flag closest to `name` (edit distance, transpositions counted
  // once, or the one flag it begins); "" when none is close.
  [[nodiscard]] std::string ClosestFlag(absl::string_view name) const;
  // The usage line, then one line per flag with its help and default.
  [[nodiscard]] std::string Help() const;

  // Implementation details follow.
 private:
  enum class Kind { kString, kInt, kDouble, kBool, kStringList };
  struct Flag {
    std::string name;
    Kind kind = Kind::kString;
    // std::string*, int64_t*, double*, bool* or std::vector<std::string>*, by kind.
    void* value = nullptr;
    std::string help;
    std::string default_text;
    std::vector<std::string> aliases;
    bool hidden = false;
  };

  void Add(Flag flag);
  const Flag* Find(absl::string_view name) const;
  absl::Status Assign(const Flag& flag, absl::string_view text);

  std::string usage_;
  std::vector<Flag> flags_;
  // Every name and alias -> its flag's index in flags_.
  std::map<std::string, size_t, std::less<>> index_;
  // Flags (by their main name) Parse() met, and list flags already appended to.
  std::set<std::string, std::less<>> given_;
  bool help_requested_ = false;
};

// Triton's boolean spellings, case-insensitive: true/on/1/yes and
// false/off/0/no. False for anything else.
bool ParseBoolFlag(absl::string_view text, bool* value);

// "1,2,4" -> {1, 2, 4}. InvalidArgument for an empty list, a non-integer or a
// value below `min_value`.
absl::StatusOr<std::vector<int64_t>> ParseIntList(absl::string_view text, int64_t min_value);

}  // namespace graphserve
