#include "runtime/onnx_import.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"
#include "runtime/bind.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// Opset and IR version every in-code model declares (ONNX 1.8-1.12 era).
constexpr int64_t kOpset = 13;
constexpr int64_t kIrVersion = 7;

// The node test whose data set the round-trip test reads: two float inputs.
constexpr char kAddTestDir[] = "/usr/share/libonnx-testdata/data/node/test_add";

onnx::ModelProto NewModel() {
  onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("onnx_import_test");
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  model.mutable_graph()->set_name("test_graph");
  return model;
}

// Adds a tensor value (graph input or output); a dim of -1 becomes dim_param
// `symbol`.
void AddValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* values,
              const std::string& name, int32_t elem_type, const std::vector<int64_t>& dims,
              const std::string& symbol = "batch") {
  onnx::ValueInfoProto* value = values->Add();
  value->set_name(name);
  onnx::TypeProto_Tensor* tensor = value->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  for (int64_t dim : dims) {
    if (dim < 0) {
      shape->add_dim()->set_dim_param(symbol);
    } else {
      shape->add_dim()->set_dim_value(dim);
    }
  }
}

onnx::NodeProto* AddNode(onnx::GraphProto* graph, const std::string& op_type,
                         const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, const std::string& name = "") {
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type(op_type);
  node->set_name(name);
  for (const std::string& input : inputs) node->add_input(input);
  for (const std::string& output : outputs) node->add_output(output);
  return node;
}

void AddIntAttr(onnx::NodeProto* node, const std::string& name, int64_t value) {
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(value);
}

onnx::TensorProto FloatTensor(const std::string& name, const std::vector<int64_t>& dims,
                              const std::vector<float>& values, bool as_raw_data) {
  onnx::TensorProto tensor;
  tensor.set_name(name);
  tensor.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t dim : dims) tensor.add_dims(dim);
  if (as_raw_data) {
    tensor.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()),
                                    values.size() * sizeof(float)));
  } else {
    for (float value : values) tensor.add_float_data(value);
  }
  return tensor;
}

absl::StatusOr<Model> Import(const onnx::ModelProto& model) {
  return ImportOnnxBytes(model.SerializeAsString(), "test_model");
}

// x[batch,4] -> Gemm(W[3,4] raw, B[3] float_data, transB) -> LeakyRelu ->
// Transpose -> y[3,batch]; plus a Constant with a tensor and a floats list.
onnx::ModelProto SmallModel() {
  onnx::ModelProto model = NewModel();
  onnx::GraphProto* graph = model.mutable_graph();
  AddValue(graph->mutable_input(), "x", onnx::TensorProto::FLOAT, {-1, 4});
  std::vector<float> weights(12);
  for (int i = 0; i < 12; ++i) weights[i] = 0.5f * i;
  *graph->add_initializer() = FloatTensor("W", {3, 4}, weights, /*as_raw_data=*/true);
  *graph->add_initializer() = FloatTensor("B", {3}, {1, 2, 3}, /*as_raw_data=*/false);

  onnx::NodeProto* gemm = AddNode(graph, "Gemm", {"x", "W", "B"}, {"h"}, "fc");
  AddIntAttr(gemm, "transB", 1);
  onnx::NodeProto* leaky = AddNode(graph, "LeakyRelu", {"h"}, {"a"});  // unnamed: index 1
  onnx::AttributeProto* alpha = leaky->add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_f(0.25f);
  onnx::NodeProto* transpose = AddNode(graph, "Transpose", {"a"}, {"y"}, "t");
  onnx::AttributeProto* perm = transpose->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  perm->add_ints(1);
  perm->add_ints(0);

  onnx::NodeProto* constant = AddNode(graph, "Constant", {}, {"k"}, "k_const");
  onnx::AttributeProto* value = constant->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  *value->mutable_t() = FloatTensor("", {2}, {7, 8}, /*as_raw_data=*/false);
  onnx::NodeProto* floats = AddNode(graph, "Constant", {}, {"f"});  // unnamed: index 4
  onnx::AttributeProto* list = floats->add_attribute();
  list->set_name("value_floats");
  list->set_type(onnx::AttributeProto::FLOATS);
  list->add_floats(1.5f);
  list->add_floats(-2.5f);

  AddValue(graph->mutable_output(), "y", onnx::TensorProto::FLOAT, {3, -1});
  AddValue(graph->mutable_output(), "k", onnx::TensorProto::FLOAT, {2});
  AddValue(graph->mutable_output(), "f", onnx::TensorProto::FLOAT, {2});
  return model;
}

TEST(OnnxImportTest, ConvertsGraph) {
  absl::StatusOr<Model> model = Import(SmallModel());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->name, "test_graph");
  EXPECT_EQ(model->opset, kOpset);

  ASSERT_EQ(model->inputs.size(), 1u);
  EXPECT_EQ(model->inputs[0].name, "x");
  EXPECT_EQ(model->inputs[0].dtype, DType::kFloat32);
  EXPECT_THAT(model->inputs[0].dims, ElementsAre(-1, 4));
  ASSERT_EQ(model->outputs.size(), 3u);
  EXPECT_EQ(model->outputs[0].name, "y");
  EXPECT_THAT(model->outputs[0].dims, ElementsAre(3, -1));

  ASSERT_EQ(model->initializers.size(), 2u);
  const HostTensor& w = *model->initializers.at("W");
  EXPECT_THAT(w.dims(), ElementsAre(3, 4));
  EXPECT_EQ(w.data<float>()[11], 5.5f);
  const HostTensor& b = *model->initializers.at("B");
  EXPECT_THAT(std::vector<float>(b.data<float>(), b.data<float>() + 3), ElementsAre(1, 2, 3));

  ASSERT_EQ(model->nodes.size(), 5u);
  const Node& gemm = model->nodes[0];
  EXPECT_EQ(gemm.name, "fc");
  EXPECT_EQ(gemm.op_type, "Gemm");
  EXPECT_THAT(gemm.inputs, ElementsAre("x", "W", "B"));
  EXPECT_THAT(gemm.outputs, ElementsAre("h"));
  EXPECT_EQ(IntAttr(gemm.attributes, "transB"), 1);

  EXPECT_EQ(model->nodes[1].name, "LeakyRelu_1");
  EXPECT_EQ(FloatAttr(model->nodes[1].attributes, "alpha"), 0.25f);
  EXPECT_THAT(IntsAttr(model->nodes[2].attributes, "perm"), ElementsAre(1, 0));

  const HostTensor* value = std::get_if<HostTensor>(&model->nodes[3].attributes.at("value"));
  ASSERT_NE(value, nullptr);
  EXPECT_THAT(value->dims(), ElementsAre(2));
  EXPECT_EQ(value->data<float>()[1], 8.0f);

  EXPECT_EQ(model->nodes[4].name, "Constant_4");
  const auto* floats =
      std::get_if<std::vector<float>>(&model->nodes[4].attributes.at("value_floats"));
  ASSERT_NE(floats, nullptr);
  EXPECT_THAT(*floats, ElementsAre(1.5f, -2.5f));
}

