#include "server/model_repository.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"

namespace graphserve {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

// Builds a repository under the test's temporary directory.
class ModelRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(root_);
    fs::create_directories(root_);
  }

  void WriteFile(const fs::path& relative, const std::string& text) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }

  // A model directory with the given config text and model files in `versions`.
  void WriteModel(const std::string& name, const std::string& config,
                  const std::vector<int>& versions, const std::string& filename = "model.onnx") {
    WriteFile(fs::path(name) / "config.pbtxt", config);
    for (int version : versions) {
      WriteFile(fs::path(name) / std::to_string(version) / filename, "onnx");
    }
  }

  std::vector<RepositoryModel> Scan() {
    absl::StatusOr<std::vector<RepositoryModel>> models = ScanModelRepository(root_.string());
    EXPECT_TRUE(models.ok()) << models.status();
    return models.ok() ? *std::move(models) : std::vector<RepositoryModel>();
  }

  // The one model the repository holds.
  RepositoryModel ScanOne() {
    std::vector<RepositoryModel> models = Scan();
    EXPECT_EQ(models.size(), 1u);
    return models.empty() ? RepositoryModel() : models[0];
  }

  std::string ModelPath(const std::string& model, int version,
                        const std::string& filename = "model.onnx") {
    return (root_ / model / std::to_string(version) / filename).string();
  }

  fs::path root_;
};

constexpr char kMlpConfig[] = R"pb(
  name: "mlp"
  max_batch_size: 64
  input { name: "x" data_type: TYPE_FP32 dims: 16 }
  output { name: "y" data_type: TYPE_FP32 dims: 4 }
)pb";

std::vector<int64_t> Versions(const RepositoryModel& model) {
  std::vector<int64_t> versions;
  for (const ModelVersionEntry& entry : model.versions) versions.push_back(entry.version);
  return versions;
}

TEST_F(ModelRepositoryTest, ReadsModelsSortedAndSkipsHiddenDirectoriesAndFiles) {
  WriteModel("mlp", kMlpConfig, {1});
  WriteModel("dlrm", "name: \"dlrm\" max_batch_size: 8", {2});
  WriteModel(".cache", "this is not a config", {1});
  WriteFile("README.txt", "models live here");
  const std::vector<RepositoryModel> models = Scan();
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0].name, "dlrm");
  EXPECT_EQ(models[1].name, "mlp");
  const RepositoryModel& mlp = models[1];
  ASSERT_TRUE(mlp.status.ok()) << mlp.status;
  EXPECT_EQ(mlp.directory, (root_ / "mlp").string());
  EXPECT_EQ(mlp.config.max_batch_size(), 64);
  EXPECT_EQ(mlp.config.input(0).name(), "x");
  ASSERT_EQ(mlp.versions.size(), 1u);
  EXPECT_EQ(mlp.versions[0].version, 1);
  EXPECT_EQ(mlp.versions[0].model_path, ModelPath("mlp", 1));
  EXPECT_TRUE(models[0].status.ok()) << models[0].status;
  EXPECT_EQ(models[0].versions[0].model_path, ModelPath("dlrm", 2));
}

TEST_F(ModelRepositoryTest, EmptyRepositoryHasNoModels) { EXPECT_TRUE(Scan().empty()); }

TEST_F(ModelRepositoryTest, MissingRootOrPlainFileIsNotFound) {
  const std::string missing = (root_ / "nowhere").string();
  absl::StatusOr<std::vector<RepositoryModel>> models = ScanModelRepository(missing);
  ASSERT_FALSE(models.ok());
  EXPECT_EQ(models.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(models.status()), HasSubstr(missing));

  WriteFile("file", "x");
  const std::string file = (root_ / "file").string();
  models = ScanModelRepository(file);
  ASSERT_FALSE(models.ok());
  EXPECT_EQ(models.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(models.status()), HasSubstr(file));
}

TEST_F(ModelRepositoryTest, EmptyConfigNameIsTheDirectoryName) {
  WriteModel("ranker", "max_batch_size: 4", {1});
  const RepositoryModel model = ScanOne();
  ASSERT_TRUE(model.status.ok()) << model.status;
  EXPECT_EQ(model.config.name(), "ranker");
}

