#include "server/ensemble_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/text_format.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

inference::ModelConfig Parse(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

// A diamond: IN -> add (SUM, DIFF); SUM -> scale (SCALED); DIFF -> negate
// (NEG); (SCALED, NEG) -> join (OUT). `add` and the two middle steps are in
// the config out of order, so the plan must order them.
constexpr char kDiamond[] = R"pb(
  name: "diamond"
  platform: "ensemble"
  max_batch_size: 8
  input { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] }
  output { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] }
  ensemble_scheduling {
    step {
      model_name: "join"
      model_version: -1
      input_map { key: "A" value: "SCALED" }
      input_map { key: "B" value: "NEG" }
      output_map { key: "Y" value: "OUT" }
    }
    step {
      model_name: "scale"
      model_version: 2
      input_map { key: "X" value: "SUM" }
      output_map { key: "Y" value: "SCALED" }
    }
    step {
      model_name: "negate"
      model_version: -1
      input_map { key: "X" value: "DIFF" }
      output_map { key: "Y" value: "NEG" }
    }
    step {
      model_name: "add"
      model_version: -1
      input_map { key: "A" value: "IN" }
      input_map { key: "B" value: "IN" }
      output_map { key: "SUM" value: "SUM" }
      output_map { key: "DIFF" value: "DIFF" }
    }
  }
)pb";

// A composing model's config: fp32 [4] tensors, batching up to 8.
inference::ModelConfig Composing(const std::string& name, const std::string& inputs,
                                 const std::string& outputs, int max_batch_size = 8,
                                 const std::string& type = "TYPE_FP32",
                                 const std::string& dims = "[ 4 ]") {
  std::string text = absl::StrCat("name: \"", name, "\" max_batch_size: ", max_batch_size, "\n");
  for (absl::string_view input : absl::StrSplit(inputs, ',')) {
    absl::StrAppend(&text, "input { name: \"", input, "\" data_type: ", type, " dims: ", dims,
                    " }\n");
  }
  for (absl::string_view output : absl::StrSplit(outputs, ',')) {
    absl::StrAppend(&text, "output { name: \"", output, "\" data_type: ", type, " dims: ", dims,
                    " }\n");
  }
  return Parse(text);
}

std::map<std::string, inference::ModelConfig> DiamondModels() {
  return {{"add", Composing("add", "A,B", "SUM,DIFF")},
          {"scale", Composing("scale", "X", "Y")},
          {"negate", Composing("negate", "X", "Y")},
          {"join", Composing("join", "A,B", "Y")}};
}

ComposingConfigLookup LookupIn(const std::map<std::string, inference::ModelConfig>& models) {
  return [models](const inference::ModelEnsembling::Step& step)
             -> absl::StatusOr<inference::ModelConfig> {
    const auto found = models.find(step.model_name());
    if (found == models.end()) return absl::NotFoundError(step.model_name());
    return found->second;
  };
}

// kDiamond with `change` merged in.
inference::ModelConfig DiamondWith(const std::string& change) {
  inference::ModelConfig config = Parse(kDiamond);
  EXPECT_TRUE(google::protobuf::TextFormat::MergeFromString(change, &config)) << change;
  return config;
}

