#include "tests/node_test_runner.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "runtime/bind.h"
#include "runtime/onnx_import.h"

namespace graphserve {

namespace fs = std::filesystem;

namespace {

using Outcome = NodeTestResult::Outcome;

// Tensors of one data set, in file order: input_0.pb, input_1.pb, ...
absl::StatusOr<std::vector<HostTensor>> ReadTensors(const fs::path& data_set,
                                                    const std::string& prefix) {
  std::vector<HostTensor> tensors;
  for (int k = 0;; ++k) {
    const fs::path path = data_set / absl::StrCat(prefix, "_", k, ".pb");
    if (!fs::exists(path)) break;
    ASSIGN_OR_RETURN(HostTensor tensor, ReadTensorProtoFile(path.string()));
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

std::vector<fs::path> DataSets(const fs::path& test_dir) {
  std::vector<fs::path> data_sets;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(test_dir, error)) {
    if (entry.is_directory() &&
        entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      data_sets.push_back(entry.path());
    }
  }
  std::sort(data_sets.begin(), data_sets.end());
  return data_sets;
}

// "op Conv is not supported; input 'x': element type FLOAT16 ..." from
// import's one-problem-per-line message, without node names, so that tests
// skipped for the same reason share it.
std::string SkipReason(const absl::Status& status) {
  std::vector<std::string> reasons;
  std::vector<std::string> lines = absl::StrSplit(status.message(), '\n');
  for (size_t i = lines.size() > 1 ? 1 : 0; i < lines.size(); ++i) {
    std::string line(absl::StripLeadingAsciiWhitespace(lines[i]));
    if (line.rfind("op ", 0) == 0) line = line.substr(0, line.find(" ("));
    reasons.push_back(std::move(line));
  }
  return absl::StrJoin(reasons, "; ");
}

std::string IndexString(const Dims& dims, int64_t flat) {
  if (dims.empty()) return "[]";
  std::vector<int64_t> index(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    index[d] = dims[d] == 0 ? 0 : flat % dims[d];
    flat = dims[d] == 0 ? 0 : flat / dims[d];
  }
  return DimsToString(index);
}

// One unit in the last place of 1.0 in float16 (2^-10) or bfloat16 (2^-7);
// 0 for the other types.
double SixteenBitUlp(DType dtype) {
  if (dtype == DType::kFloat16) return 0x1p-10;
  if (dtype == DType::kBFloat16) return 0x1p-7;
  return 0.0;
}

}  // namespace

std::string CompareTensors(const HostTensor& got, const HostTensor& expected,
                           const NodeTestTolerance& tolerance) {
  if (got.dtype() != expected.dtype()) {
    return absl::StrCat("dtype ", DTypeName(got.dtype()), ", expected ",
                        DTypeName(expected.dtype()));
  }
  if (got.dims() != expected.dims()) {
    return absl::StrCat("dims ", DimsToString(got.dims()), ", expected ",
                        DimsToString(expected.dims()));
  }
  const int64_t count = expected.num_elements();
  int64_t mismatches = 0;
  int64_t worst = -1;
  double worst_excess = 0;  // |diff| / allowed for floats, |diff| for integers
  std::string detail;
  VisitDType(expected.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::Host;
    const T* a = got.data<T>();
    const T* b = expected.data<T>();
    if constexpr (IsFloatingDType(decltype(tag)::value)) {
      // Compared as doubles (the 16-bit floats widen exactly), within the
      // tolerance, NaN matching NaN.
      auto value = [](T x) { return static_cast<double>(Widen(x)); };
      // A 16-bit float output may be two roundings of its type away: the
      // reference computes a test's intermediate values in that type at its
      // own rounding points (numpy's), the executors in float (ONNX
      // Runtime likewise loosens its bfloat16 tests).
      const double rtol = std::max(tolerance.rtol, 2.0 * SixteenBitUlp(expected.dtype()));
      for (int64_t i = 0; i < count; ++i) {
        const double x = value(a[i]), y = value(b[i]);
        if (x == y || (std::isnan(x) && std::isnan(y))) continue;
        const double diff = std::fabs(x - y);
        const double allowed = tolerance.atol + rtol * std::fabs(y);
        // Infinities match only themselves (checked above), as in numpy.isclose.
        if (std::isfinite(x) && std::isfinite(y) && diff <= allowed) continue;
        ++mismatches;
        // NaN against a number, or infinities: worse than any finite miss.
        const double excess = std::isfinite(diff) ? diff / allowed : HUGE_VAL;
        if (worst < 0 || excess > worst_excess) {
          worst = i;
          worst_excess = excess;
        }
      }
      if (worst >= 0) {
        const double x = value(a[worst]), y = value(b[worst]);
        detail = absl::StrFormat("got %.9g, expected %.9g (|diff| %.3g, allowed %.3g)", x, y,
                                 std::fabs(x - y), tolerance.atol + rtol * std::fabs(y));
      }
    } else {
      // Integers and bool: exact.
      for (int64_t i = 0; i < count; ++i) {
        if (a[i] == b[i]) continue;
        ++mismatches;
        const double excess = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
        if (worst < 0 || excess > worst_excess) {
          worst = i;
          worst_excess = excess;
        }
      }
      if (worst >= 0 && std::is_same_v<T, bool>) {
        detail = absl::StrCat("got ", a[worst] ? "true" : "false", ", expected ",
                              b[worst] ? "true" : "false");
      } else if (worst >= 0) {
        detail = absl::StrCat("got ", +a[worst], ", expected ", +b[worst]);
      }
    }
  });
  if (mismatches == 0) return "";
  return absl::StrCat(mismatches, " of ", count, " elements differ; worst at ",
                      IndexString(expected.dims(), worst), ": ", detail);
}

namespace {

// Graph inputs that a shape operand is computed from, directly (ONNX's node
// tests feed e.g. Reshape's shape this way) or through other nodes (the
// window functions' size reaches Range's limit through a Cast): binding
// needs their values at plan time.
std::set<std::string> ShapeOperandInputs(const Model& model) {
  std::set<std::string> needed;
  for (const Node& node : model.nodes) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (IsShapeOperand(node.op_type, static_cast<int>(i))) needed.insert(node.inputs[i]);
    }
  }
  // Nodes come in topological order: walking them backwards reaches each
  // node after every node that reads it.
  for (auto node = model.nodes.rbegin(); node != model.nodes.rend(); ++node) {
    const bool feeds_a_shape =
        std::any_of(node->outputs.begin(), node->outputs.end(),
                    [&](const std::string& out) { return needed.count(out) > 0; });
    if (feeds_a_shape) needed.insert(node->inputs.begin(), node->inputs.end());
  }
  std::set<std::string> shape_inputs;
  for (const ValueInfo& input : model.inputs) {
    if (needed.count(input.name)) shape_inputs.insert(input.name);
  }
  return shape_inputs;
}