// Triton's auto-complete: a directory with only <version>/model.onnx is a
// model whose config the load completes from the model file.
TEST_F(ModelRepositoryTest, MissingConfigIsCompletedFromTheModelLater) {
  WriteModel("bare", "", {1, 2});
  fs::remove(root_ / "bare" / "config.pbtxt");
  const RepositoryModel model = ScanOne();
  ASSERT_TRUE(model.status.ok()) << model.status;
  EXPECT_TRUE(model.config_from_model);
  EXPECT_EQ(model.config.name(), "bare");
  ASSERT_EQ(model.versions.size(), 1u);  // the default policy: the latest
  EXPECT_EQ(model.versions[0].version, 2);
}

TEST_F(ModelRepositoryTest, OneBadModelDoesNotStopTheScan) {
  WriteModel("a_no_version", "", {});
  WriteModel("b_good", "", {1});
  WriteModel("c_unparsable", "name: \"c_unparsable\"\nmax_batch_size: lots\n", {1});
  const std::vector<RepositoryModel> models = Scan();
  ASSERT_EQ(models.size(), 3u);
  EXPECT_EQ(models[0].status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(models[0].status), HasSubstr("no version directory of"));
  EXPECT_TRUE(models[0].versions.empty());
  EXPECT_TRUE(models[1].status.ok()) << models[1].status;
  EXPECT_EQ(models[2].status.code(), absl::StatusCode::kInvalidArgument);
  // Line 2, column 17: the value after "max_batch_size: ".
  EXPECT_THAT(Message(models[2].status),
              HasSubstr((root_ / "c_unparsable" / "config.pbtxt").string() + ":2:17: "));
  EXPECT_TRUE(models[2].versions.empty());
}

// Note [Configuration files stay in the model directory]: a config.pbtxt
// linked to a file elsewhere is not read, so none of its words reach the
// error; a link that stays inside the model's directory is read.
TEST_F(ModelRepositoryTest, ConfigLinkedOutsideTheModelDirectoryIsNotRead) {
  const fs::path outside = root_.parent_path() / (root_.filename().string() + "_outside.pbtxt");
  std::ofstream(outside) << "secret_first_word:x:0:0\n";
  WriteModel("mlp", "", {1});
  fs::remove(root_ / "mlp" / "config.pbtxt");
  fs::create_symlink(outside, root_ / "mlp" / "config.pbtxt");
  RepositoryModel linked = ScanOne();
  EXPECT_EQ(linked.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(linked.status), HasSubstr("leads outside the directory of model 'mlp'"));
  EXPECT_THAT(Message(linked.status), ::testing::Not(HasSubstr("secret_first_word")));

  // A link to a file of the model's own directory is followed.
  fs::remove(root_ / "mlp" / "config.pbtxt");
  WriteFile("mlp/configs/real.pbtxt", kMlpConfig);
  fs::create_symlink("configs/real.pbtxt", root_ / "mlp" / "config.pbtxt");
  RepositoryModel inside = ScanOne();
  EXPECT_TRUE(inside.status.ok()) << inside.status;
  EXPECT_EQ(inside.config.max_batch_size(), 64);
  fs::remove(outside);
}

TEST_F(ModelRepositoryTest, ParserErrorsCarryLineAndColumn) {
  absl::StatusOr<inference::ModelConfig> unknown =
      ParseModelConfigText("name: \"m\"\n  max_batch_sise: 4\n", "repo/m/config.pbtxt");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  // The parser reports the position where it noticed: after the field name.
  EXPECT_THAT(Message(unknown.status()), HasSubstr("repo/m/config.pbtxt:2:17: "));
  EXPECT_THAT(Message(unknown.status()), HasSubstr("max_batch_sise"));

  absl::StatusOr<inference::ModelConfig> unclosed =
      ParseModelConfigText("input {\n  name: \"x\"\n", "c.pbtxt");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_THAT(Message(unclosed.status()), HasSubstr("c.pbtxt:"));

  absl::StatusOr<inference::ModelConfig> good = ParseModelConfigText(kMlpConfig, "c.pbtxt");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->output(0).dims(0), 4);
}

