// Triton's system shared memory end to end in C++: the real server
// (InferenceServer) on the demo repository over loopback gRPC, inputs read
// from and outputs written to a region, compared with the same requests sent
// as bytes. Host executor by default; GRAPHSERVE_E2E_DEVICE=cuda runs it on
// CUDA graphs, where the server pins the regions and the device copies a
// request's rows straight from and into them (Note [Pinned shared memory]),
// while the bytes go through the slot's staging.
// On CUDA it also prints how long requests of 2 and 256 rows (4 KiB and 512
// KiB of input) take each way: a look, not a measurement, and nothing is
// asserted about it.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "examples/demo_repository.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/grpc_service.grpc.pb.h"
#include "server/inference_server.h"
#include "server/shared_memory_testing.h"

namespace graphserve {
namespace {

// mlp: x [B, 512] FP32 -> y [B, 1] FP32 (examples/demo_repository.h).
constexpr int64_t kFeatures = 512;
constexpr size_t kRowBytes = kFeatures * sizeof(float);
constexpr int64_t kMaxRows = 256;  // the demo's max_batch_size
// Where y's region starts: past the largest x, off a page boundary.
constexpr uint64_t kOutputOffset = kMaxRows * kRowBytes + 24;
constexpr size_t kObjectBytes = kOutputOffset + kMaxRows * sizeof(float);
// Requests per way and size in the timing look: enough for a median.
constexpr int kTimedRequests = 21;
// Note [Shared memory owners]: the header, as clients send it.
constexpr char kOwnerHeader[] = "graphserve-shared-memory-owner";

ExecutorKind ExecutorUnderTest() {
  const char* device = std::getenv("GRAPHSERVE_E2E_DEVICE");
  return device != nullptr && std::string(device) == "cuda" ? ExecutorKind::kCuda
                                                            : ExecutorKind::kHost;
}

class SharedMemoryE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* root = std::getenv("TEST_TMPDIR");
    const std::string repository =
        (std::filesystem::path(root != nullptr ? root : "/tmp") / "shm_e2e_repo").string();
    std::filesystem::remove_all(repository);
    ASSERT_TRUE(WriteDemoRepository(repository, DemoRepositoryOptions{}).ok());
    InferenceServerOptions options;
    options.model_repositories = {repository};
    options.host = "127.0.0.1";
    options.grpc_port = 0;
    options.allow_http = false;
    options.allow_metrics = false;
    options.models.executor = ExecutorUnderTest();
    options.models.cost_iters = 5;
    std::ostringstream log;
    absl::StatusOr<std::unique_ptr<InferenceServer>> server = InferenceServer::Start(options, log);
    ASSERT_TRUE(server.ok()) << server.status() << "\n" << log.str();
    server_ = server->release();
    stub_ = inference::GRPCInferenceService::NewStub(
                grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                    grpc::InsecureChannelCredentials()))
                .release();
  }

  static void TearDownTestSuite() {
    delete stub_;
    delete server_;
  }

  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(object_.data(), nullptr);
    Register("x_in", 0, kMaxRows * kRowBytes);
    Register("y_out", kOutputOffset, kMaxRows * sizeof(float));
  }

  void TearDown() override {
    grpc::ClientContext context;
    inference::SystemSharedMemoryUnregisterResponse response;
    EXPECT_TRUE(stub_->SystemSharedMemoryUnregister(&context, {}, &response).ok());
  }

  // Region `name` of the test's object, or of `object` for `owner` (none:
  // Triton's shared namespace).
  void Register(const std::string& name, uint64_t offset, uint64_t byte_size,
                const TestShmObject* object = nullptr, const std::string& owner = "") {
    inference::SystemSharedMemoryRegisterRequest request;
    request.set_name(name);
    request.set_key((object != nullptr ? *object : object_).key());
    request.set_offset(offset);
    request.set_byte_size(byte_size);
    grpc::ClientContext context;
    if (!owner.empty()) context.AddMetadata(kOwnerHeader, owner);
    inference::SystemSharedMemoryRegisterResponse response;
    const grpc::Status status = stub_->SystemSharedMemoryRegister(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }

  // An mlp request of `rows` rows: x as bytes, or from region x_in; y in the
  // response, or into region y_out.
  static inference::ModelInferRequest Request(int64_t rows, const std::vector<float>& x,
                                              bool shared_input, bool shared_output) {
    inference::ModelInferRequest request;
    request.set_model_name("mlp");
    auto* input = request.add_inputs();
    input->set_name("x");
    input->set_datatype("FP32");
    input->add_shape(rows);
    input->add_shape(kFeatures);
    auto* output = request.add_outputs();
    output->set_name("y");
    if (shared_input) {
      auto& in = *input->mutable_parameters();
      in["shared_memory_region"].set_string_param("x_in");
      in["shared_memory_byte_size"].set_int64_param(rows * kRowBytes);
    } else {
      request.add_raw_input_contents(
          std::string(reinterpret_cast<const char*>(x.data()), rows * kRowBytes));
    }
    if (shared_output) {
      auto& out = *output->mutable_parameters();
      out["shared_memory_region"].set_string_param("y_out");
      out["shared_memory_byte_size"].set_int64_param(rows * sizeof(float));
    }
    return request;
  }

  static grpc::Status Infer(const inference::ModelInferRequest& request,
                            inference::ModelInferResponse* response,
                            const std::string& owner = "") {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    if (!owner.empty()) context.AddMetadata(kOwnerHeader, owner);
    return stub_->ModelInfer(&context, request, response);
  }

  // The names of the regions `owner` sees.
  static std::vector<std::string> RegionNames(const std::string& owner = "") {
    grpc::ClientContext context;
    if (!owner.empty()) context.AddMetadata(kOwnerHeader, owner);
    inference::SystemSharedMemoryStatusResponse response;
    EXPECT_TRUE(stub_->SystemSharedMemoryStatus(&context, {}, &response).ok());
    std::vector<std::string> names;
    for (const auto& [name, region] : response.regions()) names.push_back(name);
    std::sort(names.begin(), names.end());
    return names;
  }

  std::vector<float> RandomRows(int64_t rows, unsigned seed) {
    std::mt19937 generator(seed);
    std::uniform_real_distribution<float> uniform(-1, 1);
    std::vector<float> x(rows * kFeatures);
    for (float& value : x) value = uniform(generator);
    std::memcpy(object_.data(), x.data(), x.size() * sizeof(float));
    return x;
  }

  std::vector<float> OutputRows(int64_t rows) const {
    std::vector<float> y(rows);
    std::memcpy(y.data(), object_.data() + kOutputOffset, y.size() * sizeof(float));
    return y;
  }

  static InferenceServer* server_;
  static inference::GRPCInferenceService::Stub* stub_;
  TestShmObject object_{kObjectBytes};
};

