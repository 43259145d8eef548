#include "capture_cli/prepare.h"

#include <string>

#include "gtest/gtest.h"
#include "runtime/passes/autocast.h"
#include "runtime/passes/precision.h"

namespace graphserve {
namespace {

PrepareReport AutoReport() {
  PrepareReport report;
  report.model_name = "bert";
  report.precision = ModelPrecision::kAuto;
  report.model_path = "bert.onnx";
  report.out_dir = "repo/bert";
  report.float32_nodes = {
      {"/embeddings/Add", "Add", Float32Rule::kValues, "output max |x| 1.3e3 > 512"},
      {"/attention/Softmax", "Softmax", Float32Rule::kOp, "op Softmax kept in float32"},
      {"/mask/Mul", "Mul", Float32Rule::kValues,
       "weight 'min' max |w| 3.4e38 > 65504; output max |x| 3.4e38 > 512"},
      {"/encoder/Add", "Add", Float32Rule::kPromoted, "reads float32 '/ln'"},
  };
  return report;
}

// capture_report.txt says which nodes precision auto kept in float32 and
// why, one line each, after the line naming the precision.
TEST(FormatPrepareReportTest, ListsEachNodeAutoKeepsAndWhy) {
  const std::string text = FormatPrepareReport(AutoReport());
  EXPECT_NE(text.find("precision auto\n"), std::string::npos) << text;
  EXPECT_NE(text.find("precision auto: 4 nodes kept in float32 (1 for their op, as fp16; 1 as "
                      "autocast promotes; 2 for their values on the calibration batch), the rest "
                      "computes in float16:\n"
                      "  '/embeddings/Add' (Add): output max |x| 1.3e3 > 512\n"
                      "  '/attention/Softmax' (Softmax): op Softmax kept in float32\n"
                      "  '/mask/Mul' (Mul): weight 'min' max |w| 3.4e38 > 65504; output max |x| "
                      "3.4e38 > 512\n"
                      "  '/encoder/Add' (Add): reads float32 '/ln'\n"),
            std::string::npos)
      << text;
}

TEST(FormatPrepareReportTest, OtherPrecisionsHaveNoSuchSection) {
  PrepareReport report = AutoReport();
  report.precision = ModelPrecision::kFp16;
  report.float32_nodes.clear();
  EXPECT_EQ(FormatPrepareReport(report).find("kept in float32"), std::string::npos);
}

}  // namespace
}  // namespace graphserve
