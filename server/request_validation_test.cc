#include "server/request_validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "cuda_runtime_api.h"
#include "server/bytes_tensor.h"
#include "server/shared_memory_testing.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Request = inference::ModelInferRequest;

constexpr int64_t kMaxBatch = 8;
constexpr int64_t kRows = 4;  // a batch within kMaxBatch

// x [B,3] FP32, ids [B,2] INT64, mask [B] BOOL -> y [B,2] FP32, score [B,1] INT64, valid [B] BOOL.
ModelInterface Mlp() {
  ModelInterface model;
  model.name = "mlp";
  model.max_batch_size = kMaxBatch;
  model.inputs = {
      {"x", DType::kFloat32, {3}}, {"ids", DType::kInt64, {2}}, {"mask", DType::kBool, {}}};
  model.outputs = {
      {"y", DType::kFloat32, {2}}, {"score", DType::kInt64, {1}}, {"valid", DType::kBool, {}}};
  return model;
}

// Element e of input `name` in the test requests: distinct per tensor and element.
float XValue(int64_t e) { return 0.5f + static_cast<float>(e); }
int64_t IdValue(int64_t e) { return 1000 + e; }
bool MaskValue(int64_t e) { return e % 3 == 0; }

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

Request::InferInputTensor* AddInput(Request* request, const char* name, const char* datatype,
                                    Dims shape) {
  Request::InferInputTensor* input = request->add_inputs();
  input->set_name(name);
  input->set_datatype(datatype);
  for (int64_t dim : shape) input->add_shape(dim);
  return input;
}

// A valid request of `rows` rows with raw contents, inputs in an order other
// than the model's so that the mapping is exercised.
Request RawRequest(int64_t rows = kRows) {
  Request request;
  request.set_model_name("mlp");
  request.set_id("req-7");
  std::vector<float> x;
  std::vector<int64_t> ids;
  std::vector<uint8_t> mask;
  for (int64_t e = 0; e < rows * 3; ++e) x.push_back(XValue(e));
  for (int64_t e = 0; e < rows * 2; ++e) ids.push_back(IdValue(e));
  for (int64_t e = 0; e < rows; ++e) mask.push_back(MaskValue(e) ? 1 : 0);
  AddInput(&request, "ids", "INT64", {rows, 2});
  request.add_raw_input_contents(Bytes(ids));
  AddInput(&request, "mask", "BOOL", {rows});
  request.add_raw_input_contents(Bytes(mask));
  AddInput(&request, "x", "FP32", {rows, 3});
  request.add_raw_input_contents(Bytes(x));
  return request;
}

// The same data as typed contents, inputs in the model's order.
Request TypedRequest(int64_t rows = kRows) {
  Request request;
  request.set_model_name("mlp");
  auto* x = AddInput(&request, "x", "FP32", {rows, 3});
  for (int64_t e = 0; e < rows * 3; ++e) x->mutable_contents()->add_fp32_contents(XValue(e));
  auto* ids = AddInput(&request, "ids", "INT64", {rows, 2});
  for (int64_t e = 0; e < rows * 2; ++e) ids->mutable_contents()->add_int64_contents(IdValue(e));
  auto* mask = AddInput(&request, "mask", "BOOL", {rows});
  for (int64_t e = 0; e < rows; ++e) mask->mutable_contents()->add_bool_contents(MaskValue(e));
  return request;
}

// Checks that `validated` holds the test data, read through its pointers.
void ExpectTestData(const ValidatedRequest& validated, int64_t rows) {
  ASSERT_EQ(validated.view.inputs.size(), 3u);
  for (int64_t e = 0; e < rows * 3; ++e) {
    float value;
    std::memcpy(&value, validated.view.inputs[0].data + e * sizeof(float), sizeof(float));
    EXPECT_EQ(value, XValue(e)) << e;
  }
  for (int64_t e = 0; e < rows * 2; ++e) {
    int64_t value;
    std::memcpy(&value, validated.view.inputs[1].data + e * sizeof(int64_t), sizeof(int64_t));
    EXPECT_EQ(value, IdValue(e)) << e;
  }
  for (int64_t e = 0; e < rows; ++e) {
    EXPECT_EQ(std::to_integer<int>(validated.view.inputs[2].data[e]), MaskValue(e) ? 1 : 0) << e;
  }
}

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(RequestValidationTest, RawRequestPointsIntoTheRequestInModelOrder) {
  const Request request = RawRequest();
  absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, Mlp());
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_EQ(validated->view.rows, kRows);
  // Request order is ids, mask, x; the model's is x, ids, mask.
  ASSERT_EQ(validated->view.inputs.size(), 3u);
  EXPECT_EQ(validated->view.inputs[0].data,
            reinterpret_cast<const std::byte*>(request.raw_input_contents(2).data()));
  EXPECT_EQ(validated->view.inputs[1].data,
            reinterpret_cast<const std::byte*>(request.raw_input_contents(0).data()));
  EXPECT_EQ(validated->view.inputs[2].data,
            reinterpret_cast<const std::byte*>(request.raw_input_contents(1).data()));
  EXPECT_TRUE(validated->converted.empty());
  ExpectTestData(*validated, kRows);
  EXPECT_THAT(validated->outputs, ElementsAre(0, 1, 2));  // none named: all, model order
}

TEST(RequestValidationTest, TypedRequestGivesTheSameBytes) {
  const Request request = TypedRequest();
  absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, Mlp());
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_EQ(validated->view.rows, kRows);
  ExpectTestData(*validated, kRows);
  // FP32 and INT64 are read in place; BOOL is written out as bytes.
  EXPECT_EQ(
      validated->view.inputs[0].data,
      reinterpret_cast<const std::byte*>(request.inputs(0).contents().fp32_contents().data()));
  ASSERT_EQ(validated->converted.size(), 1u);
  EXPECT_EQ(validated->view.inputs[2].data, validated->converted[0].data());

  // Moving keeps the pointers valid.
  const std::byte* mask = validated->view.inputs[2].data;
  ValidatedRequest moved = *std::move(validated);
  EXPECT_EQ(moved.view.inputs[2].data, mask);
  EXPECT_EQ(moved.converted[0].data(), mask);
  ExpectTestData(moved, kRows);
}

// Every datatype with a typed contents field: the narrower integers come in
// int_contents / uint_contents and reach the model as their own bytes; a
// value the type cannot hold is refused naming the element; FP16 and BF16
// have no typed field and say to send raw bytes.
TEST(RequestValidationTest, TypedContentsOfEveryDatatype) {
  ModelInterface model;
  model.name = "types";
  model.max_batch_size = kMaxBatch;
  model.inputs = {{"i8", DType::kInt8, {2}},    {"u8", DType::kUInt8, {2}},
                  {"i16", DType::kInt16, {2}},  {"u16", DType::kUInt16, {2}},
                  {"i32", DType::kInt32, {2}},  {"u32", DType::kUInt32, {2}},
                  {"u64", DType::kUInt64, {2}}, {"f64", DType::kFloat64, {2}}};
  model.outputs = {{"y", DType::kFloat32, {1}}};
  Request request;
  request.set_model_name("types");
  auto contents = [&](const char* name, const char* datatype) {
    return AddInput(&request, name, datatype, {1, 2})->mutable_contents();
  };
  auto* i8 = contents("i8", "INT8");
  i8->add_int_contents(-128);
  i8->add_int_contents(127);
  auto* u8 = contents("u8", "UINT8");
  u8->add_uint_contents(0);
  u8->add_uint_contents(255);
  auto* i16 = contents("i16", "INT16");
  i16->add_int_contents(-32768);
  i16->add_int_contents(5);
  auto* u16 = contents("u16", "UINT16");
  u16->add_uint_contents(65535);
  u16->add_uint_contents(1);
  auto* i32 = contents("i32", "INT32");
  i32->add_int_contents(-7);
  i32->add_int_contents(2147483647);
  auto* u32 = contents("u32", "UINT32");
  u32->add_uint_contents(4294967295u);
  u32->add_uint_contents(3);
  auto* u64 = contents("u64", "UINT64");
  u64->add_uint64_contents(~uint64_t{0});
  u64->add_uint64_contents(9);
  auto* f64 = contents("f64", "FP64");
  f64->add_fp64_contents(0.1);
  f64->add_fp64_contents(-2.0);
  absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, model);
  ASSERT_TRUE(validated.ok()) << validated.status();
  auto bytes = [&](size_t input, size_t size) {
    return std::string(reinterpret_cast<const char*>(validated->view.inputs[input].data), size);
  };
  EXPECT_EQ(bytes(0, 2), Bytes(std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(bytes(1, 2), Bytes(std::vector<uint8_t>{0, 255}));
  EXPECT_EQ(bytes(2, 4), Bytes(std::vector<int16_t>{-32768, 5}));
  EXPECT_EQ(bytes(3, 4), Bytes(std::vector<uint16_t>{65535, 1}));
  EXPECT_EQ(bytes(4, 8), Bytes(std::vector<int32_t>{-7, 2147483647}));
  EXPECT_EQ(bytes(5, 8), Bytes(std::vector<uint32_t>{4294967295u, 3}));
  EXPECT_EQ(bytes(6, 16), Bytes(std::vector<uint64_t>{~uint64_t{0}, 9}));
  EXPECT_EQ(bytes(7, 16), Bytes(std::vector<double>{0.1, -2.0}));

  // 300 is no INT8.
  request.mutable_inputs(0)->mutable_contents()->set_int_contents(1, 300);
  absl::StatusOr<ValidatedRequest> too_big = ValidateInferRequest(request, model);
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      Message(too_big.status()),
      HasSubstr("input 'i8' of model 'types': element 1 (300) is outside the range of INT8"));

  ModelInterface half = model;
  half.inputs = {{"h", DType::kFloat16, {2}}};
  Request typed_half;
  typed_half.set_model_name("types");
  AddInput(&typed_half, "h", "FP16", {1, 2})->mutable_contents()->add_fp32_contents(1.0f);
  absl::StatusOr<ValidatedRequest> refused = ValidateInferRequest(typed_half, half);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(
      Message(refused.status()),
      HasSubstr("is FP16, which has no typed contents field; send it in raw_input_contents"));
}

