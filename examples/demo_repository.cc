#include "examples/demo_repository.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "capture/model_config_writer.h"
#include "common/status.h"
#include "examples/example_models.h"
#include "runtime/onnx_import.h"
#include "server/triton_config.h"

namespace graphserve {

absl::Status WriteDemoRepository(const std::string& dir, const DemoRepositoryOptions& options,
                                 std::vector<std::string>* written) {
  // The ONNX files go to a scratch folder first: WriteModelDirectory copies
  // each into its <model>/1/model.onnx.
  const std::filesystem::path scratch = std::filesystem::path(dir) / ".models";
  std::vector<std::string> model_files;
  RETURN_IF_ERROR(WriteExampleModels(scratch.string(), &model_files));
  for (const std::string& model_file : model_files) {
    const std::string name = std::filesystem::path(model_file).stem().string();
    ASSIGN_OR_RETURN(Model model, ImportOnnxFile(model_file));
    inference::ModelConfig config;
    config.set_name(name);
    config.set_max_batch_size(static_cast<int32_t>(options.max_batch_size));
    RETURN_IF_ERROR(DeclareConfigFromModel(&model, &config));
    for (int64_t size : options.batch_sizes) config.mutable_capture()->add_batch_sizes(size);
    config.mutable_capture()->set_streams(options.num_streams);
    const std::string model_dir = (std::filesystem::path(dir) / name).string();
    RETURN_IF_ERROR(WriteModelDirectory(model_dir, model_file, config));
    if (written != nullptr) written->push_back(model_dir);
  }
  std::error_code error;
  std::filesystem::remove_all(scratch, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot remove '", scratch.string(), "': ", error.message()));
  }
  return absl::OkStatus();
}

}  // namespace graphserve
