#include "server/triton_config.h"

#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace graphserve {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// The fields GraphServe acts on, by path; a message's whole subtree when the
// message itself is named. Everything else Triton's schema allows is
// accepted and reported by IgnoredConfigFields.
const std::set<std::string>& HonouredPaths() {
  static const auto* const paths = new std::set<std::string>{
      "name",
      "platform",
      "backend",
      "version_policy",
      "max_batch_size",
      "input.name",
      "input.data_type",
      "input.format",  // a hint for clients, returned as written
      "input.dims",
      "output.name",
      "output.data_type",
      "output.dims",
      "instance_group.name",
      "instance_group.count",
      "instance_group.kind",
      "instance_group.gpus",
      "default_model_filename",
      "optimization.cuda.graphs",
      "optimization.cuda.graph_spec.batch_size",
      "capture",  // GraphServe's own section
  };
  return *paths;
}

// Whether some honoured path lies below `path`, so its set fields must be
// looked at one by one.
bool HasHonouredBelow(const std::string& path) {
  const std::string prefix = path + ".";
  for (const std::string& honoured : HonouredPaths()) {
    if (absl::StartsWith(honoured, prefix)) return true;
  }
  return false;
}

void CollectIgnored(const Message& message, const std::string& prefix,
                    std::vector<std::string>& ignored) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const std::string path =
        prefix.empty() ? field->name() : absl::StrCat(prefix, ".", field->name());
    if (HonouredPaths().count(path) > 0) continue;
    const bool message_field =
        field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !field->is_map();
    if (message_field && HasHonouredBelow(path)) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
          CollectIgnored(reflection->GetRepeatedMessage(message, field, i), path, ignored);
        }
      } else {
        CollectIgnored(reflection->GetMessage(message, field), path, ignored);
      }
      continue;
    }
    if (std::find(ignored.begin(), ignored.end(), path) == ignored.end()) ignored.push_back(path);
  }
}

}  // namespace

std::vector<std::string> IgnoredConfigFields(const inference::ModelConfig& config) {
  std::vector<std::string> ignored;
  CollectIgnored(config, "", ignored);
  return ignored;
}

bool GraphsDisabledByConfig(const inference::ModelConfig& config) {
  const inference::ModelOptimizationPolicy::Cuda& cuda = config.optimization().cuda();
  return config.capture().graphs_disabled() || (cuda.has_graphs() && !cuda.graphs());
}

std::vector<int64_t> RequestedCaptureSizes(const inference::ModelConfig& config) {
  std::vector<int64_t> sizes(config.capture().batch_sizes().begin(),
                             config.capture().batch_sizes().end());
  if (!sizes.empty()) return sizes;
  for (const auto& spec : config.optimization().cuda().graph_spec()) {
    sizes.push_back(spec.batch_size());
  }
  return sizes;
}

}  // namespace graphserve