// ONNX's node-test data before bfloat16 reached numpy stores bfloat16
// tensors as UINT16 holding their bits: a uint16 tensor where the model
// declares bfloat16 is read as those bits.
void ReadUInt16AsDeclared(DType declared, HostTensor& tensor) {
  if (declared != DType::kBFloat16 || tensor.dtype() != DType::kUInt16) return;
  HostTensor bits(DType::kBFloat16, tensor.dims());
  std::memcpy(bits.raw(), tensor.raw(), tensor.bytes());
  tensor = std::move(bits);
}

// Runs one data set; an error is the test's failure (Unimplemented: a skip).
absl::Status RunDataSet(const Model& model, const fs::path& data_set,
                        const ExecutorFactory& make_executor,
                        const NodeTestTolerance& tolerance) {
  ASSIGN_OR_RETURN(std::vector<HostTensor> inputs, ReadTensors(data_set, "input"));
  ASSIGN_OR_RETURN(std::vector<HostTensor> expected, ReadTensors(data_set, "output"));
  if (inputs.size() != model.inputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat("data set has ", inputs.size(),
                                                   " inputs, the model ",
                                                   model.inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) ReadUInt16AsDeclared(model.inputs[i].dtype, inputs[i]);
  for (size_t k = 0; k < expected.size() && k < model.outputs.size(); ++k) {
    ReadUInt16AsDeclared(model.outputs[k].dtype, expected[k]);
  }

  const std::set<std::string> shape_inputs = ShapeOperandInputs(model);
  BindOptions options;
  bool batch_found = false;
  std::map<std::string, const HostTensor*> by_name;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& info = model.inputs[i];
    by_name[info.name] = &inputs[i];
    if (shape_inputs.count(info.name)) options.known_inputs[info.name] = inputs[i];
    if (!batch_found && !info.dims.empty() && info.dims[0] == -1 && !inputs[i].dims().empty()) {
      options.batch_size = inputs[i].dims()[0];
      batch_found = true;
    }
    // The data set's shapes are the shape bucket (Note [Shape dims]).
    for (size_t d = model.batches ? 1 : 0;
         d < info.dim_names.size() && d < inputs[i].dims().size(); ++d) {
      if (!info.dim_names[d].empty()) options.dim_values[info.dim_names[d]] = inputs[i].dims()[d];
    }
  }

  absl::StatusOr<BoundGraph> bound = BindModel(model, options);
  if (!bound.ok()) {
    // Valid ONNX the runtime refuses at load (3-D pooling, training mode):
    // a skip with binding's reason, as an unsupported op is at import.
    const absl::StatusCode code = absl::IsUnimplemented(bound.status())
                                      ? absl::StatusCode::kUnimplemented
                                      : absl::StatusCode::kInternal;
    return absl::Status(code, absl::StrCat("bind: ", bound.status().message()));
  }
  std::vector<HostTensor> run_inputs;
  for (ValueId id : bound->inputs) {
    const std::string& name = bound->value(id).name;
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      return absl::InternalError(absl::StrCat("bound graph input '", name, "' has no data"));
    }
    run_inputs.push_back(*it->second);
  }
  const size_t bound_outputs = bound->outputs.size();
  if (bound_outputs != expected.size()) {
    return absl::InternalError(absl::StrCat("bound graph has ", bound_outputs,
                                            " outputs, the data set ", expected.size()));
  }

  absl::StatusOr<std::unique_ptr<Executor>> executor = make_executor(*std::move(bound));
  if (!executor.ok()) {
    // An executor without a kernel for a bound node's dtype (the CUDA
    // executor and a float64 MatMul that an Einsum binds into) refuses at
    // load as binding does: a skip with its reason.
    const absl::StatusCode code = absl::IsUnimplemented(executor.status())
                                      ? absl::StatusCode::kUnimplemented
                                      : absl::StatusCode::kInternal;
    return absl::Status(code, absl::StrCat("executor: ", executor.status().message()));
  }
  absl::StatusOr<std::vector<HostTensor>> outputs = (*executor)->Run(run_inputs);
  if (!outputs.ok()) return absl::InternalError(absl::StrCat("run: ", outputs.status().message()));
  if (outputs->size() != expected.size()) {
    return absl::InternalError(absl::StrCat("run returned ", outputs->size(), " outputs, expected ",
                                            expected.size()));
  }

  std::vector<std::string> differences;
  for (size_t k = 0; k < expected.size(); ++k) {
    std::string difference = CompareTensors((*outputs)[k], expected[k], tolerance);
    if (!difference.empty()) {
      const std::string name = k < model.outputs.size() ? model.outputs[k].name : "";
      differences.push_back(absl::StrCat("output ", k, " '", name, "': ", difference));
    }
  }
  if (!differences.empty()) return absl::InternalError(absl::StrJoin(differences, "; "));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ListNodeTests(const std::string& data_dir,
                                                       const std::string& filter) {
  std::error_code error;
  fs::directory_iterator it(data_dir, error);
  if (error) {
    return absl::NotFoundError(
        absl::StrCat("cannot list '", data_dir, "': ", error.message(),
                     " (Debian's libonnx-testdata installs the node tests)"));
  }
  std::vector<std::string> tests;
  for (const fs::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.find(filter) == std::string::npos) continue;
    if (fs::exists(entry.path() / "model.onnx")) tests.push_back(entry.path().string());
  }
  std::sort(tests.begin(), tests.end());
  return tests;
}