TEST(RequestValidationTest, BatchesFromOneToMaxAreAccepted) {
  for (int64_t rows = 1; rows <= kMaxBatch; ++rows) {
    const Request raw = RawRequest(rows);
    absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(raw, Mlp());
    ASSERT_TRUE(validated.ok()) << rows << ": " << validated.status();
    EXPECT_EQ(validated->view.rows, rows);
    ExpectTestData(*validated, rows);
    const Request typed = TypedRequest(rows);
    ASSERT_TRUE(ValidateInferRequest(typed, Mlp()).ok()) << rows;
  }
}

TEST(RequestValidationTest, RequestedOutputsComeInRequestOrder) {
  Request request = RawRequest();
  request.add_outputs()->set_name("valid");
  request.add_outputs()->set_name("y");
  absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, Mlp());
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_THAT(validated->outputs, ElementsAre(2, 0));
}

TEST(RequestValidationTest, UnknownParametersAreIgnored) {
  Request request = RawRequest();
  (*request.mutable_parameters())["priority"].set_int64_param(3);
  (*request.mutable_parameters())["something_new"].set_string_param("x");
  (*request.mutable_inputs(0)->mutable_parameters())["binary_data_size"].set_int64_param(64);
  auto* output = request.add_outputs();
  output->set_name("y");
  (*output->mutable_parameters())["binary_data"].set_bool_param(true);
  EXPECT_TRUE(ValidateInferRequest(request, Mlp()).ok());
}

// One malformed request and a fragment its error must contain.
struct BadRequestCase {
  const char* what;
  std::function<void(Request*)> edit;
  const char* expected;
};

Request::InferInputTensor* Input(Request* request, const std::string& name) {
  for (auto& input : *request->mutable_inputs()) {
    if (input.name() == name) return &input;
  }
  ADD_FAILURE() << "no input " << name;
  return request->add_inputs();
}

void SetShape(Request::InferInputTensor* input, Dims shape) {
  input->clear_shape();
  for (int64_t dim : shape) input->add_shape(dim);
}

void ExpectRejected(const Request& request, const char* what, const char* expected) {
  absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, Mlp());
  ASSERT_FALSE(validated.ok()) << what;
  EXPECT_EQ(validated.status().code(), absl::StatusCode::kInvalidArgument) << what;
  EXPECT_THAT(Message(validated.status()), HasSubstr(expected)) << what;
}

TEST(RequestValidationTest, MalformedRawRequestsSayWhatWasExpected) {
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();
  const BadRequestCase cases[] = {
      {"missing input",
       [](Request* r) {
         r->mutable_inputs()->DeleteSubrange(0, 1);
         r->mutable_raw_input_contents()->DeleteSubrange(0, 1);
       },
       "[request id: req-7] expected 3 inputs but got 2 inputs for model 'mlp'. Got input(s) "
       "['mask','x'], but missing required input(s) ['ids']. Please provide all required "
       "input(s)."},
      {"no inputs at all",
       [](Request* r) {
         r->clear_inputs();
         r->clear_raw_input_contents();
       },
       "expected 3 inputs but got 0 inputs for model 'mlp'. Got input(s) [], but missing required "
       "input(s) ['x','ids','mask']."},
      {"misnamed input", [](Request* r) { Input(r, "x")->set_name("X"); },
       "unexpected inference input 'X' for model 'mlp'; its inputs are 'x', 'ids', 'mask'"},
      {"input twice",
       [](Request* r) {
         *r->add_inputs() = *Input(r, "x");
         r->add_raw_input_contents(r->raw_input_contents(2));
       },
       "input 'x' appears twice in the request to model 'mlp'"},
      {"wrong datatype", [](Request* r) { Input(r, "x")->set_datatype("INT64"); },
       "[request id: req-7] inference input 'x' data-type is 'INT64', but model 'mlp' expects "
       "'FP32'"},
      {"unsupported datatype", [](Request* r) { Input(r, "x")->set_datatype("FP16"); },
       "inference input 'x' data-type is 'FP16', but model 'mlp' expects 'FP32'"},
      {"datatype in config spelling",
       [](Request* r) { Input(r, "ids")->set_datatype("TYPE_INT64"); },
       "inference input 'ids' data-type is 'TYPE_INT64', but model 'mlp' expects 'INT64'"},
      {"no batch dim", [](Request* r) { SetShape(Input(r, "x"), {3}); },
       "[request id: req-7] unexpected shape for input 'x' for model 'mlp'. Expected [-1,3], got "
       "[3] (the batch dimension first)"},
      {"extra dim",
       [](Request* r) {
         SetShape(Input(r, "x"), {kRows, 3, 1});
       },
       "unexpected shape for input 'x' for model 'mlp'. Expected [-1,3], got [4,3,1]"},
      {"wrong row dim",
       [](Request* r) {
         SetShape(Input(r, "x"), {kRows, 5});
       },
       "unexpected shape for input 'x' for model 'mlp'. Expected [-1,3], got [4,5]"},
      {"negative row dim",
       [](Request* r) {
         SetShape(Input(r, "ids"), {kRows, -2});
       },
       "unexpected shape for input 'ids' for model 'mlp'. Expected [-1,2], got [4,-2]"},
      {"huge row dim",
       [](Request* r) {
         SetShape(Input(r, "ids"), {kHuge, kHuge});
       },
       "Expected [-1,2], got [9223372036854775807,9223372036854775807]"},
      {"empty shape", [](Request* r) { SetShape(Input(r, "mask"), {}); },
       "unexpected shape for input 'mask' for model 'mlp'. Expected [-1], got []"},
      {"batch 0",
       [](Request* r) {
         SetShape(Input(r, "x"), {0, 3});
       },
       "input 'x' has batch 0 (shape [0,3]); model 'mlp' needs a batch (dim 0) of at least 1"},
      {"negative batch", [](Request* r) { SetShape(Input(r, "mask"), {-4}); },
       "input 'mask' has batch -4"},
      {"batch above max",
       [](Request* r) {
         SetShape(Input(r, "x"), {9, 3});
       },
       "[request id: req-7] inference request batch-size must be <= 8 for 'mlp': batch 9"},
      {"huge batch",
       [](Request* r) {
         SetShape(Input(r, "x"), {kHuge, 3});
       },
       "batch 9223372036854775807 exceeds max_batch_size 8"},
      {"batches disagree",
       [](Request* r) {
         SetShape(Input(r, "ids"), {kRows - 1, 2});
       },
       "input 'ids' has batch 3 but input 'x' has batch 4; the inputs of a request to model "
       "'mlp' share the batch (dim 0)"},
      {"short raw bytes", [](Request* r) { r->mutable_raw_input_contents(2)->pop_back(); },
       "[request id: req-7] input byte size mismatch for input 'x' for model 'mlp'. Expected 48, "
       "got 47 (bytes in raw_input_contents for shape [4,3] FP32"},
      {"long raw bytes", [](Request* r) { r->mutable_raw_input_contents(0)->append("x"); },
       "input byte size mismatch for input 'ids' for model 'mlp'. Expected 64, got 65 (bytes in "
       "raw_input_contents for shape [4,2] "
       "INT64"},
      {"raw entry missing", [](Request* r) { r->mutable_raw_input_contents()->RemoveLast(); },
       "the request to model 'mlp' has 2 raw_input_contents entries for 3 inputs"},
      {"raw entry extra", [](Request* r) { r->add_raw_input_contents("spare"); },
       "has 4 raw_input_contents entries for 3 inputs"},
      {"raw mixed with typed",
       [](Request* r) { Input(r, "x")->mutable_contents()->add_fp32_contents(1.0f); },
       "input 'x' carries typed contents but the request to model 'mlp' uses raw_input_contents"},
      {"raw BOOL not 0 or 1", [](Request* r) { (*r->mutable_raw_input_contents(1))[2] = 2; },
       "input 'mask' of model 'mlp': raw BOOL element 2 is byte 2; BOOL elements are bytes 0 or 1"},
      {"unknown output", [](Request* r) { r->add_outputs()->set_name("logits"); },
       "unexpected inference output 'logits' for model 'mlp'; its outputs are 'y', 'score', "
       "'valid'"},
      {"output twice",
       [](Request* r) {
         r->add_outputs()->set_name("y");
         r->add_outputs()->set_name("score");
         r->add_outputs()->set_name("y");
       },
       "output 'y' is requested twice from model 'mlp'"},
      {"input in shared memory",
       [](Request* r) {
         (*Input(r, "x")->mutable_parameters())["shared_memory_region"].set_string_param("in0");
       },
       "input 'x' of model 'mlp' names a shared_memory_region"},
      {"output to shared memory",
       [](Request* r) {
         auto* output = r->add_outputs();
         output->set_name("y");
         (*output->mutable_parameters())["shared_memory_region"].set_string_param("out0");
       },
       "output 'y' of model 'mlp' names a shared_memory_region"},
      // Triton's texts (Note [Classification]).
      {"classification not an int64",
       [](Request* r) {
         auto* output = r->add_outputs();
         output->set_name("score");
         (*output->mutable_parameters())["classification"].set_string_param("3");
       },
       "invalid value type for 'classification' parameter, expected int64_param (output "
       "'score' of model 'mlp')"},
      {"classification of no class",
       [](Request* r) {
         auto* output = r->add_outputs();
         output->set_name("score");
         (*output->mutable_parameters())["classification"].set_int64_param(0);
       },
       "invalid value for 'classification' parameter, expected >= 1, got 0"},
      {"classification of a BOOL output",
       [](Request* r) {
         auto* output = r->add_outputs();
         output->set_name("valid");
         (*output->mutable_parameters())["classification"].set_int64_param(1);
       },
       "class result not available for output due to unsupported type 'BOOL' (output 'valid'"},
  };
  for (const BadRequestCase& c : cases) {
    Request request = RawRequest();
    c.edit(&request);
    ExpectRejected(request, c.what, c.expected);
  }
}