TEST_F(ModelRepositoryTest, ConfigNameMustBeTheDirectoryName) {
  WriteModel("mlp_v2", kMlpConfig, {1});
  const RepositoryModel model = ScanOne();
  EXPECT_EQ(model.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(model.status),
              HasSubstr("names the model 'mlp' but its directory is 'mlp_v2'"));
  EXPECT_TRUE(model.versions.empty());
}

// Triton's platforms and backends other than ONNX Runtime's are refused by
// name, before any model file is looked for (issue 27 part 5).
TEST_F(ModelRepositoryTest, OtherFrameworksAreRefusedByPlatformOrBackend) {
  struct Case {
    const char* field;
    const char* expected;
  };
  const Case cases[] = {
      {"platform: \"tensorflow_graphdef\"", "declares platform 'tensorflow_graphdef'"},
      {"platform: \"pytorch_libtorch\"", "declares platform 'pytorch_libtorch'"},
      {"platform: \"tensorrt_plan\"", "declares platform 'tensorrt_plan'"},
      {"backend: \"python\"", "declares backend 'python'"},
  };
  for (const Case& c : cases) {
    SetUp();
    // No version directory holds a model file: the platform is the reason.
    WriteFile("mlp/config.pbtxt", absl::StrCat(kMlpConfig, c.field));
    const RepositoryModel model = ScanOne();
    EXPECT_EQ(model.status.code(), absl::StatusCode::kUnimplemented) << c.field;
    EXPECT_THAT(Message(model.status), HasSubstr(c.expected)) << c.field;
    EXPECT_THAT(Message(model.status), Not(HasSubstr("model.onnx"))) << c.field;
  }
  for (const char* onnx : {"platform: \"onnxruntime_onnx\"", "backend: \"onnxruntime\""}) {
    SetUp();
    WriteModel("mlp", absl::StrCat(kMlpConfig, onnx), {1});
    EXPECT_TRUE(ScanOne().status.ok()) << onnx;
  }
}

// Note [Ensembles]: an ensemble's version directories are empty, as Triton
// wants them; one written with no platform but with steps is an ensemble too.
TEST_F(ModelRepositoryTest, AnEnsembleVersionIsAnEmptyDirectory) {
  constexpr char kSteps[] = R"pb(
    ensemble_scheduling { step { model_name: "mlp" input_map { key: "x" value: "in" }
                                 output_map { key: "y" value: "out" } } })pb";
  WriteFile("pipe/config.pbtxt", absl::StrCat("platform: \"ensemble\"", kSteps));
  RepositoryModel model = ScanOne();
  EXPECT_EQ(model.status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(model.status), HasSubstr("has no version directory"));

  std::filesystem::create_directories(root_ / "pipe" / "1");
  std::filesystem::create_directories(root_ / "pipe" / "3");
  model = ScanOne();
  ASSERT_TRUE(model.status.ok()) << model.status;
  EXPECT_EQ(Versions(model), std::vector<int64_t>({3}));
  EXPECT_EQ(model.config.platform(), "ensemble");

  WriteFile("pipe/config.pbtxt", kSteps);  // no platform, no backend
  model = ScanOne();
  ASSERT_TRUE(model.status.ok()) << model.status;
  EXPECT_EQ(model.config.platform(), "ensemble");
}

TEST_F(ModelRepositoryTest, VersionsAreDirectoriesWithThePositiveNumberAndTheModelFile) {
  WriteModel("mlp", kMlpConfig, {});
  WriteFile("mlp/0/model.onnx", "x");                     // versions start at 1
  WriteFile("mlp/01/model.onnx", "x");                    // not plain decimal
  WriteFile("mlp/v3/model.onnx", "x");                    // not a number
  WriteFile("mlp/-2/model.onnx", "x");                    // not positive
  WriteFile("mlp/99999999999999999999/model.onnx", "x");  // beyond int64
  WriteFile("mlp/5/other.onnx", "x");                     // no model file
  WriteFile("mlp/6", "a file, not a directory");
  RepositoryModel model = ScanOne();
  EXPECT_EQ(model.status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(model.status), HasSubstr("no version directory of " +
                                               (root_ / "mlp").string() + " holds model.onnx"));

  WriteFile("mlp/2/model.onnx", "x");
  model = ScanOne();
  ASSERT_TRUE(model.status.ok()) << model.status;
  EXPECT_EQ(Versions(model), std::vector<int64_t>({2}));
}

