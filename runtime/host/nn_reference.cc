#include "runtime/host/nn_reference.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <vector>

namespace graphserve {

namespace {

// Offsets into NCHW buffers; int64 throughout so that large tensors do not
// overflow an int index.
int64_t PlaneOffset(int64_t image, int64_t channels, int64_t channel, int64_t plane) {
  return (image * channels + channel) * plane;
}

// The activation in float64, so that the epilogue rounds once, after the
// affine, the residual and the activation together.
double Activate(const ActivationParams& a, double x) {
  // NaN in, NaN out for every kind: the comparisons below are all false for
  // NaN, so each kind tests for it before clamping rather than relying on
  // std::max/std::min, whose result for NaN depends on argument order.
  if (std::isnan(x)) return x;
  switch (a.kind) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return x > 0.0 ? x : 0.0;
    case Activation::kClip:
      return std::min(std::max(x, static_cast<double>(a.clip_min)),
                      static_cast<double>(a.clip_max));
    case Activation::kSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case Activation::kSilu:
      // The product, as the Sigmoid-then-Mul graph it replaces computes it:
      // -inf gives -inf * 0 = NaN there and here.
      return x * (1.0 / (1.0 + std::exp(-x)));
    case Activation::kHardSigmoid:
      return std::max(
          0.0, std::min(1.0, static_cast<double>(a.alpha) * x + static_cast<double>(a.beta)));
    case Activation::kHardSwish:
      return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5));
  }
  return x;
}

// Half-open range [begin, end) of the window taps k < kernel whose position
// start + k * dilation lies in [lo, hi).
struct TapRange {
  int64_t begin = 0;
  int64_t end = 0;
  [[nodiscard]] int64_t count() const { return end > begin ? end - begin : 0; }
};

TapRange TapsWithin(int64_t start, int64_t dilation, int64_t kernel, int64_t lo, int64_t hi) {
  TapRange range;
  if (hi <= lo || kernel <= 0) return range;
  // First k with start + k*d >= lo, and first k with start + k*d >= hi.
  auto first_at_or_after = [&](int64_t bound) -> int64_t {
    if (start >= bound) return 0;
    const int64_t k = (bound - start + dilation - 1) / dilation;
    return std::min(k, kernel);
  };
  range.begin = first_at_or_after(lo);
  range.end = first_at_or_after(hi);
  return range;
}

// Input index that padded output index `o` of one dim reads, or -1 where a
// constant pad supplies the value. See PadParams for the three modes.
int64_t PadSourceIndex(PadMode mode, int64_t o, int64_t pad_begin, int64_t in_dim) {
  const int64_t i = o - pad_begin;
  if (i >= 0 && i < in_dim) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return i < 0 ? 0 : in_dim - 1;
    case PadMode::kReflect: {
      if (in_dim == 1) return 0;
      // numpy 'reflect' repeats with period 2*(n-1) however far the pad
      // reaches: 0 1 .. n-1 n-2 .. 1 | 0 1 ..
      const int64_t period = 2 * (in_dim - 1);
      int64_t m = i % period;
      if (m < 0) m += period;
      return m < in_dim ? m : period - m;
    }
  }
  return -1;
}

}  // namespace

void ConvReference(const ConvParams& p, const float* x, const float* w, const float* bias,
                   float* y) {
  const int64_t icpg = p.in_channels / p.groups;
  const int64_t ocpg = p.out_channels / p.groups;
  const int64_t in_plane = p.in_h * p.in_w;
  const int64_t out_plane = p.out_h * p.out_w;
  const int64_t taps = p.kernel_h * p.kernel_w;
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t oc = 0; oc < p.out_channels; ++oc) {
      const int64_t group = oc / ocpg;
      const float* w_oc = w + oc * icpg * taps;
      float* y_plane = y + PlaneOffset(n, p.out_channels, oc, out_plane);
      for (int64_t oh = 0; oh < p.out_h; ++oh) {
        for (int64_t ow = 0; ow < p.out_w; ++ow) {
          const int64_t ih0 = oh * p.stride_h - p.pad_h;
          const int64_t iw0 = ow * p.stride_w - p.pad_w;
          double acc = 0.0;
          for (int64_t ic = 0; ic < icpg; ++ic) {
            const float* x_plane = x + PlaneOffset(n, p.in_channels, group * icpg + ic, in_plane);
            const float* w_ic = w_oc + ic * taps;
            for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
              const int64_t ih = ih0 + kh * p.dilation_h;
              const bool row_inside = ih >= 0 && ih < p.in_h;
              for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
                const int64_t iw = iw0 + kw * p.dilation_w;
                // A padding read is a 0 that is still multiplied, so that a
                // non-finite weight gives NaN there as ONNX's definition
                // (zero-pad, then convolve) does, rather than being skipped.
                const double xv =
                    row_inside && iw >= 0 && iw < p.in_w ? x_plane[ih * p.in_w + iw] : 0.0;
                acc += xv * static_cast<double>(w_ic[kh * p.kernel_w + kw]);
              }
            }
          }
          if (bias != nullptr) acc += static_cast<double>(bias[oc]);
          y_plane[oh * p.out_w + ow] = static_cast<float>(acc);
        }
      }
    }
  }
}

