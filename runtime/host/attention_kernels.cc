#include "runtime/host/attention_kernels.h"

#include <cstdint>

#include "common/status.h"
#include "runtime/host/kernel_args.h"

namespace graphserve {

namespace {

// Binding's canonical attributes (Note [Rotary embedding]).
struct RotaryShape {
  int64_t batch;
  int64_t seq;
  int64_t heads;
  int64_t head_size;
  int64_t rotary_dim;
  bool interleaved;
  bool heads_outer;
};

RotaryShape ReadRotaryShape(const Attributes& attributes) {
  return RotaryShape{IntAttr(attributes, "batch"),       IntAttr(attributes, "seq"),
                     IntAttr(attributes, "heads"),       IntAttr(attributes, "head_size"),
                     IntAttr(attributes, "rotary_dim"),  IntAttr(attributes, "interleaved") != 0,
                     IntAttr(attributes, "heads_outer") != 0};
}

absl::Status RunRotaryEmbedding(const HostKernelArgs& args) {
  const RotaryShape r = ReadRotaryShape(args.node.attributes);
  const HostTensor& x = args.in(0);
  const HostTensor& cos_cache = args.in(1);
  const HostTensor& sin_cache = args.in(2);
  const HostTensor* position_ids = args.inputs.size() > 3 ? args.inputs[3] : nullptr;
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  RETURN_IF_ERROR(RequireSameDType(args, x, cos_cache));
  RETURN_IF_ERROR(RequireSameDType(args, x, sin_cache));
  const int64_t half = r.rotary_dim / 2;
  if (r.rotary_dim % 2 != 0 || r.rotary_dim > r.head_size ||
      r.batch * r.seq * r.heads * r.head_size != x.num_elements() ||
      cos_cache.num_elements() != sin_cache.num_elements() ||
      (half > 0 && cos_cache.num_elements() % half != 0)) {
    return args.Invalid("batch ", r.batch, ", seq ", r.seq, ", heads ", r.heads, ", head_size ",
                        r.head_size, ", rotary_dim ", r.rotary_dim, " do not fit X ",
                        DimsToString(x.dims()), " and the caches ",
                        DimsToString(cos_cache.dims()));
  }
  const int64_t cache_rows = half > 0 ? cos_cache.num_elements() / half : 0;
  if (position_ids != nullptr) {
    RETURN_IF_ERROR(RequireDType(args, *position_ids, DType::kInt64, "position_ids"));
    if (position_ids->num_elements() != r.batch * r.seq) {
      return args.Invalid("position_ids ", DimsToString(position_ids->dims()), " should be [",
                          r.batch, ",", r.seq, "]");
    }
  } else if (cache_rows != r.batch * r.seq) {
    return args.Invalid("without position_ids the caches should be [", r.batch, ",", r.seq, ",",
                        half, "], got ", DimsToString(cos_cache.dims()));
  }
  return VisitFloatTypes(args, x.dtype(), [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    const T* in = x.data<T>();
    const T* cos_data = cos_cache.data<T>();
    const T* sin_data = sin_cache.data<T>();
    T* out = args.out(0).data<T>();
    const auto at = [](const T* data, int64_t i) { return static_cast<double>(Widen(data[i])); };
    for (int64_t b = 0; b < r.batch; ++b) {
      for (int64_t s = 0; s < r.seq; ++s) {
        int64_t row = b * r.seq + s;
        if (position_ids != nullptr) {
          row = position_ids->data<int64_t>()[b * r.seq + s];
          if (row < 0) row += cache_rows;
          if (row < 0 || row >= cache_rows) {
            return args.Invalid("position id ", position_ids->data<int64_t>()[b * r.seq + s],
                                " at [", b, ",", s, "] is outside the caches' ", cache_rows,
                                " rows");
          }
        }
        for (int64_t h = 0; h < r.heads; ++h) {
          const int64_t base =
              (r.heads_outer ? (b * r.heads + h) * r.seq + s : (b * r.seq + s) * r.heads + h) *
              r.head_size;
          for (int64_t i = 0; i < half; ++i) {
            const int64_t first = r.interleaved ? 2 * i : i;
            const int64_t second = r.interleaved ? 2 * i + 1 : i + half;
            const double c = at(cos_data, row * half + i);
            const double sn = at(sin_data, row * half + i);
            const double x1 = at(in, base + first);
            const double x2 = at(in, base + second);
            out[base + first] = Narrow<T>(c * x1 - sn * x2);
            out[base + second] = Narrow<T>(sn * x1 + c * x2);
          }
          for (int64_t d = r.rotary_dim; d < r.head_size; ++d) out[base + d] = in[base + d];
        }
      }
    }
    return absl::OkStatus();
  });
}

}  // namespace

absl::Status HostRotaryEmbedding(const HostKernelArgs& args) { return RunRotaryEmbedding(args); }

}  // namespace graphserve
