#include "proto/grpc_service.grpc.pb.h"

#include <future>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/grpc_service.pb.h"
#include "proto/wire_fields.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;

std::vector<WireField> Decode(const google::protobuf::MessageLite& message) {
  std::string bytes;
  EXPECT_TRUE(message.SerializeToString(&bytes));
  absl::StatusOr<std::vector<WireField>> fields = DecodeWireFields(bytes);
  EXPECT_TRUE(fields.ok()) << fields.status();
  return fields.ok() ? *std::move(fields) : std::vector<WireField>{};
}

std::vector<WireField> Decode(const std::string& bytes) {
  absl::StatusOr<std::vector<WireField>> fields = DecodeWireFields(bytes);
  EXPECT_TRUE(fields.ok()) << fields.status();
  return fields.ok() ? *std::move(fields) : std::vector<WireField>{};
}

// The paths Triton's and KServe's clients put on the wire (HTTP/2 :path).
TEST(GrpcServiceTest, MethodFullNamesMatchTheProtocol) {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          "inference.GRPCInferenceService");
  ASSERT_NE(service, nullptr);
  EXPECT_EQ(inference::GRPCInferenceService::service_full_name(),
            std::string("inference.GRPCInferenceService"));

  std::set<std::string> paths;
  for (int i = 0; i < service->method_count(); ++i) {
    const google::protobuf::MethodDescriptor* method = service->method(i);
    paths.insert("/" + method->service()->full_name() + "/" + method->name());
    // ModelStreamInfer alone streams, both ways (Triton's streaming API).
    const bool streams = method->name() == "ModelStreamInfer";
    EXPECT_EQ(method->client_streaming(), streams) << method->name();
    EXPECT_EQ(method->server_streaming(), streams) << method->name();
  }
  EXPECT_EQ(paths, (std::set<std::string>{
                       "/inference.GRPCInferenceService/ServerLive",
                       "/inference.GRPCInferenceService/ServerReady",
                       "/inference.GRPCInferenceService/ModelReady",
                       "/inference.GRPCInferenceService/ServerMetadata",
                       "/inference.GRPCInferenceService/ModelMetadata",
                       "/inference.GRPCInferenceService/ModelInfer",
                       "/inference.GRPCInferenceService/ModelStreamInfer",
                       "/inference.GRPCInferenceService/ModelConfig",
                       "/inference.GRPCInferenceService/ModelStatistics",
                       "/inference.GRPCInferenceService/RepositoryIndex",
                       "/inference.GRPCInferenceService/RepositoryModelLoad",
                       "/inference.GRPCInferenceService/RepositoryModelUnload",
                       "/inference.GRPCInferenceService/SystemSharedMemoryStatus",
                       "/inference.GRPCInferenceService/SystemSharedMemoryRegister",
                       "/inference.GRPCInferenceService/SystemSharedMemoryUnregister",
                       "/inference.GRPCInferenceService/CudaSharedMemoryStatus",
                       "/inference.GRPCInferenceService/CudaSharedMemoryRegister",
                       "/inference.GRPCInferenceService/CudaSharedMemoryUnregister",
                   }));
  EXPECT_EQ(service->FindMethodByName("ModelInfer")->input_type()->full_name(),
            "inference.ModelInferRequest");
  EXPECT_EQ(service->FindMethodByName("ModelConfig")->output_type()->full_name(),
            "inference.ModelConfigResponse");
  EXPECT_EQ(service->FindMethodByName("ModelStreamInfer")->input_type()->full_name(),
            "inference.ModelInferRequest");
  EXPECT_EQ(service->FindMethodByName("ModelStreamInfer")->output_type()->full_name(),
            "inference.ModelStreamInferResponse");
}

