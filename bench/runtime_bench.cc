// runtime_bench: times GraphServe's CUDA executor on one ONNX model at several
// batch sizes and writes its outputs for bench/run_runtime_bench.py to check
// against PyTorch. See bench/runtime_benchmark.h.

#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/command_line.h"
#include "bench/runtime_bench_record.h"
#include "bench/runtime_benchmark.h"

namespace {

int Fail(const absl::Status& status) {
  std::cerr << "runtime_bench: " << status << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  graphserve::RuntimeBenchOptions options;
  std::string batch_sizes = "1,2,4,8,16,32,64,128,256,512,1024,2048";
  std::string json_path;
  int64_t device = options.device;
  graphserve::CommandLine command_line(
      "runtime_bench --model FILE [--batch-sizes 1,2,...] [--inputs DIR] [--outputs DIR] "
      "[--graph-outputs DIR] [--json FILE] [--bucket 128]");
  command_line.AddString("model", &options.model_path, "ONNX model file (required).");
  command_line.AddString("batch-sizes", &batch_sizes, "Comma-separated batch sizes, run in order.");
  std::string bucket;
  command_line.AddString("bucket", &bucket,
                         "Comma-separated extents of the model's dynamic dims beyond the batch "
                         "(a sequence length, an image's height and width), in the order the "
                         "model's inputs name them; every batch size runs at them.");
  command_line.AddString("inputs", &options.inputs_dir,
                         "Directory of inputs: DIR/<B>/<input name>.npy. Without it, float32 "
                         "inputs are drawn at random (timing only).");
  command_line.AddString("outputs", &options.outputs_dir,
                         "Directory for the outputs of the first run: DIR/<B>/<output name>.npy.");
  command_line.AddString("graph-outputs", &options.graph_outputs_dir,
                         "Directory for the outputs of the graph replay: DIR/<B>/<output name>.npy.");
  command_line.AddInt("warmup", &options.warmup, "Untimed runs before each timing loop.");
  command_line.AddInt("iters", &options.iters, "Timed runs per loop; the median is reported.");
  command_line.AddString("json", &json_path, "Write the records to this JSON file.");
  command_line.AddBool("allow-tf32", &options.allow_tf32, "Allow TF32 tensor-core GEMMs and convolutions.");
  command_line.AddBool("channels-last-convs", &options.channels_last_convs,
                       "16-bit convolutions hand each other their outputs NHWC (Note "
                       "[Channels-last convolutions] in runtime/fusion.h); false: all NCHW.");
  command_line.AddBool("own-depthwise-convs", &options.own_depthwise_convs,
                       "Depthwise convolutions on our own kernel (Note [Depthwise "
                       "convolutions] in runtime/cuda/nn_kernels.cu); false: on cuDNN.");
  std::string precision;
  command_line.AddString("precision", &precision,
                         "What the model computes in, as config.pbtxt's capture.precision: "
                         "fp32 (default), tf32, fp16, bf16.");
  command_line.AddBool("reference", &options.reference,
                       "Also compare every graph with the independent reference the server's "
                       "load-time check uses, and record the error (not enforced).");
  command_line.AddInt("device", &device, "CUDA device ordinal.");
  std::string schedules = "single";
  int64_t max_lanes = options.max_lanes;
  command_line.AddString("schedules", &schedules,
                         "Comma-separated schedule policies to capture and time side by side "
                         "(single, wavefront, asap, auto); each adds a `schedules` entry.");
  command_line.AddInt("max-lanes", &max_lanes, "Most streams one schedule may use.");

  if (absl::Status status = command_line.Parse(argc, argv); !status.ok()) return Fail(status);
  if (command_line.help_requested()) {
    std::cout << command_line.Help();
    return 0;
  }
  if (options.model_path.empty()) {
    return Fail(absl::InvalidArgumentError("--model is required (see --help)"));
  }
  absl::StatusOr<std::vector<int64_t>> sizes = graphserve::ParseIntList(batch_sizes, 1);
  if (!sizes.ok()) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--batch-sizes: ", sizes.status().message())));
  }
  options.batch_sizes = *std::move(sizes);
  absl::StatusOr<graphserve::ModelPrecision> parsed_precision =
      graphserve::ParseModelPrecision(precision);
  if (!parsed_precision.ok()) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--precision: ", parsed_precision.status().message())));
  }
  options.precision = *parsed_precision;
  options.allow_tf32 = graphserve::AllowsTf32(options.precision, options.allow_tf32);
  if (!bucket.empty()) {
    absl::StatusOr<std::vector<int64_t>> extents = graphserve::ParseIntList(bucket, 1);
    if (!extents.ok()) {
      return Fail(absl::InvalidArgumentError(absl::StrCat("--bucket: ", extents.status().message())));
    }
    options.bucket = *std::move(extents);
  }
  options.device = static_cast<int>(device);
  options.max_lanes = static_cast<int>(max_lanes);
  options.schedules = absl::StrSplit(schedules, ',', absl::SkipEmpty());
  if (options.schedules.empty()) {
    return Fail(absl::InvalidArgumentError("--schedules: name at least one policy"));
  }

  // Kept as they come, so that a failure at one batch size still leaves the
  // sizes before it in the JSON file.
  std::vector<graphserve::RuntimeBenchRecord> records;
  const absl::Status status =
      graphserve::RunRuntimeBenchmark(options, [&](const graphserve::RuntimeBenchRecord& record) {
        std::cout << graphserve::FormatRuntimeBenchRecord(record) << std::endl;
        records.push_back(record);
      }).status();

  if (!json_path.empty()) {
    std::ofstream json(json_path, std::ios::trunc);
    json << graphserve::RuntimeBenchRecordsToJson(records);
    json.close();
    if (!json) return Fail(absl::InternalError(absl::StrCat("cannot write ", json_path)));
  }
  if (!status.ok()) return Fail(status);
  return 0;
}