// Note [Inputs with defaults]: an initializer also listed as an input that
// no config declares (here none: the options name no inputs) is the weight
// it is, as before IR version 4 every initializer was.
TEST(OnnxImportTest, InitializersListedAsInputsAreNotInputsUndeclared) {
  onnx::ModelProto proto = SmallModel();
  AddValue(proto.mutable_graph()->mutable_input(), "W", onnx::TensorProto::FLOAT, {3, 4});
  absl::StatusOr<Model> model = Import(proto);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->inputs.size(), 1u);
  EXPECT_EQ(model->inputs[0].name, "x");
  EXPECT_EQ(model->initializers.count("W"), 1u);
}

// Triton's qa/L0_initializer_as_input model (IR 4 on): OUTPUT = INPUT +
// INITIALIZER, INITIALIZER an initializer listed as an input too.
onnx::ModelProto AddWithInitializer(int64_t ir_version) {
  onnx::ModelProto proto = NewModel();
  proto.set_ir_version(ir_version);
  onnx::GraphProto* graph = proto.mutable_graph();
  AddValue(graph->mutable_input(), "INPUT", onnx::TensorProto::FLOAT, {5, 5});
  AddValue(graph->mutable_input(), "INITIALIZER", onnx::TensorProto::FLOAT, {5, 5});
  std::vector<float> ones(25, 1.0f);
  *graph->add_initializer() = FloatTensor("INITIALIZER", {5, 5}, ones, /*as_raw_data=*/true);
  AddNode(graph, "Add", {"INPUT", "INITIALIZER"}, {"OUTPUT"}, "add");
  AddValue(graph->mutable_output(), "OUTPUT", onnx::TensorProto::FLOAT, {5, 5});
  return proto;
}

absl::StatusOr<Model> ImportDeclaring(const onnx::ModelProto& proto,
                                      std::set<std::string> declared_inputs) {
  ModelPassOptions passes;
  passes.declared_inputs = std::move(declared_inputs);
  return ImportOnnxBytes(proto.SerializeAsString(), "test_model", "", passes);
}

// Declared, it is an input with its default, which a request's value
// replaces: bound, the model adds what it is given.
TEST(OnnxImportTest, ADeclaredInitializerListedAsInputIsAnInputWithADefault) {
  absl::StatusOr<Model> model =
      ImportDeclaring(AddWithInitializer(kIrVersion), {"INPUT", "INITIALIZER"});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->inputs.size(), 2u);
  const ValueInfo& input = model->inputs[1];
  EXPECT_EQ(input.name, "INITIALIZER");
  EXPECT_EQ(input.dtype, DType::kFloat32);
  EXPECT_THAT(input.dims, ElementsAre(5, 5));
  ASSERT_NE(input.default_value, nullptr);
  EXPECT_THAT(input.default_value->dims(), ElementsAre(5, 5));
  EXPECT_EQ(input.default_value->data<float>()[24], 1.0f);
  EXPECT_EQ(model->initializers.count("INITIALIZER"), 0u);

  model->batches = false;  // Triton's config: max_batch_size 0
  absl::StatusOr<BoundGraph> graph = BindModel(*model, BindOptions{});
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->inputs.size(), 2u);
  EXPECT_FALSE(graph->value(graph->inputs[1]).is_constant());
}

// Before IR version 4 every initializer had to be listed as an input: a
// weight, even where a config names it (ONNX Runtime's
// Graph::CanOverrideInitializer).
TEST(OnnxImportTest, BeforeIrVersion4AnInitializerListedAsInputIsAWeight) {
  absl::StatusOr<Model> model = ImportDeclaring(AddWithInitializer(3), {"INPUT", "INITIALIZER"});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->inputs.size(), 1u);
  EXPECT_EQ(model->inputs[0].name, "INPUT");
  EXPECT_EQ(model->initializers.count("INITIALIZER"), 1u);
}

// A default that is no value of its input (another shape) is an invalid
// file; an input typed without a shape takes its default's. (IR 10: past
// libonnx 1.12, whose checker refuses both first.)
TEST(OnnxImportTest, AnInputsDefaultMustBeAValueOfIt) {
  constexpr int64_t kPastLibOnnx = 10;
  onnx::ModelProto mismatched = AddWithInitializer(kPastLibOnnx);
  onnx::TensorProto* value = mismatched.mutable_graph()->mutable_initializer(0);
  value->clear_dims();
  value->add_dims(25);
  absl::StatusOr<Model> refused = ImportDeclaring(mismatched, {"INPUT", "INITIALIZER"});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("input 'INITIALIZER' has a default (the initializer of its name) of "
                        "float32 [25], which is not a value of the input (float32 [5,5])"));

  onnx::ModelProto shapeless = AddWithInitializer(kPastLibOnnx);
  shapeless.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->clear_shape();
  absl::StatusOr<Model> model = ImportDeclaring(shapeless, {"INPUT", "INITIALIZER"});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->inputs.size(), 2u);
  EXPECT_THAT(model->inputs[1].dims, ElementsAre(5, 5));
}

TEST(OnnxImportTest, OutputShapesComeFromShapeInference) {
  onnx::ModelProto proto = SmallModel();
  // An output declared with two dims of unknown size: libonnx's inference
  // fills in what it knows.
  onnx::TensorShapeProto* shape =
      proto.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->clear_dim();
  shape->add_dim();
  shape->add_dim();
  absl::StatusOr<Model> model = Import(proto);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT(model->outputs[0].dims, ElementsAre(3, -1));
}

