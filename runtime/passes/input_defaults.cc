#include "runtime/passes/input_defaults.h"

#include <utility>
#include <vector>

namespace graphserve {

void FoldInputDefaults(Model& model, const std::set<std::string>& declared) {
  std::vector<ValueInfo> inputs;
  for (ValueInfo& input : model.inputs) {
    if (input.default_value != nullptr && !declared.contains(input.name)) {
      model.initializers[input.name] = std::move(input.default_value);
    } else {
      inputs.push_back(std::move(input));
    }
  }
  model.inputs = std::move(inputs);
}

}  // namespace graphserve