std::string Refusal(const inference::ModelConfig& config) {
  const absl::Status status = ValidateEnsembleScheduling(config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  return std::string(status.message());
}

std::string PlanRefusal(const inference::ModelConfig& config,
                        const std::map<std::string, inference::ModelConfig>& models) {
  EXPECT_TRUE(ValidateEnsembleScheduling(config).ok());
  const absl::StatusOr<EnsemblePlan> plan = PlanEnsemble(config, LookupIn(models));
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << plan.status();
  return std::string(plan.status().message());
}

TEST(EnsembleConfigTest, AnEnsembleIsItsPlatformOrStepsWithoutAPlatform) {
  EXPECT_TRUE(IsEnsembleConfig(Parse(R"pb(platform: "ensemble")pb")));
  inference::ModelConfig bare = Parse(R"pb(ensemble_scheduling { step { model_name: "a" } })pb");
  EXPECT_TRUE(IsEnsembleConfig(bare));
  NormalizeEnsembleConfig(&bare);
  EXPECT_EQ(bare.platform(), "ensemble");
  // Steps on another platform are Triton's config error, not an ensemble.
  EXPECT_FALSE(IsEnsembleConfig(Parse(R"pb(platform: "onnxruntime_onnx"
                                           ensemble_scheduling { step { model_name: "a" } })pb")));
  EXPECT_FALSE(IsEnsembleConfig(Parse(R"pb(name: "m")pb")));
}

TEST(EnsembleConfigTest, TheDiamondIsValidAndEachStepRunsAfterWhatItReads) {
  const inference::ModelConfig config = Parse(kDiamond);
  ASSERT_TRUE(ValidateEnsembleScheduling(config).ok());
  const absl::StatusOr<EnsemblePlan> plan = PlanEnsemble(config, LookupIn(DiamondModels()));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->steps.size(), 4u);
  // Config order kept; `after` says what each waits for.
  EXPECT_EQ(plan->steps[0].model_name, "join");
  EXPECT_THAT(plan->steps[0].after, ElementsAre(1, 2));
  EXPECT_THAT(plan->steps[1].after, ElementsAre(3));
  EXPECT_THAT(plan->steps[2].after, ElementsAre(3));
  EXPECT_TRUE(plan->steps[3].after.empty());
  // add first, join last, the two independent steps between.
  ASSERT_EQ(plan->order.size(), 4u);
  EXPECT_EQ(plan->order.front(), 3u);
  EXPECT_EQ(plan->order.back(), 0u);
  // Maps in the step model's tensor order; versions as Find takes them.
  EXPECT_THAT(plan->steps[3].inputs, ElementsAre(Pair("A", "IN"), Pair("B", "IN")));
  EXPECT_THAT(plan->steps[3].outputs, ElementsAre(Pair("SUM", "SUM"), Pair("DIFF", "DIFF")));
  EXPECT_EQ(plan->steps[1].model_version, "2");
  EXPECT_EQ(plan->steps[0].model_version, "");
  EXPECT_THAT(ComposingModelNames(config), ElementsAre("join", "scale", "negate", "add"));
}

// Triton's ValidateModelConfig / ValidateEnsembleSchedulingConfig texts.
TEST(EnsembleConfigTest, TheEnsemblesOwnFieldsAreCheckedWithTritonsText) {
  EXPECT_THAT(Refusal(DiamondWith(R"pb(backend: "onnxruntime")pb")),
              HasSubstr("Ensemble model 'diamond' must have platform type 'ensemble' and empty "
                        "backend type"));
  inference::ModelConfig no_steps = Parse(kDiamond);
  no_steps.clear_ensemble_scheduling();
  EXPECT_THAT(Refusal(no_steps), HasSubstr("ensemble scheduling must be set for ensemble diamond "
                                           "whose platform is ensemble"));
  EXPECT_THAT(Refusal(DiamondWith(R"pb(instance_group { count: 1 })pb")),
              HasSubstr("instance group should not be specified for ensemble 'diamond'"));
  EXPECT_THAT(Refusal(DiamondWith(R"pb(optimization { priority: PRIORITY_MAX })pb")),
              HasSubstr("optimization should not be specified for ensemble 'diamond'"));
  EXPECT_THAT(Refusal(DiamondWith(R"pb(model_warmup { name: "w" })pb")),
              HasSubstr("model_warmup can not be specified for ensemble 'diamond'"));
  inference::ModelConfig empty = Parse(kDiamond);
  empty.mutable_ensemble_scheduling()->clear_step();
  EXPECT_THAT(Refusal(empty), HasSubstr("must specify 'step' for ensemble 'diamond'"));
  EXPECT_THAT(Refusal(DiamondWith(R"pb(ensemble_scheduling { step { model_version: -1 } })pb")),
              HasSubstr("must specify 'model_name' in step 4 of ensemble 'diamond'"));
  EXPECT_THAT(Refusal(DiamondWith(R"pb(ensemble_scheduling { step { model_name: "x" } })pb")),
              HasSubstr("must specify 'input_map' in step 4 of ensemble 'diamond'"));
  EXPECT_THAT(Refusal(DiamondWith(R"pb(ensemble_scheduling {
                                         step { model_name: "x" input_map { key: "a" value: "IN" } }
                                       })pb")),
              HasSubstr("must specify 'output_map' in step 4 of ensemble 'diamond'"));
}

TEST(EnsembleConfigTest, TheDataFlowIsCheckedWithTritonsText) {
  // A tensor produced twice.
  EXPECT_THAT(Refusal(DiamondWith(R"pb(ensemble_scheduling {
                                         step {
                                           model_name: "x"
                                           input_map { key: "a" value: "IN" }
                                           output_map { key: "b" value: "SUM" }
                                         }
                                       })pb")),
              HasSubstr("ensemble tensor 'SUM' can appear in an output map only once for "
                        "ensemble 'diamond' step 4"));
  // An ensemble input no step reads (Triton's text, its stray quote too).
  EXPECT_THAT(Refusal(DiamondWith(R"pb(input { name: "UNUSED" data_type: TYPE_FP32 dims: [ 1 ] })pb")),
              HasSubstr("ensemble input 'UNUSED' for ensemble diamond' is not used"));
  // An ensemble output no step writes, or one whose producer waits on a
  // tensor nothing writes.
  EXPECT_THAT(Refusal(DiamondWith(R"pb(output { name: "NEVER" data_type: TYPE_FP32 dims: [ 1 ] })pb")),
              HasSubstr("ensemble output 'NEVER' for ensemble diamond' is not used"));
  EXPECT_THAT(Refusal(DiamondWith(R"pb(output { name: "LATE" data_type: TYPE_FP32 dims: [ 1 ] }
                                       ensemble_scheduling {
                                         step {
                                           model_name: "x"
                                           input_map { key: "a" value: "MISSING" }
                                           output_map { key: "b" value: "LATE" }
                                         }
                                       })pb")),
              HasSubstr("output 'LATE' for ensemble 'diamond' is not written: at least one of its "
                        "depending tensors, 'MISSING', is not connected"));
  // A tensor written and never read.
  EXPECT_THAT(Refusal(DiamondWith(R"pb(ensemble_scheduling {
                                         step {
                                           model_name: "x"
                                           input_map { key: "a" value: "IN" }
                                           output_map { key: "b" value: "DANGLING" }
                                         }
                                       })pb")),
              HasSubstr("ensemble tensor 'DANGLING' is unused in ensemble 'diamond'"));
}

TEST(EnsembleConfigTest, ACycleOfStepsIsNeverWritten) {
  // P reads Q and writes R; Q's writer reads R: neither can start.
  const inference::ModelConfig cycle = Parse(R"pb(
    name: "loop"
    platform: "ensemble"
    max_batch_size: 8
    input { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] }
    output { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] }
    ensemble_scheduling {
      step {
        model_name: "join"
        input_map { key: "A" value: "IN" }
        input_map { key: "B" value: "Q" }
        output_map { key: "Y" value: "R" }
      }
      step {
        model_name: "scale"
        input_map { key: "X" value: "R" }
        output_map { key: "Y" value: "Q" }
      }
      step {
        model_name: "negate"
        input_map { key: "X" value: "R" }
        output_map { key: "Y" value: "OUT" }
      }
    }
  )pb");
  EXPECT_THAT(Refusal(cycle), HasSubstr("output 'OUT' for ensemble 'loop' is not written"));
}

// Triton's ValidateEnsembleConfig texts, against the composing models.
TEST(EnsembleConfigTest, StepsAreCheckedAgainstTheirModelsWithTritonsText) {
  std::map<std::string, inference::ModelConfig> models = DiamondModels();
  models["scale"] = Composing("scale", "X", "Y", /*max_batch_size=*/4);
  EXPECT_THAT(PlanRefusal(Parse(kDiamond), models),
              HasSubstr("ensemble diamond allows maximum batch size 8, but it contains model "
                        "scale which only allows maximum batch size to be 4"));
  // A model that does not batch is fine when the full shapes agree.
  models["scale"] = Composing("scale", "X", "Y", /*max_batch_size=*/0, "TYPE_FP32", "[ -1, 4 ]");
  EXPECT_TRUE(PlanEnsemble(Parse(kDiamond), LookupIn(models)).ok());

  // Steps are checked in the config's order: join's inputs first.
  models = DiamondModels();
  models["negate"] = Composing("negate", "X", "Y", 8, "TYPE_INT32");
  EXPECT_THAT(PlanRefusal(Parse(kDiamond), models),
              HasSubstr("in ensemble diamond, ensemble tensor NEG: inconsistent data type: "
                        "TYPE_FP32 is inferred from model join while TYPE_INT32 is inferred from "
                        "model negate"));
  models = DiamondModels();
  models["join"] = Composing("join", "A,B", "Y", 8, "TYPE_FP32", "[ 3 ]");
  EXPECT_THAT(PlanRefusal(Parse(kDiamond), models),
              HasSubstr("ensemble tensor OUT: inconsistent shape: [-1,4] is inferred from model "
                        "diamond while [-1,3] is inferred from model join"));
  models = DiamondModels();
  models["scale"] = Composing("scale", "Z", "Y");
  EXPECT_THAT(PlanRefusal(Parse(kDiamond), models),
              HasSubstr("in ensemble diamond, ensemble tensor SUM is mapping to non-existing "
                        "input X in model scale"));
  models = DiamondModels();
  models["scale"] = Composing("scale", "X,EXTRA", "Y");
  EXPECT_THAT(PlanRefusal(Parse(kDiamond), models),
              HasSubstr("in ensemble diamond, input EXTRA in model scale is not mapped to any "
                        "ensemble tensors"));
  models = DiamondModels();
  models["negate"] = Composing("negate", "X", "Z");
  EXPECT_THAT(PlanRefusal(Parse(kDiamond), models),
              HasSubstr("in ensemble diamond, ensemble tensor NEG is mapped from non-existing "
                        "output Y in model negate"));
  // The ensemble's own declared dims count too.
  inference::ModelConfig wide = Parse(kDiamond);
  wide.mutable_output(0)->set_dims(0, 5);
  EXPECT_THAT(PlanRefusal(wide, DiamondModels()),
              HasSubstr("ensemble tensor OUT: inconsistent shape: [-1,5] is inferred from model "
                        "diamond while [-1,4] is inferred from model join"));
  // What the lookup says of a model it cannot give is the refusal.
  models = DiamondModels();
  models.erase("negate");
  const absl::StatusOr<EnsemblePlan> plan = PlanEnsemble(Parse(kDiamond), LookupIn(models));
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace graphserve