// Three kinds of unsupported things at once: an op used twice, an op of a
// custom domain, and an element type.
onnx::ModelProto UnsupportedModel() {
  onnx::ModelProto model = NewModel();
  onnx::OperatorSetIdProto* custom = model.add_opset_import();
  custom->set_domain("com.example");
  custom->set_version(1);
  onnx::GraphProto* graph = model.mutable_graph();
  AddValue(graph->mutable_input(), "x", onnx::TensorProto::FLOAT, {-1, 1, 8, 8});
  AddValue(graph->mutable_input(), "half", onnx::TensorProto::COMPLEX64, {-1, 4});
  *graph->add_initializer() =
      FloatTensor("k", {1, 1, 1, 1}, {1.0f}, /*as_raw_data=*/false);
  for (onnx::NodeProto* pool : {AddNode(graph, "LpPool", {"x"}, {"c1"}, "pool1"),
                                AddNode(graph, "LpPool", {"c1"}, {"c2"})}) {  // unnamed: index 1
    onnx::AttributeProto* kernel = pool->add_attribute();
    kernel->set_name("kernel_shape");
    kernel->set_type(onnx::AttributeProto::INTS);
    kernel->add_ints(1);
    kernel->add_ints(1);
  }
  AddNode(graph, "Relu", {"c2"}, {"r"}, "relu");
  AddNode(graph, "Fancy", {"r"}, {"y"}, "fancy")->set_domain("com.example");
  AddValue(graph->mutable_output(), "y", onnx::TensorProto::FLOAT, {-1, 1, 8, 8});
  AddValue(graph->mutable_output(), "half_out", onnx::TensorProto::COMPLEX64, {-1, 4});
  AddNode(graph, "Identity", {"half"}, {"half_out"}, "id");
  return model;
}

TEST(OnnxImportTest, ListsEveryUnsupportedOpAndType) {
  absl::StatusOr<Model> model = Import(UnsupportedModel());
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented) << model.status();
  const std::string message(model.status().message());
  EXPECT_THAT(message, HasSubstr("op LpPool is not supported (2 nodes: pool1, LpPool_1)"));
  EXPECT_THAT(message, HasSubstr("op com.example::Fancy is not supported (1 node: fancy)"));
  EXPECT_THAT(message, HasSubstr("input 'half': element type COMPLEX64"));
  EXPECT_THAT(message, HasSubstr("output 'half_out': element type COMPLEX64"));
  EXPECT_THAT(message, Not(HasSubstr("Relu")));
}

TEST(OnnxImportTest, ListsManyNodesOfOneOpBriefly) {
  onnx::ModelProto proto = NewModel();
  onnx::GraphProto* graph = proto.mutable_graph();
  AddValue(graph->mutable_input(), "x", onnx::TensorProto::FLOAT, {-1, 4});
  std::string previous = "x";
  for (int i = 0; i < 5; ++i) {  // two more than the error names
    std::string next = "h" + std::to_string(i);
    AddNode(graph, "Acosh", {previous}, {next}, "acosh" + std::to_string(i));
    previous = next;
  }
  AddValue(graph->mutable_output(), previous, onnx::TensorProto::FLOAT, {-1, 4});
  absl::StatusOr<Model> model = Import(proto);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("op Acosh is not supported (5 nodes: acosh0, acosh1, acosh2, and 2 more)"));
}

// A detector exported whole: NonMaxSuppression's refusal says why no graph
// can hold it and what users serve instead.
TEST(OnnxImportTest, NamesWhyAnOpOfDataDependentShapeIsRefused) {
  onnx::ModelProto proto = NewModel();
  onnx::GraphProto* graph = proto.mutable_graph();
  AddValue(graph->mutable_input(), "boxes", onnx::TensorProto::FLOAT, {-1, 10, 4});
  AddValue(graph->mutable_input(), "scores", onnx::TensorProto::FLOAT, {-1, 1, 10});
  AddNode(graph, "NonMaxSuppression", {"boxes", "scores"}, {"kept"}, "nms");
  AddValue(graph->mutable_output(), "kept", onnx::TensorProto::INT64, {-1, 3});
  absl::StatusOr<Model> model = Import(proto);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented) << model.status();
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("op NonMaxSuppression is not supported (1 node: nms): how many boxes it "
                        "keeps depends on the data, and a CUDA graph replays fixed shapes: serve "
                        "the detector without its postprocessing"));
}

// ONNX's training-op node tests import only their own domain: unsupported,
// not malformed.
TEST(OnnxImportTest, ModelWithoutDefaultDomainIsUnsupported) {
  onnx::ModelProto proto = NewModel();
  proto.mutable_opset_import(0)->set_domain("com.example");
  onnx::GraphProto* graph = proto.mutable_graph();
  AddValue(graph->mutable_input(), "x", onnx::TensorProto::FLOAT, {4});
  AddNode(graph, "Fancy", {"x"}, {"y"}, "fancy")->set_domain("com.example");
  AddValue(graph->mutable_output(), "y", onnx::TensorProto::FLOAT, {4});
  absl::StatusOr<Model> model = Import(proto);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented) << model.status();
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("op com.example::Fancy is not supported"));
}

// Triton's QA add/sub models' STRING edges (Note [Strings at the model's
// edges]): s [batch,4] read as INT32, summed, the sum written as text to t
// and as a number to sum_out.
onnx::ModelProto StringEdgeModel() {
  onnx::ModelProto model = NewModel();
  onnx::GraphProto* graph = model.mutable_graph();
  AddValue(graph->mutable_input(), "s", onnx::TensorProto::STRING, {-1, 4});
  AddIntAttr(AddNode(graph, "Cast", {"s"}, {"n"}, "parse"), "to", onnx::TensorProto::INT32);
  AddNode(graph, "Add", {"n", "n"}, {"sum"}, "add");
  AddIntAttr(AddNode(graph, "Cast", {"sum"}, {"t"}, "format"), "to", onnx::TensorProto::STRING);
  AddNode(graph, "Identity", {"sum"}, {"sum_out"}, "copy");
  AddValue(graph->mutable_output(), "t", onnx::TensorProto::STRING, {-1, 4});
  AddValue(graph->mutable_output(), "sum_out", onnx::TensorProto::INT32, {-1, 4});
  return model;
}

