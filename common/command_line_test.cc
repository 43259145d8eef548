#include "common/command_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

struct Flags {
  std::string model;
  int64_t iters = 200;
  bool tf32 = false;
};

CommandLine MakeCommandLine(Flags* flags) {
  CommandLine command_line("bench --model FILE");
  command_line.AddString("model", &flags->model, "ONNX file");
  command_line.AddInt("iters", &flags->iters, "timed runs");
  command_line.AddBool("allow-tf32", &flags->tf32, "TF32 GEMMs");
  return command_line;
}

TEST(CommandLineTest, ParsesBothSpellingsAndBareBooleans) {
  Flags flags;
  CommandLine command_line = MakeCommandLine(&flags);
  const char* argv[] = {"bench", "--model", "m.onnx", "--iters=50", "--allow-tf32"};
  ASSERT_TRUE(command_line.Parse(5, argv).ok());
  EXPECT_EQ(flags.model, "m.onnx");
  EXPECT_EQ(flags.iters, 50);
  EXPECT_TRUE(flags.tf32);
  EXPECT_FALSE(command_line.help_requested());
}

TEST(CommandLineTest, KeepsDefaultsAndShowsThemInHelp) {
  Flags flags;
  CommandLine command_line = MakeCommandLine(&flags);
  const char* argv[] = {"bench", "--help"};
  ASSERT_TRUE(command_line.Parse(2, argv).ok());
  EXPECT_TRUE(command_line.help_requested());
  EXPECT_EQ(flags.iters, 200);
  EXPECT_THAT(command_line.Help(), HasSubstr("--iters VALUE\n      timed runs (default: 200)"));
}

TEST(CommandLineTest, ExplicitBooleanValue) {
  Flags flags{.tf32 = true};
  CommandLine command_line = MakeCommandLine(&flags);
  const char* argv[] = {"bench", "--allow-tf32=false"};
  ASSERT_TRUE(command_line.Parse(2, argv).ok());
  EXPECT_FALSE(flags.tf32);
}

TEST(CommandLineTest, ErrorsNameTheArgument) {
  Flags flags;
  CommandLine command_line = MakeCommandLine(&flags);
  const char* unknown[] = {"bench", "--modle", "m.onnx"};
  EXPECT_THAT(command_line.Parse(3, unknown).message(),
              HasSubstr("unknown flag --modle (did you mean --model?)"));
  const char* bad_int[] = {"bench", "--iters", "many"};
  EXPECT_THAT(command_line.Parse(3, bad_int).message(), HasSubstr("'many'"));
  const char* missing[] = {"bench", "--model"};
  EXPECT_THAT(command_line.Parse(2, missing).message(), HasSubstr("--model needs a value"));
  const char* positional[] = {"bench", "m.onnx"};
  EXPECT_THAT(command_line.Parse(2, positional).message(), HasSubstr("'m.onnx'"));
}

TEST(CommandLineTest, BooleansReadAsGetoptReadsTritons) {
  Flags flags;
  CommandLine command_line = MakeCommandLine(&flags);
  // getopt_long hands Triton a boolean's value as the next argument.
  const char* separate[] = {"bench", "--allow-tf32", "ON", "--iters", "3"};
  ASSERT_TRUE(command_line.Parse(5, separate).ok());
  EXPECT_TRUE(flags.tf32);
  const char* off[] = {"bench", "--allow-tf32", "off"};
  ASSERT_TRUE(command_line.Parse(3, off).ok());
  EXPECT_FALSE(flags.tf32);
  // A bare boolean before another flag is true; the next flag is not eaten.
  const char* bare[] = {"bench", "--allow-tf32", "--iters", "7"};
  ASSERT_TRUE(command_line.Parse(4, bare).ok());
  EXPECT_TRUE(flags.tf32);
  EXPECT_EQ(flags.iters, 7);
  const char* bad[] = {"bench", "--allow-tf32=maybe"};
  EXPECT_THAT(command_line.Parse(2, bad).message(), HasSubstr("wants true or false"));
}

TEST(CommandLineTest, RepeatedListFlagsAppendAndAliasesShareTheFlag) {
  std::vector<std::string> repositories = {"/default"};
  std::string single;
  double interval = 2000;
  CommandLine command_line("server");
  command_line.AddStringList("model-repository", &repositories, "repositories");
  command_line.AddAlias("model-store", "model-repository");
  command_line.AddString("id", &single, "name");
  command_line.AddDouble("metrics-interval-ms", &interval, "interval");
  EXPECT_TRUE(command_line.Has("model-store"));
  EXPECT_FALSE(command_line.Given("model-repository"));
  const char* argv[] = {"server", "--model-repository=/a", "--model-store", "/b",
                        "--id", "x", "--id=y", "--metrics-interval-ms", "2.5"};
  ASSERT_TRUE(command_line.Parse(9, argv).ok());
  // The first occurrence replaced the default; each one appended.
  EXPECT_THAT(repositories, ElementsAre("/a", "/b"));
  EXPECT_TRUE(command_line.Given("model-store"));
  EXPECT_TRUE(command_line.Given("model-repository"));
  EXPECT_EQ(single, "y");  // the last of a plain flag wins, as with getopt_long
  EXPECT_DOUBLE_EQ(interval, 2.5);
  EXPECT_THAT(command_line.Help(),
              HasSubstr("--model-repository VALUE (repeatable)\n      repositories (default: "
                        "/default) Also --model-store."));
  const char* bad[] = {"server", "--metrics-interval-ms", "fast"};
  EXPECT_THAT(command_line.Parse(3, bad).message(), HasSubstr("wants a number, got 'fast'"));
}

TEST(CommandLineTest, HiddenFlagsParseButStayOutOfHelp) {
  std::string directory;
  CommandLine command_line("server");
  command_line.AddString("backend-directory", &directory, "not listed");
  command_line.Hide("backend-directory");
  const char* argv[] = {"server", "--backend-directory", "/opt/backends"};
  ASSERT_TRUE(command_line.Parse(3, argv).ok());
  EXPECT_EQ(directory, "/opt/backends");
  EXPECT_THAT(command_line.Help(), Not(HasSubstr("backend-directory")));
}

TEST(CommandLineTest, ClosestFlagNamesTyposAndShortenedFlags) {
  Flags flags;
  CommandLine command_line = MakeCommandLine(&flags);
  EXPECT_EQ(command_line.ClosestFlag("itres"), "iters");       // a swap
  EXPECT_EQ(command_line.ClosestFlag("allow-tf33"), "allow-tf32");
  EXPECT_EQ(command_line.ClosestFlag("allow"), "allow-tf32");  // cut short
  EXPECT_EQ(command_line.ClosestFlag("grpc-port"), "");        // nothing near
  const char* argv[] = {"bench", "--alow-tf32"};
  EXPECT_THAT(command_line.Parse(2, argv).message(),
              HasSubstr("unknown flag --alow-tf32 (did you mean --allow-tf32?); see --help"));
}

TEST(ParseIntListTest, ParsesAndValidates) {
  absl::StatusOr<std::vector<int64_t>> sizes = ParseIntList("1,2,2048", 1);
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_THAT(*sizes, ElementsAre(1, 2, 2048));
  EXPECT_FALSE(ParseIntList("", 1).ok());
  EXPECT_FALSE(ParseIntList("1,,2", 1).ok());
  EXPECT_FALSE(ParseIntList("4,x", 1).ok());
  EXPECT_THAT(ParseIntList("0,1", 1).status().message(), HasSubstr("below the minimum 1"));
}

}  // namespace
}  // namespace graphserve
