#include "server/http_json.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

std::string Floats(std::initializer_list<float> values) {
  std::string bytes(values.size() * 4, '\0');
  std::memcpy(bytes.data(), std::data(values), bytes.size());
  return bytes;
}

TEST(HttpJsonTest, JsonDataNestedOrFlatBecomesRawBytes) {
  const std::string body =
      R"({"id": "r1", "inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 2],
          "data": [[1.5, -2], [3, 4]]}, {"name": "k", "datatype": "INT64", "shape": [2],
          "data": [7, -9]}, {"name": "b", "datatype": "BOOL", "shape": [1], "data": [true]}],
          "outputs": [{"name": "y", "parameters": {"binary_data": true}}, {"name": "z"}]})";
  absl::StatusOr<HttpInferRequest> parsed = ParseInferRequest(body, body.size(), "mlp", "1");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const inference::ModelInferRequest& request = parsed->request;
  EXPECT_EQ(request.model_name(), "mlp");
  EXPECT_EQ(request.model_version(), "1");
  EXPECT_EQ(request.id(), "r1");
  ASSERT_EQ(request.inputs_size(), 3);
  EXPECT_THAT(request.inputs(0).shape(), ::testing::ElementsAre(2, 2));
  EXPECT_EQ(request.raw_input_contents(0), Floats({1.5f, -2, 3, 4}));
  int64_t ints[2];
  ASSERT_EQ(request.raw_input_contents(1).size(), sizeof(ints));
  std::memcpy(ints, request.raw_input_contents(1).data(), sizeof(ints));
  EXPECT_EQ(ints[0], 7);
  EXPECT_EQ(ints[1], -9);
  EXPECT_EQ(request.raw_input_contents(2), std::string(1, '\1'));
  ASSERT_EQ(request.outputs_size(), 2);
  EXPECT_EQ(parsed->binary_outputs, std::set<std::string>{"y"});
  EXPECT_FALSE(parsed->all_binary);
}

// Asked over HTTP, classification goes into the request as gRPC carries it
// (Note [Classification]); 0 asks for the values, as Triton's HTTP reads it,
// and what is not an unsigned integer is refused with Triton's leading text.
TEST(HttpJsonTest, ClassificationIsCarriedIntoTheRequest) {
  const auto parse = [](const std::string& classification) {
    const std::string body = absl::StrCat(
        R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1]}],
            "outputs": [{"name": "y", "parameters": {"classification": )",
        classification, "}}]}");
    return ParseInferRequest(body, body.size(), "mlp", "");
  };
  absl::StatusOr<HttpInferRequest> parsed = parse("3");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->request.outputs_size(), 1);
  ASSERT_TRUE(parsed->request.outputs(0).parameters().contains("classification"));
  EXPECT_EQ(parsed->request.outputs(0).parameters().at("classification").int64_param(), 3);

  parsed = parse("0");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->request.outputs(0).parameters().contains("classification"));

  for (const char* bad : {"-1", "2.5", "\"3\""}) {
    parsed = parse(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("Unable to set 'classification'")) << bad;
  }
}

// Triton's request parameters, as tritonclient.http sends them: a sequence
// id as an integer or a string, flags as booleans.
TEST(HttpJsonTest, RequestParametersReachTheRequest) {
  const auto parse = [](const std::string& parameters) {
    const std::string body = absl::StrCat(
        R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1]}],
            "parameters": )",
        parameters, "}");
    return ParseInferRequest(body, body.size(), "mlp", "");
  };
  absl::StatusOr<HttpInferRequest> parsed = parse(
      R"({"sequence_id": 18446744073709551615, "sequence_start": true, "priority": 2,
          "timeout": -1, "binary_data_output": true})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const auto& parameters = parsed->request.parameters();
  EXPECT_EQ(parameters.at("sequence_id").uint64_param(), 18446744073709551615u);
  EXPECT_TRUE(parameters.at("sequence_start").bool_param());
  EXPECT_EQ(parameters.at("priority").uint64_param(), 2u);
  EXPECT_EQ(parameters.at("timeout").int64_param(), -1);
  EXPECT_FALSE(parameters.contains("binary_data_output"));  // the response's form
  EXPECT_TRUE(parsed->all_binary);

  parsed = parse(R"({"sequence_id": "a-b"})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->request.parameters().at("sequence_id").string_param(), "a-b");

  EXPECT_THAT(parse(R"({"sequence_id": [1]})").status().message(),
              HasSubstr("must be a boolean, a number or a string"));
  EXPECT_THAT(parse("[]").status().message(), HasSubstr("\"parameters\" must be a JSON object"));
}