// Every name a request carries is the client's text, and a status message
// that quoted 64 KiB of it would exceed what a gRPC client accepts (Note
// [Quoting client text]): each is quoted as a prefix with its length.
TEST(RequestValidationTest, HugeClientTextIsQuotedAsAShortPrefix) {
  constexpr size_t kHugeText = 64 << 10;  // eight times gRPC's 8 KiB metadata limit
  constexpr size_t kMessageBound = 256;   // a one-line message, whatever the client sent
  const std::string huge(kHugeText, 'n');
  const BadRequestCase cases[] = {
      {"huge input name", [&huge](Request* r) { Input(r, "x")->set_name(huge); },
       "unexpected inference input 'nnnn"},
      {"huge datatype", [&huge](Request* r) { Input(r, "x")->set_datatype(huge); },
       "inference input 'x' data-type is 'nnnn"},
      {"huge output name", [&huge](Request* r) { r->add_outputs()->set_name(huge); },
       "unexpected inference output 'nnnn"},
      {"huge shape", [](Request* r) { SetShape(Input(r, "x"), Dims(kHugeText / 2, 1)); },
       "unexpected shape for input 'x' for model 'mlp'. Expected [-1,3], got [1,1,1"},
  };
  for (const BadRequestCase& c : cases) {
    Request request = RawRequest();
    c.edit(&request);
    ExpectRejected(request, c.what, c.expected);
    const absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, Mlp());
    EXPECT_LT(validated.status().message().size(), kMessageBound) << c.what;
    EXPECT_THAT(Message(validated.status()), HasSubstr("bytes)")) << c.what;
  }
  // Bytes a terminal would act on arrive escaped.
  Request request = RawRequest();
  Input(&request, "x")->set_name("x\n\x1b[2J");
  ExpectRejected(request, "control bytes", R"(unexpected inference input 'x\n\x1b[2J')");
}

TEST(RequestValidationTest, MalformedTypedRequestsSayWhatWasExpected) {
  const BadRequestCase cases[] = {
      {"no data", [](Request* r) { Input(r, "ids")->clear_contents(); },
       "input 'ids' of model 'mlp' has no data; send it in raw_input_contents or in "
       "contents.int64_contents"},
      {"wrong field for FP32",
       [](Request* r) {
         auto* x = Input(r, "x");
         x->clear_contents();
         for (int e = 0; e < kRows * 3; ++e) x->mutable_contents()->add_fp64_contents(e);
       },
       "input 'x' of model 'mlp' is FP32 but carries contents.fp64_contents; FP32 elements go in "
       "contents.fp32_contents"},
      {"wrong field for INT64",
       [](Request* r) {
         auto* ids = Input(r, "ids");
         ids->clear_contents();
         for (int e = 0; e < kRows * 2; ++e) ids->mutable_contents()->add_int_contents(e);
       },
       "input 'ids' of model 'mlp' is INT64 but carries contents.int_contents"},
      {"wrong field for BOOL",
       [](Request* r) {
         auto* mask = Input(r, "mask");
         mask->clear_contents();
         for (int e = 0; e < kRows; ++e) mask->mutable_contents()->add_uint_contents(1);
       },
       "input 'mask' of model 'mlp' is BOOL but carries contents.uint_contents; BOOL elements go "
       "in contents.bool_contents"},
      {"right field plus another",
       [](Request* r) { Input(r, "x")->mutable_contents()->add_bytes_contents("?"); },
       "input 'x' of model 'mlp' is FP32 but carries contents.bytes_contents"},
      {"too few elements",
       [](Request* r) { Input(r, "x")->mutable_contents()->mutable_fp32_contents()->RemoveLast(); },
       "input 'x' of model 'mlp': 11 elements in contents.fp32_contents, expected 12 for shape "
       "[4,3]"},
      {"too many elements",
       [](Request* r) { Input(r, "mask")->mutable_contents()->add_bool_contents(true); },
       "input 'mask' of model 'mlp': 5 elements in contents.bool_contents, expected 4 for shape "
       "[4]"},
      {"typed contents for the wrong shape",
       [](Request* r) {
         SetShape(Input(r, "ids"), {2, 2});
       },
       "input 'ids' has batch 2 but input 'x' has batch 4"},
  };
  for (const BadRequestCase& c : cases) {
    Request request = TypedRequest();
    c.edit(&request);
    ExpectRejected(request, c.what, c.expected);
  }
}