// Node tests whose data in Debian's libonnx-testdata (ONNX 1.12) contradicts
// the ONNX specification GraphServe implements, each with why. Skipped, with
// that reason, rather than failed or silently passed.
const std::map<std::string, std::string>& OutdatedNodeTests() {
  static const auto* const kOutdated = new std::map<std::string, std::string>{
      {"test_cast_FLOAT_to_BFLOAT16",
       "outdated data: ONNX 1.12 truncates float to bfloat16; Cast rounds to nearest even "
       "(ONNX's data from 1.14 on, PyTorch, CUDA)"},
      {"test_castlike_FLOAT_to_BFLOAT16_expanded",
       "outdated data: ONNX 1.12 truncates float to bfloat16; Cast rounds to nearest even "
       "(ONNX's data from 1.14 on, PyTorch, CUDA)"},
      {"test_castlike_BFLOAT16_to_FLOAT_expanded",
       "outdated data: ONNX 1.12's input 'like' is float32[1], the model declares [3,4]"},
      {"test_castlike_BFLOAT16_to_FLOAT",
       "outdated data: ONNX 1.12's input 'like' is float32[1], the model declares [3,4]"},
      {"test_castlike_FLOAT_to_BFLOAT16",
       "outdated data: ONNX 1.12 truncates float to bfloat16, and its input 'like' is "
       "bfloat16[1] where the model declares [3,4]"},
  };
  return *kOutdated;
}

