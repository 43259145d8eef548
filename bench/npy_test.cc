#include "bench/npy.h"

#include <cstdio>
#include <cstring>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

// np.save(f, np.array([[1.5, -2.0, 3.25], [0.0, 4.0, -0.5]], dtype=np.float32)),
// as NumPy 1.26 writes it: version 1.0, header padded to 64 bytes.
std::string NumpyFloatFile() {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes.push_back(static_cast<char>(header.size()));
  bytes.push_back('\0');
  bytes += header;
  const float values[] = {1.5f, -2.0f, 3.25f, 0.0f, 4.0f, -0.5f};
  bytes.append(reinterpret_cast<const char*>(values), sizeof(values));
  return bytes;
}

TEST(NpyTest, ReadsWhatNumpyWrites) {
  absl::StatusOr<HostTensor> tensor = ParseNpy(NumpyFloatFile(), "a.npy");
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  EXPECT_EQ(tensor->dtype(), DType::kFloat32);
  EXPECT_EQ(tensor->dims(), (Dims{2, 3}));
  EXPECT_EQ(tensor->data<float>()[2], 3.25f);
  EXPECT_EQ(tensor->data<float>()[5], -0.5f);
}

TEST(NpyTest, WritesWhatNumpyWrites) {
  absl::StatusOr<HostTensor> tensor = ParseNpy(NumpyFloatFile(), "a.npy");
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  EXPECT_EQ(SerializeNpy(*tensor), NumpyFloatFile());
}

class NpyRoundTripTest : public ::testing::TestWithParam<Dims> {};

TEST_P(NpyRoundTripTest, EveryDTypeSurvivesAFile) {
  for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kBool}) {
    HostTensor tensor(dtype, GetParam());
    auto* bytes = static_cast<unsigned char*>(tensor.raw());
    for (size_t i = 0; i < tensor.bytes(); ++i) {
      // Bools must stay 0 or 1; other types get a pattern that differs per byte.
      bytes[i] = dtype == DType::kBool ? (i % 3 == 0) : static_cast<unsigned char>(i * 37 + 11);
    }
    const std::string path =
        absl::StrCat(::testing::TempDir(), "/round_trip_", static_cast<int>(dtype), ".npy");
    ASSERT_TRUE(WriteNpyFile(path, tensor).ok());
    absl::StatusOr<HostTensor> read = ReadNpyFile(path);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->dtype(), dtype);
    EXPECT_EQ(read->dims(), GetParam());
    ASSERT_EQ(read->bytes(), tensor.bytes());
    EXPECT_EQ(std::memcmp(read->raw(), tensor.raw(), tensor.bytes()), 0);
    // The data starts 64-byte aligned, as NumPy's own files do.
    EXPECT_EQ((SerializeNpy(tensor).size() - tensor.bytes()) % 64, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, NpyRoundTripTest,
                         ::testing::Values(Dims{}, Dims{7}, Dims{0}, Dims{2, 3},
                                           Dims{4, 26, 16},
                                           // A header longer than two 64-byte blocks.
                                           Dims{2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2,
                                                1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1}));

TEST(NpyTest, RejectsComplexWithAHint) {
  std::string bytes = NumpyFloatFile();
  bytes.replace(bytes.find("<f4"), 3, "<c8");
  absl::StatusOr<HostTensor> tensor = ParseNpy(bytes, "ref.npy");
  ASSERT_FALSE(tensor.ok());
  EXPECT_EQ(tensor.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(tensor.status().message(), HasSubstr("ref.npy"));
  EXPECT_THAT(tensor.status().message(), HasSubstr("'<c8' is not supported"));
}

TEST(NpyTest, RejectsBigEndian) {
  std::string bytes = NumpyFloatFile();
  bytes.replace(bytes.find("<f4"), 3, ">f4");
  EXPECT_FALSE(ParseNpy(bytes, "be.npy").ok());
}

TEST(NpyTest, RejectsFortranOrder) {
  std::string bytes = NumpyFloatFile();
  bytes.replace(bytes.find("False"), 5, "True ");
  absl::StatusOr<HostTensor> tensor = ParseNpy(bytes, "f.npy");
  ASSERT_FALSE(tensor.ok());
  EXPECT_THAT(tensor.status().message(), HasSubstr("Fortran"));
}

TEST(NpyTest, RejectsTruncatedData) {
  std::string bytes = NumpyFloatFile();
  bytes.resize(bytes.size() - 4);  // one float short
  absl::StatusOr<HostTensor> tensor = ParseNpy(bytes, "short.npy");
  ASSERT_FALSE(tensor.ok());
  EXPECT_THAT(tensor.status().message(), HasSubstr("needs 24 data bytes, the file holds 20"));
}

TEST(NpyTest, RejectsAShapeWhoseSizeOverflows) {
  std::string bytes = NumpyFloatFile();
  // Same header length: "(2, 3)" becomes a shape whose byte count wraps.
  const std::string huge = "(4611686018427387904, 4)";
  const size_t at = bytes.find("(2, 3)");
  bytes.replace(at, 6, huge);
  bytes.erase(at + huge.size() + 3, huge.size() - 6);  // keep the padding length
  absl::StatusOr<HostTensor> tensor = ParseNpy(bytes, "huge.npy");
  ASSERT_FALSE(tensor.ok());
  EXPECT_THAT(tensor.status().message(), HasSubstr("more than 2^64"));
}

TEST(NpyTest, RejectsMissingMagic) {
  absl::StatusOr<HostTensor> tensor = ParseNpy("PK\x03\x04 a zip file", "x.npz");
  ASSERT_FALSE(tensor.ok());
  EXPECT_THAT(tensor.status().message(), HasSubstr("magic"));
}

TEST(NpyTest, MissingFileIsNotFound) {
  EXPECT_EQ(ReadNpyFile("/nonexistent/dir/x.npy").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace graphserve