// Whatever the shape values, validation answers with a status and never reads
// or allocates by them.
// Note [Shape buckets]: a request to a model with a sequence dim carries its
// extents, and each tensor's rows in its RowView are the bytes of a row at
// those extents apart (what a runner pads into the bucket's rows).
TEST(RequestValidationTest, RowsOfASequenceModelAreTheRequestsLengthApart) {
  ModelInterface model;
  model.name = "masked";
  model.max_batch_size = kMaxBatch;
  model.inputs = {{"x", DType::kFloat32, {-1, 16}}, {"mask", DType::kInt64, {-1}}};
  model.inputs[0].shape_dim_of = {0, -1};
  model.inputs[1].shape_dim_of = {0};
  model.outputs = {{"y", DType::kFloat32, {-1, 16}}};
  model.outputs[0].shape_dim_of = {0, -1};
  model.shape_dims = {"sequence"};
  model.buckets = {{8}, {32}};
  model.pads_to_bucket = true;
  Request request;
  request.set_model_name("masked");
  AddInput(&request, "x", "FP32", {2, 5, 16});
  request.add_raw_input_contents(std::string(2 * 5 * 16 * sizeof(float), '\0'));
  AddInput(&request, "mask", "INT64", {2, 5});
  request.add_raw_input_contents(std::string(2 * 5 * sizeof(int64_t), '\1'));
  absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, model);
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_EQ(validated->view.rows, 2);
  EXPECT_THAT(validated->extents, ElementsAre(5));
  EXPECT_EQ(validated->view.inputs[0].pitch, 5u * 16 * sizeof(float));
  EXPECT_EQ(validated->view.inputs[1].pitch, 5u * sizeof(int64_t));
  ASSERT_EQ(validated->view.outputs.size(), 1u);
  EXPECT_EQ(validated->view.outputs[0].pitch, 5u * 16 * sizeof(float));
  EXPECT_EQ(validated->view.outputs[0].data, nullptr);  // PrepareInferResponse says where
  EXPECT_EQ(validated->view.shape, nullptr);            // the server's RowShapeAt
  // A slice of the view moves each tensor by its own pitch.
  const RowView second = validated->view.Rows(1, 1);
  EXPECT_EQ(second.inputs[1].data, validated->view.inputs[1].data + 5 * sizeof(int64_t));
  EXPECT_EQ(second.outputs[0].data, nullptr);
}

TEST(RequestValidationTest, AnyShapeValuesGiveAStatus) {
  const int64_t kValues[] = {
      std::numeric_limits<int64_t>::min(), -1, 0, 1, 2, 3, kRows, kMaxBatch + 1, int64_t{1} << 32,
      std::numeric_limits<int64_t>::max()};
  for (int64_t batch : kValues) {
    for (int64_t row : kValues) {
      for (bool typed : {false, true}) {
        Request request = typed ? TypedRequest() : RawRequest();
        SetShape(Input(&request, "x"), {batch, row});
        SetShape(Input(&request, "ids"), {batch, 2});
        SetShape(Input(&request, "mask"), {batch});
        absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, Mlp());
        // Only the shape the test data was made for is valid.
        EXPECT_EQ(validated.ok(), batch == kRows && row == 3) << batch << " " << row;
      }
    }
  }
}

// Mlp() with a fourth input, `bias` [B,3] FP32, optional, whose default row
// (Note [Inputs with defaults] in runtime/ir.h) is kBiasRow; without
// `with_default` the model has none.
constexpr float kBiasRow[] = {-1.0f, 0.25f, 8.0f};

ModelInterface MlpWithOptionalBias(bool with_default = true) {
  ModelInterface model = Mlp();
  TensorSpec bias{"bias", DType::kFloat32, {3}};
  bias.optional = true;
  if (with_default) {
    HostTensor row(DType::kFloat32, {1, 3});
    std::memcpy(row.raw(), kBiasRow, sizeof(kBiasRow));
    bias.default_row = std::make_shared<const HostTensor>(std::move(row));
  }
  model.inputs.push_back(std::move(bias));
  return model;
}

// Left out, it is its default in each of the request's rows; the inputs
// sent are read as always.
TEST(RequestValidationTest, AnOptionalInputLeftOutIsItsDefaultInEveryRow) {
  for (bool typed : {false, true}) {
    const Request request = typed ? TypedRequest() : RawRequest();
    absl::StatusOr<ValidatedRequest> validated =
        ValidateInferRequest(request, MlpWithOptionalBias());
    ASSERT_TRUE(validated.ok()) << validated.status();
    EXPECT_EQ(validated->view.rows, kRows);
    ASSERT_EQ(validated->view.inputs.size(), 4u);
    std::vector<float> bias(kRows * 3);
    std::memcpy(bias.data(), validated->view.inputs[3].data, bias.size() * sizeof(float));
    for (int64_t row = 0; row < kRows; ++row) {
      EXPECT_THAT(std::vector<float>(bias.begin() + row * 3, bias.begin() + row * 3 + 3),
                  ElementsAre(kBiasRow[0], kBiasRow[1], kBiasRow[2]))
          << "row " << row << (typed ? " typed" : " raw");
    }
    validated->view.inputs.pop_back();
    ExpectTestData(*validated, kRows);
  }
}

// Sent, it is any input: read in place, its shape and batch checked.
TEST(RequestValidationTest, AnOptionalInputSentIsReadAsAnyInput) {
  Request request = RawRequest();
  const std::vector<float> bias(kRows * 3, 7.0f);
  AddInput(&request, "bias", "FP32", {kRows, 3});
  request.add_raw_input_contents(Bytes(bias));
  absl::StatusOr<ValidatedRequest> validated =
      ValidateInferRequest(request, MlpWithOptionalBias());
  ASSERT_TRUE(validated.ok()) << validated.status();
  ASSERT_EQ(validated->view.inputs.size(), 4u);
  EXPECT_EQ(validated->view.inputs[3].data,
            reinterpret_cast<const std::byte*>(request.raw_input_contents(3).data()));

  SetShape(Input(&request, "bias"), {kRows - 1, 3});
  request.mutable_raw_input_contents(3)->resize((kRows - 1) * 3 * sizeof(float));
  validated = ValidateInferRequest(request, MlpWithOptionalBias());
  EXPECT_EQ(validated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(validated.status()),
              HasSubstr("input 'bias' has batch 3 but input 'x' has batch 4"));
}

// Triton's texts where some inputs are optional: "between R and N", and
// only the required ones missing listed, also when an optional input is
// sent in place of a required one.
TEST(RequestValidationTest, MissingRequiredInputsBesideOptionalOnesGetTritonsText) {
  Request empty;
  empty.set_model_name("mlp");
  absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(empty, MlpWithOptionalBias());
  EXPECT_EQ(validated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(validated.status()),
              HasSubstr("[request id: <id_unknown>] expected number of inputs between 3 and 4 but "
                        "got 0 inputs for model 'mlp'. Got input(s) [], but missing required "
                        "input(s) ['x','ids','mask']. Please provide all required input(s)."));

  Request bias_for_ids = RawRequest();
  Input(&bias_for_ids, "ids")->set_name("bias");
  Input(&bias_for_ids, "bias")->set_datatype("FP32");
  SetShape(Input(&bias_for_ids, "bias"), {kRows, 3});
  validated = ValidateInferRequest(bias_for_ids, MlpWithOptionalBias());
  EXPECT_EQ(validated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(validated.status()),
              HasSubstr("expected number of inputs between 3 and 4 but got 3 inputs for model "
                        "'mlp'. Got input(s) ['bias','mask','x'], but missing required input(s) "
                        "['ids']."));
}

// An optional input of a model with no default for it has nothing to run a
// request without it on.
TEST(RequestValidationTest, AnOptionalInputWithoutADefaultMustBeSent) {
  absl::StatusOr<ValidatedRequest> validated =
      ValidateInferRequest(RawRequest(), MlpWithOptionalBias(/*with_default=*/false));
  EXPECT_EQ(validated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(validated.status()),
              HasSubstr("input 'bias' of model 'mlp' is optional, but the model has no default "
                        "value for it (an ONNX initializer of its name) to use when it is left "
                        "out: send it"));
}

// Triton's input_all_optional: a request of no inputs at all is one row of
// the defaults.
TEST(RequestValidationTest, ARequestOfNoInputsToAModelOfOptionalOnesIsOneRow) {
  ModelInterface model = MlpWithOptionalBias();
  model.inputs.erase(model.inputs.begin(), model.inputs.begin() + 3);
  Request empty;
  empty.set_model_name("mlp");
  absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(empty, model);
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_EQ(validated->view.rows, 1);
  ASSERT_EQ(validated->view.inputs.size(), 1u);
  float first;
  std::memcpy(&first, validated->view.inputs[0].data, sizeof(float));
  EXPECT_EQ(first, kBiasRow[0]);
}

