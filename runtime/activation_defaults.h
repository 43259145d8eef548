#pragma once
// ONNX's attribute defaults that binding and both executors' kernels read,
// in a header of their own so the CUDA kernels need no host library.

namespace graphserve {

// Selu's alpha and gamma, exact as float32.
inline constexpr float kSeluAlpha = 1.67326319217681884765625f;
inline constexpr float kSeluGamma = 1.05070102214813232421875f;

}  // namespace graphserve
