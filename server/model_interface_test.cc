#include "server/model_interface.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

inference::ModelConfig ParseConfig(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

// mlp: x [B, 512] FP32, ids [B, 2] INT64 -> y [B, 10] FP32, mask [B] BOOL.
constexpr char kMlpConfig[] = R"pb(
  name: "mlp"
  max_batch_size: 256
  input { name: "x" data_type: TYPE_FP32 dims: 512 }
  input { name: "ids" data_type: TYPE_INT64 dims: 2 }
  output { name: "y" data_type: TYPE_FP32 dims: 10 }
  output { name: "mask" data_type: TYPE_BOOL }
)pb";

// The same interface as a graph bound at batch 8.
BoundGraph MlpGraph() {
  BoundGraph graph;
  graph.batch_size = 8;
  graph.values = {{"x", DType::kFloat32, {8, 512}, nullptr},
                  {"ids", DType::kInt64, {8, 2}, nullptr},
                  {"hidden", DType::kFloat32, {8, 64}, nullptr},
                  {"y", DType::kFloat32, {8, 10}, nullptr},
                  {"mask", DType::kBool, {8}, nullptr}};
  graph.inputs = {0, 1};
  graph.outputs = {3, 4};
  return graph;
}

std::string Message(const absl::Status& status) { return std::string(status.message()); }

// The batching interface of a graph, as the server reads a model at 256 rows.
ModelInterface Batching(const BoundGraph& graph) {
  return InterfaceFromGraph("mlp", 256, /*batching=*/true, graph);
}

// Triton's max_batch_size 0: the dims are the full shape, one row a request.
TEST(ModelInterfaceTest, MaxBatchSizeZeroIsAModelThatDoesNotBatch) {
  inference::ModelConfig config;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    name: "densenet"
    max_batch_size: 0
    input { name: "x" data_type: TYPE_FP32 dims: [ 1, 3, 8, 8 ] }
    output { name: "y" data_type: TYPE_FP32 dims: [ 1, 10 ] }
  )pb", &config));
  absl::StatusOr<ModelInterface> interface = InterfaceFromConfig(config);
  ASSERT_TRUE(interface.ok()) << interface.status();
  EXPECT_FALSE(interface->batching);
  EXPECT_EQ(interface->max_batch_size, 1);  // one row inside the server
  EXPECT_EQ(ClientShapeString(interface->inputs[0], false), "[1,3,8,8]");
  EXPECT_EQ(interface->inputs[0].bytes_per_row(), 1u * 3 * 8 * 8 * 4);

  // The graph bound at one row has the full dims, none dropped as a batch.
  BoundGraph graph;
  graph.batch_size = 1;
  graph.values = {{"x", DType::kFloat32, {1, 3, 8, 8}, nullptr},
                  {"y", DType::kFloat32, {1, 10}, nullptr}};
  graph.inputs = {0};
  graph.outputs = {1};
  EXPECT_TRUE(
      CheckInterfacesMatch(*interface, InterfaceFromGraph("densenet", 1, false, graph)).ok());
  config.set_max_batch_size(-1);
  EXPECT_THAT(Message(InterfaceFromConfig(config).status()), HasSubstr("max_batch_size is -1"));
}

TEST(ModelInterfaceTest, DatatypeNamesRoundTrip) {
  for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kBool}) {
    absl::StatusOr<DType> back = DTypeFromKServe(KServeDatatype(dtype));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, dtype);
  }
  EXPECT_STREQ(KServeDatatype(DType::kFloat32), "FP32");
  EXPECT_STREQ(KServeDatatype(DType::kInt64), "INT64");
  EXPECT_STREQ(KServeDatatype(DType::kBool), "BOOL");
}