TEST(RequestValidationTest, ResponseHoldsRequestedOutputsInRequestOrder) {
  Request request = RawRequest();
  request.add_outputs()->set_name("valid");
  request.add_outputs()->set_name("y");
  const ValidatedRequest validated = *ValidateInferRequest(request, Mlp());
  inference::ModelInferResponse response;
  response.set_model_name("stale");  // whatever was there goes
  const std::vector<std::byte*> destinations =
      PrepareInferResponse(request, Mlp(), "3", validated, &response);

  EXPECT_EQ(response.model_name(), "mlp");
  EXPECT_EQ(response.model_version(), "3");
  EXPECT_EQ(response.id(), "req-7");
  ASSERT_EQ(response.outputs_size(), 2);
  EXPECT_EQ(response.outputs(0).name(), "valid");
  EXPECT_EQ(response.outputs(0).datatype(), "BOOL");
  EXPECT_THAT(response.outputs(0).shape(), ElementsAre(kRows));
  EXPECT_EQ(response.outputs(1).name(), "y");
  EXPECT_EQ(response.outputs(1).datatype(), "FP32");
  EXPECT_THAT(response.outputs(1).shape(), ElementsAre(kRows, 2));
  EXPECT_FALSE(response.outputs(1).has_contents());
  ASSERT_EQ(response.raw_output_contents_size(), 2);
  EXPECT_EQ(response.raw_output_contents(0).size(), static_cast<size_t>(kRows));
  EXPECT_EQ(response.raw_output_contents(1).size(), static_cast<size_t>(kRows * 2 * 4));

  ASSERT_EQ(destinations.size(), 3u);  // per interface output
  EXPECT_EQ(destinations[0],
            reinterpret_cast<std::byte*>(response.mutable_raw_output_contents(1)->data()));
  EXPECT_EQ(destinations[1], nullptr);  // score was not asked for
  EXPECT_EQ(destinations[2],
            reinterpret_cast<std::byte*>(response.mutable_raw_output_contents(0)->data()));
  // What is written through the pointers is what the client receives.
  const std::vector<float> y = {1, 2, 3, 4, 5, 6, 7, 8};
  std::memcpy(destinations[0], y.data(), y.size() * sizeof(float));
  destinations[2][1] = std::byte{1};
  inference::ModelInferResponse received;
  ASSERT_TRUE(received.ParseFromString(response.SerializeAsString()));
  EXPECT_EQ(received.raw_output_contents(1), Bytes(y));
  EXPECT_EQ(received.raw_output_contents(0), std::string("\0\1\0\0", 4));
}

TEST(RequestValidationTest, ResponseHoldsEveryOutputWhenNoneIsNamed) {
  const Request request = TypedRequest(1);
  const ValidatedRequest validated = *ValidateInferRequest(request, Mlp());
  inference::ModelInferResponse response;
  const std::vector<std::byte*> destinations =
      PrepareInferResponse(request, Mlp(), "1", validated, &response);
  ASSERT_EQ(response.outputs_size(), 3);
  EXPECT_EQ(response.outputs(0).name(), "y");
  EXPECT_EQ(response.outputs(1).name(), "score");
  EXPECT_EQ(response.outputs(1).datatype(), "INT64");
  EXPECT_THAT(response.outputs(1).shape(), ElementsAre(1, 1));
  EXPECT_EQ(response.outputs(2).name(), "valid");
  EXPECT_THAT(response.outputs(2).shape(), ElementsAre(1));
  EXPECT_EQ(response.raw_output_contents(1).size(), 8u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(destinations[k],
              reinterpret_cast<std::byte*>(response.mutable_raw_output_contents(k)->data()));
  }
}

// ---------------------------------------------------------- shared memory

// The test data in a shared memory object: x's bytes at kXOffset, room for
// y's rows at kYOffset, registered as regions "in" (the whole object) and
// "out" (kYBytes from kYOffset).
class SharedMemoryValidationTest : public ::testing::Test {
 protected:
  static constexpr size_t kObjectBytes = 4096;
  static constexpr uint64_t kXOffset = 40;  // not aligned to anything
  static constexpr uint64_t kXBytes = kRows * 3 * sizeof(float);
  static constexpr uint64_t kYOffset = 1024;
  static constexpr uint64_t kYBytes = kRows * 2 * sizeof(float);

  void SetUp() override {
    ASSERT_NE(object_.data(), nullptr);
    std::vector<float> x;
    for (int64_t e = 0; e < kRows * 3; ++e) x.push_back(XValue(e));
    std::memcpy(object_.data() + kXOffset, x.data(), kXBytes);
    ASSERT_TRUE(registry_.Register("in", object_.key(), 0, kObjectBytes).ok());
    ASSERT_TRUE(registry_.Register("out", object_.key(), kYOffset, kYBytes).ok());
  }

  // RawRequest with x in region "in" and y asked into region "out".
  static Request SharedRequest() {
    Request request = RawRequest();
    request.mutable_raw_input_contents()->DeleteSubrange(2, 1);  // x's
    auto& x = *Input(&request, "x")->mutable_parameters();
    x["shared_memory_region"].set_string_param("in");
    x["shared_memory_byte_size"].set_int64_param(kXBytes);
    x["shared_memory_offset"].set_int64_param(kXOffset);
    request.add_outputs()->set_name("valid");
    auto* y = request.add_outputs();
    y->set_name("y");
    (*y->mutable_parameters())["shared_memory_region"].set_string_param("out");
    (*y->mutable_parameters())["shared_memory_byte_size"].set_int64_param(kYBytes);
    return request;
  }

  void ExpectSharedRejected(const Request& request, const char* what, const char* expected) {
    absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, Mlp(), &registry_);
    ASSERT_FALSE(validated.ok()) << what;
    EXPECT_EQ(validated.status().code(), absl::StatusCode::kInvalidArgument) << what;
    EXPECT_THAT(Message(validated.status()), HasSubstr(expected)) << what;
  }

  TestShmObject object_{kObjectBytes};
  SharedMemoryRegistry registry_;
};

TEST_F(SharedMemoryValidationTest, InputsAndOutputsPointIntoTheirRegions) {
  const Request request = SharedRequest();
  absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, Mlp(), &registry_);
  ASSERT_TRUE(validated.ok()) << validated.status();
  // x from the region, in place (the server's own mapping of it); ids and
  // mask take raw entries 0 and 1.
  EXPECT_EQ(validated->view.inputs[0].data, registry_.Slice("in", kXOffset, kXBytes)->data);
  EXPECT_EQ(validated->view.inputs[1].data,
            reinterpret_cast<const std::byte*>(request.raw_input_contents(0).data()));
  EXPECT_EQ(validated->view.inputs[2].data,
            reinterpret_cast<const std::byte*>(request.raw_input_contents(1).data()));
  ExpectTestData(*validated, kRows);
  EXPECT_EQ(validated->regions.size(), 2u);  // "in" and "out", held

  inference::ModelInferResponse response;
  const std::vector<std::byte*> destinations =
      PrepareInferResponse(request, Mlp(), "1", *validated, &response);
  EXPECT_EQ(destinations[0], registry_.Slice("out", 0, kYBytes)->data);  // y into "out"
  EXPECT_EQ(destinations[2],
            reinterpret_cast<std::byte*>(response.mutable_raw_output_contents(0)->data()));
  // y keeps its place: metadata and an empty entry 1, as Triton answers.
  ASSERT_EQ(response.outputs_size(), 2);
  ASSERT_EQ(response.raw_output_contents_size(), 2);
  EXPECT_EQ(response.outputs(1).name(), "y");
  EXPECT_THAT(response.outputs(1).shape(), ElementsAre(kRows, 2));
  EXPECT_TRUE(response.raw_output_contents(1).empty());
  EXPECT_EQ(response.outputs(1).parameters().at("shared_memory_region").string_param(), "out");
  EXPECT_EQ(response.outputs(1).parameters().at("shared_memory_byte_size").int64_param(),
            static_cast<int64_t>(kYBytes));
  EXPECT_TRUE(response.outputs(0).parameters().empty());
  EXPECT_EQ(response.raw_output_contents(0).size(), static_cast<size_t>(kRows));
}

// Note [Pinned shared memory]: validation marks the tensors that lie in
// pinned regions, by interface index (x is input 0, y output 0): with a GPU
// a pinning registry pins; without one (CI) nothing is, and a registry that
// does not pin never marks a tensor.
TEST_F(SharedMemoryValidationTest, MarksTensorsInPinnedRegions) {
  SharedMemoryRegistry pinning(/*pin_device=*/0);
  ASSERT_TRUE(pinning.Register("in", object_.key(), 0, kObjectBytes).ok());
  ASSERT_TRUE(pinning.Register("out", object_.key(), kYOffset, kYBytes).ok());
  int devices = 0;
  const bool gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  cudaGetLastError();
  const Request request = SharedRequest();
  absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, Mlp(), &pinning);
  ASSERT_TRUE(validated.ok()) << validated.status();
  const RowMemory in_pinned = gpu ? RowMemory::kPinned : RowMemory::kPageable;
  EXPECT_EQ(validated->view.inputs[0].memory, in_pinned);
  EXPECT_EQ(validated->view.outputs[0].memory, in_pinned);
  EXPECT_FALSE(validated->view.Uses(RowMemory::kDevice));
  // Each input's rows are its shape's row bytes apart.
  EXPECT_EQ(validated->view.inputs[0].pitch, Mlp().inputs[0].bytes_per_row());
  ExpectTestData(*validated, kRows);

  validated = ValidateInferRequest(request, Mlp(), &registry_);
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_FALSE(validated->view.Uses(RowMemory::kPinned));
}