InferenceServer* SharedMemoryE2eTest::server_ = nullptr;
inference::GRPCInferenceService::Stub* SharedMemoryE2eTest::stub_ = nullptr;

// Sizes that are captured (1, 64, 256), padded (5) and split (100); the
// input, the output or both in a region (on CUDA, pinned: each tensor in a
// region is copied by the device directly, the other through staging).
TEST_F(SharedMemoryE2eTest, RegionsGiveWhatBytesGive) {
  for (int64_t rows : {1, 5, 64, 100, 256}) {
    const std::vector<float> x = RandomRows(rows, static_cast<unsigned>(rows));
    inference::ModelInferResponse with_bytes;
    ASSERT_TRUE(Infer(Request(rows, x, false, false), &with_bytes).ok()) << rows;
    const std::string& want_bytes = with_bytes.raw_output_contents(0);
    ASSERT_EQ(want_bytes.size(), rows * sizeof(float));
    std::vector<float> want(rows);
    std::memcpy(want.data(), want_bytes.data(), want_bytes.size());
    for (const auto& [shared_input, shared_output] :
         {std::pair{true, true}, {true, false}, {false, true}}) {
      const std::string what = absl::StrCat(rows, " rows, input ", shared_input ? "in" : "not in",
                                            " a region, output ", shared_output ? "in" : "not in",
                                            " a region");
      std::memset(object_.data() + kOutputOffset, 0xFF, rows * sizeof(float));
      inference::ModelInferResponse response;
      const grpc::Status status = Infer(Request(rows, x, shared_input, shared_output), &response);
      ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();
      ASSERT_EQ(response.raw_output_contents_size(), 1) << what;
      std::vector<float> got(rows);
      if (shared_output) {
        EXPECT_TRUE(response.raw_output_contents(0).empty()) << what;
        got = OutputRows(rows);
      } else {
        ASSERT_EQ(response.raw_output_contents(0).size(), want_bytes.size()) << what;
        std::memcpy(got.data(), response.raw_output_contents(0).data(), want_bytes.size());
      }
      for (int64_t r = 0; r < rows; ++r) {
        // The same plan and kernels on the same rows.
        EXPECT_NEAR(got[r], want[r], 1e-6f * std::max(1.0f, std::abs(want[r])))
            << what << ", row " << r;
      }
    }
  }
}

