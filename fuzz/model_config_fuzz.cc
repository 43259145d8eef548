// A model configuration from a client or a repository: config.pbtxt text, or
// the model-control load parameter 'config' (JSON), as the server reads them
// (server/model_repository.h), then everything the server derives from a
// config before it touches a model file: the interface, the ignored-field
// report, the capture sizes, the graphs switch and the queue policy. The
// first byte picks text or JSON. Invariants: a config either parses or the
// error says where; a valid interface has inputs and outputs with positive
// row sizes.

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "server/model_interface.h"
#include "server/model_repository.h"
#include "server/triton_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace graphserve;
  if (size < 1) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  absl::StatusOr<inference::ModelConfig> config =
      data[0] % 2 == 0 ? ParseModelConfigText(text, "config.pbtxt")
                       : ParseModelConfigJson(text, "fuzz");
  if (!config.ok()) {
    FUZZ_CHECK(!config.status().message().empty(), "a refusal says why");
    return 0;
  }
  if (!CheckModelConfigLimits(*config, "config.pbtxt").ok()) return 0;
  (void)IgnoredConfigFields(*config);
  (void)GraphsDisabledByConfig(*config);
  (void)RequestedCaptureSizes(*config);
  (void)QueuePolicyFromConfig(*config);
  absl::StatusOr<ModelInterface> interface = InterfaceFromConfig(*config);
  if (!interface.ok()) return 0;
  FUZZ_CHECK(!interface->inputs.empty() && !interface->outputs.empty(), "inputs and outputs");
  for (const TensorSpec& spec : interface->inputs) {
    FUZZ_CHECK(spec.bytes_per_row() > 0, "an input row has bytes");
  }
  return 0;
}
