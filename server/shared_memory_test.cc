#include "server/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "cuda_runtime_api.h"
#include "server/shared_memory_testing.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr size_t kObjectBytes = 3 * 4096;    // three pages, so offsets can cross one
constexpr uint64_t kOddOffset = 4096 + 100;  // not a page multiple: mmap's own offset must be

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(SharedMemoryRegistryTest, RegisteredRangeIsTheClientsMemory) {
  TestShmObject object(kObjectBytes);
  ASSERT_NE(object.data(), nullptr);
  for (size_t i = 0; i < kObjectBytes; ++i) object.data()[i] = std::byte(i % 251);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("in", object.key(), kOddOffset, 1000).ok());

  absl::StatusOr<SharedMemorySlice> slice = registry.Slice("in", 10, 20);
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->byte_size, 20u);
  // The slice starts at the object's byte kOddOffset + 10.
  EXPECT_EQ(std::memcmp(slice->data, object.data() + kOddOffset + 10, 20), 0);
  // Writes go both ways: the server's mapping is the client's memory.
  slice->data[0] = std::byte{0xAB};
  EXPECT_EQ(object.data()[kOddOffset + 10], std::byte{0xAB});
  object.data()[kOddOffset + 11] = std::byte{0xCD};
  EXPECT_EQ(slice->data[1], std::byte{0xCD});

  // The whole range is addressable, the last byte included.
  ASSERT_TRUE(registry.Slice("in", 0, 1000).ok());
  EXPECT_FALSE(registry.Slice("in", 1, 1000).ok());
}

// Note [Pinned shared memory]: a registry that pins does so where CUDA has a
// device, and without one (CI) serves the region unpinned, no error.
TEST(SharedMemoryRegistryTest, PinningRegistryPinsWhereThereIsAGpu) {
  TestShmObject object(kObjectBytes);
  for (size_t i = 0; i < kObjectBytes; ++i) object.data()[i] = std::byte(i % 251);
  SharedMemoryRegistry registry(/*pin_device=*/0);
  ASSERT_TRUE(registry.Register("in", object.key(), kOddOffset, 1000).ok());
  absl::StatusOr<SharedMemorySlice> slice = registry.Slice("in", 0, 1000);
  ASSERT_TRUE(slice.ok()) << slice.status();
  int devices = 0;
  const bool gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  cudaGetLastError();
  EXPECT_EQ(slice->region->pinned(), gpu);
  EXPECT_EQ(std::memcmp(slice->data, object.data() + kOddOffset, 1000), 0);
  if (gpu) {
    // Pinned: CUDA knows the mapping as host memory it registered.
    cudaPointerAttributes attributes{};
    ASSERT_EQ(cudaPointerGetAttributes(&attributes, slice->data), cudaSuccess);
    EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
  }
  // A registry that does not pin never does.
  SharedMemoryRegistry plain;
  ASSERT_TRUE(plain.Register("in", object.key(), 0, 64).ok());
  EXPECT_FALSE((*plain.Slice("in", 0, 64)).region->pinned());
}

TEST(SharedMemoryRegistryTest, StatusListsRegionsAndUnregisterForgetsThem) {
  TestShmObject object(kObjectBytes);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("b", object.key(), 0, 64).ok());
  ASSERT_TRUE(registry.Register("a", object.key(), 64, 128).ok());  // same object, two regions

  absl::StatusOr<std::vector<std::shared_ptr<const SharedMemoryRegion>>> all = registry.Status("");
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0]->name(), "a");  // by name
  EXPECT_EQ((*all)[0]->key(), object.key());
  EXPECT_EQ((*all)[0]->offset(), 64u);
  EXPECT_EQ((*all)[0]->byte_size(), 128u);
  EXPECT_EQ((*all)[1]->name(), "b");

  absl::StatusOr<std::vector<std::shared_ptr<const SharedMemoryRegion>>> one = registry.Status("b");
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0]->byte_size(), 64u);

  registry.Unregister("b");
  registry.Unregister("never registered");  // no error, as in Triton
  EXPECT_EQ(registry.Status("b").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(registry.Status("b").status()), HasSubstr("region 'b'"));
  EXPECT_EQ(registry.Status("")->size(), 1u);
  registry.UnregisterAll();
  EXPECT_TRUE(registry.Status("")->empty());
}