TEST_F(ModelRepositoryTest, DefaultModelFilenameIsLookedForInEachVersion) {
  WriteModel("mlp", absl::StrCat(kMlpConfig, "default_model_filename: \"net.onnx\""), {1, 3},
             "net.onnx");
  WriteFile("mlp/4/model.onnx", "the default name no longer counts");
  const RepositoryModel model = ScanOne();
  ASSERT_TRUE(model.status.ok()) << model.status;
  ASSERT_EQ(model.versions.size(), 1u);
  EXPECT_EQ(model.versions[0].model_path, ModelPath("mlp", 3, "net.onnx"));
}

TEST_F(ModelRepositoryTest, DefaultModelFilenameMustNotBeAPath) {
  WriteModel("mlp", absl::StrCat(kMlpConfig, "default_model_filename: \"../1/model.onnx\""), {1});
  const RepositoryModel model = ScanOne();
  EXPECT_EQ(model.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(model.status), HasSubstr("not a path"));
}

TEST_F(ModelRepositoryTest, ClientsNamesAreModelDirectoriesOnlyWhenTheScanWouldListThem) {
  WriteModel("mlp", kMlpConfig, {1});
  WriteModel(".hidden", kMlpConfig, {1});
  WriteFile("plain_file", "x");
  EXPECT_TRUE(IsModelDirectory(root_.string(), "mlp"));
  for (const std::string name : {"", ".", "..", ".hidden", "plain_file", "mlp/1", "absent"}) {
    EXPECT_FALSE(IsModelDirectory(root_.string(), name)) << name;
  }
}

// The "config" load parameter stands for config.pbtxt (a broken file is not
// read); what a client wrote reaches the message quoted short, and the
// message names the parameter as the source.
TEST_F(ModelRepositoryTest, AConfigOverrideIsCheckedAsTheFileWouldBeAndQuotedShort) {
  WriteModel("mlp", "this is { not a model configuration", {1, 2});
  inference::ModelConfig config;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kMlpConfig, &config));
  config.mutable_version_policy()->mutable_specific()->add_versions(1);
  RepositoryModel model = ReadRepositoryModel(root_.string(), "mlp", &config);
  ASSERT_TRUE(model.status.ok()) << model.status;
  EXPECT_TRUE(model.config_from_load);
  ASSERT_EQ(model.versions.size(), 1u);
  EXPECT_EQ(model.versions[0].version, 1);

  inference::ModelConfig renamed = config;
  renamed.set_name(std::string(65536, 'x'));
  model = ReadRepositoryModel(root_.string(), "mlp", &renamed);
  EXPECT_EQ(model.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(model.status), HasSubstr("the load parameter 'config' names the model"));
  EXPECT_THAT(Message(model.status), HasSubstr("(65536 bytes)"));
  EXPECT_LT(Message(model.status).size(), 400u);

  inference::ModelConfig long_file = config;
  long_file.set_default_model_filename(std::string(256, 'f'));
  model = ReadRepositoryModel(root_.string(), "mlp", &long_file);
  EXPECT_EQ(model.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(model.status), HasSubstr("at most 255 bytes"));

  inference::ModelConfig absent = config;
  absent.mutable_version_policy()->mutable_specific()->add_versions(7);
  model = ReadRepositoryModel(root_.string(), "mlp", &absent);
  EXPECT_EQ(model.status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(model.status),
              HasSubstr("the load parameter 'config': version_policy specific lists version 7"));
}

// Each policy over versions 1, 2, 3 and 10 (10 sorts before 2 as text).
struct PolicyCase {
  const char* policy;
  std::vector<int64_t> served;
};

