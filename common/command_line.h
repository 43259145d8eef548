#pragma once
// A small command-line flag parser for GraphServe's binaries, so that they
// need no flags library: `--name value`, `--name=value`, and a bare `--name`
// for booleans. Each flag writes into a variable the caller owns; its value
// before Parse() is the default shown by Help().

#include <cstdint>
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
  void AddBool(std::string name, bool* value, std::string help);

  // Parses argv[1..argc). InvalidArgument, naming the argument, for an unknown
  // flag, a missing or malformed value, or a positional argument. `--help` and
  // `-h` set help_requested() and are not errors.
  absl::Status Parse(int argc, const char* const* argv);

  [[nodiscard]] bool help_requested() const { return help_requested_; }
  // The usage line, then one line per flag with its help and default.
  [[nodiscard]] std::string Help() const;

  // Implementation details follow.
 private:
  enum class Kind { kString, kInt, kBool };
  struct Flag {
    std::string name;
    Kind kind = Kind::kString;
    void* value = nullptr;  // std::string*, int64_t* or bool*, by kind
    std::string help;
    std::string default_text;
  };

  absl::Status Assign(const Flag& flag, absl::string_view text) const;

  std::string usage_;
  std::vector<Flag> flags_;
  bool help_requested_ = false;
};

// "1,2,4" -> {1, 2, 4}. InvalidArgument for an empty list, a non-integer or a
// value below `min_value`.
absl::StatusOr<std::vector<int64_t>> ParseIntList(absl::string_view text, int64_t min_value);

}  // namespace graphserve