// Note [Shared memory owners]: each owner's view lists, slices and
// unregisters its own regions alone; the same name registers once per
// owner; another owner's region answers as a name never registered; the
// limit counts every owner's regions together.
TEST(SharedMemoryRegistryTest, OwnersSeeOnlyTheirOwnRegions) {
  TestShmObject object(kObjectBytes);
  SharedMemoryRegistry shared(SharedMemoryRegistryOptions{.max_regions = 3});
  SharedMemoryRegistry alice = shared.ForOwner("alice-token");
  SharedMemoryRegistry bob = shared.ForOwner("bob-token");
  ASSERT_TRUE(alice.Register("r", object.key(), 0, 64).ok());
  ASSERT_TRUE(shared.Register("r", object.key(), 64, 128).ok());  // Triton's namespace
  EXPECT_EQ(alice.Register("r", object.key(), 0, 8).code(), absl::StatusCode::kAlreadyExists);

  // Bob sees nothing of alice's or of the shared namespace's.
  EXPECT_TRUE(bob.Status("")->empty());
  EXPECT_EQ(bob.Status("r").status().code(), absl::StatusCode::kNotFound);
  const absl::Status not_bobs = bob.Slice("r", 0, 8).status();
  EXPECT_EQ(not_bobs.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(not_bobs), Message(SharedMemoryRegistry().Slice("r", 0, 8).status()));
  EXPECT_THAT(Message(not_bobs), Not(HasSubstr("token")));
  bob.Unregister("r");
  bob.UnregisterAll();

  // Each of the others sees its own region under the name.
  ASSERT_EQ(alice.Status("")->size(), 1u);
  EXPECT_EQ((*alice.Status("r"))[0]->byte_size(), 64u);
  EXPECT_EQ((*shared.Status("r"))[0]->byte_size(), 128u);
  object.data()[0] = std::byte{0xA1};
  object.data()[64] = std::byte{0x5E};
  EXPECT_EQ(alice.Slice("r", 0, 64)->data[0], std::byte{0xA1});
  EXPECT_EQ(shared.Slice("r", 0, 128)->data[0], std::byte{0x5E});
  EXPECT_FALSE(alice.Slice("r", 0, 65).ok());

  // A copy of a view is the same owner's view.
  const SharedMemoryRegistry alice_again = shared.ForOwner("alice-token");
  EXPECT_EQ(alice_again.Status("")->size(), 1u);

  // The limit: alice's, the shared one, and bob's third make three.
  ASSERT_TRUE(bob.Register("b", object.key(), 0, 8).ok());
  EXPECT_EQ(shared.Register("s", object.key(), 0, 8).code(), absl::StatusCode::kResourceExhausted);

  // Alice's unregister-all leaves the others' regions.
  alice.UnregisterAll();
  EXPECT_TRUE(alice.Status("")->empty());
  EXPECT_EQ(shared.Status("")->size(), 1u);
  EXPECT_EQ(bob.Status("")->size(), 1u);
}

