#pragma once
// The ONNX ops (default domain) GraphServe's runtime executes.

#include <string>
#include <vector>

namespace graphserve {

// Sorted op type names.
const std::vector<std::string>& SupportedOps();

bool IsSupportedOp(const std::string& op_type);

}  // namespace graphserve
