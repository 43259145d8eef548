// Runs an ONNX model on the host reference executor (no GPU needed): reads
// each input from DIR/<input name>.npy, writes each output to
// OUT/<output name>.npy. The batch size is the inputs' dim 0. Used to check
// the host path of new ops against PyTorch in float64 where no GPU is lent.
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/npy.h"
#include "common/command_line.h"
#include "common/status.h"
#include "runtime/bind.h"
#include "runtime/host/host_executor.h"
#include "runtime/onnx_import.h"
#include "runtime/passes/precision.h"

namespace graphserve {
namespace {

absl::Status Run(const std::string& model_path, const std::string& inputs_dir,
                 const std::string& outputs_dir) {
  ASSIGN_OR_RETURN(Model model, ImportOnnxFile(model_path));
  if (std::optional<std::string> notice = Float32GemmsOfHalfModel(model, ModelPrecision::kFp32)) {
    std::cout << "note: " << *notice << "\n";
  }
  std::vector<HostTensor> inputs;
  for (const ValueInfo& input : model.inputs) {
    ASSIGN_OR_RETURN(HostTensor tensor,
                     ReadNpyFile(absl::StrCat(inputs_dir, "/", input.name, ".npy")));
    inputs.push_back(std::move(tensor));
  }
  BindOptions bind;
  bind.batch_size = inputs.empty() || inputs[0].dims().empty() ? 1 : inputs[0].dims()[0];
  ASSIGN_OR_RETURN(BoundGraph graph, BindModel(model, bind));
  std::cout << "bound " << model.name << " at batch " << bind.batch_size << ": "
            << graph.nodes.size() << " nodes\n";
  ASSIGN_OR_RETURN(std::unique_ptr<HostExecutor> executor, HostExecutor::Create(graph));
  ASSIGN_OR_RETURN(std::vector<HostTensor> outputs, executor->Run(inputs));
  for (size_t i = 0; i < outputs.size(); ++i) {
    RETURN_IF_ERROR(WriteNpyFile(
        absl::StrCat(outputs_dir, "/", model.outputs[i].name, ".npy"), outputs[i]));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace graphserve

int main(int argc, char** argv) {
  std::string model, inputs, outputs;
  graphserve::CommandLine command_line("host_run --model FILE --inputs DIR --outputs DIR");
  command_line.AddString("model", &model, "ONNX model file.");
  command_line.AddString("inputs", &inputs, "Directory of <input name>.npy files.");
  command_line.AddString("outputs", &outputs, "Directory the <output name>.npy files go to.");
  if (absl::Status status = command_line.Parse(argc, argv); !status.ok()) {
    std::cerr << status << "\n";
    return 2;
  }
  if (command_line.help_requested()) {
    std::cout << command_line.Help();
    return 0;
  }
  if (absl::Status status = graphserve::Run(model, inputs, outputs); !status.ok()) {
    std::cerr << "host_run: " << status << "\n";
    return 1;
  }
  return 0;
}
