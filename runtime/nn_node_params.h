#pragma once
// The canonical parameters (runtime/nn_params.h) of a bound CNN node, read
// from the attributes binding wrote (runtime/ops/nn.cc) and the node's dims.
// The host and CUDA kernels both call these, so they read one description.
//
// Canonical attributes (after binding; 1-D ops have H = 1):
//  Conv        inputs X [N,C,(H,)W], W [M,C/group,(kH,)kW][, B [M]];
//              attrs group, strides [sh,sw], dilations [dh,dw], pads [ph,pw]
//              (symmetric; binding inserts a Pad for asymmetric ONNX pads).
//  MaxPool AveragePool
//              input X; attrs kernel [kh,kw], strides [sh,sw],
//              dilations [dh,dw], pads [top,left,bottom,right],
//              count_include_pad (0/1); output dims include ceil_mode.
//  GlobalAveragePool GlobalMaxPool
//              input X [N,C,...]; output [N,C,1,...].
//  BatchNormalization
//              inputs X [N,C,...], scale [C], shift [C] (binding turned
//              gamma, beta, mean, var and epsilon into one affine).
//  Pad         input X; attrs mode (PadMode), pads [begin..., end...] (full
//              rank), value (float).
//  Clip HardSigmoid HardSwish
//              input X (float32); Clip attrs min, max; HardSigmoid alpha, beta.

#include "runtime/bound_graph.h"
#include "runtime/nn_params.h"

namespace graphserve {

ConvParams ConvParamsOf(const BoundGraph& graph, const BoundNode& node);
PoolParams PoolParamsOf(const BoundGraph& graph, const BoundNode& node);
GlobalPoolParams GlobalPoolParamsOf(const BoundGraph& graph, const BoundNode& node);
// BatchNormalization as a per-channel epilogue with no activation.
ChannelEpilogueParams ChannelEpilogueParamsOf(const BoundGraph& graph, const BoundNode& node);
PadParams PadParamsOf(const BoundGraph& graph, const BoundNode& node);
// Relu, Sigmoid, Clip, HardSigmoid, HardSwish; kNone for any other op.
ActivationParams ActivationOf(const BoundNode& node);

}  // namespace graphserve