// Note [Shared memory lifetime]: the validated request keeps its regions
// mapped while the client unregisters them.
TEST_F(SharedMemoryValidationTest, ValidatedRequestHoldsItsRegions) {
  const Request request = SharedRequest();
  absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, Mlp(), &registry_);
  ASSERT_TRUE(validated.ok()) << validated.status();
  registry_.UnregisterAll();
  ExpectTestData(*validated, kRows);
  inference::ModelInferResponse response;
  std::byte* y = PrepareInferResponse(request, Mlp(), "1", *validated, &response)[0];
  y[0] = std::byte{0x5A};
  EXPECT_EQ(object_.data()[kYOffset], std::byte{0x5A});
}

TEST_F(SharedMemoryValidationTest, EveryInputInSharedMemoryNeedsNoRawContents) {
  Request request = SharedRequest();
  request.clear_raw_input_contents();
  std::vector<int64_t> ids;
  for (int64_t e = 0; e < kRows * 2; ++e) ids.push_back(IdValue(e));
  std::memcpy(object_.data() + 2048, ids.data(), ids.size() * sizeof(int64_t));
  for (int64_t e = 0; e < kRows; ++e) {
    object_.data()[3000 + e] = std::byte{MaskValue(e) ? uint8_t{1} : uint8_t{0}};
  }
  const auto place = [&request](const char* name, int64_t offset, int64_t bytes) {
    auto& parameters = *Input(&request, name)->mutable_parameters();
    parameters["shared_memory_region"].set_string_param("in");
    parameters["shared_memory_offset"].set_int64_param(offset);
    parameters["shared_memory_byte_size"].set_int64_param(bytes);
  };
  place("ids", 2048, kRows * 2 * sizeof(int64_t));
  place("mask", 3000, kRows);
  absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, Mlp(), &registry_);
  ASSERT_TRUE(validated.ok()) << validated.status();
  ExpectTestData(*validated, kRows);

  object_.data()[3001] = std::byte{2};  // not a BOOL
  ExpectSharedRejected(request, "BOOL byte 2 in shared memory",
                       "input 'mask' of model 'mlp': shared-memory BOOL element 1 is byte 2");
}

TEST_F(SharedMemoryValidationTest, BadRegionsNameTheRegionAndWhy) {
  const BadRequestCase cases[] = {
      {"unknown region",
       [](Request* r) {
         (*Input(r, "x")->mutable_parameters())["shared_memory_region"].set_string_param("nope");
       },
       "input 'x' of model 'mlp': shared memory region 'nope' is not registered"},
      {"offset past the region",
       [](Request* r) {
         (*Input(r, "x")->mutable_parameters())["shared_memory_offset"].set_int64_param(4090);
       },
       "input 'x' of model 'mlp': shared_memory_offset 4090 + shared_memory_byte_size 48 runs "
       "past the 4096 bytes of shared memory region 'in'"},
      {"input byte_size is not the shape's",
       [](Request* r) {
         (*Input(r, "x")->mutable_parameters())["shared_memory_byte_size"].set_int64_param(44);
       },
       "input 'x' of model 'mlp': shared_memory_byte_size 44 in shared memory region 'in', "
       "expected 48 for shape [4,3] FP32"},
      {"output region too small",
       [](Request* r) {
         auto& y = *r->mutable_outputs(1)->mutable_parameters();
         y["shared_memory_region"].set_string_param("in");
         y["shared_memory_offset"].set_int64_param(4090);
       },
       "output 'y' of model 'mlp': shared_memory_offset 4090 + shared_memory_byte_size 32 runs "
       "past the 4096 bytes of shared memory region 'in'"},
      {"output byte_size too small",
       [](Request* r) {
         (*r->mutable_outputs(1)->mutable_parameters())["shared_memory_byte_size"].set_int64_param(
             31);
       },
       "output 'y' of model 'mlp': shared_memory_byte_size 31 in shared memory region 'out' "
       "cannot hold its 32 bytes (4 rows of 8)"},
      {"unknown output region",
       [](Request* r) {
         (*r->mutable_outputs(1)->mutable_parameters())["shared_memory_region"].set_string_param(
             "gone");
       },
       "output 'y' of model 'mlp': shared memory region 'gone' is not registered"},
      {"region without byte_size",
       [](Request* r) { Input(r, "x")->mutable_parameters()->erase("shared_memory_byte_size"); },
       "input 'x' of model 'mlp' names shared_memory_region 'in' without shared_memory_byte_size"},
      {"byte_size without region",
       [](Request* r) { Input(r, "x")->mutable_parameters()->erase("shared_memory_region"); },
       "input 'x' of model 'mlp' has shared_memory_byte_size or shared_memory_offset but no "
       "shared_memory_region"},
      {"negative byte_size",
       [](Request* r) {
         (*Input(r, "x")->mutable_parameters())["shared_memory_byte_size"].set_int64_param(-48);
       },
       "input 'x' of model 'mlp': shared_memory_byte_size must be an int64_param of at least 0"},
      {"negative offset",
       [](Request* r) {
         (*Input(r, "x")->mutable_parameters())["shared_memory_offset"].set_int64_param(-1);
       },
       "shared_memory_offset must be an int64_param of at least 0"},
      {"region not a string",
       [](Request* r) {
         (*Input(r, "x")->mutable_parameters())["shared_memory_region"].set_int64_param(1);
       },
       "input 'x' of model 'mlp': shared_memory_region must be a string_param"},
      {"region and typed contents",
       [](Request* r) { Input(r, "x")->mutable_contents()->add_fp32_contents(1.0f); },
       "input 'x' of model 'mlp' is in shared memory region 'in' but also carries "
       "contents.fp32_contents"},
      {"a raw entry for the input in the region too",
       [](Request* r) { r->add_raw_input_contents(std::string(kXBytes, '\0')); },
       "the request to model 'mlp' has 3 raw_input_contents entries for 2 inputs outside shared "
       "memory"},
  };
  for (const BadRequestCase& c : cases) {
    Request request = SharedRequest();
    c.edit(&request);
    ExpectSharedRejected(request, c.what, c.expected);
  }
  // A uint64_param byte count is read as one too.
  Request request = SharedRequest();
  (*Input(&request, "x")->mutable_parameters())["shared_memory_byte_size"].set_uint64_param(
      kXBytes);
  EXPECT_TRUE(ValidateInferRequest(request, Mlp(), &registry_).ok());
}

