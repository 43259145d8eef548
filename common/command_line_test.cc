#include "common/command_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

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
  EXPECT_THAT(command_line.Parse(3, unknown).message(), HasSubstr("unknown flag --modle"));
  const char* bad_int[] = {"bench", "--iters", "many"};
  EXPECT_THAT(command_line.Parse(3, bad_int).message(), HasSubstr("'many'"));
  const char* missing[] = {"bench", "--model"};
  EXPECT_THAT(command_line.Parse(2, missing).message(), HasSubstr("--model needs a value"));
  const char* positional[] = {"bench", "m.onnx"};
  EXPECT_THAT(command_line.Parse(2, positional).message(), HasSubstr("'m.onnx'"));
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