TEST(OnnxImportTest, StringEdgesBecomeNumbersMarkedText) {
  absl::StatusOr<Model> model = Import(StringEdgeModel());
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->inputs.size(), 1u);
  EXPECT_EQ(model->inputs[0].name, "s");
  EXPECT_EQ(model->inputs[0].dtype, DType::kInt32);
  EXPECT_TRUE(model->inputs[0].text);
  EXPECT_THAT(model->inputs[0].dims, ElementsAre(-1, 4));
  ASSERT_EQ(model->outputs.size(), 2u);
  EXPECT_EQ(model->outputs[0].name, "t");
  EXPECT_EQ(model->outputs[0].dtype, DType::kInt32);  // the sum's, as binding infers it
  EXPECT_TRUE(model->outputs[0].text);
  EXPECT_FALSE(model->outputs[1].text);
  ASSERT_EQ(model->nodes.size(), 4u);
  EXPECT_EQ(model->nodes[0].name, "parse");
  EXPECT_EQ(model->nodes[0].op_type, "Identity");  // the edge parses instead
  EXPECT_TRUE(model->nodes[0].attributes.empty());
  EXPECT_EQ(model->nodes[2].op_type, "Identity");  // the edge formats instead
  EXPECT_TRUE(model->passed_strings.empty());
  // The runtime sees numbers only: it binds.
  absl::StatusOr<BoundGraph> bound = BindModel(*model, {.batch_size = 2});
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_EQ(bound->value(bound->inputs[0]).dtype, DType::kInt32);
  EXPECT_EQ(bound->value(bound->outputs[0]).dtype, DType::kInt32);
}

// Triton's QA identity models: STRING inputs handed back through Identity
// leave the graph, recorded as passed strings.
TEST(OnnxImportTest, StringsPassedThroughIdentityLeaveTheGraph) {
  onnx::ModelProto proto = NewModel();
  onnx::GraphProto* graph = proto.mutable_graph();
  AddValue(graph->mutable_input(), "a", onnx::TensorProto::STRING, {-1, -1}, "n");
  AddNode(graph, "Identity", {"a"}, {"a1"}, "id1");
  AddNode(graph, "Identity", {"a1"}, {"out"}, "id2");
  AddNode(graph, "Identity", {"a1"}, {"out2"}, "id3");
  AddValue(graph->mutable_output(), "out", onnx::TensorProto::STRING, {-1, -1}, "n");
  AddValue(graph->mutable_output(), "out2", onnx::TensorProto::STRING, {-1, 3});
  absl::StatusOr<Model> model = Import(proto);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(model->inputs.empty());
  EXPECT_TRUE(model->outputs.empty());
  EXPECT_TRUE(model->nodes.empty());
  ASSERT_EQ(model->passed_strings.size(), 2u);
  EXPECT_EQ(model->passed_strings[0].input, "a");
  EXPECT_THAT(model->passed_strings[0].input_dims, ElementsAre(-1, -1));
  EXPECT_EQ(model->passed_strings[0].output, "out");
  EXPECT_EQ(model->passed_strings[1].output, "out2");
  EXPECT_THAT(model->passed_strings[1].output_dims, ElementsAre(-1, 3));
}

// raw_data shorter than its dims need is refused before libonnx's shape
// inference reads it (7 bytes for one int64 wrote through a null pointer
// there; found by onnx_model_fuzz), for an initializer and a Constant.
TEST(OnnxImportTest, RawDataOfTheWrongSizeIsRefusedFirst) {
  for (const bool in_constant : {false, true}) {
    onnx::ModelProto proto = SmallModel();
    onnx::GraphProto* graph = proto.mutable_graph();
    onnx::TensorProto* tensor = in_constant
                                    ? graph->mutable_node(3)->mutable_attribute(0)->mutable_t()
                                    : graph->mutable_initializer(0);
    ASSERT_EQ(graph->node(3).op_type(), "Constant");
    tensor->clear_float_data();
    tensor->set_raw_data(std::string(7, '\0'));
    absl::StatusOr<Model> model = Import(proto);
    ASSERT_FALSE(model.ok()) << in_constant;
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(model.status().message(), HasSubstr("bytes of raw_data, has 7")) << in_constant;
  }
}

// A file past libonnx (which would find the contradiction first) declaring a
// number output that hands a STRING input back.
TEST(OnnxImportTest, PassedStringDeclaredANumberIsRefused) {
  onnx::ModelProto proto = NewModel();
  proto.set_ir_version(10);
  onnx::GraphProto* graph = proto.mutable_graph();
  AddValue(graph->mutable_input(), "a", onnx::TensorProto::STRING, {-1});
  AddNode(graph, "Identity", {"a"}, {"out"}, "echo");
  AddValue(graph->mutable_output(), "out", onnx::TensorProto::FLOAT, {-1});
  absl::StatusOr<Model> model = Import(proto);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(),
              HasSubstr("output 'out' is declared FLOAT but passes STRING input 'a'"));
}

// Every other STRING value is refused, each naming its node, in one error
// (Note [One error for every problem]).
TEST(OnnxImportTest, OtherStringsAreRefusedNamingTheNode) {
  onnx::ModelProto proto = NewModel();
  proto.set_ir_version(10);  // past libonnx 1.12, whose checker would refuse Add of STRING first
  onnx::GraphProto* graph = proto.mutable_graph();
  AddValue(graph->mutable_input(), "to_bool", onnx::TensorProto::STRING, {-1});
  AddIntAttr(AddNode(graph, "Cast", {"to_bool"}, {"b"}, "cast_bool"), "to",
             onnx::TensorProto::BOOL);
  AddValue(graph->mutable_output(), "b", onnx::TensorProto::BOOL, {-1});
  AddValue(graph->mutable_input(), "mixed", onnx::TensorProto::STRING, {-1});
  AddIntAttr(AddNode(graph, "Cast", {"mixed"}, {"m"}, "cast_mixed"), "to",
             onnx::TensorProto::INT32);
  AddNode(graph, "Identity", {"mixed"}, {"mixed_out"}, "echo_mixed");
  AddValue(graph->mutable_output(), "m", onnx::TensorProto::INT32, {-1});
  AddValue(graph->mutable_output(), "mixed_out", onnx::TensorProto::STRING, {-1});
  AddValue(graph->mutable_input(), "added", onnx::TensorProto::STRING, {-1});
  AddNode(graph, "Add", {"added", "added"}, {"sum"}, "add_strings");
  AddValue(graph->mutable_output(), "sum", onnx::TensorProto::STRING, {-1});
  AddValue(graph->mutable_input(), "x", onnx::TensorProto::FLOAT, {-1});
  AddIntAttr(AddNode(graph, "Cast", {"x"}, {"inner"}, "to_text"), "to",
             onnx::TensorProto::STRING);
  AddIntAttr(AddNode(graph, "Cast", {"inner"}, {"back"}, "from_text"), "to",
             onnx::TensorProto::FLOAT);
  AddValue(graph->mutable_output(), "back", onnx::TensorProto::FLOAT, {-1});
  absl::StatusOr<Model> model = Import(proto);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented) << model.status();
  const std::string message(model.status().message());
  EXPECT_THAT(message, HasSubstr("node 'cast_bool' (Cast) reads STRING input 'to_bool' into "
                                 "BOOL, which has no number text"));
  EXPECT_THAT(message, HasSubstr("node 'cast_mixed' (Cast) reads STRING value 'mixed' of input "
                                 "'mixed'"));
  EXPECT_THAT(message, HasSubstr("node 'add_strings' (Add) reads STRING value 'added'"));
  EXPECT_THAT(message, HasSubstr("STRING output 'sum' is made by node 'add_strings' (Add)"));
  EXPECT_THAT(message, HasSubstr("node 'to_text' (Cast) makes STRING value 'inner' inside the "
                                 "model"));
  EXPECT_THAT(message, Not(HasSubstr("element type STRING")));  // each said once, by its node
}

