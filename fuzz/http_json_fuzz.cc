// The HTTP/REST endpoint's body parsers (server/http_json.h) on client bytes.
// The first byte picks the parser; for an inference request the next two
// bytes give Inference-Header-Content-Length (0xffff: the whole body is
// JSON), so the binary tensor data extension is reached too. Invariants: a
// parsed inference request has one raw_input_contents entry per input
// outside shared memory, and answering it (InferResponseToHttp) on zeroed
// outputs of the same shapes works; every other parser either succeeds or
// says why.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "server/http_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace graphserve;
  if (size < 3) return 0;
  const uint8_t parser = data[0] % 6;
  const size_t length_field = size_t{data[1]} << 8 | data[2];
  const std::string_view body(reinterpret_cast<const char*>(data) + 3, size - 3);
  switch (parser) {
    case 0: {
      const size_t header_length = length_field == 0xffff ? body.size() : length_field;
      absl::StatusOr<HttpInferRequest> parsed = ParseInferRequest(body, header_length, "m", "");
      if (!parsed.ok()) {
        FUZZ_CHECK(!parsed.status().message().empty(), "a refusal says why");
        return 0;
      }
      const inference::ModelInferRequest& request = parsed->request;
      int outside_shared_memory = 0;
      inference::ModelInferResponse response;
      for (const auto& input : request.inputs()) {
        if (!input.parameters().contains("shared_memory_region")) ++outside_shared_memory;
        auto* output = response.add_outputs();
        output->set_name(input.name());
        output->set_datatype(input.datatype());
        *output->mutable_shape() = input.shape();
      }
      FUZZ_CHECK(request.raw_input_contents_size() == outside_shared_memory,
                 "one raw entry per input outside shared memory");
      for (int i = 0; i < request.raw_input_contents_size(); ++i) {
        response.add_raw_output_contents(request.raw_input_contents(i));
      }
      while (response.raw_output_contents_size() < response.outputs_size()) {
        response.add_raw_output_contents();
      }
      const HttpBody answer = InferResponseToHttp(response, *parsed);
      FUZZ_CHECK(answer.header_length <= answer.content.size(), "the JSON header fits the body");
      return 0;
    }
    case 1:
      (void)ParseSystemSharedMemoryRegister(body, "region");
      return 0;
    case 2:
      (void)ParseCudaSharedMemoryRegister(body, "region");
      return 0;
    case 3:
      (void)ParseRepositoryIndex(body);
      return 0;
    case 4:
      (void)ParseRepositoryModelLoad(body, "m");
      return 0;
    default:
      (void)ParseRepositoryModelUnload(body, "m");
      return 0;
  }
}