void PoolReference(const PoolParams& p, const float* x, float* y) {
  const int64_t in_plane = p.in_h * p.in_w;
  const int64_t out_plane = p.out_h * p.out_w;
  const int64_t planes = p.batch * p.channels;
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* x_plane = x + plane * in_plane;
    float* y_plane = y + plane * out_plane;
    for (int64_t oh = 0; oh < p.out_h; ++oh) {
      const int64_t h0 = oh * p.stride_h - p.pad_top;
      const TapRange rows = TapsWithin(h0, p.dilation_h, p.kernel_h, 0, p.in_h);
      for (int64_t ow = 0; ow < p.out_w; ++ow) {
        const int64_t w0 = ow * p.stride_w - p.pad_left;
        const TapRange cols = TapsWithin(w0, p.dilation_w, p.kernel_w, 0, p.in_w);
        float& out = y_plane[oh * p.out_w + ow];
        if (p.kind == PoolKind::kMax) {
          // -inf is max's identity: a window wholly in the padding (which
          // binding should never produce) gives it, as PyTorch does.
          float best = -std::numeric_limits<float>::infinity();
          for (int64_t kh = rows.begin; kh < rows.end; ++kh) {
            const float* x_row = x_plane + (h0 + kh * p.dilation_h) * p.in_w;
            for (int64_t kw = cols.begin; kw < cols.end; ++kw) {
              const float v = x_row[w0 + kw * p.dilation_w];
              // NaN wins wherever it sits in the window; once taken, no
              // comparison against it is true, so it stays.
              if (v > best || std::isnan(v)) best = v;
            }
          }
          out = best;
          continue;
        }
        if (rows.count() == 0 || cols.count() == 0) {
          out = 0.0f;  // no position inside the input; also avoids 0 / 0
          continue;
        }
        double sum = 0.0;
        for (int64_t kh = rows.begin; kh < rows.end; ++kh) {
          const float* x_row = x_plane + (h0 + kh * p.dilation_h) * p.in_w;
          for (int64_t kw = cols.begin; kw < cols.end; ++kw) {
            sum += static_cast<double>(x_row[w0 + kw * p.dilation_w]);
          }
        }
        int64_t divisor = rows.count() * cols.count();
        if (p.count_include_pad) {
          // Padded positions count, but not those past the padded end that
          // ceil_mode's last window can reach.
          divisor =
              TapsWithin(h0, p.dilation_h, p.kernel_h, -p.pad_top, p.in_h + p.pad_bottom).count() *
              TapsWithin(w0, p.dilation_w, p.kernel_w, -p.pad_left, p.in_w + p.pad_right).count();
        }
        out = static_cast<float>(sum / static_cast<double>(divisor));
      }
    }
  }
}

void GlobalPoolReference(const GlobalPoolParams& p, const float* x, float* y) {
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* row = x + r * p.spatial;
    if (p.kind == PoolKind::kMax) {
      float best = -std::numeric_limits<float>::infinity();
      for (int64_t s = 0; s < p.spatial; ++s) {
        if (row[s] > best || std::isnan(row[s])) best = row[s];
      }
      y[r] = best;
      continue;
    }
    double sum = 0.0;
    for (int64_t s = 0; s < p.spatial; ++s) sum += static_cast<double>(row[s]);
    // An empty row gives 0 / 0 = NaN, as numpy's mean of nothing.
    y[r] = static_cast<float>(sum / static_cast<double>(p.spatial));
  }
}

float ApplyActivation(const ActivationParams& a, float x) {
  return static_cast<float>(Activate(a, static_cast<double>(x)));
}

void ChannelEpilogueReference(const ChannelEpilogueParams& p, const float* x, const float* scale,
                              const float* shift, const float* residual, float* y) {
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t c = 0; c < p.channels; ++c) {
      const int64_t base = PlaneOffset(n, p.channels, c, p.spatial);
      const double s = scale != nullptr ? static_cast<double>(scale[c]) : 1.0;
      const double t = shift != nullptr ? static_cast<double>(shift[c]) : 0.0;
      for (int64_t i = base; i < base + p.spatial; ++i) {
        // Every operand is read before y[i] is written, so y may alias x or
        // residual.
        double v = static_cast<double>(x[i]) * s + t;
        if (residual != nullptr) v += static_cast<double>(residual[i]);
        y[i] = static_cast<float>(Activate(p.activation, v));
      }
    }
  }
}