// A classified output's BYTES tensor: strings in JSON, its serialization
// (4-byte little-endian lengths) as binary data.
TEST(HttpJsonTest, BytesOutputsAreStringsInJsonAndSerializedInBinary) {
  inference::ModelInferResponse response;
  response.set_model_name("mlp");
  auto* y = response.add_outputs();
  y->set_name("y");
  y->set_datatype("BYTES");
  y->add_shape(2);
  const std::string serialized = std::string("\x07\0\0\0", 4) + "0.5:1:\xff" +
                                 std::string("\x05\0\0\0", 4) + "0.2:0";
  response.add_raw_output_contents(serialized);

  const HttpBody body = InferResponseToHttp(response, HttpInferRequest{});
  // A label that is not UTF-8 arrives replaced, never as a broken body.
  EXPECT_THAT(body.content,
              HasSubstr("\"data\":[\"0.5:1:\xef\xbf\xbd\",\"0.2:0\"],\"datatype\":\"BYTES\""));

  HttpInferRequest binary;
  binary.all_binary = true;
  const HttpBody binary_body = InferResponseToHttp(response, binary);
  EXPECT_EQ(binary_body.content.substr(binary_body.header_length), serialized);
}

// A BYTES input's JSON strings become raw contents in the protocol's
// serialization (Note [BYTES serialization]), as gRPC's raw contents carry
// them; its binary data is taken as sent, for validation to split.
TEST(HttpJsonTest, BytesInputsBecomeSerializedRawContents) {
  const std::string serialized =
      std::string("\x02\0\0\0", 4) + "12" + std::string("\0\0\0\0", 4) +
      std::string("\x03\0\0\0", 4) + "-\xc3\xa9";
  const std::string body =
      R"({"inputs": [{"name": "s", "datatype": "BYTES", "shape": [1, 3],
          "data": [["12", "", "-\u00e9"]]}]})";
  absl::StatusOr<HttpInferRequest> parsed = ParseInferRequest(body, body.size(), "m", "");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->request.inputs(0).datatype(), "BYTES");
  EXPECT_EQ(parsed->request.raw_input_contents(0), serialized);

  const std::string header =
      R"({"inputs": [{"name": "s", "datatype": "BYTES", "shape": [3],
          "parameters": {"binary_data_size": 17}}]})";
  parsed = ParseInferRequest(header + serialized, header.size(), "m", "");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->request.raw_input_contents(0), serialized);
}

TEST(HttpJsonTest, BinaryTensorDataFollowsTheJsonHeader) {
  const std::string header =
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3],
          "parameters": {"binary_data_size": 12}}], "parameters": {"binary_data_output": true}})";
  const std::string body = header + Floats({1, 2, 3});
  absl::StatusOr<HttpInferRequest> parsed = ParseInferRequest(body, header.size(), "m", "");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->request.raw_input_contents(0), Floats({1, 2, 3}));
  EXPECT_TRUE(parsed->all_binary);

  // Binary bytes that no input claims, or claims past the end, are errors.
  EXPECT_THAT(ParseInferRequest(body + "xx", header.size(), "m", "").status().message(),
              HasSubstr("belong to no input"));
  EXPECT_THAT(
      ParseInferRequest(body.substr(0, body.size() - 1), header.size(), "m", "").status().message(),
      HasSubstr("runs past"));
}