// Two inputs sharing a named sequence dim, and a dim the file leaves
// unnamed (Note [Shape dims]).
onnx::ModelProto ShapeDimModel() {
  onnx::ModelProto model = NewModel();
  onnx::GraphProto* graph = model.mutable_graph();
  AddValue(graph->mutable_input(), "ids", onnx::TensorProto::FLOAT, {-1, -1, 4}, "sequence");
  AddValue(graph->mutable_input(), "mask", onnx::TensorProto::FLOAT, {-1, -1, 4}, "sequence");
  AddValue(graph->mutable_input(), "extra", onnx::TensorProto::FLOAT, {2, -1}, "");
  graph->mutable_input(2)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)
      ->clear_dim_param();
  // Dim 0: "n" for ids, unnamed for mask (a batch, or two shape dims).
  graph->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)
      ->set_dim_param("n");
  graph->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)
      ->clear_dim_param();
  AddNode(graph, "Add", {"ids", "mask"}, {"sum"}, "add");
  AddNode(graph, "Identity", {"extra"}, {"extra_out"}, "id");
  AddValue(graph->mutable_output(), "sum", onnx::TensorProto::FLOAT, {-1, -1, 4}, "sequence");
  AddValue(graph->mutable_output(), "extra_out", onnx::TensorProto::FLOAT, {2, -1}, "");
  return model;
}

TEST(OnnxImportTest, DynamicDimsBeyondTheBatchAreNamedShapeDims) {
  absl::StatusOr<Model> imported = Import(ShapeDimModel());
  ASSERT_TRUE(imported.ok()) << imported.status();
  const Model& model = *imported;
  ASSERT_EQ(model.inputs.size(), 3u);
  EXPECT_EQ(model.inputs[0].dims, (Dims{-1, -1, 4}));
  EXPECT_EQ(model.inputs[0].dim_names, (std::vector<std::string>{"n", "sequence", ""}));
  EXPECT_EQ(model.inputs[1].dim_names, (std::vector<std::string>{"mask:0", "sequence", ""}));
  EXPECT_EQ(model.inputs[2].dim_names, (std::vector<std::string>{"", "extra:1"}));
  // Dim 0 is the batch.
  EXPECT_TRUE(model.batches);
  EXPECT_EQ(ShapeDimNames(model), (std::vector<std::string>{"sequence", "extra:1"}));
}

// Note [Models without a batch dim]: served without a batch, a model's
// dynamic dim 0 is a shape dim under the file's name, and binding takes it
// from the bucket.
TEST(OnnxImportTest, WithoutABatchDynamicDimZeroIsAShapeDim) {
  absl::StatusOr<Model> imported = Import(ShapeDimModel());
  ASSERT_TRUE(imported.ok()) << imported.status();
  Model model = *std::move(imported);
  model.batches = false;
  EXPECT_EQ(ShapeDimNames(model),
            (std::vector<std::string>{"n", "sequence", "mask:0", "extra:1"}));
  absl::StatusOr<BindOptions> options = BindOptionsAt(model, {1, {3, 5, 3, 7}});
  ASSERT_TRUE(options.ok()) << options.status();
  absl::StatusOr<BoundGraph> graph = BindModel(model, *options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->value(graph->inputs[0]).dims, (Dims{3, 5, 4}));
  EXPECT_EQ(graph->value(graph->inputs[1]).dims, (Dims{3, 5, 4}));
  EXPECT_EQ(graph->value(graph->inputs[2]).dims, (Dims{2, 7}));
  // A model without a batch runs one request a graph.
  const absl::StatusOr<BindOptions> batched = BindOptionsAt(model, {2, {3, 5, 3, 7}});
  EXPECT_EQ(batched.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(batched.status().message()), HasSubstr("without a batch dim"));
}

TEST(OnnxImportTest, UndefinedValuesAndDuplicateNamesAreInvalid) {
  onnx::ModelProto proto = SmallModel();
  proto.mutable_graph()->mutable_node(0)->set_input(0, "no_such_value");
  absl::StatusOr<Model> model = Import(proto);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("reads 'no_such_value', which no graph input, initializer or earlier "
                        "node defines"));

  onnx::ModelProto twice = SmallModel();
  const std::string first_output = twice.graph().node(0).output(0);
  twice.mutable_graph()->mutable_node(1)->set_output(0, first_output);
  model = Import(twice);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("'" + first_output + "' is defined more than once"));
}

// Found by fuzz/onnx_model_fuzz: a graph whose outputs were all removed
// imported as a model with nothing to compute, which binding then emptied;
// and with a Conv on a rank-2 input, libonnx 1.12's shape inference
// dereferenced null on it (SEGV in convPoolShapeInference): a model file
// could kill the server that loaded it. Such a graph is refused before
// libonnx sees it.
TEST(OnnxImportTest, AGraphWithoutOutputsIsInvalid) {
  onnx::ModelProto proto = SmallModel();
  proto.mutable_graph()->clear_output();
  absl::StatusOr<Model> model = Import(proto);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("the graph has no outputs"));

  onnx::ModelProto conv = NewModel();
  onnx::GraphProto* graph = conv.mutable_graph();
  onnx::ValueInfoProto* x = graph->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = x->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->add_dim()->set_dim_param("N");
  shape->add_dim()->set_dim_value(24);  // rank 2: Conv wants 3 or more
  *graph->add_initializer() = FloatTensor("w", {2, 1, 3}, std::vector<float>(6, 1.0f), true);
  onnx::NodeProto* node = AddNode(graph, "Conv", {"x", "w"}, {"c"});
  onnx::AttributeProto* pads = node->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int pad : {1, 1, 1, 1}) pads->add_ints(pad);
  model = Import(conv);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("the graph has no outputs"));
}

