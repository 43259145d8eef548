// GPU end-to-end test, skipped without a GPU: CUDA faults injected into the
// real server (InferenceServer, as the binary runs it) through the test-only
// variable (Note [Injected CUDA faults] in server/injected_cuda_fault.h),
// seen from a gRPC client (Note [CUDA faults in a served model] in
// server/graph_set_runner.h):
//   - mlp's slot fails one launch (not sticky): that request gets INTERNAL
//     naming CUDA's error, the next one the right outputs, and the server
//     stays ready;
//   - dlrm_dense's slot runs an illegal-address kernel after one good chunk
//     (sticky): that request gets INTERNAL saying the context is lost, the
//     server and every model stop being ready, and later requests fail too.
// What main then does (exit non-zero, Note [Exiting on a lost CUDA context]
// in server/main.cc) is the binary's, not this in-process server's.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cuda_handles.h"
#include "common/dtype.h"
#include "common/lost_cuda_context.h"
#include "common/tensor.h"
#include "examples/demo_repository.h"
#include "grpcpp/grpcpp.h"
#include "proto/grpc_service.grpc.pb.h"
#include "runtime/bind.h"
#include "runtime/executor.h"
#include "runtime/host/host_executor.h"
#include "runtime/onnx_import.h"
#include "server/inference_server.h"
#include "server/injected_cuda_fault.h"

namespace graphserve {
namespace {

constexpr int64_t kRows = 3;        // a part-filled chunk of the captured size 4
constexpr double kTolerance = 1e-5;  // float32 GPU against the host executor

class CudaFaultE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    ResetLostCudaContextForTest();
    const char* root = std::getenv("TEST_TMPDIR");
    repository_ = (std::filesystem::path(root != nullptr ? root : "/tmp") / "fault_repo").string();
    std::filesystem::remove_all(repository_);
    DemoRepositoryOptions demo;
    demo.batch_sizes = {1, 4};
    demo.max_batch_size = 4;
    demo.num_streams = 1;  // one runner slot: every request runs on slot 0
    ASSERT_TRUE(WriteDemoRepository(repository_, demo).ok());
    // mlp's first chunk fails its launch; dlrm_dense's second chunk faults.
    ASSERT_EQ(setenv(kInjectCudaFaultVariable, "mlp:0:launch,dlrm_dense:0:illegal-address:1",
                     /*overwrite=*/1),
              0);
    InferenceServerOptions options;
    options.model_repositories = {repository_};
    options.host = "127.0.0.1";
    options.grpc_port = 0;
    options.allow_http = false;
    options.allow_metrics = false;
    options.models.executor = ExecutorKind::kCuda;
    options.models.cost_iters = 5;
    options.exit_timeout = std::chrono::seconds(10);
    std::ostringstream log;
    absl::StatusOr<std::unique_ptr<InferenceServer>> server = InferenceServer::Start(options, log);
    unsetenv(kInjectCudaFaultVariable);
    ASSERT_TRUE(server.ok()) << server.status() << "\n" << log.str();
    server_ = *std::move(server);
    stub_ = inference::GRPCInferenceService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", server_->port()), grpc::InsecureChannelCredentials()));
  }