TEST_F(SharedMemoryValidationTest, HugeRegionNamesAreQuotedAsShortPrefixes) {
  constexpr size_t kHugeText = 64 << 10;  // eight times gRPC's 8 KiB metadata limit
  constexpr size_t kMessageBound = 256;   // a one-line message, whatever the client sent
  Request request = SharedRequest();
  (*Input(&request, "x")->mutable_parameters())["shared_memory_region"].set_string_param(
      std::string(kHugeText, 'r'));
  const absl::Status status = ValidateInferRequest(request, Mlp(), &registry_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(status.message().size(), kMessageBound);
  EXPECT_THAT(Message(status), HasSubstr("(65536 bytes)"));
}

// ------------------------------------------------------------------ BYTES
// Note [Strings at the model's edges] in runtime/ir.h: BYTES tensors as
// ResolveStringTensors leaves them.

// s [B,2] the text of INT32, f [B] the text of FP32 -> t [B,2] INT32 as text.
ModelInterface TextModel() {
  ModelInterface model;
  model.name = "text";
  model.max_batch_size = kMaxBatch;
  model.inputs = {{"s", DType::kInt32, {2}}, {"f", DType::kFloat32, {}}};
  model.outputs = {{"t", DType::kInt32, {2}}};
  model.inputs[0].wire = model.inputs[1].wire = model.outputs[0].wire = TensorWire::kText;
  return model;
}

std::string Serialized(const std::vector<std::string>& elements) {
  std::string out;
  for (const std::string& element : elements) AppendBytesElement(element, &out);
  return out;
}

// Two rows of TextModel's inputs as raw contents: s holds `s`, f 0.5 and -INF.
Request TextRequest(const std::vector<std::string>& s = {"1", "-2", " 3", "+40"}) {
  Request request;
  request.set_model_name("text");
  AddInput(&request, "s", "BYTES", {2, 2});
  request.add_raw_input_contents(Serialized(s));
  AddInput(&request, "f", "BYTES", {2});
  request.add_raw_input_contents(Serialized({"0.5", "-INF"}));
  return request;
}

template <typename T>
std::vector<T> Numbers(const std::byte* data, size_t count) {
  std::vector<T> values(count);
  std::memcpy(values.data(), data, count * sizeof(T));
  return values;
}

TEST(BytesValidationTest, TextInputsArriveAsTheirNumbersFromRawAndTypedContents) {
  const Request raw = TextRequest();
  Request typed;
  typed.set_model_name("text");
  auto* s = AddInput(&typed, "s", "BYTES", {2, 2});
  for (const char* text : {"1", "-2", " 3", "+40"}) s->mutable_contents()->add_bytes_contents(text);
  auto* f = AddInput(&typed, "f", "BYTES", {2});
  f->mutable_contents()->add_bytes_contents("0.5");
  f->mutable_contents()->add_bytes_contents("-INF");
  for (const Request* request : std::vector<const Request*>{&raw, &typed}) {
    absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(*request, TextModel());
    ASSERT_TRUE(validated.ok()) << validated.status();
    EXPECT_EQ(validated->view.rows, 2);
    EXPECT_THAT(Numbers<int32_t>(validated->view.inputs[0].data, 4), ElementsAre(1, -2, 3, 40));
    EXPECT_THAT(Numbers<float>(validated->view.inputs[1].data, 2),
                ElementsAre(0.5f, -std::numeric_limits<float>::infinity()));
  }
}

// Malformed BYTES never crash or read past their bytes: each is refused
// naming the input and what is wrong.
TEST(BytesValidationTest, MalformedBytesSayWhatIsWrong) {
  const std::string two = Serialized({"1", "2"});
  const BadRequestCase cases[] = {
      {"a number type for a BYTES input", [](Request* r) { Input(r, "s")->set_datatype("INT32"); },
       "inference input 's' data-type is 'INT32', but model 'text' expects 'BYTES'"},
      {"too few elements",
       [&](Request* r) { *r->mutable_raw_input_contents(0) = two; },
       "input 's' of model 'text': raw_input_contents holds 10 bytes, too few for the 4 elements"},
      {"too many elements",
       [](Request* r) { *r->mutable_raw_input_contents(0) = Serialized({"1", "2", "3", "4", "5"}); },
       "raw_input_contents has 5 bytes after its 4 elements: unexpected number of string elements"},
      {"a length past the end",
       [](Request* r) {
         std::string data = Serialized({"1", "2", "3", "4"});
         data[15] = '\x7f';  // element 3 claims 127 bytes, 1 remains
         *r->mutable_raw_input_contents(0) = data;
       },
       "raw_input_contents has element 3 of length 127 but only 1 bytes after its length"},
      {"a 4 GiB length",
       [](Request* r) {
         std::string data = Serialized({"1", "2", "3", "4"});
         data.replace(0, 4, "\xff\xff\xff\xff");
         *r->mutable_raw_input_contents(0) = data;
       },
       "has element 0 of length 4294967295"},
      {"a cut length indicator",
       [](Request* r) {
         *r->mutable_raw_input_contents(0) =
             Serialized({"1", "2", "3333"}) + std::string("\x01\x00", 2);
       },
       "incomplete string length indicator for element 3, expecting 4 bytes but only 2"},
      {"text that is not a number",
       [](Request* r) { *r->mutable_raw_input_contents(0) = Serialized({"1", "x2", "3", "4"}); },
       "input 's' of model 'text': element 1, 'x2', is not a decimal integer"},
      {"a fraction for an integer",
       [](Request* r) { *r->mutable_raw_input_contents(0) = Serialized({"1", "2", "3.5", "4"}); },
       "element 2, '3.5', is not a decimal integer"},
      {"beyond INT32",
       [](Request* r) {
         *r->mutable_raw_input_contents(0) = Serialized({"1", "2", "3", "2147483648"});
       },
       "element 3, '2147483648', is outside the range of INT32 (-2147483648 to 2147483647)"},
      {"not a float",
       [](Request* r) { *r->mutable_raw_input_contents(1) = Serialized({"1.5x", "2"}); },
       "input 'f' of model 'text': element 0, '1.5x', is not a number (FP32 elements"},
      {"typed count",
       [](Request* r) {
         r->clear_raw_input_contents();
         for (const char* name : {"s", "f"}) {
           Input(r, name)->mutable_contents()->add_bytes_contents("1");
         }
       },
       "expected 4 string elements for inference input 's' for model 'text', got 1 in "
       "contents.bytes_contents"},
      {"typed field of another type",
       [](Request* r) {
         r->clear_raw_input_contents();
         Input(r, "s")->mutable_contents()->add_int_contents(1);
         Input(r, "f")->mutable_contents()->add_bytes_contents("1");
       },
       "input 's' of model 'text' is BYTES but carries contents.int_contents; BYTES elements go "
       "in contents.bytes_contents"},
      {"no data",
       [](Request* r) {
         r->clear_raw_input_contents();
         Input(r, "f")->mutable_contents()->add_bytes_contents("1");
       },
       "input 's' of model 'text' has no data; send it in raw_input_contents or in "
       "contents.bytes_contents"},
  };
  for (const BadRequestCase& c : cases) {
    Request request = TextRequest();
    c.edit(&request);
    absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, TextModel());
    ASSERT_FALSE(validated.ok()) << c.what;
    EXPECT_EQ(validated.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_THAT(Message(validated.status()), HasSubstr(c.expected)) << c.what;
  }
}

// An element a client sends is quoted as a short prefix (Note [Quoting
// client text]).
TEST(BytesValidationTest, HugeElementsAreQuotedShort) {
  constexpr size_t kHugeText = 1 << 20;
  constexpr size_t kMessageBound = 256;
  const Request request = TextRequest({"1", std::string(kHugeText, '9') + "x", "3", "4"});
  const absl::Status status = ValidateInferRequest(request, TextModel()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(status.message().size(), kMessageBound);
  EXPECT_THAT(Message(status), HasSubstr("(1048577 bytes)"));
}

// A text output's numbers, written where PrepareInferResponse says, come
// back as their text, serialized, with datatype BYTES.
TEST(BytesValidationTest, TextOutputsAreFormattedWhenTheResponseIsFinished) {
  const Request request = TextRequest();
  const ModelInterface model = TextModel();
  absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, model);
  ASSERT_TRUE(validated.ok()) << validated.status();
  inference::ModelInferResponse response;
  const std::vector<std::byte*> destinations =
      PrepareInferResponse(request, model, "1", *validated, &response);
  ASSERT_EQ(response.outputs_size(), 1);
  EXPECT_EQ(response.outputs(0).datatype(), "BYTES");
  EXPECT_THAT(response.outputs(0).shape(), ElementsAre(2, 2));
  const int32_t sums[] = {0, -7, 2147483647, std::numeric_limits<int32_t>::min()};
  std::memcpy(destinations[0], sums, sizeof(sums));  // as a runner writes them
  ASSERT_TRUE(FinishOutputs(model, *validated, &response).ok());
  EXPECT_EQ(response.raw_output_contents(0),
            Serialized({"0", "-7", "2147483647", "-2147483648"}));
}

TEST(BytesValidationTest, ClassifyingABytesOutputIsRefused) {
  Request request = TextRequest();
  auto* t = request.add_outputs();
  t->set_name("t");
  (*t->mutable_parameters())["classification"].set_int64_param(2);
  EXPECT_THAT(Message(ValidateInferRequest(request, TextModel()).status()),
              HasSubstr("class result not available for output due to unsupported type 'BYTES'"));
}

// p [-1,-1] -> q [-1,-1] and r [4] handing p back, without batching (Triton's
// QA identity models of "object" tensors).
ModelInterface PassModel() {
  ModelInterface model;
  model.name = "pass";
  model.max_batch_size = 1;
  model.batching = false;
  model.inputs = {{"p", DType::kFloat32, {-1, -1}}};
  model.outputs = {{"q", DType::kFloat32, {-1, -1}}, {"r", DType::kFloat32, {4}}};
  model.inputs[0].wire = model.outputs[0].wire = model.outputs[1].wire = TensorWire::kPassed;
  return model;
}

TEST(BytesValidationTest, PassedStringsComeBackAsSentInAnyShape) {
  const ModelInterface model = PassModel();
  const std::vector<std::string> sent = {"a", "", std::string("\0\xff", 2), "long text"};
  for (const Dims& shape : {Dims{2, 2}, Dims{1, 4}, Dims{4, 1}}) {
    Request request;
    request.set_model_name("pass");
    AddInput(&request, "p", "BYTES", shape);
    request.add_raw_input_contents(Serialized(sent));
    absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, model);
    ASSERT_TRUE(validated.ok()) << validated.status();
    EXPECT_EQ(validated->view.inputs[0].data, nullptr);  // the runtime never reads it
    inference::ModelInferResponse response;
    const std::vector<std::byte*> destinations =
        PrepareInferResponse(request, model, "1", *validated, &response);
    EXPECT_EQ(destinations[0], nullptr);
    ASSERT_TRUE(FinishOutputs(model, *validated, &response).ok());
    ASSERT_EQ(response.outputs_size(), 2);
    EXPECT_EQ(response.outputs(0).datatype(), "BYTES");
    EXPECT_THAT(response.outputs(0).shape(), ElementsAre(shape[0], shape[1]));
    EXPECT_THAT(response.outputs(1).shape(), ElementsAre(4));  // its own fixed dims
    EXPECT_EQ(response.raw_output_contents(0), Serialized(sent));
    EXPECT_EQ(response.raw_output_contents(1), Serialized(sent));
  }
  // Empty tensors are tensors too.
  Request empty;
  AddInput(&empty, "p", "BYTES", {0, 3});
  empty.add_raw_input_contents("");
  EXPECT_TRUE(ValidateInferRequest(empty, model).ok());

  const auto refused = [&model](Dims shape, std::string data) {
    Request request;
    AddInput(&request, "p", "BYTES", shape);
    request.add_raw_input_contents(std::move(data));
    return Message(ValidateInferRequest(request, model).status());
  };
  EXPECT_THAT(refused({-1, 4}, ""), HasSubstr("unexpected shape for input 'p'"));
  EXPECT_THAT(refused({2}, Serialized(sent)), HasSubstr("unexpected shape for input 'p'"));
  EXPECT_THAT(refused({std::numeric_limits<int64_t>::max(), 2}, Serialized(sent)),
              HasSubstr("has too many elements to address"));
  EXPECT_THAT(refused({1 << 30, 1 << 30}, Serialized(sent)),
              HasSubstr("too few for the 1152921504606846976 elements"));
}