// Found by fuzz/onnx_model_fuzz: libonnx 1.12's shape inference read past
// the shape of a rank-2 input to a Conv with 2-D pads and dereferenced null
// (Note [Guarding libonnx's shape inference]); now it is a clear error.
TEST(OnnxImportTest, ConvolutionOnAnInputOfTooFewDimsIsInvalid) {
  onnx::ModelProto conv = NewModel();
  onnx::GraphProto* graph = conv.mutable_graph();
  onnx::ValueInfoProto* x = graph->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = x->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->add_dim()->set_dim_param("N");
  shape->add_dim()->set_dim_value(4);  // rank 2: Conv wants 3 or more
  *graph->add_initializer() = FloatTensor("w", {2, 1, 3, 3}, std::vector<float>(18, 1.0f), true);
  onnx::NodeProto* node = AddNode(graph, "Conv", {"x", "w"}, {"y"});
  onnx::AttributeProto* pads = node->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int pad : {1, 1, 1, 1}) pads->add_ints(pad);
  onnx::ValueInfoProto* y = graph->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* y_shape = y->mutable_type()->mutable_tensor_type()->mutable_shape();
  y_shape->add_dim()->set_dim_param("N");
  for (int dim : {2, 2, 2}) y_shape->add_dim()->set_dim_value(dim);
  absl::StatusOr<Model> model = Import(conv);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("the input has rank 2"));

  // And a zero stride, which libonnx divided by (SIGFPE), on a valid rank.
  shape->add_dim()->set_dim_value(4);
  shape->add_dim()->set_dim_value(4);  // [N, 4, 4, 4]
  graph->mutable_initializer(0)->clear_dims();
  for (int dim : {2, 4, 3, 3}) graph->mutable_initializer(0)->add_dims(dim);
  graph->mutable_initializer(0)->set_raw_data(std::string(72 * sizeof(float), '\0'));
  onnx::AttributeProto* strides = node->add_attribute();
  strides->set_name("strides");
  strides->set_type(onnx::AttributeProto::INTS);
  for (int stride : {0, 1}) strides->add_ints(stride);
  model = Import(conv);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("strides holds 0"));
}

TEST(OnnxImportTest, CheckerFailureIsInvalidArgument) {
  onnx::ModelProto proto = SmallModel();
  // Structure is sound, but LeakyRelu takes one input: the checker's find.
  proto.mutable_graph()->mutable_node(1)->add_input("x");
  absl::StatusOr<Model> model = Import(proto);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("ONNX checker"));
}

// Note [Model files of today]: what onnx >= 1.14 and torch's dynamo exporter
// write (IR 10, opset 20) imports; newer versions are refused by name.
TEST(OnnxImportTest, TodaysIrVersionsAndOpsetsImport) {
  for (const auto& [ir, opset] : {std::pair<int64_t, int64_t>{10, 20}, {14, 25}, {14, 28}, {9, 18}}) {
    onnx::ModelProto proto = SmallModel();
    proto.set_ir_version(ir);
    proto.mutable_opset_import(0)->set_version(opset);
    absl::StatusOr<Model> model = Import(proto);
    ASSERT_TRUE(model.ok()) << "IR " << ir << " opset " << opset << ": " << model.status();
    EXPECT_EQ(model->opset, opset);
  }
  onnx::ModelProto future_ir = SmallModel();
  future_ir.set_ir_version(15);
  absl::StatusOr<Model> model = Import(future_ir);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("has IR version 15; GraphServe reads up to 14"));
  onnx::ModelProto future_opset = SmallModel();
  future_opset.mutable_opset_import(0)->set_version(29);
  model = Import(future_opset);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("imports opset 29 of the default domain; GraphServe implements up to 28"));
}

TEST(OnnxImportTest, ShapeInferenceFailureIsInvalidArgument) {
  onnx::ModelProto proto = SmallModel();
  // The declared output rank contradicts Transpose's inferred [3, batch].
  proto.mutable_graph()
      ->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->add_dim()
      ->set_dim_value(5);
  absl::StatusOr<Model> model = Import(proto);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument) << model.status();
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("shape inference"));
}

// Note [Mixed-precision LayerNormalization]: PyTorch's export of a
// half-precision LayerNorm, x (float16) -> Cast to float ->
// LayerNormalization with float16 scale and bias -> Cast to float16, which
// ONNX's own checks refuse. Import widens the parameters to float and the
// model imports, binds and computes the norm in float.
TEST(OnnxImportTest, HalfPrecisionLayerNormParametersAreWidenedToTheInputsType) {
  onnx::ModelProto proto = NewModel();
  onnx::GraphProto* graph = proto.mutable_graph();
  proto.mutable_opset_import(0)->set_version(17);
  AddValue(graph->mutable_input(), "x", onnx::TensorProto::FLOAT16, {-1, 4});
  AddValue(graph->mutable_output(), "y", onnx::TensorProto::FLOAT16, {-1, 4});
  for (const char* name : {"scale", "bias"}) {
    onnx::TensorProto* tensor = graph->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT16);
    tensor->add_dims(4);
    for (uint16_t bits : {0x3c00, 0x4000, 0x3800, 0xbc00}) tensor->add_int32_data(bits);  // 1 2 .5 -1
  }
  // As PyTorch writes it behind a residual: the Cast's output reaches the
  // norm through an Add.
  AddIntAttr(AddNode(graph, "Cast", {"x"}, {"x32"}), "to", onnx::TensorProto::FLOAT);
  AddNode(graph, "Add", {"x32", "x32"}, {"sum32"});
  AddNode(graph, "LayerNormalization", {"sum32", "scale", "bias"}, {"n32"}, "norm");
  AddIntAttr(AddNode(graph, "Cast", {"n32"}, {"y"}), "to", onnx::TensorProto::FLOAT16);
  absl::StatusOr<Model> model = Import(proto);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->nodes.size(), 6u);
  const Node& norm = model->nodes[4];
  ASSERT_EQ(norm.op_type, "LayerNormalization");
  EXPECT_EQ(norm.inputs[1], "scale/as_float32");
  EXPECT_EQ(norm.inputs[2], "bias/as_float32");
  for (const Node* cast : {&model->nodes[2], &model->nodes[3]}) {
    EXPECT_EQ(cast->op_type, "Cast");
    EXPECT_EQ(std::get<int64_t>(cast->attributes.at("to")), onnx::TensorProto::FLOAT);
  }
  EXPECT_TRUE(BindModel(*model, {.batch_size = 2}).ok());
}