  // Sends kRows random rows to `model`; on success, checks the outputs
  // against the host executor. The call's status.
  grpc::Status InferChecked(const std::string& model, uint64_t seed) {
    absl::StatusOr<Model> imported = ImportOnnxFile(
        (std::filesystem::path(repository_) / model / "1" / "model.onnx").string());
    EXPECT_TRUE(imported.ok()) << imported.status();
    BindOptions bind;
    bind.batch_size = kRows;
    absl::StatusOr<BoundGraph> graph = BindModel(*imported, bind);
    EXPECT_TRUE(graph.ok()) << graph.status();
    const std::vector<HostTensor> inputs = RandomInputs(*graph, seed);
    inference::ModelInferRequest request;
    request.set_model_name(model);
    for (size_t i = 0; i < inputs.size(); ++i) {
      inference::ModelInferRequest::InferInputTensor* input = request.add_inputs();
      input->set_name(graph->value(graph->inputs[i]).name);
      input->set_datatype(KServeDatatype(inputs[i].dtype()));
      for (int64_t dim : inputs[i].dims()) input->add_shape(dim);
      request.add_raw_input_contents(
          std::string(static_cast<const char*>(inputs[i].raw()), inputs[i].bytes()));
    }
    absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(*std::move(graph));
    EXPECT_TRUE(host.ok()) << host.status();
    absl::StatusOr<std::vector<HostTensor>> want = (*host)->Run(inputs);
    EXPECT_TRUE(want.ok()) << want.status();

    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    inference::ModelInferResponse response;
    const grpc::Status status = stub_->ModelInfer(&context, request, &response);
    if (!status.ok()) return status;
    EXPECT_EQ(response.raw_output_contents_size(), static_cast<int>(want->size()));
    for (size_t k = 0; k < want->size() && k < static_cast<size_t>(
                                                   response.raw_output_contents_size());
         ++k) {
      HostTensor got((*want)[k].dtype(), (*want)[k].dims());
      const std::string& bytes = response.raw_output_contents(static_cast<int>(k));
      EXPECT_EQ(bytes.size(), got.bytes());
      std::memcpy(got.raw(), bytes.data(), std::min(bytes.size(), got.bytes()));
      EXPECT_LT(RelativeError(got, (*want)[k]), kTolerance) << model << " output " << k;
    }
    return status;
  }

  std::optional<bool> ServerReady() {
    grpc::ClientContext context;
    inference::ServerReadyResponse ready;
    if (!stub_->ServerReady(&context, {}, &ready).ok()) return std::nullopt;
    return ready.ready();
  }
  std::optional<bool> ModelReady(const std::string& model) {
    grpc::ClientContext context;
    inference::ModelReadyRequest request;
    request.set_name(model);
    inference::ModelReadyResponse ready;
    if (!stub_->ModelReady(&context, request, &ready).ok()) return std::nullopt;
    return ready.ready();
  }

  std::string repository_;
  std::unique_ptr<InferenceServer> server_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
};

// One test, in order: the non-sticky fault first, since after the sticky
// one nothing in this process can use the GPU.
TEST_F(CudaFaultE2eTest, FailedLaunchFailsOneRequestAndIllegalAddressStopsServing) {
  ASSERT_EQ(ServerReady(), std::optional<bool>(true));

  // Not sticky: one request fails, the slot serves on.
  const grpc::Status failed = InferChecked("mlp", 1);
  EXPECT_EQ(failed.error_code(), grpc::StatusCode::INTERNAL) << failed.error_message();
  EXPECT_NE(failed.error_message().find("cudaErrorLaunchOutOfResources"), std::string::npos)
      << failed.error_message();
  const grpc::Status next = InferChecked("mlp", 2);
  EXPECT_TRUE(next.ok()) << next.error_message();
  EXPECT_EQ(ServerReady(), std::optional<bool>(true));
  EXPECT_EQ(ModelReady("mlp"), std::optional<bool>(true));
  EXPECT_FALSE(CudaContextLost());

  // Sticky: the request in flight fails, then the server is not ready.
  const grpc::Status good = InferChecked("dlrm_dense", 3);
  EXPECT_TRUE(good.ok()) << good.error_message();
  const grpc::Status lost = InferChecked("dlrm_dense", 4);
  EXPECT_EQ(lost.error_code(), grpc::StatusCode::INTERNAL) << lost.error_message();
  EXPECT_NE(lost.error_message().find("CUDA context is lost (cudaErrorIllegalAddress"),
            std::string::npos)
      << lost.error_message();
  EXPECT_TRUE(CudaContextLost());
  EXPECT_EQ(ServerReady(), std::optional<bool>(false));
  EXPECT_EQ(ModelReady("dlrm_dense"), std::optional<bool>(false));
  EXPECT_EQ(ModelReady("mlp"), std::optional<bool>(false));
  // The other model shares the lost GPU: its requests fail too.
  const grpc::Status after = InferChecked("mlp", 5);
  EXPECT_EQ(after.error_code(), grpc::StatusCode::INTERNAL) << after.error_message();
}

}  // namespace
}  // namespace graphserve