// Triton matches by name: inputs in any order, a subset of the outputs.
TEST(ModelInterfaceTest, ModelIsArrangedAsTheConfigDeclaresIt) {
  Model model;
  model.inputs = {{"a", DType::kFloat32, {-1, 2}}, {"b", DType::kInt64, {-1, 3}}};
  model.outputs = {{"y", DType::kFloat32, {}}, {"z", DType::kFloat32, {}}, {"w", DType::kBool, {}}};
  ModelInterface declared;
  declared.inputs = {{"b", DType::kInt64, {3}}, {"a", DType::kFloat32, {2}}};
  declared.outputs = {{"w", DType::kBool, {}}, {"y", DType::kFloat32, {}}};
  ASSERT_TRUE(ArrangeModelAsDeclared(declared, &model).ok());
  ASSERT_EQ(model.inputs.size(), 2u);
  EXPECT_EQ(model.inputs[0].name, "b");
  EXPECT_EQ(model.inputs[1].name, "a");
  ASSERT_EQ(model.outputs.size(), 2u);  // z is not served
  EXPECT_EQ(model.outputs[0].name, "w");
  EXPECT_EQ(model.outputs[1].name, "y");

  Model lacking = model;
  declared.outputs = {{"nope", DType::kFloat32, {}}};
  absl::Status status = ArrangeModelAsDeclared(declared, &lacking);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(status), HasSubstr("declares output 'nope', which the model file lacks"));

  Model partial = model;
  declared.inputs = {{"a", DType::kFloat32, {2}}};
  declared.outputs = {{"y", DType::kFloat32, {}}};
  status = ArrangeModelAsDeclared(declared, &partial);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(status), HasSubstr("does not declare the model's input 'b'"));
}

TEST(ModelInterfaceTest, InterfaceFromConfigKeepsOrderDtypesAndRowDims) {
  absl::StatusOr<ModelInterface> interface = InterfaceFromConfig(ParseConfig(kMlpConfig));
  ASSERT_TRUE(interface.ok()) << interface.status();
  EXPECT_EQ(interface->name, "mlp");
  EXPECT_EQ(interface->max_batch_size, 256);
  ASSERT_EQ(interface->inputs.size(), 2u);
  EXPECT_EQ(interface->inputs[0].name, "x");
  EXPECT_EQ(interface->inputs[0].dtype, DType::kFloat32);
  EXPECT_EQ(interface->inputs[0].dims, Dims({512}));
  EXPECT_EQ(interface->inputs[0].bytes_per_row(), 512u * 4);
  EXPECT_EQ(interface->inputs[1].name, "ids");
  EXPECT_EQ(interface->inputs[1].bytes_per_row(), 2u * 8);
  ASSERT_EQ(interface->outputs.size(), 2u);
  EXPECT_EQ(interface->outputs[1].name, "mask");
  EXPECT_EQ(interface->outputs[1].dims, Dims({}));  // one bool per row
  EXPECT_EQ(interface->outputs[1].bytes_per_row(), 1u);
  EXPECT_EQ(ClientShapeString(interface->inputs[0], true), "[-1,512]");
  EXPECT_EQ(ClientShapeString(interface->outputs[1], true), "[-1]");
}

// Each broken config, and a word its error must contain to name the field.
struct BadConfigCase {
  const char* what;
  const char* extra_tensor;  // text appended to the valid config
  const char* expected;
  int32_t max_batch_size = 256;
};

