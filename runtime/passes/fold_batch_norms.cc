#include "runtime/passes/fold_batch_norms.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tensor.h"
#include "runtime/host/nn_reference.h"

namespace graphserve {

void FoldBatchNormsIntoConvs(Model& model) {
  std::map<std::string, int> readers;
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < model.nodes.size(); ++i) {
    for (const std::string& input : model.nodes[i].inputs) ++readers[input];
    for (const std::string& output : model.nodes[i].outputs) producer[output] = i;
  }
  for (const ValueInfo& output : model.outputs) ++readers[output.name];
  // The float initializers Conv and BatchNormalization take: float32 and
  // the 16-bit floats (a model exported in half precision).
  auto initializer = [&model](const std::string& name) -> const HostTensor* {
    auto it = model.initializers.find(name);
    if (it == model.initializers.end()) return nullptr;
    const DType dtype = it->second->dtype();
    const bool foldable =
        dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16;
    return foldable ? it->second.get() : nullptr;
  };
  std::vector<bool> folded(model.nodes.size(), false);
  for (size_t b = 0; b < model.nodes.size(); ++b) {
    Node& bn = model.nodes[b];
    if (bn.op_type != "BatchNormalization" || bn.inputs.size() != 5 || bn.outputs.size() != 1) {
      continue;
    }
    const auto conv_it = producer.find(bn.inputs[0]);
    if (conv_it == producer.end() || readers[bn.inputs[0]] != 1) continue;
    Node& conv = model.nodes[conv_it->second];
    if (conv.op_type != "Conv" || conv.inputs.size() < 2) continue;
    const HostTensor* w = initializer(conv.inputs[1]);
    const bool has_bias = conv.inputs.size() > 2 && !conv.inputs[2].empty();
    const HostTensor* bias = has_bias ? initializer(conv.inputs[2]) : nullptr;
    const HostTensor* stats[4];
    bool all_known = w != nullptr && !w->dims().empty() && (!has_bias || bias != nullptr);
    for (size_t i = 0; i < 4 && all_known; ++i) {
      stats[i] = initializer(bn.inputs[i + 1]);
      all_known = stats[i] != nullptr && stats[i]->num_elements() == w->dims()[0] &&
                  stats[i]->dtype() == w->dtype();
    }
    all_known = all_known && (bias == nullptr || bias->dtype() == w->dtype());
    absl::StatusOr<int64_t> training = GetIntAttr(bn.attributes, "training_mode", 0);
    absl::StatusOr<float> epsilon = GetFloatAttr(bn.attributes, "epsilon", 1e-5f);
    if (!all_known || !training.ok() || *training != 0 || !epsilon.ok() ||
        (bias != nullptr && bias->num_elements() != w->dims()[0])) {
      continue;  // left to BindBatchNorm, which names what it refuses
    }
    // Folded in float32 (the 16-bit floats widen exactly), then rounded
    // once to the model's type.
    const int64_t channels = w->dims()[0];
    const auto wide = [](const HostTensor& t) { return ConvertFloats(t, DType::kFloat32); };
    const HostTensor mean_scale[4] = {wide(*stats[0]), wide(*stats[1]), wide(*stats[2]),
                                      wide(*stats[3])};
    const HostTensor w_wide = wide(*w);
    std::optional<HostTensor> bias_wide;
    if (bias != nullptr) bias_wide = wide(*bias);
    std::vector<float> scale(channels), shift(channels);
    BatchNormAffine(channels, mean_scale[0].data<float>(), mean_scale[1].data<float>(),
                    mean_scale[2].data<float>(), mean_scale[3].data<float>(), *epsilon,
                    scale.data(), shift.data());
    HostTensor w_folded(DType::kFloat32, w->dims());
    HostTensor b_folded(DType::kFloat32, {channels});
    FoldAffineIntoConv(channels, w->num_elements() / channels, scale.data(), shift.data(),
                       w_wide.data<float>(), bias_wide ? bias_wide->data<float>() : nullptr,
                       w_folded.data<float>(), b_folded.data<float>());
    // New initializers: the originals may be read by other nodes.
    const std::string w_name = bn.name + "/folded_weights";
    const std::string b_name = bn.name + "/folded_bias";
    model.initializers[w_name] =
        std::make_shared<const HostTensor>(ConvertFloats(w_folded, w->dtype()));
    model.initializers[b_name] =
        std::make_shared<const HostTensor>(ConvertFloats(b_folded, w->dtype()));
    conv.inputs.resize(3);
    conv.inputs[1] = w_name;
    conv.inputs[2] = b_name;
    conv.outputs[0] = bn.outputs[0];
    folded[b] = true;
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < model.nodes.size(); ++i) {
    if (!folded[i]) kept.push_back(std::move(model.nodes[i]));
  }
  model.nodes = std::move(kept);
}

}  // namespace graphserve
