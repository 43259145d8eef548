#include "runtime/op_list.h"

#include <algorithm>

namespace graphserve {

const std::vector<std::string>& SupportedOps() {
  static const std::vector<std::string> kOps = [] {
    std::vector<std::string> ops = {
        "Abs",       "Add",      "Cast",    "Concat",  "Constant",
        "Div",       "Equal",    "Erf",     "Exp",     "Expand",
        "Flatten",   "Gather",   "Gemm",    "Identity", "LayerNormalization",
        "LeakyRelu", "Log",      "MatMul",  "Max",     "Min",
        "Mod",       "Mul",      "Neg",     "Pow",     "ReduceMean", "Relu",
        "Reshape",   "Shape",    "Sigmoid", "Slice",   "Softmax",
        "Sqrt",      "Squeeze",  "Sub",     "Tanh",    "Transpose",
        "Unsqueeze", "Where",
    };
    std::sort(ops.begin(), ops.end());
    return ops;
  }();
  return kOps;
}

bool IsSupportedOp(const std::string& op_type) {
  const std::vector<std::string>& ops = SupportedOps();
  return std::binary_search(ops.begin(), ops.end(), op_type);
}

}  // namespace graphserve
