#include "client/shared_memory_slots.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/cuda_shared_memory.h"
#include "client/fake_inference_server.h"
#include "client/request_builder.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

constexpr int64_t kBatch = 3;  // rows of "double": x FP32 [3,4], 48 bytes

bool ObjectExists(const std::string& key) {
  const int fd = shm_open(key.c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  close(fd);
  return true;
}

std::vector<float> Floats(absl::string_view bytes) {
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

class SharedMemorySlotsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<FakeInferenceServer>> server = FakeInferenceServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    absl::StatusOr<std::unique_ptr<InferenceClient>> client =
        InferenceClient::Create({.address = server_->address()});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
    absl::StatusOr<inference::ModelMetadataResponse> metadata = client_->ModelMetadata("double");
    ASSERT_TRUE(metadata.ok()) << metadata.status();
    absl::StatusOr<inference::ModelConfigResponse> config = client_->ModelConfig("double");
    ASSERT_TRUE(config.ok()) << config.status();
    const RequestBuilderOptions request_options{.batch_size = kBatch, .seed = 5};
    absl::StatusOr<InferRequest> request =
        BuildRequest(*metadata, &config->config(), request_options);
    ASSERT_TRUE(request.ok()) << request.status();
    request_ = *std::move(request);
    absl::StatusOr<std::vector<ExpectedOutput>> outputs =
        ExpectedOutputs(*metadata, &config->config(), request_options);
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    outputs_ = *std::move(outputs);
  }

  absl::StatusOr<std::unique_ptr<SharedMemorySlots>> Slots(SharedMemoryOptions options = {
                                                               .kind = SharedMemoryKind::kSystem}) {
    return SharedMemorySlots::Create(client_.get(), request_, outputs_, options);
  }

  std::unique_ptr<FakeInferenceServer> server_;
  std::unique_ptr<InferenceClient> client_;
  InferRequest request_;
  std::vector<ExpectedOutput> outputs_;
};

TEST_F(SharedMemorySlotsTest, TheServerReadsInputsAndWritesOutputsInTheRegion) {
  absl::StatusOr<std::unique_ptr<SharedMemorySlots>> slots = Slots();
  ASSERT_TRUE(slots.ok()) << slots.status();
  EXPECT_EQ((*slots)->size(), 1u);
  EXPECT_EQ(server_->registered_regions(), 1);
  const SharedMemorySlot* slot = (*slots)->slot(0);
  EXPECT_TRUE(slot->request().inputs[0].data.empty());

  absl::StatusOr<InferResult> result = client_->Infer(slot->request());
  ASSERT_TRUE(result.ok()) << result.status();
  absl::StatusOr<const InferOutput*> y = result->Output("y");
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)->shared_memory_region, slot->region());
  EXPECT_TRUE((*y)->data.empty());
  absl::StatusOr<std::string> bytes = slot->ReadOutput(**y);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  // "double" doubles: the reference is the request's own input bytes.
  const std::vector<float> x = Floats(request_.inputs[0].data);
  const std::vector<float> doubled = Floats(*bytes);
  ASSERT_EQ(doubled.size(), static_cast<size_t>(kBatch * 4));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(doubled[i], 2 * x[i]) << i;
}

TEST_F(SharedMemorySlotsTest, EverySlotHasItsOwnRegionAndGoesWithThePool) {
  std::set<std::string> regions;
  {
    absl::StatusOr<std::unique_ptr<SharedMemorySlots>> slots = Slots();
    ASSERT_TRUE(slots.ok()) << slots.status();
    ASSERT_TRUE((*slots)->Reserve(3).ok());
    ASSERT_EQ((*slots)->size(), 3u);
    EXPECT_EQ(server_->registered_regions(), 3);
    for (size_t i = 0; i < 3; ++i) {
      const std::string& region = (*slots)->slot(i)->region();
      EXPECT_TRUE(absl::StartsWith(region, absl::StrCat("graphserve_client_", getpid(), "_")))
          << region;
      EXPECT_TRUE(ObjectExists("/" + region)) << region;
      regions.insert(region);
    }
    EXPECT_EQ(regions.size(), 3u);
  }
  EXPECT_EQ(server_->registered_regions(), 0);
  for (const std::string& region : regions) EXPECT_FALSE(ObjectExists("/" + region)) << region;
}

TEST_F(SharedMemorySlotsTest, AcquireTakesAFreeSlotOrAddsOne) {
  absl::StatusOr<std::unique_ptr<SharedMemorySlots>> slots = Slots();
  ASSERT_TRUE(slots.ok()) << slots.status();
  absl::StatusOr<SharedMemorySlot*> first = (*slots)->Acquire();
  absl::StatusOr<SharedMemorySlot*> second = (*slots)->Acquire();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(*first, *second);
  EXPECT_EQ((*slots)->size(), 2u);
  (*slots)->Release(*first);
  absl::StatusOr<SharedMemorySlot*> again = (*slots)->Acquire();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
  EXPECT_EQ((*slots)->size(), 2u);
}

TEST_F(SharedMemorySlotsTest, AnOutputLargerThanItsRoomIsRefusedBeforeAnyRegion) {
  absl::StatusOr<std::unique_ptr<SharedMemorySlots>> slots =
      Slots({.kind = SharedMemoryKind::kSystem, .output_byte_size = 47});  // y needs 48
  EXPECT_EQ(slots.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(slots.status().message(), "pass --output-shared-memory-size 48"))
      << slots.status();
  EXPECT_EQ(server_->registered_regions(), 0);
}

TEST_F(SharedMemorySlotsTest, CudaFailsClearlyWithoutAGpuOrWithoutServerSupport) {
  absl::StatusOr<std::unique_ptr<SharedMemorySlots>> slots =
      Slots({.kind = SharedMemoryKind::kCuda});
  if (CheckCudaDevice(0).ok()) {
    // The fake serves system shared memory only (CUDA: UNIMPLEMENTED).
    EXPECT_EQ(slots.status().code(), absl::StatusCode::kUnimplemented) << slots.status();
  } else {
    EXPECT_EQ(slots.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_TRUE(absl::StartsWith(slots.status().message(), "no CUDA device: --shared-memory cuda"))
        << slots.status();
  }
  EXPECT_EQ(server_->registered_regions(), 0);
}

TEST(SharedMemoryKindTest, ParsesTheThreeNames) {
  for (const SharedMemoryKind kind :
       {SharedMemoryKind::kNone, SharedMemoryKind::kSystem, SharedMemoryKind::kCuda}) {
    absl::StatusOr<SharedMemoryKind> parsed = ParseSharedMemoryKind(SharedMemoryKindName(kind));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, kind);
  }
  EXPECT_EQ(ParseSharedMemoryKind("System").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace graphserve