// BYTES in shared memory (either kind reads the same; a system region
// here): an input's byte_size is its serialized size, an output's strings go
// into its range when the response is finished, or it is refused with
// Triton's text when they do not fit.
TEST_F(SharedMemoryValidationTest, BytesInputsAndOutputsInRegions) {
  const std::string s = Serialized({"5", "6", "7", "8"});
  std::memcpy(object_.data() + kXOffset, s.data(), s.size());
  Request request = TextRequest();
  request.mutable_raw_input_contents()->DeleteSubrange(0, 1);  // s's
  auto& parameters = *Input(&request, "s")->mutable_parameters();
  parameters["shared_memory_region"].set_string_param("in");
  parameters["shared_memory_byte_size"].set_int64_param(static_cast<int64_t>(s.size()));
  parameters["shared_memory_offset"].set_int64_param(kXOffset);
  auto* t = request.add_outputs();
  t->set_name("t");
  (*t->mutable_parameters())["shared_memory_region"].set_string_param("out");
  (*t->mutable_parameters())["shared_memory_byte_size"].set_int64_param(kYBytes);
  const ModelInterface model = TextModel();
  absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, model, &registry_);
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_THAT(Numbers<int32_t>(validated->view.inputs[0].data, 4), ElementsAre(5, 6, 7, 8));

  inference::ModelInferResponse response;
  std::byte* numbers = PrepareInferResponse(request, model, "1", *validated, &response)[0];
  ASSERT_NE(numbers, registry_.Slice("out", 0, kYBytes)->data);  // numbers are not its bytes
  const int32_t sums[] = {10, 12, 14, 16};
  std::memcpy(numbers, sums, sizeof(sums));
  ASSERT_TRUE(FinishOutputs(model, *validated, &response).ok());
  const std::string text = Serialized({"10", "12", "14", "16"});
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(object_.data() + kYOffset), text.size()),
            text);
  EXPECT_TRUE(response.raw_output_contents(0).empty());
  EXPECT_EQ(response.outputs(0).parameters().at("shared_memory_region").string_param(), "out");
  EXPECT_EQ(response.outputs(0).parameters().at("shared_memory_byte_size").int64_param(),
            static_cast<int64_t>(text.size()));

  // Too small a range for the text: refused once its size is known.
  (*t->mutable_parameters())["shared_memory_byte_size"].set_int64_param(8);
  validated = ValidateInferRequest(request, model, &registry_);
  ASSERT_TRUE(validated.ok()) << validated.status();
  std::memcpy(PrepareInferResponse(request, model, "1", *validated, &response)[0], sums,
              sizeof(sums));
  const absl::Status finished = FinishOutputs(model, *validated, &response);
  EXPECT_EQ(finished.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(finished), HasSubstr("shared memory size specified with the request for "
                                           "output 't' (8 bytes) should be at least 24 bytes to "
                                           "hold the results"));

  // An input's byte_size that cuts its strings is refused as raw bytes are.
  parameters["shared_memory_byte_size"].set_int64_param(static_cast<int64_t>(s.size()) - 1);
  EXPECT_THAT(Message(ValidateInferRequest(request, model, &registry_).status()),
              HasSubstr("input 's' of model 'text': shared memory region 'in' has element 3 of "
                        "length 1 but only 0 bytes"));
}

// A CUDA region (one of the server's own here, which requests name as a
// client's): BYTES read through the host, strings written back into it,
// whatever GPU the runner would copy to (Note [CUDA shared memory]).
TEST(BytesValidationTest, BytesInAndOutOfACudaRegion) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    GTEST_SKIP() << "no CUDA device";
  }
  constexpr uint64_t kRegionBytes = 256;
  constexpr uint64_t kOutputOffset = 128;
  SharedMemoryRegistry registry;
  absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> region =
      SharedMemoryRegion::AllocateCuda("strings", 0, kRegionBytes);
  ASSERT_TRUE(region.ok()) << region.status();
  ASSERT_TRUE(registry.Add(*region).ok());
  const std::string s = Serialized({"5", "-6", "7", "8"});
  ASSERT_TRUE(CopyIntoSlice(*registry.Slice("strings", 0, s.size()),
                            reinterpret_cast<const std::byte*>(s.data()), s.size())
                  .ok());
  Request request = TextRequest();
  request.mutable_raw_input_contents()->DeleteSubrange(0, 1);  // s's
  auto& parameters = *Input(&request, "s")->mutable_parameters();
  parameters["shared_memory_region"].set_string_param("strings");
  parameters["shared_memory_byte_size"].set_int64_param(static_cast<int64_t>(s.size()));
  auto* t = request.add_outputs();
  t->set_name("t");
  (*t->mutable_parameters())["shared_memory_region"].set_string_param("strings");
  (*t->mutable_parameters())["shared_memory_byte_size"].set_int64_param(kRegionBytes -
                                                                        kOutputOffset);
  (*t->mutable_parameters())["shared_memory_offset"].set_int64_param(kOutputOffset);
  const ModelInterface model = TextModel();
  for (const std::optional<int> runner_gpu : {std::optional<int>(), std::optional<int>(0)}) {
    absl::StatusOr<ValidatedRequest> validated =
        ValidateInferRequest(request, model, &registry, runner_gpu);
    ASSERT_TRUE(validated.ok()) << validated.status();
    // Numbers parsed, and text formatted, on the host.
    EXPECT_FALSE(validated->view.Uses(RowMemory::kDevice));
    EXPECT_THAT(Numbers<int32_t>(validated->view.inputs[0].data, 4), ElementsAre(5, -6, 7, 8));
    inference::ModelInferResponse response;
    const int32_t sums[] = {1, 2, 3, -4};
    std::memcpy(PrepareInferResponse(request, model, "1", *validated, &response)[0], sums,
                sizeof(sums));
    ASSERT_TRUE(FinishOutputs(model, *validated, &response).ok());
    const std::string text = Serialized({"1", "2", "3", "-4"});
    std::string written(text.size(), '\0');
    ASSERT_TRUE(CopyFromSlice(*registry.Slice("strings", kOutputOffset, text.size()),
                              reinterpret_cast<std::byte*>(written.data()))
                    .ok());
    EXPECT_EQ(written, text);
    EXPECT_EQ(response.outputs(0).parameters().at("shared_memory_byte_size").int64_param(),
              static_cast<int64_t>(text.size()));
  }
}

}  // namespace
}  // namespace graphserve