// The typing run reads a copy without the data of large initializers
// (CopyForTyping): a norm behind a MatMul with a 16 KB weight is still
// typed, and widened, and the weight imports whole.
TEST(OnnxImportTest, MixedLayerNormBehindALargeWeightIsWidenedAndTheWeightKept) {
  constexpr int kWidth = 64;  // a [64, 64] float32 weight: 16 KB
  onnx::ModelProto proto = NewModel();
  onnx::GraphProto* graph = proto.mutable_graph();
  proto.mutable_opset_import(0)->set_version(17);
  AddValue(graph->mutable_input(), "x", onnx::TensorProto::FLOAT16, {-1, kWidth});
  AddValue(graph->mutable_output(), "y", onnx::TensorProto::FLOAT16, {-1, kWidth});
  onnx::TensorProto* weight = graph->add_initializer();
  weight->set_name("W");
  weight->set_data_type(onnx::TensorProto::FLOAT);
  weight->add_dims(kWidth);
  weight->add_dims(kWidth);
  const auto value = [](int i) { return 0.25f * static_cast<float>(i % 7); };
  for (int i = 0; i < kWidth * kWidth; ++i) weight->add_float_data(value(i));
  for (const char* name : {"scale", "bias"}) {
    onnx::TensorProto* tensor = graph->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT16);
    tensor->add_dims(kWidth);
    for (int i = 0; i < kWidth; ++i) tensor->add_int32_data(0x3c00);  // 1
  }
  AddIntAttr(AddNode(graph, "Cast", {"x"}, {"x32"}), "to", onnx::TensorProto::FLOAT);
  AddNode(graph, "MatMul", {"x32", "W"}, {"h32"});
  AddNode(graph, "LayerNormalization", {"h32", "scale", "bias"}, {"n32"}, "norm");
  AddIntAttr(AddNode(graph, "Cast", {"n32"}, {"y"}), "to", onnx::TensorProto::FLOAT16);
  absl::StatusOr<Model> model = Import(proto);
  ASSERT_TRUE(model.ok()) << model.status();
  const auto norm =
      std::find_if(model->nodes.begin(), model->nodes.end(),
                   [](const Node& node) { return node.op_type == "LayerNormalization"; });
  ASSERT_NE(norm, model->nodes.end());
  EXPECT_EQ(norm->inputs[1], "scale/as_float32");
  EXPECT_EQ(norm->inputs[2], "bias/as_float32");
  const HostTensor& w = *model->initializers.at("W");
  ASSERT_EQ(w.num_elements(), kWidth * kWidth);
  EXPECT_EQ(w.data<float>()[kWidth * kWidth - 1], value(kWidth * kWidth - 1));
  EXPECT_TRUE(BindModel(*model, {.batch_size = 2}).ok());
}

TEST(OnnxImportTest, GarbageAndMissingFiles) {
  absl::StatusOr<Model> garbage = ImportOnnxBytes("\xff\xff\xff not a model", "junk");
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ImportOnnxFile("/nonexistent/model.onnx").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadTensorProtoFile("/nonexistent/input_0.pb").status().code(),
            absl::StatusCode::kNotFound);
}

// Note [External data]: W of SmallModel moved to weights.bin beside the
// model, at an offset; read back only from inside the model's directory.
class ExternalDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / "external_data" /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "model");
    std::vector<float> weights(12);
    for (int i = 0; i < 12; ++i) weights[i] = 0.5f * i;
    std::ofstream out(dir_ / "model" / "weights.bin", std::ios::binary);
    out << "8 bytes!";  // the offset
    out.write(reinterpret_cast<const char*>(weights.data()), 48);
  }

  // SmallModel with W at `location`, written as model/model.onnx; the path.
  std::string WriteModel(const std::string& location, const std::string& length = "48") {
    onnx::ModelProto proto = SmallModel();
    onnx::TensorProto* w = proto.mutable_graph()->mutable_initializer(0);
    EXPECT_EQ(w->name(), "W");
    w->clear_raw_data();
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [key, value] :
         {std::pair<std::string, std::string>{"location", location}, {"offset", "8"},
          {"length", length}}) {
      onnx::StringStringEntryProto* entry = w->add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    }
    const std::string path = (dir_ / "model" / "model.onnx").string();
    std::ofstream(path, std::ios::binary) << proto.SerializeAsString();
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(ExternalDataTest, ReadsTheTensorFromBesideTheModel) {
  absl::StatusOr<Model> model = ImportOnnxFile(WriteModel("weights.bin"));
  ASSERT_TRUE(model.ok()) << model.status();
  const HostTensor& w = *model->initializers.at("W");
  ASSERT_EQ(w.num_elements(), 12);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(w.data<float>()[i], 0.5f * i);
}

TEST_F(ExternalDataTest, RefusesLocationsOutsideTheModelsDirectory) {
  std::filesystem::create_directory_symlink(dir_, dir_ / "model" / "up");
  std::ofstream(dir_ / "secret.bin") << std::string(56, 'x');
  for (const std::string location :
       {"../secret.bin", "/etc/passwd", "sub/../../secret.bin", "up/secret.bin"}) {
    absl::StatusOr<Model> model = ImportOnnxFile(WriteModel(location));
    ASSERT_FALSE(model.ok()) << location;
    EXPECT_THAT(std::string(model.status().message()),
                ::testing::AnyOf(HasSubstr("must be a file inside the model's directory"),
                                 HasSubstr("leads outside the model's directory")))
        << location;
  }
  // A wrong length, or bytes the file does not have, are refused too.
  EXPECT_THAT(std::string(ImportOnnxFile(WriteModel("weights.bin", "40")).status().message()),
              HasSubstr("needs 48 bytes of external data"));
  // From bytes alone there is no directory to read it from.
  const std::string path = WriteModel("weights.bin");
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(ImportOnnxBytes(bytes, "m").status().code(), absl::StatusCode::kUnimplemented);
}

// A tensor declaring far more than it holds is refused before anything is
// allocated for it (a 2^40-float initializer with 4 bytes aborted the
// server).
TEST(TensorFromOnnxTest, HugeDeclaredTensorsAreRefusedBeforeAllocation) {
  onnx::TensorProto huge = FloatTensor("huge", {1}, {1.0f}, /*as_raw_data=*/true);
  huge.set_dims(0, int64_t{1} << 40);
  absl::StatusOr<HostTensor> t = TensorFromOnnx(huge);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("is too large"));
  huge.clear_dims();
  for (int i = 0; i < 4; ++i) huge.add_dims(int64_t{1} << 20);  // the product overflows int64
  t = TensorFromOnnx(huge);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("is too large"));
}