TEST(HttpJsonTest, BadRequestsSayWhatIsWrong) {
  auto error = [](const std::string& body) {
    return std::string(ParseInferRequest(body, body.size(), "m", "").status().message());
  };
  EXPECT_THAT(error("{not json"), HasSubstr("not valid JSON"));
  // Not JSON, and shallower than the depth limit, so the parser's error.
  const std::string broken = std::string(10, '[') + std::string(9990, 'x');
  EXPECT_THAT(error(broken), HasSubstr("it starts with '[[[["));
  EXPECT_LT(error(broken).size(), 200u);  // a short prefix only
  EXPECT_THAT(error(R"({"inputs": 3})"), HasSubstr("\"inputs\" array"));
  EXPECT_THAT(
      error(R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2], "data": [1]}]})"),
      HasSubstr("has 1 values; its shape holds 2"));
  EXPECT_THAT(
      error(R"({"inputs": [{"name": "x", "datatype": "FP8", "shape": [1], "data": [1]}]})"),
      HasSubstr("datatype 'FP8' is not a datatype of the protocol (FP32, UINT8"));
  EXPECT_THAT(
      error(R"({"inputs": [{"name": "x", "datatype": "BYTES", "shape": [2], "data": ["a", 1]}]})"),
      HasSubstr("input 'x': BYTES data must be strings, got '1'"));
  EXPECT_THAT(
      error(R"({"inputs": [{"name": "x", "datatype": "BYTES", "shape": [2], "data": ["a"]}]})"),
      HasSubstr("has 1 values; its shape holds 2"));
  EXPECT_THAT(
      error(R"({"inputs": [{"name": "x", "datatype": "INT8", "shape": [1], "data": [300]}]})"),
      HasSubstr("INT8 data must be integers from -128 to 127"));
  EXPECT_THAT(
      error(R"({"inputs": [{"name": "x", "datatype": "UINT16", "shape": [1], "data": [-1]}]})"),
      HasSubstr("UINT16 data must be integers from 0 to 65535"));
  EXPECT_THAT(
      error(R"({"inputs": [{"name": "x", "datatype": "INT32", "shape": [1], "data": [1.5]}]})"),
      HasSubstr("INT32 data must be integers"));
  EXPECT_THAT(
      error(R"({"inputs": [{"name": "x", "datatype": "INT64", "shape": [1], "data": [1.5]}]})"),
      HasSubstr("INT64 data must be integers"));
  EXPECT_THAT(error(R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1]}]})"),
              HasSubstr("neither \"data\" nor binary_data_size"));
  EXPECT_EQ(ParseInferRequest("{}", 5, "m", "").status().code(),
            absl::StatusCode::kInvalidArgument);  // header longer than the body
}

// Note [Quoting client text]: a 64 KiB input name or datatype is quoted as a
// prefix with its length, never whole.
TEST(HttpJsonTest, HugeNamesAreQuotedAsAShortPrefix) {
  const std::string huge(64 << 10, 'n');
  const std::string bad_datatype =
      R"({"inputs": [{"name": "x", "datatype": ")" + huge + R"(", "shape": [1], "data": [1]}]})";
  const std::string bad_shape = R"({"inputs": [{"name": ")" + huge +
                                R"(", "datatype": "FP32", "shape": [-1], "data": [1]}]})";
  for (const std::string& body : {bad_datatype, bad_shape}) {
    const absl::Status status = ParseInferRequest(body, body.size(), "m", "").status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("...' (65536 bytes)"));
    EXPECT_LT(status.message().size(), 256u);
  }
}