TEST(GrpcServiceTest, ModelInferRequestUsesProtocolFieldNumbers) {
  inference::ModelInferRequest request;
  request.set_model_name("mlp");                                                 // 1
  request.set_model_version("1");                                                // 2
  request.set_id("req-7");                                                       // 3
  (*request.mutable_parameters())["priority"].set_int64_param(1);                // 4
  inference::ModelInferRequest::InferInputTensor* input = request.add_inputs();  // 5
  input->set_name("features");
  input->set_datatype("FP32");
  input->add_shape(2);
  input->add_shape(3);
  request.add_inputs()->set_name("mask");
  request.add_outputs()->set_name("scores");  // 6
  request.add_raw_input_contents("first");    // 7, once per input
  request.add_raw_input_contents("second");

  const std::vector<WireField> fields = Decode(request);
  EXPECT_THAT(FieldNumbers(fields), ElementsAre(1, 2, 3, 4, 5, 5, 6, 7, 7));
  const std::vector<WireField> raw = FieldsNumbered(fields, 7);
  ASSERT_EQ(raw.size(), 2u);
  EXPECT_EQ(raw[0].wire_type, WireType::kLen);
  EXPECT_EQ(raw[0].payload, "first");
  EXPECT_EQ(raw[1].payload, "second");

  // Inside an input tensor: name 1, datatype 2, shape 3 (packed int64).
  const std::vector<WireField> tensor = Decode(fields[4].payload);
  ASSERT_THAT(FieldNumbers(tensor), ElementsAre(1, 2, 3));
  EXPECT_EQ(tensor[0].payload, "features");
  EXPECT_EQ(tensor[1].payload, "FP32");
  EXPECT_EQ(tensor[2].payload, std::string("\x02\x03", 2));

  // A map entry is a message with the key at 1 and the value at 2.
  const std::vector<WireField> entry = Decode(fields[3].payload);
  ASSERT_THAT(FieldNumbers(entry), ElementsAre(1, 2));
  EXPECT_EQ(entry[0].payload, "priority");
}