TEST_F(ModelRepositoryTest, VersionPoliciesChooseFromTheVersionsPresent) {
  const PolicyCase cases[] = {
      {"", {10}},
      {"version_policy { latest {} }", {10}},
      {"version_policy { latest { num_versions: 1 } }", {10}},
      {"version_policy { latest { num_versions: 2 } }", {3, 10}},
      {"version_policy { latest { num_versions: 9 } }", {1, 2, 3, 10}},
      {"version_policy { all {} }", {1, 2, 3, 10}},
      {"version_policy { specific { versions: [3, 1] } }", {1, 3}},
      {"version_policy { specific { versions: [2, 2] } }", {2}},
  };
  for (const PolicyCase& c : cases) {
    fs::remove_all(root_ / "mlp");
    WriteModel("mlp", absl::StrCat(kMlpConfig, c.policy), {1, 2, 3, 10});
    const RepositoryModel model = ScanOne();
    ASSERT_TRUE(model.status.ok()) << c.policy << ": " << model.status;
    EXPECT_EQ(Versions(model), c.served) << c.policy;
    for (const ModelVersionEntry& entry : model.versions) {
      EXPECT_EQ(entry.model_path, ModelPath("mlp", static_cast<int>(entry.version))) << c.policy;
    }
  }
}

TEST_F(ModelRepositoryTest, SpecificVersionThatIsAbsentIsAnError) {
  WriteModel("mlp", absl::StrCat(kMlpConfig, "version_policy { specific { versions: [1, 4] } }"),
             {1, 2});
  RepositoryModel model = ScanOne();
  EXPECT_EQ(model.status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(model.status), HasSubstr("version_policy specific lists version 4 but " +
                                               ModelPath("mlp", 4) + " is absent"));
  EXPECT_TRUE(model.versions.empty());

  fs::remove_all(root_ / "mlp");
  WriteModel("mlp", absl::StrCat(kMlpConfig, "version_policy { specific {} }"), {1});
  model = ScanOne();
  EXPECT_EQ(model.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(model.status), HasSubstr("specific lists no versions"));
}

}  // namespace
}  // namespace graphserve