// tritonclient.http's set_shared_memory: the parameters travel, no data
// and no raw entry (raw_input_contents holds the other inputs, in order).
TEST(HttpJsonTest, SharedMemoryParametersBecomeTheTensorsParameters) {
  const std::string header =
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3],
          "parameters": {"shared_memory_region": "in", "shared_memory_byte_size": 12,
                         "shared_memory_offset": 64}},
         {"name": "k", "datatype": "INT64", "shape": [1], "parameters": {"binary_data_size": 8}}],
          "outputs": [{"name": "y", "parameters": {"binary_data": false,
              "shared_memory_region": "out", "shared_memory_byte_size": 4}}]})";
  const std::string body = header + std::string(8, '\7');
  absl::StatusOr<HttpInferRequest> parsed = ParseInferRequest(body, header.size(), "m", "");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const inference::ModelInferRequest& request = parsed->request;
  ASSERT_EQ(request.raw_input_contents_size(), 1);  // k's only
  EXPECT_EQ(request.raw_input_contents(0), std::string(8, '\7'));
  const auto& x = request.inputs(0).parameters();
  EXPECT_EQ(x.at("shared_memory_region").string_param(), "in");
  EXPECT_EQ(x.at("shared_memory_byte_size").uint64_param(), 12u);
  EXPECT_EQ(x.at("shared_memory_offset").uint64_param(), 64u);
  const auto& y = request.outputs(0).parameters();
  EXPECT_EQ(y.at("shared_memory_region").string_param(), "out");
  EXPECT_EQ(y.at("shared_memory_byte_size").uint64_param(), 4u);

  // An output in a region comes back as Triton's does.
  inference::ModelInferResponse response;
  auto* output = response.add_outputs();
  output->set_name("y");
  output->set_datatype("FP32");
  output->add_shape(1);
  (*output->mutable_parameters())["shared_memory_region"].set_string_param("out");
  (*output->mutable_parameters())["shared_memory_byte_size"].set_int64_param(4);
  response.add_raw_output_contents();
  const HttpBody out = InferResponseToHttp(response, *parsed);
  EXPECT_EQ(out.header_length, 0u);
  // Triton's answer for an output in shared memory: name, datatype and
  // shape, no parameters and no data.
  EXPECT_THAT(out.content,
              HasSubstr(R"("outputs":[{"datatype":"FP32","name":"y","shape":[1]}])"));
  EXPECT_THAT(out.content, ::testing::Not(HasSubstr("parameters")));
  EXPECT_THAT(out.content, ::testing::Not(HasSubstr("\"data\"")));

  // Data beside a region is refused; so is a parameter of the wrong type.
  const std::string both =
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1],
          "parameters": {"shared_memory_region": "in", "shared_memory_byte_size": 4}}]})";
  EXPECT_THAT(ParseInferRequest(both, both.size(), "m", "").status().message(),
              HasSubstr("input 'x' names a shared_memory_region but also carries data"));
  const std::string typed =
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1],
          "parameters": {"shared_memory_region": "in", "shared_memory_byte_size": [4]}}]})";
  EXPECT_THAT(ParseInferRequest(typed, typed.size(), "m", "").status().message(),
              HasSubstr("input 'x': parameter shared_memory_byte_size must be a string or an "
                        "integer"));
}

TEST(HttpJsonTest, SharedMemoryRegistrationAndStatusBodies) {
  absl::StatusOr<inference::SystemSharedMemoryRegisterRequest> request =
      ParseSystemSharedMemoryRegister(R"({"key": "/k", "offset": 8, "byte_size": 64})", "in");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->name(), "in");
  EXPECT_EQ(request->key(), "/k");
  EXPECT_EQ(request->offset(), 8u);
  EXPECT_EQ(request->byte_size(), 64u);
  EXPECT_EQ(ParseSystemSharedMemoryRegister(R"({"key": "/k", "byte_size": 64})", "in")->offset(),
            0u);
  for (const char* bad :
       {"", "[]", R"({"byte_size": 64})", R"({"key": "/k"})", R"({"key": "/k", "byte_size": -1})",
        R"({"key": 1, "byte_size": 1})", R"({"key": "/k", "byte_size": 1, "offset": "0"})"}) {
    const absl::Status status = ParseSystemSharedMemoryRegister(bad, "in").status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(status.message()), HasSubstr("shared memory region 'in'")) << bad;
  }

  inference::SystemSharedMemoryStatusResponse status;
  for (const char* name : {"b", "a"}) {
    auto& region = (*status.mutable_regions())[name];
    region.set_name(name);
    region.set_key("/k");
    region.set_offset(1);
    region.set_byte_size(2);
  }
  EXPECT_EQ(SystemSharedMemoryStatusToJson(status),
            R"([{"byte_size":2,"key":"/k","name":"a","offset":1},)"
            R"({"byte_size":2,"key":"/k","name":"b","offset":1}])");
  EXPECT_EQ(SystemSharedMemoryStatusToJson({}), "[]");
  EXPECT_EQ(CudaSharedMemoryStatusToJson({}), "[]");
}

TEST(HttpJsonTest, CudaSharedMemoryRegistrationBody) {
  // "AAEC/w==" is the bytes 00 01 02 ff.
  absl::StatusOr<inference::CudaSharedMemoryRegisterRequest> request =
      ParseCudaSharedMemoryRegister(
          R"({"raw_handle": {"b64": "AAEC/w=="}, "device_id": 1, "byte_size": 64})", "out");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->name(), "out");
  EXPECT_EQ(request->raw_handle(), std::string("\x00\x01\x02\xff", 4));
  EXPECT_EQ(request->device_id(), 1);
  EXPECT_EQ(request->byte_size(), 64u);
  for (const char* bad :
       {"", "[]", R"({"raw_handle": "AAEC", "device_id": 0, "byte_size": 64})",
        R"({"raw_handle": {"b64": "!!"}, "device_id": 0, "byte_size": 64})",
        R"({"raw_handle": {"b64": "AAEC"}, "byte_size": 64})",
        R"({"raw_handle": {"b64": "AAEC"}, "device_id": -1, "byte_size": 64})",
        R"({"raw_handle": {"b64": "AAEC"}, "device_id": 0})"}) {
    const absl::Status status = ParseCudaSharedMemoryRegister(bad, "out").status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(status.message()), HasSubstr("CUDA shared memory region 'out'"))
        << bad;
  }
}