// Note [Shared memory owners]: with owners required, a registration without
// one is refused saying what to send; with one it registers.
TEST(SharedMemoryRegistryTest, ARequiredOwnerRefusesRegistrationsWithout) {
  TestShmObject object(kObjectBytes);
  SharedMemoryRegistry shared(SharedMemoryRegistryOptions{.owner_required = true});
  const absl::Status refused = shared.Register("r", object.key(), 0, 64);
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(Message(refused), HasSubstr("send the header 'graphserve-shared-memory-owner'"));
  EXPECT_EQ(shared.RegisterCuda("c", "handle", 0, 64).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(shared.Status("")->empty());
  SharedMemoryRegistry owned = shared.ForOwner("token");
  ASSERT_TRUE(owned.Register("r", object.key(), 0, 64).ok());
  EXPECT_TRUE(owned.Slice("r", 0, 64).ok());
}

// Note [Shared memory lifetime]: a request holding a slice keeps its region
// mapped through an Unregister, and the name is free again at once.
TEST(SharedMemoryRegistryTest, HeldSliceOutlivesUnregister) {
  TestShmObject object(kObjectBytes);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("out", object.key(), 0, 256).ok());
  absl::StatusOr<SharedMemorySlice> held = registry.Slice("out", 0, 256);
  ASSERT_TRUE(held.ok());
  registry.Unregister("out");
  EXPECT_EQ(registry.Slice("out", 0, 1).status().code(), absl::StatusCode::kInvalidArgument);

  // Still mapped: a late output write lands in the client's memory.
  held->data[255] = std::byte{7};
  EXPECT_EQ(object.data()[255], std::byte{7});
  EXPECT_EQ(held->region.use_count(), 1);  // only the request holds it now

  ASSERT_TRUE(registry.Register("out", object.key(), 512, 16).ok());
  EXPECT_EQ(registry.Status("out").value()[0]->offset(), 512u);
}

TEST(SharedMemoryRegistryTest, RegisteringANameTwiceIsAlreadyExists) {
  TestShmObject object(kObjectBytes);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("in", object.key(), 0, 16).ok());
  const absl::Status again = registry.Register("in", object.key(), 16, 16);
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(Message(again), HasSubstr("shared memory region 'in' is already registered"));
  EXPECT_EQ(registry.Status("in").value()[0]->offset(), 0u);  // the first stays
}

TEST(SharedMemoryRegistryTest, AKeyWithANulIsRefused) {
  // shm_open would open the object named by the key's part before the NUL,
  // and the region would report another key than the one it maps.
  TestShmObject object(kObjectBytes);
  SharedMemoryRegistry registry;
  const std::string key = object.key() + std::string("\0x", 2);
  const absl::Status refused = registry.Register("in", key, 0, 16);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(refused), HasSubstr("a key may not contain a NUL byte"));
  EXPECT_FALSE(registry.Status("in").ok());
}

// One bad registration and a fragment its error must contain.
struct BadRegistration {
  const char* what;
  std::string name;
  std::string key;
  uint64_t offset;
  uint64_t byte_size;
  absl::StatusCode code;
  std::string expected;
};

TEST(SharedMemoryRegistryTest, BadRegistrationsNameTheRegionAndWhy) {
  TestShmObject object(kObjectBytes);
  const std::string missing_key = object.key() + "_missing";
  const BadRegistration cases[] = {
      {"no such object", "in", missing_key, 0, 16, absl::StatusCode::kNotFound,
       "cannot register shared memory region 'in' (key '" + missing_key +
           "'): shm_open failed: No such file or directory"},
      {"key with a slash inside", "in", "/a/b", 0, 16, absl::StatusCode::kInvalidArgument,
       "shm_open failed: Invalid argument"},
      {"past the object's end", "in", object.key(), 0, kObjectBytes + 1,
       absl::StatusCode::kInvalidArgument,
       "offset 0 + byte_size 12289 runs past the object's 12288 bytes"},
      {"offset past the end", "in", object.key(), kObjectBytes, 1,
       absl::StatusCode::kInvalidArgument, "runs past the object's 12288 bytes"},
      {"offset + byte_size overflows", "in", object.key(), 8, ~uint64_t{0} - 4,
       absl::StatusCode::kInvalidArgument, "runs past the object's 12288 bytes"},
      {"zero bytes", "in", object.key(), 0, 0, absl::StatusCode::kInvalidArgument,
       "byte_size is 0"},
      {"no name", "", object.key(), 0, 16, absl::StatusCode::kInvalidArgument, "without a name"},
  };
  SharedMemoryRegistry registry;
  for (const BadRegistration& c : cases) {
    const absl::Status status = registry.Register(c.name, c.key, c.offset, c.byte_size);
    EXPECT_EQ(status.code(), c.code) << c.what << ": " << status;
    EXPECT_THAT(Message(status), HasSubstr(c.expected)) << c.what;
  }
  EXPECT_TRUE(registry.Status("")->empty());  // nothing half-registered
}

