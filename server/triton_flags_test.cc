#include "server/triton_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/server_command.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Triton's flags as its command_line_parser.cc declares them: name -> value
// syntax (server/testdata, with the Triton version it came from).
std::map<std::string, std::string> TritonParserFlags() {
  std::ifstream in("server/testdata/tritonserver_2.73_flags.txt");
  EXPECT_TRUE(in) << "server/testdata/tritonserver_2.73_flags.txt is missing";
  std::map<std::string, std::string> flags;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, value;
    fields >> name >> value;
    flags[name] = value;
  }
  return flags;
}

// A value of Triton's syntax for trying a flag on the command line.
std::string SampleValue(absl::string_view syntax) {
  if (syntax == "<boolean>") return "true";
  if (syntax == "<integer>") return "4";
  if (syntax == "<float>") return "6.5";
  if (syntax == "<string>") return "value";
  // The restricted-API flags: a category, a header and its value.
  if (syntax == "<string>:<string>=<string>") return "model-repository:admin-key=secret";
  return "name,setting=1";
}

TEST(TritonFlagsTest, EveryFlagOfTritonsParserHasARowAndNoOtherDoes) {
  const std::map<std::string, std::string> triton = TritonParserFlags();
  // Triton 2.73 declares 91 options (--help among them).
  EXPECT_EQ(triton.size(), 91u);
  std::set<std::string> rows;
  for (const TritonFlag& flag : TritonFlags()) {
    EXPECT_TRUE(rows.insert(std::string(flag.name)).second) << "two rows for --" << flag.name;
    const auto found = triton.find(std::string(flag.name));
    if (found == triton.end()) {
      ADD_FAILURE() << "--" << flag.name << " is not a flag of Triton's parser";
      continue;
    }
    EXPECT_EQ(flag.value, found->second) << "--" << flag.name << ": Triton's value syntax";
    EXPECT_FALSE(flag.what.empty()) << "--" << flag.name;
  }
  for (const auto& [name, value] : triton) {
    EXPECT_TRUE(rows.contains(name)) << "Triton's --" << name << " has no row in triton_flags.cc";
  }
}

TEST(TritonFlagsTest, EveryServedOrIgnoredFlagIsAcceptedWithItsValue) {
  for (const TritonFlag& flag : TritonFlags()) {
    if (flag.name == "help" || flag.use == TritonFlagUse::kNotYet) continue;
    std::vector<std::string> args = {"--model-repository", "/m", "--device", "cpu"};
    // Flags that need a partner to be accepted get it.
    if (absl::StartsWith(flag.name, "grpc-use-ssl")) {
      args.insert(args.end(), {"--grpc-server-cert", "c.pem", "--grpc-server-key", "k.pem",
                               "--grpc-root-cert", "ca.pem"});
    }
    if (flag.name == "load-model") args.insert(args.end(), {"--model-control-mode", "explicit"});
    std::string value = SampleValue(flag.value);
    if (flag.name == "model-control-mode") value = "poll";
    if (flag.name == "log-format") value = "ISO8601";
    if (flag.name == "grpc-infer-response-compression-level") value = "high";
    if (absl::StrContains(flag.name, "address")) value = "127.0.0.1";
    if (flag.name == "http-port" || flag.name == "grpc-port" || flag.name == "metrics-port") {
      value = "0";
    }
    if (flag.value == "<none>") {
      args.push_back(absl::StrCat("--", flag.name));
    } else {
      args.insert(args.end(), {absl::StrCat("--", flag.name), value});
    }
    std::ostringstream notices;
    const absl::StatusOr<ServerCommand> command = ParseServerCommand(args, 0, notices);
    ASSERT_TRUE(command.ok()) << "--" << flag.name << " " << value << ": " << command.status();
    // An ignored flag says so once; a served one says nothing.
    const std::string notice = IgnoredFlagNotice(flag);
    if (flag.use == TritonFlagUse::kIgnored) {
      EXPECT_THAT(command->ignored_flags, ::testing::ElementsAre(notice));
      EXPECT_THAT(notice, HasSubstr(absl::StrCat("--", flag.name, " does not apply to graphserve (")));
    } else {
      EXPECT_TRUE(command->ignored_flags.empty()) << "--" << flag.name;
    }
  }
}

TEST(TritonFlagsTest, SecurityFlagsNotYetImplementedAreRefusedNeverIgnored) {
  int refused = 0;
  for (const TritonFlag& flag : TritonFlags()) {
    if (flag.use != TritonFlagUse::kNotYet) continue;
    ++refused;
    std::ostringstream notices;
    const absl::Status status =
        ParseServerCommand({"--model-repository", "/m",
                            absl::StrCat("--", flag.name, "=model-repository:key=secret")},
                           0, notices)
            .status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << flag.name;
    EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("--", flag.name,
                                                         " is not supported by graphserve yet")));
  }
  // The restricted-API flags, until they are implemented; then their rows
  // say kServed.
  EXPECT_LE(refused, 2);
}

TEST(TritonFlagsTest, HelpGroupsTheIgnoredFlagsInOneSection) {
  const std::string usage = ServerUsage();
  EXPECT_THAT(usage, HasSubstr("Triton flags that do not apply to graphserve"));
  EXPECT_THAT(usage, HasSubstr(" --backend-directory"));
  // Listed by name only, not one entry with help each.
  EXPECT_THAT(usage, Not(HasSubstr("--backend-directory VALUE")));
  EXPECT_THAT(usage, HasSubstr("--grpc-use-ssl-mutual\n"));
}

}  // namespace
}  // namespace graphserve
