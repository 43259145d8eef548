// Checks the fake server through gRPC's own generated stub, independently of
// client/inference_client, so that the client's tests rest on a server that
// is itself checked.
#include "client/fake_inference_server.h"

#include <grpcpp/grpcpp.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/grpc_service.grpc.pb.h"
#include "proto/grpc_service.pb.h"

namespace graphserve {
namespace {

class FakeInferenceServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<FakeInferenceServer>> server = FakeInferenceServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = inference::GRPCInferenceService::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  grpc::Status Infer(const inference::ModelInferRequest& request,
                     inference::ModelInferResponse* response) {
    grpc::ClientContext context;
    return stub_->ModelInfer(&context, request, response);
  }

  std::unique_ptr<FakeInferenceServer> server_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
};

inference::ModelInferRequest DoubleRequest(const std::vector<float>& x) {
  inference::ModelInferRequest request;
  request.set_model_name("double");
  auto* input = request.add_inputs();
  input->set_name("x");
  input->set_datatype("FP32");
  input->add_shape(static_cast<int64_t>(x.size() / 4));
  input->add_shape(4);
  request.add_raw_input_contents(
      std::string(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float)));
  return request;
}

TEST_F(FakeInferenceServerTest, DoublesItsInput) {
  const std::vector<float> x = {1, -2, 3.5f, 0, 10, 20, 30, 40};  // batch 2
  inference::ModelInferResponse response;
  const grpc::Status status = Infer(DoubleRequest(x), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.outputs_size(), 1);
  EXPECT_EQ(response.outputs(0).name(), "y");
  EXPECT_EQ(response.outputs(0).datatype(), "FP32");
  EXPECT_EQ(
      std::vector<int64_t>(response.outputs(0).shape().begin(), response.outputs(0).shape().end()),
      (std::vector<int64_t>{2, 4}));
  ASSERT_EQ(response.raw_output_contents(0).size(), x.size() * sizeof(float));
  std::vector<float> y(x.size());
  std::memcpy(y.data(), response.raw_output_contents(0).data(), y.size() * sizeof(float));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], 2 * x[i]) << i;
  EXPECT_EQ(server_->infer_calls(), 1);
}

TEST_F(FakeInferenceServerTest, UnknownModelIsNotFound) {
  inference::ModelInferRequest request = DoubleRequest({1, 2, 3, 4});
  request.set_model_name("triple");
  inference::ModelInferResponse response;
  const grpc::Status status = Infer(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), "unknown model 'triple'");
}

TEST_F(FakeInferenceServerTest, WrongShapeIsInvalidArgument) {
  inference::ModelInferRequest request = DoubleRequest({1, 2, 3, 4});
  request.mutable_inputs(0)->set_shape(1, 3);  // [1,3] against 16 bytes
  inference::ModelInferResponse response;
  EXPECT_EQ(Infer(request, &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(FakeInferenceServerTest, CountsStatisticsPerRequest) {
  inference::ModelInferResponse response;
  ASSERT_TRUE(Infer(DoubleRequest(std::vector<float>(12, 1.0f)), &response).ok());  // batch 3
  ASSERT_TRUE(Infer(DoubleRequest(std::vector<float>(4, 1.0f)), &response).ok());   // batch 1
  grpc::ClientContext context;
  inference::ModelStatisticsRequest request;
  request.set_name("double");
  inference::ModelStatisticsResponse stats;
  ASSERT_TRUE(stub_->ModelStatistics(&context, request, &stats).ok());
  ASSERT_EQ(stats.model_stats_size(), 1);
  EXPECT_EQ(stats.model_stats(0).inference_count(), 4u);  // 3 + 1 rows
  EXPECT_EQ(stats.model_stats(0).execution_count(), 2u);
  EXPECT_EQ(stats.model_stats(0).inference_stats().success().count(), 2u);
  EXPECT_EQ(stats.model_stats(0).inference_stats().compute_infer().count(), 2u);
}

TEST(FakeInferenceServerFailureTest, InjectsEveryNthFailure) {
  absl::StatusOr<std::unique_ptr<FakeInferenceServer>> server =
      FakeInferenceServer::Start({.fail_every_nth_infer = 2});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = inference::GRPCInferenceService::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()));
  std::vector<grpc::StatusCode> codes;
  for (int i = 0; i < 4; ++i) {
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    codes.push_back(
        stub->ModelInfer(&context, DoubleRequest({1, 2, 3, 4}), &response).error_code());
  }
  EXPECT_EQ(codes,
            (std::vector<grpc::StatusCode>{grpc::StatusCode::OK, grpc::StatusCode::INTERNAL,
                                           grpc::StatusCode::OK, grpc::StatusCode::INTERNAL}));
}

}  // namespace
}  // namespace graphserve