TEST(SharedMemoryRegistryTest, SliceOutOfRangeOrUnknownNamesTheRegion) {
  TestShmObject object(kObjectBytes);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("in", object.key(), 0, 100).ok());
  const absl::Status unknown = registry.Slice("nope", 0, 1).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(unknown), HasSubstr("shared memory region 'nope' is not registered"));
  const absl::Status past = registry.Slice("in", 60, 41).status();
  EXPECT_EQ(past.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(past), HasSubstr("shared_memory_offset 60 + shared_memory_byte_size 41 "
                                       "runs past the 100 bytes of shared memory region 'in'"));
  EXPECT_FALSE(registry.Slice("in", 101, 0).ok());
  EXPECT_FALSE(registry.Slice("in", 50, ~uint64_t{0}).ok());  // no wrap-around
}

// Note [Quoting client text]: names and keys are the client's.
TEST(SharedMemoryRegistryTest, HugeNamesAreQuotedAsShortPrefixes) {
  constexpr size_t kHugeText = 64 << 10;  // eight times gRPC's 8 KiB metadata limit
  constexpr size_t kMessageBound = 256;   // a one-line message, whatever the client sent
  const std::string huge(kHugeText, 'n');
  SharedMemoryRegistry registry;
  const absl::Status bad_key = registry.Register(huge, "/" + huge, 0, 16);
  EXPECT_FALSE(bad_key.ok());
  EXPECT_LT(bad_key.message().size(), kMessageBound);
  const absl::Status unknown = registry.Slice(huge, 0, 1).status();
  EXPECT_LT(unknown.message().size(), kMessageBound);
  EXPECT_THAT(Message(unknown), HasSubstr("(65536 bytes)"));
}

// Note [CUDA shared memory]: what can be checked without a GPU (CI); the
// GPU check registers a real IPC handle from graphserve-client.
TEST(SharedMemoryRegistryTest, CudaRegistrationErrorsNameTheRegion) {
  SharedMemoryRegistry registry;
  const std::string handle(64, '\0');  // sizeof(cudaIpcMemHandle_t)
  const absl::Status short_handle = registry.RegisterCuda("gpu", "abc", 0, 64);
  EXPECT_EQ(short_handle.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(short_handle), HasSubstr("CUDA shared memory region 'gpu'"));
  EXPECT_THAT(Message(short_handle), HasSubstr("raw_handle has 3 bytes"));
  EXPECT_EQ(registry.RegisterCuda("gpu", handle, 0, 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.RegisterCuda("", handle, 0, 64).code(), absl::StatusCode::kInvalidArgument);
  // A zero handle is never a valid allocation: without a GPU the server says
  // it has none, with one CUDA refuses the handle; nothing is registered.
  const absl::Status zero = registry.RegisterCuda("gpu", handle, 0, 64);
  EXPECT_TRUE(zero.code() == absl::StatusCode::kFailedPrecondition ||
              zero.code() == absl::StatusCode::kInvalidArgument)
      << zero;
  EXPECT_THAT(Message(zero), HasSubstr("CUDA shared memory region 'gpu'"));
  EXPECT_TRUE(registry.Status("", RegionKind::kCuda)->empty());
}

// System and CUDA regions share one namespace but are listed, and
// unregistered, by their own kind.
TEST(SharedMemoryRegistryTest, KindsAreListedAndUnregisteredApart) {
  TestShmObject object(kObjectBytes);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("in", object.key(), 0, 64).ok());
  EXPECT_EQ(registry.Status("").value().size(), 1u);
  EXPECT_TRUE(registry.Status("", RegionKind::kCuda)->empty());
  const absl::Status not_cuda = registry.Status("in", RegionKind::kCuda).status();
  EXPECT_EQ(not_cuda.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(not_cuda), HasSubstr("no CUDA shared memory region 'in'"));
  registry.Unregister("in", RegionKind::kCuda);
  registry.UnregisterAll(RegionKind::kCuda);
  EXPECT_EQ(registry.Status("in").value().size(), 1u);  // still there
  EXPECT_EQ(registry.RegisterCuda("in", std::string(64, '\0'), 0, 64).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.Status("in").value()[0]->kind(), RegionKind::kSystem);
}

