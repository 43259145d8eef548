// ModelInferRequest bytes, as a gRPC client sends them, validated against the
// interfaces of the demo repository's models (examples/demo_repository.h)
// and, for a valid request, the response laid out (PrepareInferResponse).
// The first byte picks the model, among them two of BYTES tensors (Note
// [Strings at the model's edges]). Invariants: a valid request has 1 to
// max_batch_size rows and one row block per interface input, every byte of
// which is readable (ASan checks the reads; a passed string's elements
// likewise), its response holds rows x bytes_per_row bytes for each numbers
// output it returns, and once finished each BYTES output splits into the
// elements of its shape.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "examples/demo_repository.h"
#include "fuzz/fuzz_check.h"
#include "proto/grpc_service.pb.h"
#include "server/model_interface.h"
#include "server/bytes_tensor.h"
#include "server/model_repository.h"
#include "server/request_validation.h"

namespace graphserve {
namespace {

// The demo models' interfaces, batching, plus each one declared without a
// batch dimension (max_batch_size 0), which validation treats differently.
std::vector<ModelInterface> DemoInterfaces() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "graphserve_infer_request_fuzz";
  std::vector<std::string> written;
  FUZZ_CHECK(WriteDemoRepository(dir.string(), {}, &written).ok(), "the demo repository");
  std::vector<ModelInterface> interfaces;
  for (const std::string& model : written) {
    const fs::path path = fs::path(model) / "config.pbtxt";
    std::ifstream file(path);
    const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    absl::StatusOr<inference::ModelConfig> config = ParseModelConfigText(text, path.string());
    FUZZ_CHECK(config.ok(), "a demo config.pbtxt parses");
    absl::StatusOr<ModelInterface> batching = InterfaceFromConfig(*config);
    FUZZ_CHECK(batching.ok(), "a demo config is a valid interface");
    interfaces.push_back(*batching);
    config->set_max_batch_size(0);
    absl::StatusOr<ModelInterface> single = InterfaceFromConfig(*config);
    FUZZ_CHECK(single.ok(), "a demo config without batching is a valid interface");
    interfaces.push_back(*single);
  }
  fs::remove_all(dir);
  // BYTES (Note [Strings at the model's edges] in runtime/ir.h): the text of
  // numbers in and out, and strings handed back in any shape without
  // batching.
  ModelInterface text;
  text.name = "text";
  text.max_batch_size = 8;
  text.inputs = {{"s", DType::kInt32, {2}}, {"f", DType::kFloat16, {}}, {"x", DType::kFloat32, {3}}};
  text.outputs = {{"t", DType::kFloat64, {2}}, {"y", DType::kFloat32, {3}}};
  text.inputs[0].wire = text.inputs[1].wire = text.outputs[0].wire = TensorWire::kText;
  interfaces.push_back(text);
  ModelInterface passed;
  passed.name = "passed";
  passed.max_batch_size = 1;
  passed.batching = false;
  passed.inputs = {{"p", DType::kFloat32, {-1, -1}}};
  passed.outputs = {{"q", DType::kFloat32, {-1, -1}}};
  passed.inputs[0].wire = passed.outputs[0].wire = TensorWire::kPassed;
  interfaces.push_back(passed);
  return interfaces;
}

// Where the input bytes' sum goes, so that the compiler keeps the reads.
volatile unsigned g_checksum = 0;

}  // namespace
}  // namespace graphserve

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace graphserve;
  static const std::vector<ModelInterface> interfaces = DemoInterfaces();
  if (size < 1) return 0;
  const ModelInterface& model = interfaces[data[0] % interfaces.size()];
  inference::ModelInferRequest request;
  if (!request.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
  absl::StatusOr<ValidatedRequest> validated = ValidateInferRequest(request, model);
  if (!validated.ok()) return 0;
  FUZZ_CHECK(validated->view.rows >= 1 &&
                 validated->view.rows <= std::max<int64_t>(model.max_batch_size, 1),
             "rows within the model's batch");
  FUZZ_CHECK(validated->view.inputs.size() == model.inputs.size(), "one block per input");
  unsigned checksum = 0;
  for (size_t i = 0; i < model.inputs.size(); ++i) {
    if (model.inputs[i].wire == TensorWire::kPassed) {
      FUZZ_CHECK(validated->view.inputs[i].data == nullptr,
                 "the runtime never sees a passed string");
      for (const absl::string_view element : validated->passed[i].elements) {
        for (const char c : element) checksum += static_cast<unsigned char>(c);
      }
      continue;
    }
    const size_t bytes =
        static_cast<size_t>(validated->view.rows) * model.inputs[i].bytes_per_row();
    const std::byte* block = validated->view.inputs[i].data;
    for (size_t b = 0; b < bytes; ++b) checksum += static_cast<unsigned>(block[b]);
  }
  inference::ModelInferResponse response;
  const std::vector<std::byte*> destinations =
      PrepareInferResponse(request, model, "1", *validated, &response);
  FUZZ_CHECK(destinations.size() == model.outputs.size(), "one destination per output");
  FUZZ_CHECK(response.outputs_size() == static_cast<int>(validated->outputs.size()),
             "the response returns what validation chose");
  for (int k = 0; k < response.outputs_size(); ++k) {
    const TensorSpec& spec = model.outputs[validated->outputs[k]];
    if (spec.wire == TensorWire::kPassed) continue;  // complete already: checked below
    FUZZ_CHECK(response.raw_output_contents(k).size() ==
                   static_cast<size_t>(validated->view.rows) * spec.bytes_per_row(),
               "an output's bytes are its rows");
  }
  // Whatever the runner wrote (here: nothing, zero bytes), a finished BYTES
  // output splits into the elements of its shape.
  FUZZ_CHECK(FinishOutputs(model, *validated, &response).ok(), "outputs without regions finish");
  for (int k = 0; k < response.outputs_size(); ++k) {
    if (model.outputs[validated->outputs[k]].wire == TensorWire::kNumbers) continue;
    int64_t elements = 1;
    for (const int64_t dim : response.outputs(k).shape()) elements *= dim;
    FUZZ_CHECK(SplitBytesElements(response.raw_output_contents(k), elements).ok(),
               "a BYTES output holds its shape's elements");
  }
  g_checksum = checksum;
  return 0;
}