TEST(TensorFromOnnxTest, TypedFields) {
  onnx::TensorProto ints;
  ints.set_data_type(onnx::TensorProto::INT64);
  ints.add_dims(3);
  for (int64_t v : {-1LL, 0LL, 1LL << 40}) ints.add_int64_data(v);
  absl::StatusOr<HostTensor> t = TensorFromOnnx(ints);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kInt64);
  EXPECT_THAT(std::vector<int64_t>(t->data<int64_t>(), t->data<int64_t>() + 3),
              ElementsAre(-1, 0, int64_t{1} << 40));

  onnx::TensorProto bools;
  bools.set_data_type(onnx::TensorProto::BOOL);
  bools.add_dims(2);
  bools.add_dims(2);
  for (int v : {1, 0, 0, 1}) bools.add_int32_data(v);
  t = TensorFromOnnx(bools);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kBool);
  EXPECT_THAT(std::vector<bool>(t->data<bool>(), t->data<bool>() + 4),
              ElementsAre(true, false, false, true));

  onnx::TensorProto scalar = FloatTensor("s", {}, {3.5f}, /*as_raw_data=*/false);
  t = TensorFromOnnx(scalar);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->dims().empty());
  EXPECT_EQ(t->data<float>()[0], 3.5f);
}

TEST(TensorFromOnnxTest, RawData) {
  onnx::TensorProto bools;
  bools.set_data_type(onnx::TensorProto::BOOL);
  bools.add_dims(3);
  bools.set_raw_data(std::string("\x01\x00\x01", 3));
  absl::StatusOr<HostTensor> t = TensorFromOnnx(bools);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(std::vector<bool>(t->data<bool>(), t->data<bool>() + 3),
              ElementsAre(true, false, true));

  onnx::TensorProto empty = FloatTensor("e", {0, 4}, {}, /*as_raw_data=*/true);
  t = TensorFromOnnx(empty);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_elements(), 0);
}

TEST(TensorFromOnnxTest, Errors) {
  onnx::TensorProto external = FloatTensor("w", {2}, {}, /*as_raw_data=*/false);
  external.set_data_location(onnx::TensorProto::EXTERNAL);
  onnx::StringStringEntryProto* location = external.add_external_data();
  location->set_key("location");
  location->set_value("weights.bin");
  absl::StatusOr<HostTensor> t = TensorFromOnnx(external);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("external"));

  onnx::TensorProto short_raw = FloatTensor("w", {2}, {1.0f}, /*as_raw_data=*/true);
  t = TensorFromOnnx(short_raw);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("needs 8 bytes"));

  onnx::TensorProto short_typed = FloatTensor("w", {3}, {1.0f}, /*as_raw_data=*/false);
  EXPECT_EQ(TensorFromOnnx(short_typed).status().code(), absl::StatusCode::kInvalidArgument);

  onnx::TensorProto doubles;
  doubles.set_name("d");
  doubles.set_data_type(onnx::TensorProto::DOUBLE);
  doubles.add_dims(1);
  doubles.add_double_data(1.0);
  t = TensorFromOnnx(doubles);
  ASSERT_TRUE(t.ok()) << t.status();  // a row of the datatype table, read from double_data
  EXPECT_EQ(t->data<double>()[0], 1.0);

  onnx::TensorProto strings;
  strings.set_name("s");
  strings.set_data_type(onnx::TensorProto::STRING);
  strings.add_dims(1);
  strings.add_string_data("a");
  t = TensorFromOnnx(strings);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("tensor 's'"));
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("STRING"));
}

// ONNX's own test data, independently of our conversion: the file parsed as a
// TensorProto by protobuf and read field by field.
TEST(ReadTensorProtoFileTest, MatchesOnnxTestData) {
  const std::string path = std::string(kAddTestDir) + "/test_data_set_0/input_0.pb";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " missing (libonnx-testdata)";
  absl::StatusOr<HostTensor> tensor = ReadTensorProtoFile(path);
  ASSERT_TRUE(tensor.ok()) << tensor.status();

  std::ifstream file(path, std::ios::binary);
  onnx::TensorProto proto;
  ASSERT_TRUE(proto.ParseFromIstream(&file));
  ASSERT_EQ(proto.data_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(tensor->dims(), Dims(proto.dims().begin(), proto.dims().end()));
  ASSERT_TRUE(proto.has_raw_data());
  ASSERT_EQ(tensor->bytes(), proto.raw_data().size());
  EXPECT_EQ(std::memcmp(tensor->raw(), proto.raw_data().data(), tensor->bytes()), 0);

  // Written back as typed float_data and read again: the same values.
  onnx::TensorProto typed;
  typed.set_data_type(onnx::TensorProto::FLOAT);
  *typed.mutable_dims() = proto.dims();
  for (int64_t i = 0; i < tensor->num_elements(); ++i) typed.add_float_data(tensor->data<float>()[i]);
  const std::string copy =
      (std::filesystem::path(testing::TempDir()) / "onnx_import_test_input_0.pb").string();
  {
    std::ofstream out(copy, std::ios::binary);
    ASSERT_TRUE(typed.SerializeToOstream(&out));
  }
  absl::StatusOr<HostTensor> again = ReadTensorProtoFile(copy);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->dims(), tensor->dims());
  EXPECT_EQ(std::memcmp(again->raw(), tensor->raw(), tensor->bytes()), 0);
  std::remove(copy.c_str());
}

TEST(ReadTensorProtoFileTest, ImportsOnnxNodeTestModel) {
  const std::string path = std::string(kAddTestDir) + "/model.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " missing (libonnx-testdata)";
  absl::StatusOr<Model> model = ImportOnnxFile(path);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->nodes.size(), 1u);
  EXPECT_EQ(model->nodes[0].op_type, "Add");
  ASSERT_EQ(model->inputs.size(), 2u);
  EXPECT_THAT(model->inputs[0].dims, ElementsAre(3, 4, 5));
  ASSERT_EQ(model->outputs.size(), 1u);
  EXPECT_THAT(model->outputs[0].dims, ElementsAre(3, 4, 5));
}

}  // namespace
}  // namespace graphserve