TEST(HttpJsonTest, RepositoryIndexBodies) {
  // tritonclient.http sends no body at all.
  for (const char* body : {"", " \n", "{}", R"({"ready": false})"}) {
    absl::StatusOr<inference::RepositoryIndexRequest> request = ParseRepositoryIndex(body);
    ASSERT_TRUE(request.ok()) << body << ": " << request.status();
    EXPECT_FALSE(request->ready()) << body;
  }
  EXPECT_TRUE(ParseRepositoryIndex(R"({"ready": true})")->ready());
  for (const char* bad : {"[]", "{", R"({"ready": 1})"}) {
    EXPECT_EQ(ParseRepositoryIndex(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }

  inference::RepositoryIndexResponse index;
  auto* ready = index.add_models();
  ready->set_name("mlp");
  ready->set_version("1");
  ready->set_state("READY");
  auto* failed = index.add_models();
  failed->set_name("bad");
  failed->set_version("2");
  failed->set_state("UNAVAILABLE");
  failed->set_reason("no model.onnx");
  index.add_models()->set_name("dlrm_dense");  // never loaded: the name alone, as Triton
  EXPECT_EQ(RepositoryIndexToJson(index),
            R"([{"name":"mlp","state":"READY","version":"1"},)"
            R"({"name":"bad","reason":"no model.onnx","state":"UNAVAILABLE","version":"2"},)"
            R"({"name":"dlrm_dense"}])");
  EXPECT_EQ(RepositoryIndexToJson({}), "[]");
}

TEST(HttpJsonTest, RepositoryLoadAndUnloadBodies) {
  absl::StatusOr<inference::RepositoryModelLoadRequest> load =
      ParseRepositoryModelLoad(R"({"parameters": {"config": "{\"max_batch_size\": 8}"}})", "m");
  ASSERT_TRUE(load.ok()) << load.status();
  EXPECT_EQ(load->model_name(), "m");
  ASSERT_EQ(load->parameters().count("config"), 1u);
  EXPECT_EQ(load->parameters().at("config").string_param(), R"({"max_batch_size": 8})");
  for (const char* body : {"", "{}", R"({"parameters": {}})"}) {
    absl::StatusOr<inference::RepositoryModelLoadRequest> plain =
        ParseRepositoryModelLoad(body, "m");
    ASSERT_TRUE(plain.ok()) << body << ": " << plain.status();
    EXPECT_TRUE(plain->parameters().empty()) << body;
  }
  // Other kinds of parameters pass through for InferenceProtocol to judge.
  load = ParseRepositoryModelLoad(R"({"parameters": {"n": 3, "config": true}})", "m");
  ASSERT_TRUE(load.ok()) << load.status();
  EXPECT_EQ(load->parameters().at("n").int64_param(), 3);
  EXPECT_TRUE(load->parameters().at("config").bool_param());

  // What tritonclient.http's unload_model sends.
  absl::StatusOr<inference::RepositoryModelUnloadRequest> unload =
      ParseRepositoryModelUnload(R"({"parameters": {"unload_dependents": false}})", "m");
  ASSERT_TRUE(unload.ok()) << unload.status();
  EXPECT_EQ(unload->model_name(), "m");
  EXPECT_FALSE(unload->parameters().at("unload_dependents").bool_param());

  for (const char* bad : {"[]", "{", R"({"parameters": []})", R"({"parameters": {"c": 1.5}})",
                          R"({"parameters": {"c": {}}})"}) {
    const absl::Status status = ParseRepositoryModelLoad(bad, "m").status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(status.message()), HasSubstr("load of model 'm'")) << bad;
    EXPECT_EQ(ParseRepositoryModelUnload(bad, "m").status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(HttpJsonTest, ResponseIsJsonOrJsonThenBinary) {
  inference::ModelInferResponse response;
  response.set_model_name("mlp");
  response.set_model_version("1");
  response.set_id("r1");
  auto* y = response.add_outputs();
  y->set_name("y");
  y->set_datatype("FP32");
  y->add_shape(1);
  y->add_shape(2);
  response.add_raw_output_contents(Floats({0.5f, -1}));

  HttpInferRequest json_only;
  HttpBody body = InferResponseToHttp(response, json_only);
  EXPECT_EQ(body.header_length, 0u);
  EXPECT_EQ(body.content,
            R"({"id":"r1","model_name":"mlp","model_version":"1","outputs":[{"data":[0.5,-1.0],)"
            R"("datatype":"FP32","name":"y","shape":[1,2]}]})");

  HttpInferRequest binary;
  binary.binary_outputs = {"y"};
  body = InferResponseToHttp(response, binary);
  ASSERT_GT(body.header_length, 0u);
  EXPECT_THAT(body.content.substr(0, body.header_length), HasSubstr(R"("binary_data_size":8)"));
  EXPECT_EQ(body.content.substr(body.header_length), Floats({0.5f, -1}));
}

// Every datatype of the table: JSON numbers in, the type's little-endian
// bytes out (16-bit floats rounded to the type), and back to the same JSON.
TEST(HttpJsonTest, EveryDatatypeRoundTripsThroughJson) {
  struct Case {
    const char* datatype;
    const char* data;   // what the client sends
    std::string bytes;  // what reaches the model
    const char* json;   // what the response says of those bytes
  };
  auto bytes = [](auto... values) {
    std::string out;
    (out.append(reinterpret_cast<const char*>(&values), sizeof(values)), ...);
    return out;
  };
  const Case cases[] = {
      {"INT8", "[-128, 127]", bytes(int8_t{-128}, int8_t{127}), "[-128,127]"},
      {"UINT8", "[0, 255]", bytes(uint8_t{0}, uint8_t{255}), "[0,255]"},
      {"INT16", "[-32768, 7]", bytes(int16_t{-32768}, int16_t{7}), "[-32768,7]"},
      {"UINT16", "[65535, 1]", bytes(uint16_t{65535}, uint16_t{1}), "[65535,1]"},
      {"INT32", "[-2147483648, 3]", bytes(int32_t{-2147483647 - 1}, int32_t{3}),
       "[-2147483648,3]"},
      {"UINT32", "[4294967295, 0]", bytes(uint32_t{4294967295u}, uint32_t{0}),
       "[4294967295,0]"},
      {"UINT64", "[18446744073709551615, 2]", bytes(~uint64_t{0}, uint64_t{2}),
       "[18446744073709551615,2]"},
      {"FP64", "[0.1, -2]", bytes(0.1, -2.0), "[0.1,-2.0]"},
      // 1 + 2^-11 is halfway between two halves: rounds to even, 1.0.
      {"FP16", "[1.00048828125, -2.5]", bytes(uint16_t{0x3c00}, uint16_t{0xc100}), "[1.0,-2.5]"},
      {"BF16", "[3.14159, 1]", bytes(uint16_t{0x4049}, uint16_t{0x3f80}), "[3.140625,1.0]"},
      {"BOOL", "[true, false]", std::string("\1\0", 2), "[true,false]"},
  };
  for (const Case& c : cases) {
    const std::string body = absl::StrCat(R"({"inputs": [{"name": "x", "datatype": ")",
                                          c.datatype, R"(", "shape": [2], "data": )", c.data,
                                          "}]}");
    absl::StatusOr<HttpInferRequest> parsed = ParseInferRequest(body, body.size(), "m", "");
    ASSERT_TRUE(parsed.ok()) << c.datatype << ": " << parsed.status();
    EXPECT_EQ(parsed->request.raw_input_contents(0), c.bytes) << c.datatype;

    inference::ModelInferResponse response;
    auto* y = response.add_outputs();
    y->set_name("y");
    y->set_datatype(c.datatype);
    y->add_shape(2);
    response.add_raw_output_contents(c.bytes);
    const HttpBody answer = InferResponseToHttp(response, HttpInferRequest{});
    EXPECT_THAT(answer.content, HasSubstr(absl::StrCat(R"("data":)", c.json))) << c.datatype;
  }
}

TEST(HttpJsonTest, MessagesUseProtoNamesAndNumbers) {
  inference::ModelMetadataResponse metadata;
  metadata.set_name("mlp");
  metadata.add_versions("1");
  auto* input = metadata.add_inputs();
  input->set_name("x");
  input->set_datatype("FP32");
  input->add_shape(-1);
  input->add_shape(512);
  EXPECT_EQ(ModelMetadataToJson(metadata),
            R"({"inputs":[{"datatype":"FP32","name":"x","shape":[-1,512]}],"name":"mlp",)"
            R"("outputs":[],"platform":"","versions":["1"]})");
  inference::ModelConfig config;
  config.set_name("mlp");
  config.set_max_batch_size(64);
  config.mutable_capture()->add_batch_sizes(8);
  const std::string config_json = ModelConfigToJson(config);
  EXPECT_THAT(config_json, HasSubstr(R"("max_batch_size":64)"));
  EXPECT_THAT(config_json, HasSubstr(R"("batch_sizes":[8])"));
  EXPECT_THAT(config_json, ::testing::Not(HasSubstr("dynamic_batching")));  // unset message
  inference::ModelStatisticsResponse statistics;
  statistics.add_model_stats()->set_name("mlp");
  EXPECT_THAT(ModelStatisticsToJson(statistics), HasSubstr(R"("inference_count":0)"));
  EXPECT_EQ(ErrorJson("bad \"x\""), R"({"error":"bad \"x\""})");
}

}  // namespace
}  // namespace graphserve