// Note [Shared memory owners]: an owner's regions x_in and y_out, under the
// same names as the shared namespace's (SetUp's), in an object of its own:
// its request reads and writes them (on CUDA, pinned), the shared regions
// stay untouched, another owner finds nothing under the names, and the
// owner's unregister-all leaves the shared regions.
TEST_F(SharedMemoryE2eTest, AnOwnersRegionsAreItsAlone) {
  constexpr int64_t kRows = 5;
  const std::string owner = "owner-9f2c41";
  TestShmObject owned(kObjectBytes);
  ASSERT_NE(owned.data(), nullptr);
  Register("x_in", 0, kMaxRows * kRowBytes, &owned, owner);
  Register("y_out", kOutputOffset, kMaxRows * sizeof(float), &owned, owner);
  EXPECT_EQ(RegionNames(owner), (std::vector<std::string>{"x_in", "y_out"}));
  EXPECT_EQ(RegionNames(), (std::vector<std::string>{"x_in", "y_out"}));
  EXPECT_TRUE(RegionNames("another-owner").empty());

  std::mt19937 generator(11);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> x(kRows * kFeatures);
  for (float& value : x) value = uniform(generator);
  std::memcpy(owned.data(), x.data(), x.size() * sizeof(float));
  std::memset(object_.data() + kOutputOffset, 0xFF, kRows * sizeof(float));
  std::memset(owned.data() + kOutputOffset, 0xFF, kRows * sizeof(float));
  inference::ModelInferResponse with_bytes;
  ASSERT_TRUE(Infer(Request(kRows, x, false, false), &with_bytes).ok());
  inference::ModelInferResponse response;
  const grpc::Status status = Infer(Request(kRows, x, true, true), &response, owner);
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<float> got(kRows);
  std::vector<float> want(kRows);
  std::memcpy(got.data(), owned.data() + kOutputOffset, got.size() * sizeof(float));
  std::memcpy(want.data(), with_bytes.raw_output_contents(0).data(), want.size() * sizeof(float));
  for (int64_t r = 0; r < kRows; ++r) {
    EXPECT_NEAR(got[r], want[r], 1e-6f * std::max(1.0f, std::abs(want[r]))) << "row " << r;
  }
  for (size_t b = 0; b < kRows * sizeof(float); ++b) {
    ASSERT_EQ(object_.data()[kOutputOffset + b], std::byte{0xFF}) << "the shared y_out was written";
  }

  const grpc::Status elsewhere = Infer(Request(kRows, x, true, true), &response, "another-owner");
  EXPECT_EQ(elsewhere.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(elsewhere.error_message().find("'x_in' is not registered"), std::string::npos)
      << elsewhere.error_message();

  grpc::ClientContext context;
  context.AddMetadata(kOwnerHeader, owner);
  inference::SystemSharedMemoryUnregisterResponse unregistered;
  ASSERT_TRUE(stub_->SystemSharedMemoryUnregister(&context, {}, &unregistered).ok());
  EXPECT_TRUE(RegionNames(owner).empty());
  EXPECT_EQ(RegionNames(), (std::vector<std::string>{"x_in", "y_out"}));
}

TEST_F(SharedMemoryE2eTest, TimingLookAtSmallAndLargeRequests) {
  if (ExecutorUnderTest() != ExecutorKind::kCuda) {
    // The host executor spends seconds on 256 rows: the copies vanish in it.
    GTEST_SKIP() << "a timing look needs CUDA graphs (GRAPHSERVE_E2E_DEVICE=cuda)";
  }
  for (int64_t rows : {2, 256}) {
    const std::vector<float> x = RandomRows(rows, 7);
    for (bool shared : {false, true}) {
      const inference::ModelInferRequest request = Request(rows, x, shared, shared);
      std::vector<double> micros;
      for (int i = 0; i < kTimedRequests; ++i) {
        inference::ModelInferResponse response;
        const auto start = std::chrono::steady_clock::now();
        ASSERT_TRUE(Infer(request, &response).ok());
        micros.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                .count());
      }
      std::nth_element(micros.begin(), micros.begin() + micros.size() / 2, micros.end());
      std::cout << "mlp " << rows << " rows (" << rows * kRowBytes / 1024 << " KiB in), "
                << (shared ? "shared memory" : "bytes") << ": median " << micros[micros.size() / 2]
                << " us over " << kTimedRequests << " requests (CUDA graphs)\n";
    }
  }
}

}  // namespace
}  // namespace graphserve