void PadReference(const PadParams& p, const void* x, void* y, int element_size, const void* value) {
  // A scalar is a rank-1 tensor of one element with no pads, so that the
  // walk below always has an innermost dim.
  const int rank = p.rank > 0 ? p.rank : 1;
  int64_t in_dims[kMaxPadRank];
  int64_t out_dims[kMaxPadRank];
  int64_t pads_begin[kMaxPadRank];
  for (int d = 0; d < rank; ++d) {
    in_dims[d] = p.rank > 0 ? p.in_dims[d] : 1;
    out_dims[d] = p.rank > 0 ? p.out_dims[d] : 1;
    pads_begin[d] = p.rank > 0 ? p.pads_begin[d] : 0;
  }
  int64_t out_count = 1;
  bool empty_input = false;
  for (int d = 0; d < rank; ++d) {
    out_count *= out_dims[d];
    empty_input = empty_input || in_dims[d] == 0;
  }
  if (out_count == 0) return;

  const auto* src = static_cast<const unsigned char*>(x);
  auto* dst = static_cast<unsigned char*>(y);
  const size_t size = static_cast<size_t>(element_size);
  // Reflect and edge have nothing to repeat from an empty input (ONNX
  // rejects it); zeros rather than a read out of bounds.
  const bool use_zeros = empty_input && p.mode != PadMode::kConstant;
  const std::vector<unsigned char> zeros(size, 0);
  const unsigned char* fill =
      use_zeros || value == nullptr ? zeros.data() : static_cast<const unsigned char*>(value);
  if (empty_input) {
    for (int64_t i = 0; i < out_count; ++i) std::memcpy(dst + i * size, fill, size);
    return;
  }

  // Per dim, the input index each output index reads (-1: the constant), and
  // the input strides in elements.
  std::vector<std::vector<int64_t>> source(rank);
  int64_t in_strides[kMaxPadRank];
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    in_strides[d] = stride;
    stride *= in_dims[d];
    source[d].resize(out_dims[d]);
    for (int64_t o = 0; o < out_dims[d]; ++o) {
      source[d][o] = PadSourceIndex(p.mode, o, pads_begin[d], in_dims[d]);
    }
  }

  // The output rows (all dims but the innermost) in row-major order, each
  // written from the input row its outer indices select.
  const int inner = rank - 1;
  const int64_t row_length = out_dims[inner];
  const std::vector<int64_t>& inner_source = source[inner];
  // The output span that copies the input row unchanged, as one memcpy.
  const int64_t copy_begin = std::clamp<int64_t>(pads_begin[inner], 0, row_length);
  const int64_t copy_end =
      std::clamp<int64_t>(pads_begin[inner] + in_dims[inner], copy_begin, row_length);
  int64_t index[kMaxPadRank] = {};
  for (int64_t row = 0; row < out_count / row_length; ++row) {
    unsigned char* out_row = dst + row * row_length * size;
    int64_t in_offset = 0;
    bool constant_row = false;
    for (int d = 0; d < inner; ++d) {
      const int64_t i = source[d][index[d]];
      if (i < 0) constant_row = true;
      in_offset += i * in_strides[d];
    }
    if (constant_row) {
      for (int64_t o = 0; o < row_length; ++o) std::memcpy(out_row + o * size, fill, size);
    } else {
      const unsigned char* in_row = src + in_offset * size;
      for (int64_t o = 0; o < copy_begin; ++o) {
        const int64_t i = inner_source[o];
        std::memcpy(out_row + o * size, i < 0 ? fill : in_row + i * size, size);
      }
      if (copy_end > copy_begin) {
        std::memcpy(out_row + copy_begin * size, in_row + (copy_begin - pads_begin[inner]) * size,
                    static_cast<size_t>(copy_end - copy_begin) * size);
      }
      for (int64_t o = copy_end; o < row_length; ++o) {
        const int64_t i = inner_source[o];
        std::memcpy(out_row + o * size, i < 0 ? fill : in_row + i * size, size);
      }
    }
    // Next row: an odometer over the outer dims, innermost first.
    for (int d = inner - 1; d >= 0; --d) {
      if (++index[d] < out_dims[d]) break;
      index[d] = 0;
    }
  }
}

void BatchNormAffine(int64_t channels, const float* gamma, const float* beta, const float* mean,
                     const float* var, float epsilon, float* scale, float* shift) {
  for (int64_t c = 0; c < channels; ++c) {
    const double s = static_cast<double>(gamma[c]) /
                     std::sqrt(static_cast<double>(var[c]) + static_cast<double>(epsilon));
    // The shift uses the unrounded scale, so each output is rounded once.
    const double t = static_cast<double>(beta[c]) - static_cast<double>(mean[c]) * s;
    scale[c] = static_cast<float>(s);
    shift[c] = static_cast<float>(t);
  }
}

void FoldAffineIntoConv(int64_t out_channels, int64_t weights_per_channel, const float* scale,
                        const float* shift, const float* w, const float* b, float* w_out,
                        float* b_out) {
  for (int64_t oc = 0; oc < out_channels; ++oc) {
    const double s = static_cast<double>(scale[oc]);
    const int64_t base = oc * weights_per_channel;
    for (int64_t i = base; i < base + weights_per_channel; ++i) {
      w_out[i] = static_cast<float>(static_cast<double>(w[i]) * s);
    }
    const double bias = b != nullptr ? static_cast<double>(b[oc]) : 0.0;
    b_out[oc] = static_cast<float>(bias * s + static_cast<double>(shift[oc]));
  }
}

}  // namespace graphserve