// Triton's shared-memory messages: name 1, then key 2, offset 3, byte_size
// 4 (system) or raw_handle 2, device_id 3, byte_size 4 (CUDA); the status
// maps hold RegionStatus values by name.
TEST(GrpcServiceTest, SharedMemoryMessagesUseTritonsFieldNumbers) {
  inference::SystemSharedMemoryRegisterRequest system;
  system.set_name("in0");
  system.set_key("/graphserve_in0");
  system.set_offset(4096);
  system.set_byte_size(1 << 20);
  std::vector<WireField> fields = Decode(system);
  ASSERT_THAT(FieldNumbers(fields), ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(fields[1].payload, "/graphserve_in0");
  EXPECT_EQ(fields[2].wire_type, WireType::kVarint);
  EXPECT_EQ(fields[2].value, 4096u);
  EXPECT_EQ(fields[3].value, uint64_t{1} << 20);

  inference::CudaSharedMemoryRegisterRequest cuda;
  cuda.set_name("out0");
  cuda.set_raw_handle(std::string(64, '\x7f'));
  cuda.set_device_id(1);
  cuda.set_byte_size(256);
  fields = Decode(cuda);
  ASSERT_THAT(FieldNumbers(fields), ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(fields[1].payload.size(), 64u);
  EXPECT_EQ(fields[2].value, 1u);

  inference::SystemSharedMemoryStatusResponse status;
  auto& region = (*status.mutable_regions())["in0"];
  region.set_name("in0");
  region.set_key("/k");
  region.set_offset(8);
  region.set_byte_size(16);
  fields = Decode(status);
  ASSERT_THAT(FieldNumbers(fields), ElementsAre(1));
  const std::vector<WireField> entry = Decode(fields[0].payload);
  ASSERT_THAT(FieldNumbers(entry), ElementsAre(1, 2));
  EXPECT_THAT(FieldNumbers(Decode(entry[1].payload)), ElementsAre(1, 2, 3, 4));

  inference::CudaSharedMemoryStatusResponse cuda_status;
  auto& cuda_region = (*cuda_status.mutable_regions())["out0"];
  cuda_region.set_name("out0");
  cuda_region.set_device_id(1);
  cuda_region.set_byte_size(256);
  const std::vector<WireField> cuda_entry = Decode(Decode(cuda_status)[0].payload);
  EXPECT_THAT(FieldNumbers(Decode(cuda_entry[1].payload)), ElementsAre(1, 2, 3));

  inference::SystemSharedMemoryUnregisterRequest unregister;
  unregister.set_name("in0");
  EXPECT_THAT(FieldNumbers(Decode(unregister)), ElementsAre(1));
}

TEST(GrpcServiceTest, ModelInferResponseUsesProtocolFieldNumbers) {
  inference::ModelInferResponse response;
  response.set_model_name("mlp");                                                     // 1
  response.set_model_version("1");                                                    // 2
  response.set_id("req-7");                                                           // 3
  (*response.mutable_parameters())["sequence_end"].set_bool_param(true);              // 4
  inference::ModelInferResponse::InferOutputTensor* output = response.add_outputs();  // 5
  output->set_name("scores");
  output->set_datatype("FP32");
  output->add_shape(1);
  output->mutable_contents()->add_fp32_contents(0.5f);
  response.add_raw_output_contents("bytes");  // 6

  const std::vector<WireField> fields = Decode(response);
  EXPECT_THAT(FieldNumbers(fields), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_EQ(fields[5].payload, "bytes");
  const std::vector<WireField> tensor = Decode(fields[4].payload);
  EXPECT_THAT(FieldNumbers(tensor), ElementsAre(1, 2, 3, 5));
}

TEST(GrpcServiceTest, InferParameterOneofUsesProtocolFieldNumbers) {
  struct Case {
    const char* what;
    inference::InferParameter parameter;
    int number;
    WireType wire_type;
  };
  std::vector<Case> cases(5);
  cases[0] = {"bool", {}, 1, WireType::kVarint};
  cases[0].parameter.set_bool_param(true);
  cases[1] = {"int64", {}, 2, WireType::kVarint};
  cases[1].parameter.set_int64_param(-3);
  cases[2] = {"string", {}, 3, WireType::kLen};
  cases[2].parameter.set_string_param("s");
  cases[3] = {"double", {}, 4, WireType::kI64};
  cases[3].parameter.set_double_param(0.25);
  cases[4] = {"uint64", {}, 5, WireType::kVarint};
  cases[4].parameter.set_uint64_param(1ull << 63);
  for (const Case& c : cases) {
    const std::vector<WireField> fields = Decode(c.parameter);
    ASSERT_EQ(fields.size(), 1u) << c.what;
    EXPECT_EQ(fields[0].number, c.number) << c.what;
    EXPECT_EQ(fields[0].wire_type, c.wire_type) << c.what;
  }
}

TEST(GrpcServiceTest, InferTensorContentsUsesProtocolFieldNumbers) {
  inference::InferTensorContents contents;
  contents.add_bool_contents(true);      // 1
  contents.add_int_contents(-1);         // 2
  contents.add_int64_contents(-2);       // 3
  contents.add_uint_contents(3);         // 4
  contents.add_uint64_contents(4);       // 5
  contents.add_fp32_contents(5.0f);      // 6
  contents.add_fp64_contents(6.0);       // 7
  contents.add_bytes_contents("seven");  // 8
  const std::vector<WireField> fields = Decode(contents);
  EXPECT_THAT(FieldNumbers(fields), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  // Numeric contents are packed runs; fp32 is 4 little-endian bytes of 5.0f.
  EXPECT_EQ(fields[5].payload, std::string("\x00\x00\xa0\x40", 4));
  EXPECT_EQ(fields[7].payload, "seven");
}

TEST(GrpcServiceTest, StatisticsUseTritonsFieldNumbers) {
  inference::ModelStatisticsResponse response;
  // Each setter is commented with the field number it must land on.
  inference::ModelStatistics* stats = response.add_model_stats();  // 1
  stats->set_name("mlp");                                          // 1
  stats->set_version("1");                                         // 2
  stats->set_last_inference(1700000000000);                        // 3
  stats->set_inference_count(64);                                  // 4
  stats->set_execution_count(2);                                   // 5

  inference::InferStatistics* infer = stats->mutable_inference_stats();  // 6
  infer->mutable_success()->set_count(64);                               // 1
  infer->mutable_fail()->set_count(1);                                   // 2
  infer->mutable_queue()->set_ns(10);                                    // 3
  infer->mutable_compute_input()->set_ns(11);                            // 4
  infer->mutable_compute_infer()->set_ns(12);                            // 5
  infer->mutable_compute_output()->set_ns(13);                           // 6
  infer->mutable_cache_hit();               // 7: an empty message is still written
  infer->mutable_cache_miss()->set_ns(14);  // 8

  inference::InferBatchStatistics* batch = stats->add_batch_stats();  // 7
  batch->set_batch_size(32);                                          // 1
  batch->mutable_compute_input()->set_count(2);                       // 2
  batch->mutable_compute_infer()->set_ns(5);                          // 3
  batch->mutable_compute_output()->set_count(2);                      // 4

  const std::vector<WireField> outer = Decode(response);
  ASSERT_THAT(FieldNumbers(outer), ElementsAre(1));
  const std::vector<WireField> model = Decode(outer[0].payload);
  EXPECT_THAT(FieldNumbers(model), ElementsAre(1, 2, 3, 4, 5, 6, 7));
  EXPECT_EQ(model[2].value, 1700000000000u);
  EXPECT_THAT(FieldNumbers(Decode(model[5].payload)), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_THAT(FieldNumbers(Decode(model[6].payload)), ElementsAre(1, 2, 3, 4));

  // StatisticDuration: count 1, ns 2.
  inference::StatisticDuration duration;
  duration.set_count(3);
  duration.set_ns(4000);
  const std::vector<WireField> d = Decode(duration);
  ASSERT_THAT(FieldNumbers(d), ElementsAre(1, 2));
  EXPECT_EQ(d[1].value, 4000u);
}

TEST(GrpcServiceTest, ModelConfigResponseHoldsTheConfigAtField1) {
  inference::ModelConfigResponse response;
  response.mutable_config()->set_max_batch_size(16);
  const std::vector<WireField> fields = Decode(response);
  ASSERT_THAT(FieldNumbers(fields), ElementsAre(1));
  const std::vector<WireField> config = Decode(fields[0].payload);
  ASSERT_THAT(FieldNumbers(config), ElementsAre(4));  // ModelConfig.max_batch_size
  EXPECT_EQ(config[0].value, 16u);
}

TEST(GrpcServiceTest, ModelStreamInferResponseUsesTritonsFieldNumbers) {
  inference::ModelStreamInferResponse answer;
  answer.set_error_message("failed");            // 1
  answer.mutable_infer_response()->set_id("r1");  // 2
  const std::vector<WireField> fields = Decode(answer);
  ASSERT_THAT(FieldNumbers(fields), ElementsAre(1, 2));
  EXPECT_EQ(fields[0].payload, "failed");
  const std::vector<WireField> response = Decode(fields[1].payload);
  ASSERT_THAT(FieldNumbers(response), ElementsAre(3));  // ModelInferResponse.id
  EXPECT_EQ(response[0].payload, "r1");
}

// A callback service answering ServerLive and ModelInfer: enough to show that
// the generated stubs serve the protocol's paths and decode its bytes.
class EchoInferenceService final : public inference::GRPCInferenceService::CallbackService {
 public:
  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* context,
                                       const inference::ServerLiveRequest* request,
                                       inference::ServerLiveResponse* response) override {
    response->set_live(true);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  // Echoes the model name and the raw input bytes as raw output bytes.
  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* context,
                                       const inference::ModelInferRequest* request,
                                       inference::ModelInferResponse* response) override {
    response->set_model_name(request->model_name());
    for (const std::string& raw : request->raw_input_contents()) {
      response->add_raw_output_contents(raw);
    }
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// Calls `path` with `request_bytes` through a generic (schema-free) stub, as a
// client generated from another copy of the protocol would.
grpc::Status CallRaw(const std::shared_ptr<grpc::Channel>& channel, const std::string& path,
                     const std::string& request_bytes, std::string* response_bytes) {
  grpc::GenericStub stub(channel);
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, path, grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status status) { done.set_value(std::move(status)); });
  grpc::Status status = done.get_future().get();
  if (status.ok()) {
    std::vector<grpc::Slice> slices;
    EXPECT_TRUE(response.Dump(&slices).ok());
    response_bytes->clear();
    for (const grpc::Slice& s : slices) {
      response_bytes->append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  return status;
}

TEST(GrpcServiceTest, ServesTheProtocolPathsAndBytes) {
  EchoInferenceService service;
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  std::shared_ptr<grpc::Channel> channel = server->InProcessChannel(grpc::ChannelArguments());

  // A ModelInferRequest spelled in bytes from the protocol's field numbers.
  // A tag byte is (field number << 3) | wire type, 2 meaning length-delimited.
  constexpr char kModelNameTag = (1 << 3) | 2;          // model_name = 1
  constexpr char kRawInputContentsTag = (7 << 3) | 2;   // raw_input_contents = 7
  constexpr char kRawOutputContentsTag = (6 << 3) | 2;  // raw_output_contents = 6
  const std::string request =
      std::string{kModelNameTag, 3} + "mlp" + std::string{kRawInputContentsTag, 4} + "abcd";
  std::string response;
  grpc::Status status =
      CallRaw(channel, "/inference.GRPCInferenceService/ModelInfer", request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const std::string expected =
      std::string{kModelNameTag, 3} + "mlp" + std::string{kRawOutputContentsTag, 4} + "abcd";
  EXPECT_EQ(response, expected);

  status = CallRaw(channel, "/inference.GRPCInferenceService/ServerLive", "", &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response, std::string("\x08\x01", 2));  // live (1) = true

  // Methods the fake leaves alone answer UNIMPLEMENTED through the typed stub.
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub =
      inference::GRPCInferenceService::NewStub(channel);
  grpc::ClientContext context;
  inference::ModelConfigRequest config_request;
  inference::ModelConfigResponse config_response;
  status = stub->ModelConfig(&context, config_request, &config_response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);

  server->Shutdown();
}

}  // namespace
}  // namespace graphserve