// Note [Shared memory region limit]: one region past the limit is refused
// with a text naming the flag, whatever its kind, and registers once another
// is unregistered.
TEST(SharedMemoryRegistryTest, RegionsPastTheLimitAreResourceExhausted) {
  constexpr int kLimit = 3;  // small, so the test registers few regions
  TestShmObject object(kObjectBytes);
  SharedMemoryRegistry registry(SharedMemoryRegistryOptions{.max_regions = kLimit});
  for (int i = 0; i < kLimit; ++i) {
    ASSERT_TRUE(registry.Register(absl::StrCat("r", i), object.key(), 0, 64).ok());
  }
  const absl::Status full = registry.Register("one_more", object.key(), 0, 64);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_THAT(Message(full), HasSubstr("'one_more'"));
  EXPECT_THAT(Message(full), HasSubstr("--shared-memory-max-regions"));
  EXPECT_EQ(registry.RegisterCuda("cuda", std::string(64, '\0'), 0, 64).code(),
            absl::StatusCode::kResourceExhausted);
  // Failed registrations hold no place.
  EXPECT_EQ(registry.Status("").value().size(), static_cast<size_t>(kLimit));
  registry.Unregister("r0");
  EXPECT_TRUE(registry.Register("one_more", object.key(), 0, 64).ok());
  // Refusals (a missing key) do not use up the limit either.
  registry.Unregister("r1");
  EXPECT_EQ(registry.Register("missing", "/graphserve_no_such_key", 0, 64).code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(registry.Register("r1", object.key(), 0, 64).ok());
}

// Note [Truncated shared memory]: a client that shrinks its object after
// registering gets InvalidArgument naming the region on the next use, and a
// request already reading it past the new end reads zeros instead of killing
// the server with SIGBUS; the region is refused from then on.
TEST(SharedMemoryRegistryTest, ShrunkObjectIsRefusedNotSigbus) {
  constexpr uint64_t kRegionBytes = 2 * 4096;
  TestShmObject object(kObjectBytes);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("in", object.key(), 4096, kRegionBytes).ok());
  absl::StatusOr<SharedMemorySlice> held = registry.Slice("in", 0, kRegionBytes);
  ASSERT_TRUE(held.ok()) << held.status();

  const int fd = shm_open(object.key().c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096 + 100), 0);  // the region's first page only partly kept

  const absl::Status shrunk = registry.Slice("in", 0, 8).status();
  EXPECT_EQ(shrunk.code(), absl::StatusCode::kInvalidArgument) << shrunk;
  EXPECT_THAT(Message(shrunk), HasSubstr("shared memory region 'in'"));
  EXPECT_THAT(Message(shrunk), HasSubstr("shrank after it was registered"));
  EXPECT_THAT(Message(shrunk), HasSubstr("4196 bytes"));

  // The slice a request took before the truncation: its reads past the end
  // see zeros, its writes go nowhere, and nothing dies.
  const volatile std::byte* past = held->data + 4096 + 1;
  const std::byte read = *past;
  EXPECT_EQ(read, std::byte{0});
  held->data[kRegionBytes - 1] = std::byte{1};

  // Growing the object back does not make the region usable again: a page
  // of its mapping is no longer the object's.
  ASSERT_EQ(ftruncate(fd, kObjectBytes), 0);
  close(fd);
  const absl::Status replaced = registry.Slice("in", 0, 8).status();
  EXPECT_EQ(replaced.code(), absl::StatusCode::kInvalidArgument) << replaced;
  EXPECT_THAT(Message(replaced), HasSubstr("past the object's end"));

  // Registering again maps the object as it is now.
  registry.Unregister("in");
  ASSERT_TRUE(registry.Register("in", object.key(), 4096, kRegionBytes).ok());
  EXPECT_TRUE(registry.Slice("in", 0, kRegionBytes).ok());
}

}  // namespace
}  // namespace graphserve
