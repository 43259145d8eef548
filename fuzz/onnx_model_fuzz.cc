// ONNX model bytes, as a model repository or a model-control load hands them
// to the server, through import (runtime/onnx_import.h: parse, check,
// convert, constants read) and binding at a batch size (runtime/bind.h:
// shape inference and constant folding on the host). The first byte picks
// the batch size. Invariants: an imported model has outputs or strings it
// passes back, and a bound
// graph's inputs and outputs name values it holds, in a topological node
// order whose operands are values it holds too.

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "runtime/bind.h"
#include "runtime/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace graphserve;
  if (size < 1) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  absl::StatusOr<Model> model = ImportOnnxBytes(bytes, "fuzz");
  if (!model.ok()) {
    FUZZ_CHECK(!model.status().message().empty(), "a refusal says why");
    return 0;
  }
  // Note [Strings at the model's edges]: a model that only hands strings
  // back keeps none of them; then there is nothing to bind.
  FUZZ_CHECK(!model->outputs.empty() || !model->passed_strings.empty(),
             "an imported model has outputs");
  // Import keeps what else such a model holds (nodes no output reads): the
  // server refuses it at load (PassThroughInterface, server/pass_through.h).
  if (model->outputs.empty()) return 0;
  BindOptions options;
  options.batch_size = 1 + data[0] % 4;
  absl::StatusOr<BoundGraph> bound = BindModel(*model, options);
  if (!bound.ok()) return 0;
  const size_t values = bound->values.size();
  for (ValueId id : bound->inputs) FUZZ_CHECK(static_cast<size_t>(id) < values, "input value");
  for (ValueId id : bound->outputs) FUZZ_CHECK(static_cast<size_t>(id) < values, "output value");
  for (const BoundNode& node : bound->nodes) {
    for (ValueId id : node.inputs) FUZZ_CHECK(id < 0 || static_cast<size_t>(id) < values, "operand");
    for (ValueId id : node.outputs) FUZZ_CHECK(static_cast<size_t>(id) < values, "result");
  }
  return 0;
}