NodeTestResult RunNodeTest(const std::string& test_dir, const ExecutorFactory& make_executor,
                           const NodeTestTolerance& tolerance) {
  NodeTestResult result;
  result.name = fs::path(test_dir).filename().string();
  if (auto outdated = OutdatedNodeTests().find(result.name);
      outdated != OutdatedNodeTests().end()) {
    result.outcome = Outcome::kSkipped;
    result.messages.push_back(outdated->second);
    return result;
  }
  absl::StatusOr<Model> model = ImportOnnxFile((fs::path(test_dir) / "model.onnx").string());
  if (absl::IsUnimplemented(model.status())) {
    result.outcome = Outcome::kSkipped;
    result.messages.push_back(SkipReason(model.status()));
    return result;
  }
  if (!model.ok()) {
    result.outcome = Outcome::kFailed;
    result.messages.push_back(absl::StrCat("import: ", model.status().message()));
    return result;
  }
  result.opset = model->opset;
  const std::vector<fs::path> data_sets = DataSets(test_dir);
  if (data_sets.empty()) {
    result.outcome = Outcome::kFailed;
    result.messages.push_back("no test_data_set_* directory");
    return result;
  }
  for (const fs::path& data_set : data_sets) {
    absl::Status status = RunDataSet(*model, data_set, make_executor, tolerance);
    if (absl::IsUnimplemented(status)) {  // a data set tensor of another type
      // "<path>: tensor 'x': element type DOUBLE ..." without the path, so
      // that tests skipped for one reason share it.
      std::string reason(status.message());
      reason = reason.substr(reason.find(": ") == std::string::npos ? 0 : reason.find(": ") + 2);
      result.outcome = Outcome::kSkipped;
      result.messages = {absl::StrCat("data set ", reason)};
      return result;
    }
    if (!status.ok()) {
      result.messages.push_back(
          absl::StrCat(data_set.filename().string(), ": ", status.message()));
    }
  }
  result.outcome = result.messages.empty() ? Outcome::kPassed : Outcome::kFailed;
  return result;
}

absl::StatusOr<ConformanceSummary> RunConformance(const ConformanceOptions& options,
                                                  std::ostream& log) {
  if (!options.make_executor) {
    return absl::InvalidArgumentError("ConformanceOptions::make_executor is required");
  }
  ASSIGN_OR_RETURN(std::vector<std::string> tests,
                   ListNodeTests(options.data_dir, options.filter));
  ConformanceSummary summary;
  for (const std::string& test_dir : tests) {
    NodeTestResult result = RunNodeTest(test_dir, options.make_executor, options.tolerance);
    switch (result.outcome) {
      case Outcome::kPassed:
        ++summary.passed;
        ++summary.passed_by_opset[result.opset];
        if (options.verbose) log << "PASS " << result.name << "\n";
        break;
      case Outcome::kSkipped:
        ++summary.skipped;
        ++summary.skip_reasons[result.messages.front()];
        if (options.verbose) log << "SKIP " << result.name << ": " << result.messages.front() << "\n";
        break;
      case Outcome::kFailed:
        ++summary.failed;
        summary.failed_tests.push_back(result.name);
        log << "FAIL " << result.name << "\n";
        for (const std::string& message : result.messages) log << "  " << message << "\n";
        break;
    }
    log.flush();
  }
  if (options.verbose && !summary.skip_reasons.empty()) {
    std::vector<std::pair<int, std::string>> reasons;
    for (const auto& [reason, count] : summary.skip_reasons) reasons.emplace_back(count, reason);
    std::sort(reasons.rbegin(), reasons.rend());
    log << "skip reasons:\n";
    for (const auto& [count, reason] : reasons) log << "  " << count << "  " << reason << "\n";
  }
  log << "passed by opset:";
  for (const auto& [opset, passed] : summary.passed_by_opset) log << " " << opset << ":" << passed;
  log << "\n";
  log << summary.skipped << " skipped\n";
  log << summary.passed << " passed, " << summary.failed << " failed\n";
  return summary;
}

}  // namespace graphserve