namespace graphserve {
namespace {

// Stream slots are threads, CUDA streams and graph copies: a config asking
// for thousands (or 2^31-1, which aborted the process) is refused by name
// before anything starts, whether it comes from config.pbtxt or from the
// load parameter 'config'.
TEST_F(ModelRepositoryTest, StreamSlotCountsBeyondTheLimitAreRefusedByName) {
  struct Case {
    const char* field;
    const char* expected;
  };
  const Case cases[] = {
      {"instance_group { count: 2000 kind: KIND_GPU }", "instance_group.count is 2000"},
      {"instance_group { count: 2147483647 }", "instance_group.count is 2147483647"},
      {"instance_group { count: -1 }", "instance_group.count is -1"},
      {"capture { streams: 2147483647 }", "capture.streams is 2147483647"},
      {"capture { streams: 65 }", "capture.streams is 65"},
  };
  for (const Case& c : cases) {
    SetUp();
    WriteModel("mlp", absl::StrCat(kMlpConfig, c.field), {1});
    const RepositoryModel model = ScanOne();
    EXPECT_EQ(model.status.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_THAT(Message(model.status), HasSubstr(c.expected)) << c.field;
    EXPECT_THAT(Message(model.status), HasSubstr(absl::StrCat("0 to ", kMaxStreamSlotsPerGpu)))
        << c.field;
  }
  SetUp();
  WriteModel("mlp", absl::StrCat(kMlpConfig, "instance_group { count: 64 } capture { streams: 64 }"),
             {1});
  EXPECT_TRUE(ScanOne().status.ok()) << "the limit itself is allowed";

  absl::StatusOr<inference::ModelConfig> json =
      ParseModelConfigJson(R"({"instance_group": [{"count": 2000}]})", "mlp");
  ASSERT_TRUE(json.ok()) << json.status();
  const RepositoryModel loaded = ReadRepositoryModel(root_.string(), "mlp", &*json);
  EXPECT_EQ(loaded.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(loaded.status), HasSubstr("load parameter 'config'"));
  EXPECT_THAT(Message(loaded.status), HasSubstr("instance_group.count is 2000"));
}

TEST_F(ModelRepositoryTest, SeveralRepositoriesServeTheirModelsAndRefuseADuplicateName) {
  WriteModel("a/mlp", "max_batch_size: 8", {1});
  WriteModel("a/shared", "max_batch_size: 8", {1});
  WriteModel("b/dlrm", "max_batch_size: 8", {2});
  WriteModel("b/shared", "max_batch_size: 8", {1});
  const std::vector<std::string> roots = {(root_ / "a").string(), (root_ / "b").string()};
  absl::StatusOr<std::vector<RepositoryModel>> models = ScanModelRepositories(roots);
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 3u);
  EXPECT_EQ((*models)[0].name, "dlrm");
  EXPECT_TRUE((*models)[0].status.ok()) << (*models)[0].status;
  EXPECT_EQ((*models)[0].directory, (root_ / "b" / "dlrm").string());
  EXPECT_EQ((*models)[1].name, "mlp");
  EXPECT_TRUE((*models)[1].status.ok());
  // Triton's rule: a name in two repositories is served from neither.
  const RepositoryModel& shared = (*models)[2];
  EXPECT_EQ(shared.name, "shared");
  EXPECT_EQ(shared.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(shared.status),
              HasSubstr(absl::StrCat("in two model repositories: ",
                                     (root_ / "a" / "shared").string(), " and ",
                                     (root_ / "b" / "shared").string())));
  EXPECT_TRUE(shared.versions.empty());

  absl::StatusOr<std::string> root = FindModelRoot(roots, "dlrm");
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(*root, roots[1]);
  EXPECT_EQ(FindModelRoot(roots, "shared").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(FindModelRoot(roots, "resnet").status()),
              HasSubstr(absl::StrCat("no model 'resnet' in the repositories ", roots[0], ", ",
                                     roots[1])));
  // Every repository must exist, as Triton requires at startup.
  EXPECT_EQ(ScanModelRepositories({roots[0], (root_ / "missing").string()}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(ModelRepositoryTest, ModelConfigNamePicksAConfigOfConfigsWhenItExists) {
  WriteModel("mlp", "max_batch_size: 8", {1});
  WriteFile("mlp/configs/h100.pbtxt", "max_batch_size: 32");
  WriteModel("dlrm", "max_batch_size: 4", {1});
  absl::StatusOr<std::vector<RepositoryModel>> models =
      ScanModelRepository(root_.string(), {.config_name = "h100"});
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 2u);
  EXPECT_EQ((*models)[0].name, "dlrm");
  EXPECT_EQ((*models)[0].config.max_batch_size(), 4);  // no configs/h100.pbtxt: config.pbtxt
  EXPECT_EQ((*models)[1].name, "mlp");
  EXPECT_EQ((*models)[1].config.max_batch_size(), 32);
  EXPECT_EQ((*models)[1].versions.size(), 1u);  // configs/ is not a version
  EXPECT_EQ(ReadRepositoryModel(root_.string(), "mlp", nullptr).config.max_batch_size(), 8)
      << "configs/ is unused without the flag";
}

TEST_F(ModelRepositoryTest, WithoutAutoCompleteAConfigMustDeclareTheTensors) {
  const RepositoryReadOptions strict{.auto_complete_config = false};
  WriteFile("bare/1/model.onnx", "onnx");
  RepositoryModel bare = ReadRepositoryModel(root_.string(), "bare", nullptr, strict);
  EXPECT_EQ(bare.status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(bare.status), HasSubstr("has no " + (root_ / "bare" / "config.pbtxt").string()));
  EXPECT_THAT(Message(bare.status), HasSubstr("--disable-auto-complete-config"));
  EXPECT_TRUE(ReadRepositoryModel(root_.string(), "bare", nullptr).status.ok())
      << "completed from the model file by default";

  WriteModel("partial", "max_batch_size: 8 input { name: \"x\" data_type: TYPE_FP32 dims: 4 }",
             {1});
  RepositoryModel partial = ReadRepositoryModel(root_.string(), "partial", nullptr, strict);
  EXPECT_EQ(partial.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(partial.status), HasSubstr("declares no output"));

  WriteModel("full",
             "max_batch_size: 8 input { name: \"x\" data_type: TYPE_FP32 dims: 4 } "
             "output { name: \"y\" data_type: TYPE_FP32 dims: 1 }",
             {1});
  EXPECT_TRUE(ReadRepositoryModel(root_.string(), "full", nullptr, strict).status.ok());
}

}  // namespace
}  // namespace graphserve