namespace graphserve {
namespace {

// {"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[[[...1...]]]}]}
// with `depth` arrays around the one value.
std::string NestedDataRequest(int depth) {
  return absl::StrCat(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":)",
                      std::string(depth, '['), "1", std::string(depth, ']'), "}]}");
}

// 100k levels fit in a 200 KB body, which once overflowed the stack of the
// recursive flattening and killed the server (Note [JSON nesting depth]).
constexpr int kAttackDepth = 100000;

TEST(HttpJsonDepthTest, DeepDataIsRefusedNamingTheLimit) {
  const std::string body = NestedDataRequest(kAttackDepth);
  const absl::Status status = ParseInferRequest(body, body.size(), "m", "").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat(kDefaultMaxJsonDepth, " levels")));
  EXPECT_THAT(status.message(), HasSubstr("--http-max-json-depth"));
}

TEST(HttpJsonDepthTest, DataAtTheLimitIsAccepted) {
  // The body itself is one level ({"inputs": ...}), the list two, the
  // tensor three: data may nest the rest.
  constexpr int kDataDepth = kDefaultMaxJsonDepth - 3;
  const std::string body = NestedDataRequest(kDataDepth);
  absl::StatusOr<HttpInferRequest> parsed = ParseInferRequest(body, body.size(), "m", "");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const float one = 1.0f;
  EXPECT_EQ(parsed->request.raw_input_contents(0),
            std::string(reinterpret_cast<const char*>(&one), sizeof(one)));
  const std::string deeper = NestedDataRequest(kDataDepth + 1);
  EXPECT_FALSE(ParseInferRequest(deeper, deeper.size(), "m", "").ok());
}

TEST(HttpJsonDepthTest, WithoutALimitDeepDataIsWalkedWithoutRecursion) {
  // A limit as high as the attack: the parser, the flattening and the
  // value's destruction must all run in bounded stack.
  const std::string body = NestedDataRequest(kAttackDepth);
  absl::StatusOr<HttpInferRequest> parsed =
      ParseInferRequest(body, body.size(), "m", "", /*max_json_depth=*/kAttackDepth + 3);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->request.raw_input_contents(0).size(), sizeof(float));
}

TEST(HttpJsonDepthTest, BracketsInsideStringsDoNotCount) {
  EXPECT_TRUE(CheckJsonDepth(R"({"a": "[[[[[[[[\"[[[["})", 2).ok());
  EXPECT_FALSE(CheckJsonDepth(R"({"a": [[{"b": "]]]"}]]})", 3).ok());
  EXPECT_TRUE(CheckJsonDepth(R"({"a": [[{"b": "]]]"}]]})", 4).ok());
}

}  // namespace
}  // namespace graphserve
