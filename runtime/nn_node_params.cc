#include "runtime/nn_node_params.h"

#include <vector>

#include "runtime/ir.h"

namespace graphserve {

namespace {

// Spatial dims of an NC... tensor as (H, W); a 1-D tensor has H = 1.
void SpatialHW(const Dims& dims, int64_t& h, int64_t& w) {
  h = dims.size() >= 4 ? dims[2] : 1;
  w = dims.size() >= 3 ? dims.back() : 1;
}

}  // namespace

ConvParams ConvParamsOf(const BoundGraph& graph, const BoundNode& node) {
  const Dims& x = graph.value(node.inputs[0]).dims;
  const Dims& w = graph.value(node.inputs[1]).dims;
  const Dims& y = graph.value(node.outputs[0]).dims;
  ConvParams p;
  p.batch = x[0];
  p.in_channels = x[1];
  p.out_channels = w[0];
  p.groups = IntAttr(node.attributes, "group");
  SpatialHW(x, p.in_h, p.in_w);
  SpatialHW(y, p.out_h, p.out_w);
  SpatialHW(w, p.kernel_h, p.kernel_w);
  const std::vector<int64_t>& strides = IntsAttr(node.attributes, "strides");
  const std::vector<int64_t>& dilations = IntsAttr(node.attributes, "dilations");
  const std::vector<int64_t>& pads = IntsAttr(node.attributes, "pads");
  p.stride_h = strides[0];
  p.stride_w = strides[1];
  p.dilation_h = dilations[0];
  p.dilation_w = dilations[1];
  p.pad_h = pads[0];
  p.pad_w = pads[1];
  p.dtype = graph.value(node.inputs[0]).dtype;
  return p;
}

PoolParams PoolParamsOf(const BoundGraph& graph, const BoundNode& node) {
  const Dims& x = graph.value(node.inputs[0]).dims;
  const Dims& y = graph.value(node.outputs[0]).dims;
  PoolParams p;
  p.kind = node.op_type == "MaxPool" ? PoolKind::kMax : PoolKind::kAverage;
  p.batch = x[0];
  p.channels = x[1];
  SpatialHW(x, p.in_h, p.in_w);
  SpatialHW(y, p.out_h, p.out_w);
  const std::vector<int64_t>& kernel = IntsAttr(node.attributes, "kernel");
  const std::vector<int64_t>& strides = IntsAttr(node.attributes, "strides");
  const std::vector<int64_t>& dilations = IntsAttr(node.attributes, "dilations");
  const std::vector<int64_t>& pads = IntsAttr(node.attributes, "pads");
  p.kernel_h = kernel[0];
  p.kernel_w = kernel[1];
  p.stride_h = strides[0];
  p.stride_w = strides[1];
  p.dilation_h = dilations[0];
  p.dilation_w = dilations[1];
  p.pad_top = pads[0];
  p.pad_left = pads[1];
  p.pad_bottom = pads[2];
  p.pad_right = pads[3];
  p.dtype = graph.value(node.inputs[0]).dtype;
  p.count_include_pad = IntAttr(node.attributes, "count_include_pad") != 0;
  return p;
}

GlobalPoolParams GlobalPoolParamsOf(const BoundGraph& graph, const BoundNode& node) {
  const Dims& x = graph.value(node.inputs[0]).dims;
  GlobalPoolParams p;
  p.kind = node.op_type == "GlobalMaxPool" ? PoolKind::kMax : PoolKind::kAverage;
  p.rows = x[0] * x[1];
  p.channels = x[1];
  p.spatial = NumElements(x) / p.rows;
  p.dtype = graph.value(node.inputs[0]).dtype;
  return p;
}

ChannelEpilogueParams ChannelEpilogueParamsOf(const BoundGraph& graph, const BoundNode& node) {
  const Dims& x = graph.value(node.inputs[0]).dims;
  ChannelEpilogueParams p;
  p.batch = x[0];
  p.channels = x[1];
  p.spatial = p.batch * p.channels == 0 ? 0 : NumElements(x) / (p.batch * p.channels);
  p.dtype = graph.value(node.inputs[0]).dtype;
  return p;
}

PadParams PadParamsOf(const BoundGraph& graph, const BoundNode& node) {
  const Dims& x = graph.value(node.inputs[0]).dims;
  const Dims& y = graph.value(node.outputs[0]).dims;
  const std::vector<int64_t>& pads = IntsAttr(node.attributes, "pads");
  PadParams p;
  p.mode = static_cast<PadMode>(IntAttr(node.attributes, "mode"));
  p.rank = static_cast<int32_t>(x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    p.in_dims[d] = x[d];
    p.out_dims[d] = y[d];
    p.pads_begin[d] = pads[d];
  }
  p.value = FloatAttr(node.attributes, "value");
  return p;
}

ActivationParams ActivationOf(const BoundNode& node) {
  ActivationParams a;
  if (node.op_type == "Relu") {
    a.kind = Activation::kRelu;
  } else if (node.op_type == "Sigmoid") {
    a.kind = Activation::kSigmoid;
  } else if (node.op_type == "Clip") {
    a.kind = Activation::kClip;
    a.clip_min = FloatAttr(node.attributes, "min");
    a.clip_max = FloatAttr(node.attributes, "max");
  } else if (node.op_type == "HardSigmoid") {
    a.kind = Activation::kHardSigmoid;
    a.alpha = FloatAttr(node.attributes, "alpha");
    a.beta = FloatAttr(node.attributes, "beta");
  } else if (node.op_type == "HardSwish") {
    a.kind = Activation::kHardSwish;
  }
  return a;
}

}  // namespace graphserve
