#pragma once
// Triton's restricted APIs: `--grpc-restricted-protocol=<categories>:<key>=<value>`
// and `--http-restricted-api=<categories>:<key>=<value>` put categories of the
// protocol (model control, shared memory, statistics, ...) behind a header
// that the client must send with the value given. The flag may be repeated,
// one key per group of categories; a category is in one group at most. On
// gRPC the key is a metadata key behind Triton's prefix
// "triton-grpc-protocol-"; on HTTP it is the header itself. A call without
// it is refused with Triton's message (Note [Restricted APIs]).
//
//   --http-restricted-api=model-repository,shared-memory:admin-key=s3cret
//   curl -H 'admin-key: s3cret' -X POST .../v2/repository/models/m/load
//   --grpc-restricted-protocol=model-repository:admin-key=s3cret
//   client.load_model("m", headers={"triton-grpc-protocol-admin-key": "s3cret"})

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphserve {

// Triton's categories (its restricted_features.h), in Triton's order. Which
// RPC or route is in which: Note [Restricted APIs].
enum class ApiCategory : uint8_t {
  kHealth,           // ServerLive, ServerReady, ModelReady; /v2/health/*, .../ready
  kMetadata,         // ServerMetadata, ModelMetadata; GET /v2, GET /v2/models/M
  kInference,        // ModelInfer, ModelStreamInfer; POST .../infer
  kSharedMemory,     // the {System,Cuda}SharedMemory* RPCs and routes
  kModelConfig,      // ModelConfig; GET .../config
  kModelRepository,  // RepositoryIndex, RepositoryModelLoad/Unload; /v2/repository/*
  kStatistics,       // ModelStatistics; GET .../stats
  kTrace,            // Triton's trace API (not served here)
  kLogging,          // Triton's logging API (not served here)
};
inline constexpr size_t kApiCategoryCount = 9;

// "health", "shared-memory", ...: the names the flags take.
absl::string_view ApiCategoryName(ApiCategory category);

enum class RestrictedProtocol { kGrpc, kHttp };

// The key and value a client must send for one category.
struct ApiRestriction {
  // The HTTP header or gRPC metadata key, as the client sends it (on gRPC
  // with Triton's prefix).
  std::string header;
  std::string value;
};

class RestrictedApis {
 public:
  // Nothing restricted.
  RestrictedApis() = default;

  // Parses the values of every occurrence of the protocol's flag.
  // InvalidArgument naming the flag and what it wants for a spec that is
  // not `<categories>:<key>=<value>`, an unknown or repeated category, or a
  // key or value that cannot travel as a header (or gRPC metadata).
  static absl::StatusOr<RestrictedApis> Parse(RestrictedProtocol protocol,
                                              const std::vector<std::string>& specs);

  // The restriction on `category`; null when it is open.
  [[nodiscard]] const ApiRestriction* Find(ApiCategory category) const;
  [[nodiscard]] bool empty() const;

  // OK when `category` is open or `header(key)` (the first value of that
  // header the client sent, nullopt without one) is the expected value;
  // otherwise PermissionDenied with Triton's message.
  absl::Status Check(
      ApiCategory category,
      absl::FunctionRef<std::optional<std::string>(absl::string_view key)> header) const;

  // The flag's help text, naming the categories.
  static std::string FlagHelp(RestrictedProtocol protocol);

  // Implementation details follow.
 private:
  RestrictedProtocol protocol_ = RestrictedProtocol::kHttp;
  std::array<std::optional<ApiRestriction>, kApiCategoryCount> restrictions_;
};

}  // namespace graphserve