TEST(ModelInterfaceTest, InterfaceFromConfigNamesTheBadField) {
  const BadConfigCase cases[] = {
      {"negative batch", "", "max_batch_size is -4", -4},
      {"unset type", "output { name: \"z\" dims: 4 }", "output[2] 'z' data_type: TYPE_INVALID"},
      {"dim below -1", "input { name: \"v\" data_type: TYPE_FP32 dims: 4 dims: -2 }",
       "input[2] 'v' dims[1] is -2"},
      {"reshape of a shape dim",
       "input { name: \"v\" data_type: TYPE_FP32 dims: -1 reshape { shape: [ 4 ] } }",
       "input[2] 'v' has a reshape and a -1 dim"},
      {"zero dim", "output { name: \"e\" data_type: TYPE_FP32 dims: 0 }",
       "output[2] 'e' dims[0] is 0"},
      {"duplicate input", "input { name: \"x\" data_type: TYPE_FP32 dims: 1 }",
       "input[2] name 'x' is declared twice"},
      {"output named like an input", "output { name: \"ids\" data_type: TYPE_FP32 dims: 1 }",
       "output[2] name 'ids' is declared twice"},
      {"nameless", "input { data_type: TYPE_FP32 dims: 1 }", "input[2] has no name"},
      {"overflowing dims",
       "input { name: \"big\" data_type: TYPE_FP32 dims: 4294967296 dims: 4294967296 }",
       "too large"},
      {"reshape with other count",
       "input { name: \"r\" data_type: TYPE_FP32 dims: 16 reshape { shape: [ 4, 5 ] } }",
       "input[2] 'r' reshape.shape [4,5] has 20 elements but dims [16] have 16"},
      {"variable reshape dim",
       "output { name: \"r\" data_type: TYPE_FP32 dims: 16 reshape { shape: [ -1, 4 ] } }",
       "output[2] 'r' reshape.shape[0] is -1"},
      {"empty reshape of more than one element",
       "output { name: \"r\" data_type: TYPE_FP32 dims: 2 reshape {} }",
       "output[2] 'r' reshape.shape [] has 1 elements but dims [2] have 2"},
      {"overflowing reshape",
       "input { name: \"r\" data_type: TYPE_FP32 dims: 4 "
       "reshape { shape: [ 4294967296, 4294967296, 4294967296 ] } }",
       "reshape.shape [4294967296,4294967296,4294967296] has too many elements"},
  };
  for (const BadConfigCase& c : cases) {
    inference::ModelConfig config = ParseConfig(absl::StrCat(kMlpConfig, c.extra_tensor));
    config.set_max_batch_size(c.max_batch_size);
    absl::StatusOr<ModelInterface> interface = InterfaceFromConfig(config);
    ASSERT_FALSE(interface.ok()) << c.what;
    EXPECT_EQ(interface.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_THAT(Message(interface.status()), HasSubstr(c.expected)) << c.what;
    EXPECT_THAT(Message(interface.status()), HasSubstr("model 'mlp'")) << c.what;
  }
}

// A -1 dim is a shape dim each request chooses (Note [Shape buckets]): kept
// as -1, shown so to clients, and made concrete by At().
TEST(ModelInterfaceTest, ShapeDimsStayOpenUntilAtGivesTheirExtents) {
  absl::StatusOr<ModelInterface> interface = InterfaceFromConfig(ParseConfig(R"pb(
    name: "m"
    max_batch_size: 4
    input { name: "ids" data_type: TYPE_INT64 dims: [ -1 ] }
    output { name: "y" data_type: TYPE_FP32 dims: [ -1, 8 ] })pb"));
  ASSERT_TRUE(interface.ok()) << interface.status();
  EXPECT_EQ(interface->inputs[0].dims, (Dims{-1}));
  EXPECT_EQ(ClientShapeString(interface->outputs[0], true), "[-1,-1,8]");
  interface->shape_dims = {"sequence"};
  interface->inputs[0].shape_dim_of = {0};
  interface->outputs[0].shape_dim_of = {0, -1};
  const ModelInterface at = interface->At({12});
  EXPECT_EQ(at.inputs[0].dims, (Dims{12}));
  EXPECT_EQ(at.outputs[0].dims, (Dims{12, 8}));
  EXPECT_EQ(at.outputs[0].bytes_per_row(), 12 * 8 * sizeof(float));
  EXPECT_TRUE(at.shape_dims.empty());
}

TEST(ModelInterfaceTest, ConfigWithoutInputsOrOutputsIsRejected) {
  absl::StatusOr<ModelInterface> no_inputs = InterfaceFromConfig(ParseConfig(R"pb(
    name: "m"
    max_batch_size: 4
    output { name: "y" data_type: TYPE_FP32 dims: 1 })pb"));
  ASSERT_FALSE(no_inputs.ok());
  EXPECT_THAT(Message(no_inputs.status()), HasSubstr("declares no inputs"));
  absl::StatusOr<ModelInterface> no_outputs = InterfaceFromConfig(ParseConfig(R"pb(
    name: "m"
    max_batch_size: 4
    input { name: "x" data_type: TYPE_FP32 dims: 1 })pb"));
  ASSERT_FALSE(no_outputs.ok());
  EXPECT_THAT(Message(no_outputs.status()), HasSubstr("declares no outputs"));
}

TEST(ModelInterfaceTest, GraphInterfaceDropsTheBatchDimAndSkipsInternalValues) {
  const ModelInterface interface = InterfaceFromGraph("mlp", 256, /*batching=*/true, MlpGraph());
  EXPECT_EQ(interface.name, "mlp");
  EXPECT_EQ(interface.max_batch_size, 256);
  ASSERT_EQ(interface.inputs.size(), 2u);
  EXPECT_EQ(interface.inputs[1].name, "ids");
  EXPECT_EQ(interface.inputs[1].dtype, DType::kInt64);
  EXPECT_EQ(interface.inputs[1].dims, Dims({2}));
  ASSERT_EQ(interface.outputs.size(), 2u);
  EXPECT_EQ(interface.outputs[0].name, "y");
  EXPECT_EQ(interface.outputs[1].dims, Dims({}));
}

TEST(ModelInterfaceTest, ConfigAndGraphOfTheSameModelMatch) {
  const ModelInterface config = *InterfaceFromConfig(ParseConfig(kMlpConfig));
  // A different max_batch_size is no mismatch: the model file batches at any size.
  EXPECT_TRUE(
      CheckInterfacesMatch(config, InterfaceFromGraph("mlp", 8, /*batching=*/true, MlpGraph()))
          .ok());
}

// Triton's reshape: the model file is compared with reshape.shape, while the
// interface clients see (dims, bytes per row, shape strings) stays `dims`.
constexpr char kReshapedMlpConfig[] = R"pb(
  name: "mlp"
  max_batch_size: 256
  input {
    name: "x"
    data_type: TYPE_FP32
    dims: [ 2, 16, 16 ]
    reshape { shape: [ 512 ] }
  }
  input { name: "ids" data_type: TYPE_INT64 dims: 2 }
  output {
    name: "y"
    data_type: TYPE_FP32
    dims: [ 5, 2 ]
    reshape { shape: [ 10 ] }
  }
  output {
    name: "mask"
    data_type: TYPE_BOOL
    dims: 1
    reshape {}
  }
)pb";

TEST(ModelInterfaceTest, ReshapeIsComparedWithTheModelAndClientsKeepDims) {
  absl::StatusOr<ModelInterface> config = InterfaceFromConfig(ParseConfig(kReshapedMlpConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->inputs[0].dims, Dims({2, 16, 16}));
  EXPECT_EQ(config->inputs[0].model_dims, Dims({512}));
  EXPECT_EQ(config->inputs[0].bytes_per_row(), 512u * 4);
  EXPECT_EQ(ClientShapeString(config->inputs[0], true), "[-1,2,16,16]");
  EXPECT_FALSE(config->inputs[1].model_dims.has_value());
  EXPECT_EQ(config->outputs[0].dims, Dims({5, 2}));
  EXPECT_EQ(ClientShapeString(config->outputs[0], true), "[-1,5,2]");
  // An empty reshape is a scalar per row: dims [1] served to a model with [B].
  EXPECT_EQ(config->outputs[1].model_dims, Dims({}));
  EXPECT_EQ(ClientShapeString(config->outputs[1], true), "[-1,1]");
  const absl::Status matched =
      CheckInterfacesMatch(*config, InterfaceFromGraph("mlp", 256, /*batching=*/true, MlpGraph()));
  EXPECT_TRUE(matched.ok()) << matched;
}

TEST(ModelInterfaceTest, AReshapeTheModelDoesNotHaveIsAMismatch) {
  // Equal element counts, but not the model's shape.
  inference::ModelConfig input_config = ParseConfig(kReshapedMlpConfig);
  input_config.mutable_input(0)->mutable_reshape()->clear_shape();
  for (int64_t dim : {32, 16}) input_config.mutable_input(0)->mutable_reshape()->add_shape(dim);
  const absl::Status input = CheckInterfacesMatch(*InterfaceFromConfig(input_config),
                                                  Batching(MlpGraph()));
  EXPECT_EQ(input.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(input), HasSubstr("config.pbtxt declares input 'x' with reshape.shape "
                                        "[32,16] but the model file has [512]"));

  inference::ModelConfig output_config = ParseConfig(kReshapedMlpConfig);
  output_config.mutable_output(0)->clear_reshape();  // the model has [10], clients say [5,2]
  const absl::Status output = CheckInterfacesMatch(*InterfaceFromConfig(output_config),
                                                   Batching(MlpGraph()));
  EXPECT_EQ(output.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(output),
              HasSubstr("config.pbtxt declares output 'y' with dims [5,2] but the model file "
                        "has [10]"));
}

TEST(ModelInterfaceTest, MismatchNamesTheFirstDifference) {
  const ModelInterface config = *InterfaceFromConfig(ParseConfig(kMlpConfig));
  struct Case {
    const char* what;
    void (*edit)(ModelInterface*);
    const char* expected;
  };
  const Case cases[] = {
      {"dims", [](ModelInterface* m) { m->inputs[0].dims = {256}; },
       "config.pbtxt declares input 'x' with dims [512] but the model file has [256]"},
      {"rank",
       [](ModelInterface* m) {
         m->outputs[0].dims = {2, 5};
       },
       "output 'y' with dims [10] but the model file has [2,5]"},
      {"dtype", [](ModelInterface* m) { m->inputs[1].dtype = DType::kFloat32; },
       "config.pbtxt declares input 'ids' as INT64 but the model file has FP32"},
      {"name", [](ModelInterface* m) { m->outputs[1].name = "valid"; },
       "output 1 as 'mask' but the model file's output 1 is 'valid'"},
      {"order", [](ModelInterface* m) { std::swap(m->inputs[0], m->inputs[1]); },
       "input 0 as 'x' but the model file's input 0 is 'ids'"},
      {"count", [](ModelInterface* m) { m->inputs.pop_back(); },
       "config.pbtxt declares 2 inputs but the model file has 1"},
      {"output count", [](ModelInterface* m) { m->outputs.push_back(m->outputs[0]); },
       "config.pbtxt declares 2 outputs but the model file has 3"},
  };
  for (const Case& c : cases) {
    ModelInterface model = InterfaceFromGraph("mlp", 256, /*batching=*/true, MlpGraph());
    c.edit(&model);
    const absl::Status status = CheckInterfacesMatch(config, model);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << c.what;
    EXPECT_THAT(Message(status), HasSubstr(c.expected)) << c.what;
  }
}

// Note [Strings at the model's edges] in runtime/ir.h: config.pbtxt's
// TYPE_STRING is BYTES to clients; the model file says what it is.
TEST(ModelInterfaceTest, StringTensorsTakeTheirFormFromTheModelFile) {
  absl::StatusOr<ModelInterface> declared = InterfaceFromConfig(ParseConfig(R"pb(
    name: "strings"
    max_batch_size: 8
    input { name: "s" data_type: TYPE_STRING dims: 4 }
    input { name: "p" data_type: TYPE_STRING dims: [ -1 ] }
    output { name: "t" data_type: TYPE_STRING dims: 4 }
    output { name: "q" data_type: TYPE_STRING dims: [ -1 ] }
  )pb"));
  ASSERT_TRUE(declared.ok()) << declared.status();
  EXPECT_EQ(declared->inputs[0].wire, TensorWire::kText);
  EXPECT_STREQ(declared->inputs[0].datatype(), "BYTES");

  Model model;
  model.inputs = {{"s", DType::kInt64, {-1, 4}, {"", ""}, /*text=*/true}};
  model.outputs = {{"t", DType::kFloat64, {-1, 4}, {}, /*text=*/true}};
  model.passed_strings = {{"p", {-1, -1}, "q", {-1, -1}}};
  ASSERT_TRUE(ResolveStringTensors(model, &*declared).ok());
  EXPECT_EQ(declared->inputs[0].wire, TensorWire::kText);
  EXPECT_EQ(declared->inputs[0].dtype, DType::kInt64);
  EXPECT_EQ(declared->outputs[0].dtype, DType::kFloat64);
  EXPECT_EQ(declared->inputs[1].wire, TensorWire::kPassed);
  EXPECT_EQ(declared->outputs[1].wire, TensorWire::kPassed);
  EXPECT_EQ(declared->outputs[1].passed_from, 1u);
  EXPECT_STREQ(declared->outputs[1].datatype(), "BYTES");
}

TEST(ModelInterfaceTest, StringTensorsTheFileDisagreesWithAreNamed) {
  Model model;
  model.inputs = {{"s", DType::kInt32, {-1, 4}, {"", ""}, /*text=*/true},
                  {"x", DType::kFloat32, {-1, 4}, {"", ""}, /*text=*/false}};
  model.passed_strings = {{"p", {-1}, "q", {-1}}};
  const auto resolved = [&model](const char* tensors) {
    absl::StatusOr<ModelInterface> declared = InterfaceFromConfig(ParseConfig(
        absl::StrCat("name: \"m\" max_batch_size: 8 output { name: \"o\" data_type: TYPE_FP32 "
                     "dims: 1 } ",
                     tensors)));
    EXPECT_TRUE(declared.ok()) << declared.status();
    return Message(ResolveStringTensors(model, &*declared));
  };
  EXPECT_THAT(resolved(R"pb(input { name: "x" data_type: TYPE_STRING dims: 4 })pb"),
              HasSubstr("declares input 'x' as TYPE_STRING but the model file has FP32"));
  EXPECT_THAT(resolved(R"pb(input { name: "s" data_type: TYPE_INT32 dims: 4 })pb"),
              HasSubstr("declares input 's' as INT32 but the model file has STRING (the text of "
                        "INT32 numbers): declare it TYPE_STRING"));
  EXPECT_THAT(resolved(R"pb(input { name: "p" data_type: TYPE_INT8 dims: 4 })pb"),
              HasSubstr("declares input 'p' as INT8 but the model file has STRING, passed "
                        "through unchanged"));
  EXPECT_THAT(resolved(R"pb(input { name: "s" data_type: TYPE_STRING dims: 4 }
                            output { name: "q" data_type: TYPE_STRING dims: -1 })pb"),
              HasSubstr("declares output 'q', which hands back the model file's input 'p', but "
                        "does not declare that input"));
}

// Note [Inputs with defaults] in runtime/ir.h: Triton's `optional: true`
// marks the input, and the model file's default becomes its default row;
// a required input, or an optional one the file gives no default, gets none.
TEST(ModelInterfaceTest, OptionalInputsTakeTheModelFilesDefaultRow) {
  Model model;
  model.batches = false;  // max_batch_size 0, as Triton's QA config
  model.inputs = {{"INPUT", DType::kFloat32, {5, 5}}, {"INITIALIZER", DType::kFloat32, {5, 5}}};
  model.inputs[1].default_value =
      std::make_shared<const HostTensor>(RandomTensor(DType::kFloat32, {5, 5}, 31));
  constexpr char kQaConfig[] = R"pb(
    name: "add_with_initializer"
    max_batch_size: 0
    input { name: "INPUT" data_type: TYPE_FP32 dims: [ 5, 5 ] }
    input { name: "INITIALIZER" data_type: TYPE_FP32 dims: [ 5, 5 ] optional: true }
    output { name: "OUTPUT" data_type: TYPE_FP32 dims: [ 5, 5 ] }
  )pb";
  absl::StatusOr<ModelInterface> declared = InterfaceFromConfig(ParseConfig(kQaConfig));
  ASSERT_TRUE(declared.ok()) << declared.status();
  EXPECT_FALSE(declared->inputs[0].optional);
  EXPECT_TRUE(declared->inputs[1].optional);
  ASSERT_TRUE(TakeInputDefaults(model, &*declared).ok());
  EXPECT_EQ(declared->inputs[0].default_row, nullptr);
  EXPECT_EQ(declared->inputs[1].default_row, model.inputs[1].default_value);

  // Declared required, the default goes unused.
  declared = InterfaceFromConfig(ParseConfig(kQaConfig));
  declared->inputs[1].optional = false;
  ASSERT_TRUE(TakeInputDefaults(model, &*declared).ok());
  EXPECT_EQ(declared->inputs[1].default_row, nullptr);
}

// A default fills one row: a batching model's must have batch 1, and an
// input whose dims each request chooses has none to fill with.
TEST(ModelInterfaceTest, ADefaultOfMoreThanOneRowIsRefused) {
  Model model;
  model.inputs = {{"bias", DType::kFloat32, {-1, 3}}};
  model.inputs[0].default_value =
      std::make_shared<const HostTensor>(HostTensor(DType::kFloat32, {2, 3}));
  absl::StatusOr<ModelInterface> declared = InterfaceFromConfig(ParseConfig(R"pb(
    name: "m"
    max_batch_size: 8
    input { name: "bias" data_type: TYPE_FP32 dims: [ 3 ] optional: true }
    output { name: "y" data_type: TYPE_FP32 dims: [ 3 ] }
  )pb"));
  ASSERT_TRUE(declared.ok()) << declared.status();
  absl::Status status = TakeInputDefaults(model, &*declared);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(status),
              HasSubstr("config.pbtxt declares input 'bias' optional, and the model file's "
                        "default for it (the initializer of its name) is [2,3]; GraphServe fills "
                        "each row of a request that leaves the input out with the default, which "
                        "must be one row of dims [3]"));

  model.inputs[0].default_value =
      std::make_shared<const HostTensor>(HostTensor(DType::kFloat32, {1, 3}));
  EXPECT_TRUE(TakeInputDefaults(model, &*declared).ok());
  declared->inputs[0].dims = {-1};
  status = TakeInputDefaults(model, &*declared);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(status), HasSubstr("but the input's dims [-1] have a dim each request "
                                         "chooses"));
}

}  // namespace
}  // namespace graphserve
