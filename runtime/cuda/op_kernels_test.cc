#include "runtime/cuda/cuda_kernel_registry.h"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/cuda_handles.h"
#include "runtime/cuda/kernel_test_util.h"
#include "runtime/cuda/step_workspace.h"
#include "tensor_holder/stream_arena.h"
#include "common/cuda_status.h"
#include "common/status.h"
#include "runtime/bound_graph.h"
#include "runtime/data_movement_params.h"
#include "runtime/host/kernels.h"
#include "common/tensor.h"

namespace graphserve {
namespace {

// ||out - ref|| / ||ref||: float32 rounding of a handful of operations,
// against a host reference that accumulates in float64.
constexpr double kFloatTolerance = 1e-5;

// How an input is filled. Every fill avoids the values an op is undefined or
// ill-conditioned at (zero divisors, logs of negatives, NaN from a negative
// base to a fractional power).
enum class Fill {
  kSigned,        // |x| in [0.1, 2], either sign; int64: non-zero in [-5, 5]
  kPositive,      // float [0.1, 3]; int64 [1, 3]
  kSmallInts,     // float: non-zero integers in [-3, 3], so Equal finds matches
  kWithZeros,     // every 4th element 0, for Cast to bool and Relu
  kIndices,       // int64 in [-index_bound, index_bound): Gather's indices
  kHalves,        // float: multiples of 0.5 in [-4, 4], so Round meets its ties
  kNearOne,       // float [0.9, 1.1], so long products stay finite
  // int64 indices in [0, index_bound), each in turn as itself or minus
  // index_bound (the same position counted from the end), that never repeat
  // where a scatter without reduction would write twice (ONNX leaves which
  // duplicate wins undefined):
  kDistinctAlongAxis,  // along dim `distinct_axis` (ScatterElements)
  kDistinctTuples,     // as tuples over the last dim (ScatterND)
};

struct TensorSpec {
  DType dtype = DType::kFloat32;
  Dims dims;
  Fill fill = Fill::kSigned;
  int64_t index_bound = 0;  // kIndices and the kDistinct fills only
  int64_t distinct_axis = 0;  // kDistinctAlongAxis only
};

// Fills an int64 tensor of `dims` by spec's kDistinct fill (Fill's comment).
void FillDistinctIndices(const TensorSpec& spec, std::mt19937& rng, int64_t* data) {
  const Dims& dims = spec.dims;
  const int64_t bound = spec.index_bound;
  std::uniform_int_distribution<int> coin(0, 1);
  auto signed_index = [&](int64_t index) { return coin(rng) ? index : index - bound; };
  if (spec.fill == Fill::kDistinctTuples) {
    // Distinct flat positions of a grid of `count` coordinates, unravelled.
    const int64_t count = dims.back();
    const int64_t tuples = NumElements(dims) / count;
    int64_t grid = 1;
    for (int64_t j = 0; j < count; ++j) grid *= bound;
    std::vector<int64_t> positions(grid);
    for (int64_t p = 0; p < grid; ++p) positions[p] = p;
    std::shuffle(positions.begin(), positions.end(), rng);
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t rest = positions[t];
      for (int64_t j = count - 1; j >= 0; --j) {
        data[t * count + j] = signed_index(rest % bound);
        rest /= bound;
      }
    }
    return;
  }
  // kDistinctAlongAxis: each line along the axis a prefix of a permutation.
  const size_t axis = static_cast<size_t>(spec.distinct_axis);
  int64_t inner = 1;
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t length = dims[axis];
  const int64_t lines = NumElements(dims) / std::max<int64_t>(length, 1);
  std::vector<int64_t> permutation(bound);
  for (int64_t line = 0; line < lines; ++line) {
    for (int64_t p = 0; p < bound; ++p) permutation[p] = p;
    std::shuffle(permutation.begin(), permutation.end(), rng);
    const int64_t first = (line / inner) * length * inner + line % inner;
    for (int64_t a = 0; a < length; ++a) data[first + a * inner] = signed_index(permutation[a]);
  }
}

struct OpCase {
  std::string label;  // test name suffix: letters, digits, underscores
  std::string op_type;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;  // dims {-1} marks an unused optional output
  Attributes attributes;
  // The device computes in float (float64 in double, reductions in another
  // order) what the host computes in double: float16, bfloat16 and float64
  // outputs may differ in their last bits (RoundingTolerance). Otherwise
  // they are equal (Cast, data movement, PRelu's exact products).
  bool computed = false;
  // Computed outputs smaller than this are compared within the rounding of
  // this magnitude instead of their own: LayerNorm's x - mean cancels, so an
  // output near 0 carries the absolute error of its row's statistics.
  double magnitude = 0.0;
};

void PrintTo(const OpCase& c, std::ostream* os) { *os << c.label; }

std::string DimsLabel(const Dims& dims) {
  return dims.empty() ? std::string("s") : absl::StrJoin(dims, "x");
}

std::string TypeLabel(DType dtype) { return DTypeName(dtype); }

bool IsAbsent(const TensorSpec& spec) { return spec.dims.size() == 1 && spec.dims[0] == -1; }

Dims BroadcastDims(const std::vector<Dims>& all) {
  size_t rank = 0;
  for (const Dims& dims : all) rank = std::max(rank, dims.size());
  Dims out(rank, 1);
  for (const Dims& dims : all) {
    const size_t lead = rank - dims.size();
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] != 1) out[lead + i] = dims[i];
    }
  }
  return out;
}

HostTensor MakeInput(const TensorSpec& spec, std::mt19937& rng) {
  HostTensor tensor(spec.dtype, spec.dims);
  const int64_t n = tensor.num_elements();
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::uniform_int_distribution<int> coin(0, 1);
  switch (spec.dtype) {
    case DType::kFloat32: {
      float* data = tensor.data<float>();
      for (int64_t i = 0; i < n; ++i) {
        const float sign = coin(rng) ? 1.0f : -1.0f;
        switch (spec.fill) {
          case Fill::kPositive:
            data[i] = 0.1f + 2.9f * unit(rng);
            break;
          case Fill::kSmallInts:
            data[i] = sign * static_cast<float>(std::uniform_int_distribution<int>(1, 3)(rng));
            break;
          case Fill::kWithZeros:
            data[i] = i % 4 == 0 ? 0.0f : sign * 3.0f * unit(rng);
            break;
          case Fill::kHalves:
            data[i] = 0.5f * static_cast<float>(std::uniform_int_distribution<int>(-8, 8)(rng));
            break;
          case Fill::kNearOne:
            data[i] = 0.9f + 0.2f * unit(rng);
            break;
          case Fill::kSigned:
          case Fill::kIndices:
          case Fill::kDistinctAlongAxis:
          case Fill::kDistinctTuples:
            data[i] = sign * (0.1f + 1.9f * unit(rng));
            break;
        }
      }
      break;
    }
    case DType::kInt64:
    case DType::kInt32: {
      // Drawn as int64, stored in the tensor's type (the values fit int32).
      std::vector<int64_t> values(n);
      int64_t* data = values.data();
      const bool distinct =
          spec.fill == Fill::kDistinctAlongAxis || spec.fill == Fill::kDistinctTuples;
      if (distinct) FillDistinctIndices(spec, rng, data);
      for (int64_t i = 0; i < n && !distinct; ++i) {
        const int64_t sign = coin(rng) ? 1 : -1;
        switch (spec.fill) {
          case Fill::kPositive:
            data[i] = std::uniform_int_distribution<int64_t>(1, 3)(rng);
            break;
          case Fill::kIndices:
            data[i] = std::uniform_int_distribution<int64_t>(-spec.index_bound,
                                                             spec.index_bound - 1)(rng);
            break;
          case Fill::kWithZeros:
            data[i] = i % 4 == 0 ? 0 : sign * std::uniform_int_distribution<int64_t>(1, 5)(rng);
            break;
          case Fill::kSigned:
          case Fill::kSmallInts:
          case Fill::kHalves:
          case Fill::kNearOne:
          case Fill::kDistinctAlongAxis:
          case Fill::kDistinctTuples:
            data[i] = sign * std::uniform_int_distribution<int64_t>(1, 5)(rng);
            break;
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        if (spec.dtype == DType::kInt64) {
          tensor.data<int64_t>()[i] = values[i];
        } else {
          tensor.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
        }
      }
      break;
    }
    case DType::kBool: {
      bool* data = tensor.data<bool>();
      for (int64_t i = 0; i < n; ++i) data[i] = coin(rng) == 1;
      break;
    }
    default:
      // The other rows of the datatype table (Cast's inputs): small values
      // every type holds, zeros among them, halves for the float types.
      VisitDType(spec.dtype, [&](auto tag) {
        using T = typename decltype(tag)::Host;
        constexpr bool kFloating = IsFloatingDType(decltype(tag)::value);
        constexpr bool kSigned = kFloating || std::is_signed_v<T>;
        T* data = tensor.data<T>();
        for (int64_t i = 0; i < n; ++i) {
          float value = static_cast<float>(std::uniform_int_distribution<int>(0, 100)(rng));
          if (kSigned && coin(rng)) value = -value;
          if (kFloating) value += 0.5f * static_cast<float>(coin(rng));
          if (i % 4 == 0) value = 0.0f;
          data[i] = static_cast<T>(value);
        }
      });
      break;
  }
  return tensor;
}

struct SingleNodeGraph {
  BoundGraph graph;
  const BoundNode& node() const { return graph.nodes[0]; }
};

SingleNodeGraph MakeGraph(const OpCase& c) {
  SingleNodeGraph g;
  BoundNode node;
  node.name = "node_under_test";
  node.op_type = c.op_type;
  node.attributes = c.attributes;
  auto add_value = [&](const std::string& name, const TensorSpec& spec) {
    BoundValue value;
    value.name = name;
    value.dtype = spec.dtype;
    value.dims = spec.dims;
    g.graph.values.push_back(std::move(value));
    return static_cast<ValueId>(g.graph.values.size() - 1);
  };
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const ValueId id = add_value(absl::StrCat("in", i), c.inputs[i]);
    node.inputs.push_back(id);
    g.graph.inputs.push_back(id);
  }
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (IsAbsent(c.outputs[i])) {
      node.outputs.push_back(-1);
      continue;
    }
    const ValueId id = add_value(absl::StrCat("out", i), c.outputs[i]);
    node.outputs.push_back(id);
    g.graph.outputs.push_back(id);
  }
  g.graph.nodes.push_back(std::move(node));
  return g;
}

// Output tensors of the case's dtypes and dims; absent ones stay null.
std::vector<std::unique_ptr<HostTensor>> MakeOutputs(const OpCase& c) {
  std::vector<std::unique_ptr<HostTensor>> outputs;
  for (const TensorSpec& spec : c.outputs) {
    outputs.push_back(IsAbsent(spec) ? nullptr
                                     : std::make_unique<HostTensor>(spec.dtype, spec.dims));
  }
  return outputs;
}

template <typename T>
std::vector<T*> Pointers(const std::vector<std::unique_ptr<HostTensor>>& tensors) {
  std::vector<T*> pointers;
  for (const auto& t : tensors) pointers.push_back(t.get());
  return pointers;
}

// Uploads the inputs, poisons the outputs with 0xFF bytes (NaN as float32,
// so an unwritten element fails the comparison), enqueues the kernel with
// `enqueue` and downloads the outputs.
absl::Status RunOnDevice(const std::vector<HostTensor>& inputs,
                         std::vector<std::unique_ptr<HostTensor>>& outputs, cudaStream_t stream,
                         const std::function<absl::Status(absl::Span<const void* const>,
                                                          absl::Span<void* const>)>& enqueue) {
  std::vector<DeviceBuffer> buffers;
  std::vector<const void*> input_ptrs;
  for (const HostTensor& in : inputs) {
    ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::Allocate(in.bytes()));
    if (in.bytes() > 0) {
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(buffer.get(), in.raw(), in.bytes(),
                                           cudaMemcpyHostToDevice, stream));
    }
    input_ptrs.push_back(buffer.get());
    buffers.push_back(std::move(buffer));
  }
  std::vector<void*> output_ptrs;
  std::vector<size_t> output_buffers;
  for (const auto& out : outputs) {
    if (out == nullptr) {
      output_ptrs.push_back(nullptr);
      continue;
    }
    ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::Allocate(out->bytes()));
    if (out->bytes() > 0) {
      CUDA_RETURN_IF_ERROR(cudaMemsetAsync(buffer.get(), 0xFF, out->bytes(), stream));
    }
    output_ptrs.push_back(buffer.get());
    buffers.push_back(std::move(buffer));
  }
  RETURN_IF_ERROR(enqueue(input_ptrs, output_ptrs));
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i] == nullptr || outputs[i]->bytes() == 0) continue;
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(outputs[i]->raw(), output_ptrs[i], outputs[i]->bytes(),
                                         cudaMemcpyDeviceToHost, stream));
  }
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return absl::OkStatus();
}

// A float type's value as double (the 16-bit floats through float, exactly).
template <typename T>
double AsDouble(T x) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<float>(x);
  } else {
    return static_cast<double>(x);
  }
}

// How far a computed float16, bfloat16 or float64 result may be from the
// host's, relative to its magnitude: a rounding of each type's last place
// (float64: the few ulps between CUDA's and glibc's double functions).
double RoundingTolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return 0x1p-10;
    case DType::kBFloat16:
      return 0x1p-7;
    default:
      return 1e-13;
  }
}

// `computed` and `magnitude`: OpCase's.
void ExpectMatches(const HostTensor& got, const HostTensor& want, const std::string& what,
                   bool computed = false, double magnitude = 0.0) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.dims(), want.dims()) << what;
  const int64_t n = want.num_elements();
  if (want.dtype() == DType::kFloat32) {
    // NaN and Inf where the host has them (an empty reduction's NaN or
    // -Inf), and the finite elements within a relative error together.
    double error = 0.0;
    double norm = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double g = got.data<float>()[i];
      const double w = want.data<float>()[i];
      if (!std::isfinite(w)) {
        EXPECT_TRUE(g == w || (std::isnan(g) && std::isnan(w)))
            << what << ": element " << i << " is " << g << ", the host has " << w;
        continue;
      }
      error += (g - w) * (g - w);
      norm += w * w;
    }
    if (norm == 0.0) {
      EXPECT_EQ(error, 0.0) << what << ": reference is all zeros";
    } else {
      EXPECT_LT(std::sqrt(error / norm), kFloatTolerance) << what;
    }
    return;
  }
  if (IsFloatingDType(want.dtype())) {
    // float16, bfloat16 and float64: the same values (NaN where the host has
    // NaN, whatever its payload bits), or within a rounding for computed ones.
    const double tolerance = computed ? RoundingTolerance(want.dtype()) : 0.0;
    VisitDType(want.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::Host;
      for (int64_t i = 0; i < n; ++i) {
        const double g = AsDouble(got.data<T>()[i]);
        const double w = AsDouble(want.data<T>()[i]);
        if (g == w || (std::isnan(g) && std::isnan(w))) continue;
        if (std::isfinite(w) && std::fabs(g - w) <= tolerance * std::max(std::fabs(w), magnitude)) {
          continue;
        }
        ADD_FAILURE() << what << ": element " << i << " of " << n << " is " << g
                      << ", the host has " << w;
        return;
      }
    });
    return;
  }
  // Integers and bool: exact. bool bytes are 0 or 1 on both sides.
  const size_t size = DTypeSize(want.dtype());
  for (int64_t i = 0; i < n; ++i) {
    if (std::memcmp(static_cast<const char*>(got.raw()) + i * size,
                    static_cast<const char*>(want.raw()) + i * size, size) != 0) {
      ADD_FAILURE() << what << ": first mismatch at element " << i << " of " << n;
      return;
    }
  }
}

class OpKernelTest : public ::testing::TestWithParam<OpCase> {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }
};

// The case's node on the host kernel (`want`) and on its CUDA kernel (`got`),
// both from `inputs`.
struct HostAndDevice {
  std::vector<std::unique_ptr<HostTensor>> want;
  std::vector<std::unique_ptr<HostTensor>> got;
};

absl::StatusOr<HostAndDevice> RunHostAndDevice(const OpCase& c,
                                               const std::vector<HostTensor>& inputs) {
  const SingleNodeGraph g = MakeGraph(c);
  std::vector<const HostTensor*> input_ptrs;
  for (const HostTensor& in : inputs) input_ptrs.push_back(&in);
  HostAndDevice result{MakeOutputs(c), MakeOutputs(c)};
  RETURN_IF_ERROR(RunHostNode(g.node(), input_ptrs, Pointers<HostTensor>(result.want)));
  // The step workspace an executor plans (Note [Step workspaces]), placed in
  // an arena of its own.
  auto workspace = std::make_shared<StepWorkspace>();
  ASSIGN_OR_RETURN(std::unique_ptr<CudaOpKernel> kernel,
                   MakeCudaKernel({.graph = g.graph, .node = g.node(), .workspace = workspace}));
  int device = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  ASSIGN_OR_RETURN(const std::shared_ptr<StreamArena> arena, StreamArena::Create(device));
  RETURN_IF_ERROR(arena->Reserve(workspace->bytes()));
  workspace->Place(arena, 0);
  ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  RETURN_IF_ERROR(RunOnDevice(inputs, result.got, stream.get(),
                              [&](absl::Span<const void* const> in, absl::Span<void* const> out) {
                                return kernel->Enqueue(in, out, stream.get());
                              }));
  return result;
}

TEST_P(OpKernelTest, MatchesHostKernel) {
  const OpCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.label)));
  std::vector<HostTensor> inputs;
  for (const TensorSpec& spec : c.inputs) inputs.push_back(MakeInput(spec, rng));
  absl::StatusOr<HostAndDevice> run = RunHostAndDevice(c, inputs);
  ASSERT_TRUE(run.ok()) << run.status();
  for (size_t i = 0; i < run->got.size(); ++i) {
    if (run->got[i] == nullptr) continue;
    ExpectMatches(*run->got[i], *run->want[i], absl::StrCat(c.label, " output ", i), c.computed,
                  c.magnitude);
  }
}

// Every float32 op again (FloatCases) with NaN, +-Inf and (for elementwise
// ops) +-1e30 among its inputs: the GPU must give NaN exactly where the host reference
// does, the same infinities, and the finite values within float32 rounding
// (issue 9: ONNX's and PyTorch's NaN semantics on both executors). Cast has
// cases of its own (CastSpecialCases): ONNX leaves NaN and out-of-range
// values cast to an integer undefined, and both executors saturate alike.
// Some ops see no 1e30, where it would test rounding rather than semantics:
// Softmax's, LogSoftmax's and LayerNormalization's float32 sums of squares
// overflow where the host's float64 ones do not, and +1e30 and -1e30 in one signed sum
// (ReduceSum, ReduceMean, ReduceLogSum) cancel to whatever the summation
// order left of the other terms. GridSample neither: its sample positions are
// computed in float on the GPU and in double on the host, and a weight
// rounded differently, times 1e30, is a different number. Outputs smaller
// than a case's `magnitude` are compared within its rounding (GridSample's
// weighted sums of signed pixels cancel).
class OpKernelSpecialValuesTest : public OpKernelTest {};

TEST_P(OpKernelSpecialValuesTest, MatchesHostKernel) {
  const OpCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.label)) + 1);
  const bool no_large = c.op_type == "Softmax" || c.op_type == "LogSoftmax" ||
                        c.op_type == "LayerNormalization" || c.op_type == "RMSNormalization" ||
                        c.op_type == "ReduceSum" || c.op_type == "ReduceMean" ||
                        c.op_type == "ReduceLogSum" || c.op_type == "GridSample";
  std::vector<float> specials = {kNaN, kInf, -kInf};
  if (!no_large) specials.insert(specials.end(), {kLarge, -kLarge});
  std::vector<HostTensor> inputs;
  for (const TensorSpec& spec : c.inputs) {
    HostTensor input = MakeInput(spec, rng);
    if (spec.dtype != DType::kFloat32) {  // a scatter's indices: left as they are
      inputs.push_back(std::move(input));
      continue;
    }
    float* data = input.data<float>();
    const int64_t n = input.num_elements();
    // A few per tensor: most outputs still check the arithmetic.
    for (int64_t k = 0; n > 0 && k < std::max<int64_t>(1, n / 16); ++k) {
      data[std::uniform_int_distribution<int64_t>(0, n - 1)(rng)] = specials[k % specials.size()];
    }
    inputs.push_back(std::move(input));
  }
  absl::StatusOr<HostAndDevice> run = RunHostAndDevice(c, inputs);
  ASSERT_TRUE(run.ok()) << run.status();
  for (size_t i = 0; i < run->got.size(); ++i) {
    if (run->got[i] == nullptr) continue;
    if (run->want[i]->dtype() != DType::kFloat32) {
      // bool (comparisons, IsNaN, IsInf) and Cast's other types: exact, NaN
      // matching NaN for the float types.
      ExpectMatches(*run->got[i], *run->want[i], absl::StrCat(c.label, " output ", i));
      continue;
    }
    const float* g_data = run->got[i]->data<float>();
    const float* w_data = run->want[i]->data<float>();
    const int64_t n = run->want[i]->num_elements();
    const double floor = std::max<double>(kFloatTolerance * c.magnitude,
                                          std::numeric_limits<float>::min());
    EXPECT_TRUE(MatchesReference(std::vector<float>(g_data, g_data + n),
                                 std::vector<float>(w_data, w_data + n), kFloatTolerance, {},
                                 floor))
        << c.label << " output " << i;
  }
}

// ------------------------------------------------------------------ cases

TensorSpec Spec(DType dtype, Dims dims, Fill fill = Fill::kSigned) {
  return TensorSpec{dtype, std::move(dims), fill, 0};
}

// Shape pairs for two-input ops: same shape (odd, and with a vector tail),
// row bias, column broadcast, scalars either side, two-sided broadcast, and a
// rank-5 broadcast that merges to nothing (the general index path).
const std::vector<std::pair<Dims, Dims>>& BinaryShapes() {
  static const auto* shapes = new std::vector<std::pair<Dims, Dims>>{
      {{3, 5, 7}, {3, 5, 7}},
      {{2, 1027}, {2, 1027}},
      {{4, 33}, {33}},
      {{4, 33}, {4, 1}},
      {{5, 7}, {}},
      {{}, {5, 7}},
      {{3, 1, 5}, {4, 1}},
      {{2, 1, 3, 1, 5}, {1, 4, 1, 6, 1}},
  };
  return *shapes;
}

std::vector<OpCase> BinaryCases() {
  std::vector<OpCase> cases;
  const struct {
    const char* op;
    Fill a_fill;
    Fill b_fill;
    int64_t fmod;  // Mod's attribute; -1 for the other ops
  } ops[] = {
      {"Add", Fill::kSigned, Fill::kSigned, -1},     {"Sub", Fill::kSigned, Fill::kSigned, -1},
      {"Mul", Fill::kSigned, Fill::kSigned, -1},     {"Div", Fill::kSigned, Fill::kSigned, -1},
      {"Pow", Fill::kPositive, Fill::kSigned, -1},   {"Max", Fill::kSmallInts, Fill::kSigned, -1},
      {"Min", Fill::kSmallInts, Fill::kSigned, -1},
      {"Equal", Fill::kSmallInts, Fill::kSmallInts, -1},
      {"Less", Fill::kSmallInts, Fill::kSmallInts, -1},
      {"Greater", Fill::kSmallInts, Fill::kSmallInts, -1},
      {"LessOrEqual", Fill::kSmallInts, Fill::kSmallInts, -1},
      {"GreaterOrEqual", Fill::kSmallInts, Fill::kSmallInts, -1},
      {"And", Fill::kSmallInts, Fill::kSmallInts, -1},
      {"Or", Fill::kSmallInts, Fill::kSmallInts, -1},
      {"Xor", Fill::kSmallInts, Fill::kSmallInts, -1},
      // Mixed signs on both sides exercise both sign conventions.
      {"Mod", Fill::kSigned, Fill::kSigned, 1},      {"Mod", Fill::kSigned, Fill::kSigned, 0},
  };
  for (const auto& op : ops) {
    const std::string name = op.op;
    const bool logical = name == "And" || name == "Or" || name == "Xor";
    const bool compares = name == "Equal" || name == "Less" || name == "Greater" ||
                          name == "LessOrEqual" || name == "GreaterOrEqual";
    std::vector<DType> dtypes = {DType::kFloat32, DType::kInt64, DType::kInt32,
                                 DType::kFloat16, DType::kBFloat16, DType::kFloat64};
    // The comparisons take every row of the table (ordering all but bool).
    if (compares) dtypes.push_back(DType::kUInt8);
    if (name == "Equal") dtypes.push_back(DType::kBool);
    if (logical) dtypes = {DType::kBool};
    for (DType dtype : dtypes) {
      for (const auto& [a, b] : BinaryShapes()) {
        OpCase c;
        c.op_type = op.op;
        if (op.fmod >= 0) c.attributes["fmod"] = op.fmod;
        c.label = absl::StrCat(op.op, op.fmod >= 0 ? absl::StrCat("_fmod", op.fmod) : "", "_",
                               TypeLabel(dtype), "_", DimsLabel(a), "_", DimsLabel(b));
        // Integer Pow: base non-zero in [-5, 5], exponent in [1, 3].
        const bool integer_pow = !IsFloatingDType(dtype) && c.op_type == "Pow";
        const Fill b_fill = integer_pow ? Fill::kPositive : op.b_fill;
        const Fill a_fill = integer_pow ? Fill::kSigned : op.a_fill;
        // The 16-bit floats compute in float, float64 in double, as the host.
        c.computed = IsFloatingDType(dtype) && dtype != DType::kFloat32;
        c.inputs = {Spec(dtype, a, a_fill), Spec(dtype, b, b_fill)};
        const DType out_dtype = compares || logical ? DType::kBool : dtype;
        c.outputs = {Spec(out_dtype, BroadcastDims({a, b}))};
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

// The types data movement is tested with: every element size (1, 2, 4 and 8
// bytes) and the 16-bit floats, since its kernels depend on the size alone.
constexpr DType kMovedTypes[] = {DType::kFloat32, DType::kInt64,   DType::kBool,
                                 DType::kFloat16, DType::kBFloat16, DType::kInt8};

std::vector<OpCase> WhereCases() {
  const std::vector<std::vector<Dims>> shapes = {
      {{3, 5}, {3, 5}, {3, 5}},
      {{4, 1}, {4, 6}, {6}},
      {{}, {2, 3, 4}, {3, 1}},
      {{2, 1, 1, 3}, {1, 5, 1, 1}, {1, 1, 4, 3}},
  };
  std::vector<OpCase> cases;
  for (DType dtype : kMovedTypes) {
    for (const auto& s : shapes) {
      OpCase c;
      c.op_type = "Where";
      c.label = absl::StrCat("Where_", TypeLabel(dtype), "_", DimsLabel(s[0]), "_",
                             DimsLabel(s[1]), "_", DimsLabel(s[2]));
      c.inputs = {Spec(DType::kBool, s[0]), Spec(dtype, s[1]), Spec(dtype, s[2])};
      c.outputs = {Spec(dtype, BroadcastDims(s))};
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

std::vector<OpCase> UnaryCases() {
  // One element, an odd vector, a vector tail after packs, rank 4.
  const std::vector<Dims> shapes = {{1}, {7}, {3, 1001}, {2, 3, 4, 5}};
  const struct {
    const char* op;
    Fill fill;
    bool int64;
  } ops[] = {
      {"Sqrt", Fill::kPositive, false}, {"Exp", Fill::kSigned, false},
      {"Log", Fill::kPositive, false},  {"Sigmoid", Fill::kSigned, false},
      {"Tanh", Fill::kSigned, false},   {"Erf", Fill::kSigned, false},
      {"LeakyRelu", Fill::kSigned, false}, {"Relu", Fill::kWithZeros, true},
      {"Abs", Fill::kSigned, true},     {"Neg", Fill::kSigned, true},
      {"Reciprocal", Fill::kSigned, false}, {"Gelu", Fill::kSigned, false},
      {"Not", Fill::kSigned, false},    {"IsNaN", Fill::kSigned, false},
      {"IsInf", Fill::kSigned, false},
  };
  std::vector<OpCase> cases;
  for (const auto& op : ops) {
    const std::string name = op.op;
    const bool tests_float = name == "IsNaN" || name == "IsInf";
    std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                 DType::kFloat64};
    if (op.int64) dtypes.insert(dtypes.end(), {DType::kInt64, DType::kInt32});
    if (name == "Not") dtypes = {DType::kBool};
    for (DType dtype : dtypes) {
      for (const Dims& dims : shapes) {
        OpCase c;
        c.op_type = op.op;
        c.label = absl::StrCat(op.op, "_", TypeLabel(dtype), "_", DimsLabel(dims));
        c.inputs = {Spec(dtype, dims, op.fill)};
        c.outputs = {Spec(tests_float ? DType::kBool : dtype, dims)};
        c.computed = IsFloatingDType(dtype) && dtype != DType::kFloat32;
        if (c.op_type == "LeakyRelu") c.attributes["alpha"] = 0.1f;
        if (c.op_type == "Gelu") {
          OpCase tanh_form = c;  // approximate="tanh"
          tanh_form.label += "_tanh";
          tanh_form.attributes["approximate_tanh"] = int64_t{1};
          cases.push_back(std::move(tanh_form));
        }
        if (c.op_type == "IsInf" && dtype == DType::kFloat32) {
          OpCase positive_only = c;  // -Inf is not reported
          positive_only.label += "_positive_only";
          positive_only.attributes["detect_negative"] = int64_t{0};
          positive_only.attributes["detect_positive"] = int64_t{1};
          cases.push_back(std::move(positive_only));
        }
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

// The float math and activations on every float type (Sign on int32 and
// int64 too), with their attributes at ONNX's defaults and at other values.
std::vector<OpCase> FloatMathCases() {
  const std::vector<Dims> shapes = {{1}, {7}, {3, 1001}, {2, 3, 4, 5}};
  const struct {
    const char* op;
    Fill fill;
    Attributes attributes;
  } ops[] = {
      {"Floor", Fill::kSigned, {}},
      {"Ceil", Fill::kSigned, {}},
      {"Round", Fill::kHalves, {}},
      {"Sign", Fill::kWithZeros, {}},
      {"Sin", Fill::kSigned, {}},
      {"Cos", Fill::kSigned, {}},
      {"Softplus", Fill::kSigned, {}},
      {"Softsign", Fill::kSigned, {}},
      {"Mish", Fill::kSigned, {}},
      {"Elu", Fill::kSigned, {}},
      {"Elu", Fill::kSigned, {{"alpha", 0.5f}}},
      {"Selu", Fill::kSigned, {}},
      {"Selu", Fill::kSigned, {{"alpha", 2.0f}, {"gamma", 0.75f}}},
      {"Celu", Fill::kSigned, {{"alpha", 1.0f}}},
      {"Celu", Fill::kSigned, {{"alpha", -0.5f}}},
      {"ThresholdedRelu", Fill::kSigned, {}},
      {"ThresholdedRelu", Fill::kSigned, {{"alpha", -0.5f}}},
  };
  std::vector<OpCase> cases;
  for (const auto& op : ops) {
    std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                 DType::kFloat64};
    if (std::string(op.op) == "Sign") dtypes.insert(dtypes.end(), {DType::kInt32, DType::kInt64});
    std::string attributes;
    for (const auto& [name, value] : op.attributes) {
      const float v = std::get<float>(value);
      absl::StrAppend(&attributes, "_", name, v < 0 ? "m" : "",
                      static_cast<int>(std::fabs(v) * 100));
    }
    for (DType dtype : dtypes) {
      for (const Dims& dims : shapes) {
        OpCase c;
        c.op_type = op.op;
        c.label = absl::StrCat(op.op, attributes, "_", TypeLabel(dtype), "_", DimsLabel(dims));
        c.inputs = {Spec(dtype, dims, op.fill)};
        c.outputs = {Spec(dtype, dims)};
        c.attributes = op.attributes;
        c.computed = true;
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

// PRelu: the slope broadcast to X per channel, per row, as a scalar, and in
// full; every type with a sign.
std::vector<OpCase> PReluCases() {
  const std::vector<std::pair<Dims, Dims>> shapes = {
      {{3, 5, 7}, {3, 5, 7}}, {{4, 33}, {33}}, {{4, 33}, {4, 1}},
      {{5, 7}, {}},           {{2, 3, 4, 5}, {3, 1, 1}},
  };
  std::vector<OpCase> cases;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
                      DType::kInt32, DType::kInt64}) {
    for (const auto& [x, slope] : shapes) {
      OpCase c;
      c.op_type = "PRelu";
      c.label = absl::StrCat("PRelu_", TypeLabel(dtype), "_", DimsLabel(x), "_", DimsLabel(slope));
      c.inputs = {Spec(dtype, x, Fill::kWithZeros), Spec(dtype, slope)};
      c.outputs = {Spec(dtype, x)};
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

std::vector<OpCase> CastCases() {
  std::vector<OpCase> cases;
  // Every pair of rows of the datatype table.
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      for (const Dims& dims : std::vector<Dims>{{5}, {3, 37}}) {
        OpCase c;
        c.op_type = "Cast";
        c.label = absl::StrCat("Cast_", TypeLabel(from), "_to_", TypeLabel(to), "_",
                               DimsLabel(dims));
        c.inputs = {Spec(from, dims, Fill::kWithZeros)};
        c.outputs = {Spec(to, dims)};
        c.attributes["to"] = static_cast<int64_t>(to);
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

std::vector<OpCase> TransposeCases() {
  const std::vector<std::pair<Dims, std::vector<int64_t>>> shapes = {
      {{2, 3}, {1, 0}},
      {{33, 65}, {1, 0}},            // tiled, partial tiles on both sides
      {{3, 40, 70}, {0, 2, 1}},      // tiled, batched
      {{2, 4, 9, 9}, {0, 2, 3, 1}},  // thin: 4 columns, the strided map's
      {{2, 40, 5}, {0, 2, 1}},       // thin: 5 rows
      {{2, 3, 4}, {2, 0, 1}},
      {{2, 5, 3, 8}, {0, 2, 1, 3}},  // attention heads: innermost dim kept
      // Note [Vector copies]: rows of 64 move as 16-byte units; rows of 6
      // only for 8-byte types.
      {{3, 7, 4, 64}, {0, 2, 1, 3}},
      {{2, 4, 3, 6}, {0, 2, 1, 3}},
      {{1, 3, 1, 4}, {3, 2, 1, 0}},
      {{7}, {0}},
      {{2, 3, 2, 1, 3, 2}, {5, 4, 3, 2, 1, 0}},
  };
  std::vector<OpCase> cases;
  for (DType dtype : kMovedTypes) {
    for (const auto& [dims, perm] : shapes) {
      Dims out;
      for (int64_t p : perm) out.push_back(dims[p]);
      OpCase c;
      c.op_type = "Transpose";
      c.label = absl::StrCat("Transpose_", TypeLabel(dtype), "_", DimsLabel(dims), "_p",
                             absl::StrJoin(perm, ""));
      c.inputs = {Spec(dtype, dims)};
      c.outputs = {Spec(dtype, out)};
      c.attributes["perm"] = perm;
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

std::vector<OpCase> SliceCases() {
  const struct {
    Dims in;
    std::vector<int64_t> starts;
    std::vector<int64_t> steps;
    Dims out;
  } slices[] = {
      {{10, 12}, {1, 2}, {2, 3}, {5, 4}},
      {{7, 9}, {6, 0}, {-1, 1}, {7, 9}},
      {{7, 9}, {5, 8}, {-2, -3}, {3, 3}},
      {{4, 5, 6}, {1, 0, 2}, {1, 1, 1}, {2, 5, 3}},
      {{2, 3, 4, 5}, {0, 1, 0, 4}, {1, 1, 2, -1}, {2, 2, 2, 5}},
  };
  std::vector<OpCase> cases;
  for (DType dtype : kMovedTypes) {
    for (const auto& s : slices) {
      OpCase c;
      c.op_type = "Slice";
      c.label = absl::StrCat("Slice_", TypeLabel(dtype), "_", DimsLabel(s.in), "_to_",
                             DimsLabel(s.out), "_", cases.size());
      c.inputs = {Spec(dtype, s.in)};
      c.outputs = {Spec(dtype, s.out)};
      c.attributes["starts"] = s.starts;
      c.attributes["steps"] = s.steps;
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

std::vector<OpCase> ExpandCases() {
  const std::vector<std::pair<Dims, Dims>> shapes = {
      {{3, 1}, {3, 4}}, {{4}, {2, 3, 4}}, {{}, {5}}, {{2, 1, 3}, {2, 4, 3}}, {{1, 1}, {1, 1}},
  };
  std::vector<OpCase> cases;
  for (DType dtype : kMovedTypes) {
    for (const auto& [in, out] : shapes) {
      OpCase c;
      c.op_type = "Expand";
      c.label = absl::StrCat("Expand_", TypeLabel(dtype), "_", DimsLabel(in), "_to_",
                             DimsLabel(out));
      c.inputs = {Spec(dtype, in)};
      c.outputs = {Spec(dtype, out)};
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

std::vector<OpCase> GatherCases() {
  const struct {
    Dims data;
    Dims indices;
    int64_t axis;
  } gathers[] = {
      {{5, 4}, {3}, 0},
      {{2, 7, 3}, {2, 2}, 1},
      {{6}, {}, 0},
      {{3, 4, 5}, {6}, 2},
      {{50, 64}, {2, 9}, 0},  // embedding lookup
  };
  std::vector<OpCase> cases;
  for (DType dtype : kMovedTypes) {
    for (const auto& g : gathers) {
      Dims out(g.data.begin(), g.data.begin() + g.axis);
      out.insert(out.end(), g.indices.begin(), g.indices.end());
      out.insert(out.end(), g.data.begin() + g.axis + 1, g.data.end());
      OpCase c;
      c.op_type = "Gather";
      c.label = absl::StrCat("Gather_", TypeLabel(dtype), "_", DimsLabel(g.data), "_",
                             DimsLabel(g.indices), "_axis", g.axis);
      TensorSpec indices = Spec(DType::kInt64, g.indices, Fill::kIndices);
      indices.index_bound = g.data[g.axis];
      c.inputs = {Spec(dtype, g.data), indices};
      c.outputs = {Spec(dtype, out)};
      c.attributes["axis"] = g.axis;
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

std::vector<OpCase> SoftmaxCases() {
  // outer, axis_size, inner: warp rows of every register bucket, block rows
  // (> 1024), strided axes (Note [Softmax along a strided axis]: a block per
  // tile of a few columns, among them CoaT's keys and a tile cut short, and
  // a thread per column when there are many), a one-element axis.
  const std::vector<std::vector<int64_t>> shapes = {
      {4, 10, 1}, {1, 33, 1},  {3, 100, 1}, {5, 1000, 1}, {2, 1024, 1},
      {2, 2000, 1}, {2, 5, 3}, {3, 17, 129}, {8, 3136, 8}, {2, 300, 40},
      {1, 3, 40000}, {7, 1, 1},
  };
  std::vector<OpCase> cases;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      for (const auto& s : shapes) {
        OpCase c;
        c.op_type = op;
        const Dims dims = s[2] == 1 ? Dims{s[0], s[1]} : Dims{s[0], s[1], s[2]};
        c.label = absl::StrCat(op, "_", dtype == DType::kFloat32 ? "" : TypeLabel(dtype) + "_",
                               s[0], "_", s[1], "_", s[2]);
        c.inputs = {Spec(dtype, dims)};
        c.outputs = {Spec(dtype, dims)};
        c.computed = dtype != DType::kFloat32;
        // LogSoftmax's largest elements are -log(sum) near 0, where the
        // float sum's rounding (1e-7 absolute) is all there is.
        if (c.op_type == "LogSoftmax") c.magnitude = 1e-3;
        c.attributes["outer"] = s[0];
        c.attributes["axis_size"] = s[1];
        c.attributes["inner"] = s[2];
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

// Hardmax over warp rows (inner 1, rows shorter and longer than a warp)
// and strided lines, in each float type; small integers make ties, where the
// first maximum must win on both executors.
std::vector<OpCase> HardmaxCases() {
  const std::vector<std::vector<int64_t>> shapes = {
      {4, 10, 1}, {3, 1000, 1}, {2, 5, 3}, {3, 17, 129}, {7, 1, 1}};
  std::vector<OpCase> cases;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
    for (const auto& s : shapes) {
      OpCase c;
      c.op_type = "Hardmax";
      const Dims dims = s[2] == 1 ? Dims{s[0], s[1]} : Dims{s[0], s[1], s[2]};
      c.label = absl::StrCat("Hardmax_", TypeLabel(dtype), "_", s[0], "_", s[1], "_", s[2]);
      c.inputs = {Spec(dtype, dims, Fill::kSmallInts)};
      c.outputs = {Spec(dtype, dims)};
      c.attributes["outer"] = s[0];
      c.attributes["axis_size"] = s[1];
      c.attributes["inner"] = s[2];
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

// InstanceNormalization and GroupNormalization (Note [Group normalization]):
// rows shorter than a block and longer than several passes of it, spatial 1,
// scale and bias per channel and per group, and rows split over many blocks
// (Note [Group normalization on many blocks]): PoolFormer's one group of
// 64 x 3136, and an uneven last chunk.
std::vector<OpCase> GroupNormCases() {
  const struct {
    const char* op;
    int64_t batch, channels, groups, spatial;
    bool per_group;
  } norms[] = {
      {"InstanceNormalization", 2, 3, 3, 25, false},
      {"InstanceNormalization", 1, 4, 4, 1, false},
      {"InstanceNormalization", 2, 2, 2, 4100, false},
      {"GroupNormalization", 2, 8, 4, 9, false},
      {"GroupNormalization", 3, 6, 3, 7, true},
      {"GroupNormalization", 1, 32, 8, 640, false},
      {"GroupNormalization", 1, 64, 1, 3136, false},
      {"InstanceNormalization", 2, 3, 3, 20001, false},
  };
  std::vector<OpCase> cases;
  for (const auto& n : norms) {
    OpCase c;
    c.op_type = n.op;
    c.label = absl::StrCat(n.op, "_", n.batch, "x", n.channels, "x", n.spatial, "_groups",
                           n.groups, n.per_group ? "_per_group" : "");
    const int64_t affine = n.per_group ? n.groups : n.channels;
    c.inputs = {Spec(DType::kFloat32, {n.batch, n.channels, n.spatial}),
                Spec(DType::kFloat32, {affine}), Spec(DType::kFloat32, {affine})};
    c.outputs = {Spec(DType::kFloat32, {n.batch, n.channels, n.spatial})};
    c.attributes["batch"] = n.batch;
    c.attributes["channels"] = n.channels;
    c.attributes["groups"] = n.groups;
    c.attributes["spatial"] = n.spatial;
    c.attributes["epsilon"] = 1e-5f;
    c.attributes["affine_per_group"] = int64_t{n.per_group};
    cases.push_back(std::move(c));
  }
  return cases;
}

// Note [Rotary embedding]: both layouts, position ids (negative ones too) or
// per-token caches, halves or interleaved pairs, full or partial rotation.
std::vector<OpCase> RotaryCases() {
  constexpr int64_t kMaxPosition = 50;
  const struct {
    int64_t batch, seq, heads, head_size, rotary_dim;
    bool heads_outer, interleaved, positions;
  } shapes[] = {
      {2, 3, 4, 8, 8, true, false, true},    {2, 3, 4, 8, 8, true, true, true},
      {2, 3, 4, 8, 4, true, false, false},   {1, 7, 2, 64, 32, false, true, true},
      {3, 5, 8, 128, 128, false, false, true}, {2, 4, 3, 16, 8, false, false, false},
  };
  std::vector<OpCase> cases;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const auto& r : shapes) {
      OpCase c;
      c.op_type = "RotaryEmbedding";
      c.label = absl::StrCat("Rotary_", TypeLabel(dtype), "_", r.batch, "x", r.seq, "x", r.heads,
                             "x", r.head_size, "_rot", r.rotary_dim,
                             r.heads_outer ? "_bhsd" : "_bshd",
                             r.interleaved ? "_interleaved" : "", r.positions ? "_ids" : "");
      const Dims x = r.heads_outer ? Dims{r.batch, r.heads, r.seq, r.head_size}
                                   : Dims{r.batch, r.seq, r.heads, r.head_size};
      const Dims cache = r.positions ? Dims{kMaxPosition, r.rotary_dim / 2}
                                     : Dims{r.batch, r.seq, r.rotary_dim / 2};
      c.inputs = {Spec(dtype, x), Spec(dtype, cache), Spec(dtype, cache)};
      if (r.positions) {
        TensorSpec ids = Spec(DType::kInt64, {r.batch, r.seq});
        ids.fill = Fill::kIndices;
        ids.index_bound = kMaxPosition;
        c.inputs.push_back(ids);
      }
      c.outputs = {Spec(dtype, x)};
      c.computed = true;
      c.attributes["batch"] = r.batch;
      c.attributes["seq"] = r.seq;
      c.attributes["heads"] = r.heads;
      c.attributes["head_size"] = r.head_size;
      c.attributes["rotary_dim"] = r.rotary_dim;
      c.attributes["interleaved"] = int64_t{r.interleaved};
      c.attributes["heads_outer"] = int64_t{r.heads_outer};
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

// Note [RMS normalization]: LayerNormalization's kernels without centring.
std::vector<OpCase> RmsNormCases() {
  const struct {
    int64_t outer;
    int64_t inner;
  } norms[] = {{4, 10}, {3, 768}, {2, 1500}, {5, 1}, {7, 4096}};
  std::vector<OpCase> cases;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const auto& n : norms) {
      OpCase c;
      c.op_type = "RMSNormalization";
      c.label = absl::StrCat("RmsNorm_", dtype == DType::kFloat32 ? "" : TypeLabel(dtype) + "_",
                             n.outer, "x", n.inner);
      c.inputs = {Spec(dtype, {n.outer, n.inner}), Spec(dtype, {n.inner})};
      c.outputs = {Spec(dtype, {n.outer, n.inner})};
      c.computed = dtype != DType::kFloat32;
      c.magnitude = 1.0;  // a normalised row's scale
      c.attributes["outer"] = n.outer;
      c.attributes["inner"] = n.inner;
      c.attributes["epsilon"] = 1e-5f;
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

std::vector<OpCase> LayerNormCases() {
  const Dims absent = {-1};
  const struct {
    int64_t outer;
    int64_t inner;
    bool bias;
    bool mean;
    bool inv_std_dev;
  } norms[] = {
      {4, 10, true, false, false},   {3, 768, true, true, true},  {2, 1500, true, true, true},
      {5, 1, false, false, false},   {6, 64, false, false, true}, {1, 1025, false, true, false},
      {9, 32, true, true, false},
  };
  std::vector<OpCase> cases;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const auto& n : norms) {
      OpCase c;
      c.op_type = "LayerNormalization";
      c.label = absl::StrCat("LayerNorm_", dtype == DType::kFloat32 ? "" : TypeLabel(dtype) + "_",
                             n.outer, "x", n.inner, n.bias ? "_bias" : "", n.mean ? "_mean" : "",
                             n.inv_std_dev ? "_invstd" : "");
      c.inputs = {Spec(dtype, {n.outer, n.inner}), Spec(dtype, {n.inner})};
      if (n.bias) c.inputs.push_back(Spec(dtype, {n.inner}));
      // Y in X's type; Mean and InvStdDev in float32, the stash type.
      c.outputs = {Spec(dtype, {n.outer, n.inner})};
      if (n.mean || n.inv_std_dev) {
        c.outputs.push_back(n.mean ? Spec(DType::kFloat32, {n.outer, 1})
                                   : Spec(DType::kFloat32, absent));
      }
      if (n.inv_std_dev) c.outputs.push_back(Spec(DType::kFloat32, {n.outer, 1}));
      c.computed = dtype != DType::kFloat32;
      c.magnitude = 1.0;  // a normalised row's scale
      c.attributes["outer"] = n.outer;
      c.attributes["inner"] = n.inner;
      c.attributes["epsilon"] = 1e-5f;
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

// Every reduction over warp rows, block rows (5000 columns), strided axes,
// kept and dropped dims; an empty reduction and one over no axes.
std::vector<OpCase> ReduceCases() {
  const struct {
    Dims in;
    std::vector<int64_t> axes;
    int64_t keepdims;
  } reductions[] = {
      {{4, 5, 6}, {2}, 1},        {{4, 5, 6}, {1}, 1},      {{4, 5, 6}, {0, 2}, 0},
      {{4, 5, 6}, {0, 1, 2}, 0},  {{2, 3, 4, 5}, {2, 3}, 0}, {{3, 5000}, {1}, 1},
      {{1, 7, 1, 3}, {1}, 1},     {{64, 3}, {0}, 0},       {{2, 3, 4, 5, 6}, {1, 3}, 1},
      {{3, 0}, {1}, 1},           {{3, 4}, {}, 1},
  };
  const struct {
    const char* op;
    Fill fill;
    bool integers;
  } ops[] = {
      {"ReduceSum", Fill::kSigned, true},         {"ReduceMean", Fill::kSigned, false},
      {"ReduceProd", Fill::kNearOne, true},       {"ReduceMax", Fill::kSmallInts, true},
      {"ReduceMin", Fill::kSmallInts, true},      {"ReduceL1", Fill::kSigned, true},
      {"ReduceL2", Fill::kSigned, false},         {"ReduceSumSquare", Fill::kSigned, true},
      {"ReduceLogSum", Fill::kPositive, false},   {"ReduceLogSumExp", Fill::kSigned, false},
  };
  std::vector<OpCase> cases;
  for (const auto& op : ops) {
    std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                 DType::kFloat64};
    if (op.integers) dtypes.insert(dtypes.end(), {DType::kInt32, DType::kInt64});
    for (DType dtype : dtypes) {
      for (const auto& r : reductions) {
        Dims out;
        for (size_t d = 0; d < r.in.size(); ++d) {
          const bool reduced = std::find(r.axes.begin(), r.axes.end(), d) != r.axes.end();
          if (!reduced) {
            out.push_back(r.in[d]);
          } else if (r.keepdims) {
            out.push_back(1);
          }
        }
        OpCase c;
        c.op_type = op.op;
        c.label = absl::StrCat(op.op, "_", TypeLabel(dtype), "_", DimsLabel(r.in), "_axes",
                               absl::StrJoin(r.axes, ""), "_keep", r.keepdims);
        c.inputs = {Spec(dtype, r.in, op.fill)};
        c.outputs = {Spec(dtype, out)};
        c.attributes["axes"] = r.axes;
        c.attributes["keepdims"] = r.keepdims;
        c.computed = true;
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

// ArgMax and ArgMin along each axis of a rank-3 tensor and along long rows
// (a warp per row), first and last index, with ties (small integers).
std::vector<OpCase> ArgReduceCases() {
  const struct {
    Dims in;
    int64_t axis;
  } shapes[] = {{{3, 130, 5}, 0}, {{3, 130, 5}, 1}, {{3, 130, 5}, 2}, {{7, 1000}, 1}, {{9}, 0}};
  std::vector<OpCase> cases;
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
                        DType::kInt32, DType::kInt64}) {
      for (const auto& s : shapes) {
        for (int64_t last : {0, 1}) {
          Dims out = s.in;
          out[s.axis] = 1;
          OpCase c;
          c.op_type = op;
          c.label = absl::StrCat(op, "_", TypeLabel(dtype), "_", DimsLabel(s.in), "_axis", s.axis,
                                 "_last", last);
          c.inputs = {Spec(dtype, s.in, Fill::kSmallInts)};
          c.outputs = {Spec(DType::kInt64, out)};
          c.attributes["axis"] = s.axis;
          c.attributes["keepdims"] = int64_t{1};
          c.attributes["select_last_index"] = last;
          cases.push_back(std::move(c));
        }
      }
    }
  }
  return cases;
}

std::vector<OpCase> ConcatCases() {
  const struct {
    std::vector<Dims> inputs;
    int64_t axis;
  } concats[] = {
      {{{2, 3}, {4, 3}}, 0},
      {{{2, 3}, {2, 5}, {2, 1}}, 1},
      {{{2, 3, 4}, {2, 1, 4}, {2, 0, 4}, {2, 2, 4}}, 1},  // an empty input
      {{{3}}, 0},
      // Ten inputs: two launches of up to eight.
      {{{2, 1, 3}, {2, 2, 3}, {2, 3, 3}, {2, 1, 3}, {2, 2, 3}, {2, 3, 3}, {2, 1, 3},
        {2, 2, 3}, {2, 3, 3}, {2, 1, 3}},
       1},
  };
  std::vector<OpCase> cases;
  for (DType dtype : kMovedTypes) {
    for (const auto& cc : concats) {
      OpCase c;
      c.op_type = "Concat";
      Dims out = cc.inputs[0];
      out[cc.axis] = 0;
      for (const Dims& in : cc.inputs) {
        c.inputs.push_back(Spec(dtype, in));
        out[cc.axis] += in[cc.axis];
      }
      c.label = absl::StrCat("Concat_", TypeLabel(dtype), "_", cc.inputs.size(), "_inputs_",
                             DimsLabel(out), "_axis", cc.axis);
      c.outputs = {Spec(dtype, out)};
      c.attributes["axis"] = cc.axis;
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

std::string CaseName(const ::testing::TestParamInfo<OpCase>& info) { return info.param.label; }

INSTANTIATE_TEST_SUITE_P(Binary, OpKernelTest, ::testing::ValuesIn(BinaryCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Where, OpKernelTest, ::testing::ValuesIn(WhereCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Unary, OpKernelTest, ::testing::ValuesIn(UnaryCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Cast, OpKernelTest, ::testing::ValuesIn(CastCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Transpose, OpKernelTest, ::testing::ValuesIn(TransposeCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(Slice, OpKernelTest, ::testing::ValuesIn(SliceCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Expand, OpKernelTest, ::testing::ValuesIn(ExpandCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Gather, OpKernelTest, ::testing::ValuesIn(GatherCases()), CaseName);

// GatherElements along each axis, indices smaller than the data off the axis
// (RoBERTa's and BERT's position and token-type lookups have this shape).
std::vector<OpCase> GatherElementsCases() {
  const struct {
    Dims data;
    Dims indices;
    int64_t axis;
  } gathers[] = {
      {{5, 4}, {3, 4}, 0},
      {{2, 7, 3}, {2, 9, 3}, 1},
      {{3, 4, 5}, {2, 3, 8}, 2},
      {{1, 512}, {1, 128}, 1},
  };
  std::vector<OpCase> cases;
  for (DType dtype : kMovedTypes) {
    for (const auto& g : gathers) {
      OpCase c;
      c.op_type = "GatherElements";
      c.label = absl::StrCat("GatherElements_", TypeLabel(dtype), "_", DimsLabel(g.data), "_",
                             DimsLabel(g.indices), "_axis", g.axis);
      TensorSpec indices = Spec(DType::kInt64, g.indices, Fill::kIndices);
      indices.index_bound = g.data[g.axis];
      c.inputs = {Spec(dtype, g.data), indices};
      c.outputs = {Spec(dtype, g.indices)};
      c.attributes["axis"] = g.axis;
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

// CumSum along each axis of a rank-3 tensor, forward and reverse, inclusive
// and exclusive.
std::vector<OpCase> CumSumCases() {
  std::vector<OpCase> cases;
  for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kFloat64}) {
    for (int64_t axis : {0, 1, 2}) {
      for (int64_t exclusive : {0, 1}) {
        for (int64_t reverse : {0, 1}) {
          OpCase c;
          c.op_type = "CumSum";
          c.label = absl::StrCat("CumSum_", TypeLabel(dtype), "_axis", axis, "_exclusive",
                                 exclusive, "_reverse", reverse);
          c.inputs = {Spec(dtype, {3, 130, 5}, Fill::kSmallInts)};
          c.outputs = {Spec(dtype, {3, 130, 5})};
          c.attributes["axis"] = axis;
          c.attributes["exclusive"] = exclusive;
          c.attributes["reverse"] = reverse;
          cases.push_back(std::move(c));
        }
      }
    }
  }
  return cases;
}

// GatherND: whole rows, single elements, and with batch dims.
std::vector<OpCase> GatherNDCases() {
  const struct {
    Dims data;
    Dims indices;
    int64_t batch_dims;
  } gathers[] = {
      {{5, 4}, {3, 1}, 0},        // rows
      {{5, 4}, {3, 2}, 0},        // elements
      {{2, 6, 3}, {2, 4, 1}, 1},  // a row of each batch
      {{2, 3, 4, 5}, {2, 3, 2, 1}, 2},
  };
  std::vector<OpCase> cases;
  for (DType dtype : kMovedTypes) {
    for (const auto& g : gathers) {
      const int64_t count = g.indices.back();
      Dims out(g.indices.begin(), g.indices.end() - 1);
      out.insert(out.end(), g.data.begin() + g.batch_dims + count, g.data.end());
      OpCase c;
      c.op_type = "GatherND";
      c.label = absl::StrCat("GatherND_", TypeLabel(dtype), "_", DimsLabel(g.data), "_",
                             DimsLabel(g.indices), "_b", g.batch_dims);
      // Every indexed dim here is at least 3 long: indices in [-3, 3).
      TensorSpec indices = Spec(DType::kInt64, g.indices, Fill::kIndices);
      indices.index_bound = 3;
      c.inputs = {Spec(dtype, g.data), indices};
      c.outputs = {Spec(dtype, out)};
      c.attributes["batch_dims"] = g.batch_dims;
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(GatherND, OpKernelTest, ::testing::ValuesIn(GatherNDCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(GatherElements, OpKernelTest, ::testing::ValuesIn(GatherElementsCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(CumSum, OpKernelTest, ::testing::ValuesIn(CumSumCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Softmax, OpKernelTest, ::testing::ValuesIn(SoftmaxCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(LayerNorm, OpKernelTest, ::testing::ValuesIn(LayerNormCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(RmsNorm, OpKernelTest, ::testing::ValuesIn(RmsNormCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Rotary, OpKernelTest, ::testing::ValuesIn(RotaryCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(GroupNorm, OpKernelTest, ::testing::ValuesIn(GroupNormCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(Hardmax, OpKernelTest, ::testing::ValuesIn(HardmaxCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Reduce, OpKernelTest, ::testing::ValuesIn(ReduceCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(ArgReduce, OpKernelTest, ::testing::ValuesIn(ArgReduceCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(FloatMath, OpKernelTest, ::testing::ValuesIn(FloatMathCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(PRelu, OpKernelTest, ::testing::ValuesIn(PReluCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Concat, OpKernelTest, ::testing::ValuesIn(ConcatCases()), CaseName);

// ------------------------------------ Tile, Trilu, scatters, OneHot, TopK

std::vector<OpCase> TileCases() {
  const struct {
    Dims in;
    Dims out;
  } tiles[] = {
      {{2, 3}, {4, 3}},              // repeats [2, 1]: the inner dim merges away
      {{2, 1, 3}, {2, 4, 6}},        // a broadcast-like dim and a repeated row
      {{3}, {9}},
      {{2, 3, 4, 5}, {2, 6, 4, 10}},
      {{1, 1}, {3, 5}},
  };
  std::vector<OpCase> cases;
  for (DType dtype : kMovedTypes) {
    for (const auto& t : tiles) {
      OpCase c;
      c.op_type = "Tile";
      c.label = absl::StrCat("Tile_", TypeLabel(dtype), "_", DimsLabel(t.in), "_to_",
                             DimsLabel(t.out));
      c.inputs = {Spec(dtype, t.in)};
      c.outputs = {Spec(dtype, t.out)};
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

std::vector<OpCase> TriluCases() {
  const struct {
    Dims dims;
    int64_t upper;
    int64_t k;  // binding clamps it to [-rows, cols]
  } trilus[] = {
      {{5, 7}, 1, 0}, {{5, 7}, 1, 2}, {{5, 7}, 0, -3}, {{3, 4, 4}, 0, 0},
      {{3, 4, 4}, 1, -1}, {{2, 6, 3}, 0, 3}, {{2, 6, 3}, 1, -6},
  };
  std::vector<OpCase> cases;
  for (DType dtype : kMovedTypes) {
    for (const auto& t : trilus) {
      OpCase c;
      c.op_type = "Trilu";
      c.label = absl::StrCat("Trilu_", TypeLabel(dtype), "_", DimsLabel(t.dims), "_upper",
                             t.upper, "_k", t.k < 0 ? "m" : "", std::abs(t.k));
      c.inputs = {Spec(dtype, t.dims)};
      c.outputs = {Spec(dtype, t.dims)};
      c.attributes["upper"] = t.upper;
      c.attributes["k"] = t.k;
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

// The types the scatters' reductions are tested with: each arithmetic
// (float, double, the 16-bit floats rounding per update, wrapping integers
// signed and not).
constexpr DType kReducedTypes[] = {DType::kFloat32, DType::kInt64,   DType::kFloat16,
                                   DType::kBFloat16, DType::kInt8,   DType::kUInt8,
                                   DType::kFloat64};

// The value fill of a scatter's data and updates: float32 small integers, so
// that products stay exact and max/min see ties.
Fill ScatterFill(DType dtype) { return dtype == DType::kFloat32 ? Fill::kSmallInts : Fill::kSigned; }

// ScatterND with every reduction. Without one the index tuples are distinct;
// with one they repeat (Note [Scatter kernels]: in order on both sides).
// Every indexed dim is 4 or 8 long, the index bound.
std::vector<OpCase> ScatterNDCases() {
  const struct {
    Dims data;
    Dims indices;
  } scatters[] = {
      {{4, 4, 4}, {2, 1}},  // slices of 16
      {{4, 4}, {5, 2}},     // single elements
      {{4, 4, 3}, {7, 2}},  // rows of 3
      {{8}, {20, 1}},       // 20 updates into 8 elements: reductions only
  };
  std::vector<OpCase> cases;
  for (int64_t r = 0; r < kScatterReductionCount; ++r) {
    const bool reduces = r != static_cast<int64_t>(ScatterReduction::kNone);
    const std::vector<DType> types = reduces
                                         ? std::vector<DType>(std::begin(kReducedTypes),
                                                              std::end(kReducedTypes))
                                         : std::vector<DType>(std::begin(kMovedTypes),
                                                              std::end(kMovedTypes));
    for (DType dtype : types) {
      for (const auto& s : scatters) {
        const int64_t count = s.indices.back();
        const int64_t tuples = NumElements(s.indices) / count;
        int64_t positions = 1;
        for (int64_t j = 0; j < count; ++j) positions *= s.data[j];
        if (!reduces && tuples > positions) continue;  // cannot be distinct
        Dims updates(s.indices.begin(), s.indices.end() - 1);
        updates.insert(updates.end(), s.data.begin() + count, s.data.end());
        OpCase c;
        c.op_type = "ScatterND";
        c.label = absl::StrCat("ScatterND_", kScatterReductionNames[r], "_", TypeLabel(dtype),
                               "_", DimsLabel(s.data), "_", DimsLabel(s.indices));
        TensorSpec indices =
            Spec(DType::kInt64, s.indices, reduces ? Fill::kIndices : Fill::kDistinctTuples);
        indices.index_bound = s.data[0];
        c.inputs = {Spec(dtype, s.data, ScatterFill(dtype)), indices,
                    Spec(dtype, updates, ScatterFill(dtype))};
        c.outputs = {Spec(dtype, s.data)};
        c.attributes["reduction"] = r;
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

// ScatterElements along each axis with every reduction, indices distinct
// along the axis without one.
std::vector<OpCase> ScatterElementsCases() {
  const struct {
    Dims data;
    Dims indices;
    int64_t axis;
  } scatters[] = {
      {{5, 4}, {3, 4}, 0},
      {{3, 6}, {3, 4}, 1},
      {{2, 3, 4}, {2, 2, 4}, 1},
      {{2, 3, 4}, {1, 3, 9}, 2},  // 9 updates per line of 4: reductions only
      {{6}, {15}, 0},             // reductions only
  };
  std::vector<OpCase> cases;
  for (int64_t r = 0; r < kScatterReductionCount; ++r) {
    const bool reduces = r != static_cast<int64_t>(ScatterReduction::kNone);
    const std::vector<DType> types = reduces
                                         ? std::vector<DType>(std::begin(kReducedTypes),
                                                              std::end(kReducedTypes))
                                         : std::vector<DType>(std::begin(kMovedTypes),
                                                              std::end(kMovedTypes));
    for (DType dtype : types) {
      for (const auto& s : scatters) {
        if (!reduces && s.indices[s.axis] > s.data[s.axis]) continue;  // cannot be distinct
        OpCase c;
        c.op_type = "ScatterElements";
        c.label = absl::StrCat("ScatterElements_", kScatterReductionNames[r], "_",
                               TypeLabel(dtype), "_", DimsLabel(s.data), "_",
                               DimsLabel(s.indices), "_axis", s.axis);
        TensorSpec indices =
            Spec(DType::kInt64, s.indices, reduces ? Fill::kIndices : Fill::kDistinctAlongAxis);
        indices.index_bound = s.data[s.axis];
        indices.distinct_axis = s.axis;
        c.inputs = {Spec(dtype, s.data, ScatterFill(dtype)), indices,
                    Spec(dtype, s.indices, ScatterFill(dtype))};
        c.outputs = {Spec(dtype, s.data)};
        c.attributes["axis"] = s.axis;
        c.attributes["reduction"] = r;
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

// OneHot at each axis, with and without negative indices wrapping; indices
// in [-7, 7) for depth 5, so some fall outside on both sides.
std::vector<OpCase> OneHotCases() {
  constexpr int64_t kDepth = 5;
  const Dims index_dims = {3, 4};
  std::vector<OpCase> cases;
  for (DType dtype : kMovedTypes) {
    for (int64_t axis : {0, 1, 2}) {
      for (int64_t wrap : {0, 1}) {
        Dims out = index_dims;
        out.insert(out.begin() + axis, kDepth);
        OpCase c;
        c.op_type = "OneHot";
        c.label = absl::StrCat("OneHot_", TypeLabel(dtype), "_axis", axis, "_wrap", wrap);
        TensorSpec indices = Spec(DType::kInt64, index_dims, Fill::kIndices);
        indices.index_bound = kDepth + 2;
        c.inputs = {indices, Spec(dtype, {2})};
        c.outputs = {Spec(dtype, out)};
        c.attributes["axis"] = axis;
        c.attributes["wrap_negative"] = wrap;
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

// TopK on both kernels: lines that sort in shared memory (up to 2048) and
// longer ones that select, on the last and a middle axis, largest and
// smallest, with many ties (Note [TopK order]: the same values and indices).
std::vector<OpCase> TopKCases() {
  const struct {
    Dims dims;
    int64_t axis;
    int64_t k;
  } topks[] = {
      {{3, 7}, 1, 3},      {{4, 5, 3}, 1, 5},   {{6, 2}, 0, 1},
      {{2, 2048}, 1, 100}, {{2, 3000}, 1, 10}, {{2, 2500, 3}, 1, 4},
  };
  std::vector<OpCase> cases;
  for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kFloat16, DType::kBFloat16,
                      DType::kInt8, DType::kUInt8, DType::kFloat64}) {
    for (const auto& t : topks) {
      for (int64_t largest : {0, 1}) {
        Dims out = t.dims;
        out[t.axis] = t.k;
        OpCase c;
        c.op_type = "TopK";
        c.label = absl::StrCat("TopK_", TypeLabel(dtype), "_", DimsLabel(t.dims), "_axis",
                               t.axis, "_k", t.k, largest ? "_largest" : "_smallest");
        c.inputs = {Spec(dtype, t.dims, ScatterFill(dtype))};
        c.outputs = {Spec(dtype, out), Spec(DType::kInt64, out)};
        c.attributes["axis"] = t.axis;
        c.attributes["largest"] = largest;
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

// GridSample (Note [GridSample coordinates] in runtime/ops/grid_sample.cc):
// every interpolation, padding and align_corners on float32 images, the
// other float types, a float16 grid, volumetric images, and RT-DETR's
// deformable-attention shape. Grid values lie in [-2, 2], so about half the
// points fall outside the image and pad.
std::vector<OpCase> GridSampleCases() {
  struct Sample {
    DType dtype;
    DType grid_dtype;
    Dims x;
    Dims grid;
    GridInterpolation interpolation;
    GridPadding padding;
    bool align_corners;
  };
  std::vector<Sample> samples;
  for (GridInterpolation interpolation :
       {GridInterpolation::kNearest, GridInterpolation::kLinear, GridInterpolation::kCubic}) {
    for (GridPadding padding :
         {GridPadding::kZeros, GridPadding::kBorder, GridPadding::kReflection}) {
      for (bool align : {false, true}) {
        samples.push_back({DType::kFloat32, DType::kFloat32, {2, 3, 5, 7}, {2, 4, 6, 2},
                           interpolation, padding, align});
      }
      samples.push_back({DType::kFloat32, DType::kFloat32, {1, 2, 3, 4, 5}, {1, 2, 3, 4, 3},
                         interpolation, padding, false});
    }
  }
  for (DType dtype : {DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
    samples.push_back({dtype, dtype, {2, 3, 5, 7}, {2, 4, 6, 2}, GridInterpolation::kLinear,
                       GridPadding::kZeros, false});
    samples.push_back({dtype, dtype, {2, 3, 5, 7}, {2, 4, 6, 2}, GridInterpolation::kCubic,
                       GridPadding::kReflection, true});
  }
  samples.push_back({DType::kFloat32, DType::kFloat16, {2, 3, 5, 7}, {2, 4, 6, 2},
                     GridInterpolation::kLinear, GridPadding::kBorder, false});
  samples.push_back({DType::kFloat32, DType::kFloat32, {8, 32, 20, 20}, {8, 300, 4, 2},
                     GridInterpolation::kLinear, GridPadding::kZeros, false});
  static constexpr const char* kInterpolations[] = {"nearest", "linear", "cubic"};
  static constexpr const char* kPaddings[] = {"zeros", "border", "reflection"};
  std::vector<OpCase> cases;
  for (const Sample& g : samples) {
    OpCase c;
    c.op_type = "GridSample";
    c.label = absl::StrCat("GridSample_", TypeLabel(g.dtype), "_grid", TypeLabel(g.grid_dtype),
                           "_", DimsLabel(g.x), "_", DimsLabel(g.grid), "_",
                           kInterpolations[static_cast<int>(g.interpolation)], "_",
                           kPaddings[static_cast<int>(g.padding)], g.align_corners ? "_align" : "");
    c.inputs = {Spec(g.dtype, g.x), Spec(g.grid_dtype, g.grid)};
    Dims out = {g.x[0], g.x[1]};
    out.insert(out.end(), g.grid.begin() + 1, g.grid.end() - 1);
    c.outputs = {Spec(g.dtype, out)};
    c.attributes["interpolation"] = static_cast<int64_t>(g.interpolation);
    c.attributes["padding"] = static_cast<int64_t>(g.padding);
    c.attributes["align_corners"] = static_cast<int64_t>(g.align_corners);
    c.computed = true;
    c.magnitude = 4;  // a sum of up to 64 weighted pixels of |x| <= 2
    cases.push_back(std::move(c));
  }
  return cases;
}

// GridSample's special-value sweep: NaN and the infinities as pixels and
// as coordinates, where Note [GridSample coordinates] defines them. Not
// reflection: a coordinate of 1e30 reflects to wherever float rounding
// leaves it, differently in float and double.
std::vector<OpCase> GridSampleSpecialCases() {
  std::vector<OpCase> cases;
  for (const OpCase& c : GridSampleCases()) {
    if (c.inputs[0].dtype == DType::kFloat32 && c.inputs[1].dtype == DType::kFloat32 &&
        IntAttr(c.attributes, "padding") != static_cast<int64_t>(GridPadding::kReflection)) {
      cases.push_back(c);
    }
  }
  return cases;
}

// The cases of `cases` whose data is float32 (the scatters' and TopK's
// special-value sweep; their indices stay as they are).
std::vector<OpCase> Float32DataCases(const std::vector<OpCase>& cases) {
  std::vector<OpCase> floats;
  for (const OpCase& c : cases) {
    if (c.inputs[0].dtype == DType::kFloat32) floats.push_back(c);
  }
  return floats;
}

INSTANTIATE_TEST_SUITE_P(Tile, OpKernelTest, ::testing::ValuesIn(TileCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Trilu, OpKernelTest, ::testing::ValuesIn(TriluCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(ScatterND, OpKernelTest, ::testing::ValuesIn(ScatterNDCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(ScatterElements, OpKernelTest,
                         ::testing::ValuesIn(ScatterElementsCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(OneHot, OpKernelTest, ::testing::ValuesIn(OneHotCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(TopK, OpKernelTest, ::testing::ValuesIn(TopKCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(GridSample, OpKernelTest, ::testing::ValuesIn(GridSampleCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(GridSample, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(GridSampleSpecialCases()), CaseName);

// The cases whose inputs are all float32, Cast aside (its own special values
// are in CastSpecialCases): the special-value sweep. Their outputs are
// float32, bool for the comparisons and IsNaN / IsInf, or int64 for ArgMax
// and ArgMin, where NaN and the infinities matter most.
std::vector<OpCase> FloatCases(const std::vector<OpCase>& cases) {
  std::vector<OpCase> floats;
  for (const OpCase& c : cases) {
    bool all_float = c.op_type != "Cast";
    for (const TensorSpec& spec : c.inputs) all_float &= spec.dtype == DType::kFloat32;
    for (const TensorSpec& spec : c.outputs) {
      all_float &= spec.dtype == DType::kFloat32 || spec.dtype == DType::kBool ||
                   spec.dtype == DType::kInt64;  // ArgMax's and ArgMin's indices
    }
    if (all_float) floats.push_back(c);
  }
  return floats;
}

// float32 with NaN, the infinities and +-1e30 cast to every type: both
// sides saturate alike (NaN to 0), so the results match exactly.
std::vector<OpCase> CastSpecialCases() {
  std::vector<OpCase> cases;
  for (DType to : kAllDTypes) {
    OpCase c;
    c.op_type = "Cast";
    c.label = absl::StrCat("Cast_special_float32_to_", TypeLabel(to));
    c.inputs = {Spec(DType::kFloat32, {3, 37}, Fill::kSigned)};
    c.outputs = {Spec(to, {3, 37})};
    c.attributes["to"] = static_cast<int64_t>(to);
    cases.push_back(std::move(c));
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cast, OpKernelSpecialValuesTest, ::testing::ValuesIn(CastSpecialCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(Binary, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(BinaryCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(Where, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(WhereCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(Unary, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(UnaryCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(Transpose, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(TransposeCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(Slice, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(SliceCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(Expand, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(ExpandCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(Softmax, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(SoftmaxCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(LayerNorm, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(LayerNormCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(RmsNorm, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(RmsNormCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(Rotary, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(RotaryCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(GroupNorm, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(GroupNormCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(Hardmax, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(HardmaxCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(Reduce, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(ReduceCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(ArgReduce, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(ArgReduceCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(FloatMath, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(FloatMathCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(PRelu, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(PReluCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(Concat, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(ConcatCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(Tile, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(TileCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(Trilu, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(FloatCases(TriluCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(ScatterND, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(Float32DataCases(ScatterNDCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(ScatterElements, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(Float32DataCases(ScatterElementsCases())), CaseName);
INSTANTIATE_TEST_SUITE_P(TopK, OpKernelSpecialValuesTest,
                         ::testing::ValuesIn(Float32DataCases(TopKCases())), CaseName);

// ------------------------------------------------- capture into a CUDA graph

TEST_F(OpKernelTest, EnqueueIsCapturableAndReplays) {
  OpCase c;
  c.op_type = "Add";
  c.label = "Add_row_bias";
  c.inputs = {Spec(DType::kFloat32, {4, 33}), Spec(DType::kFloat32, {33})};
  c.outputs = {Spec(DType::kFloat32, {4, 33})};
  const SingleNodeGraph g = MakeGraph(c);
  absl::StatusOr<std::unique_ptr<CudaOpKernel>> kernel = MakeCudaKernel({g.graph, g.node()});
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<CudaStream> stream = CudaStream::Create();  // non-blocking
  ASSERT_TRUE(stream.ok()) << stream.status();

  std::mt19937 rng(7);
  std::vector<HostTensor> inputs = {MakeInput(c.inputs[0], rng), MakeInput(c.inputs[1], rng)};
  std::vector<std::unique_ptr<HostTensor>> want = MakeOutputs(c);
  std::vector<std::unique_ptr<HostTensor>> got = MakeOutputs(c);
  ASSERT_TRUE(
      RunHostNode(g.node(), {&inputs[0], &inputs[1]}, Pointers<HostTensor>(want)).ok());

  // Capture only the kernel; uploads, poisoning and downloads run eagerly
  // around the replay.
  const absl::Status run = RunOnDevice(
      inputs, got, stream->get(),
      [&](absl::Span<const void* const> in, absl::Span<void* const> out) -> absl::Status {
        CUDA_RETURN_IF_ERROR(
            cudaStreamBeginCapture(stream->get(), cudaStreamCaptureModeThreadLocal));
        const absl::Status enqueued = (*kernel)->Enqueue(in, out, stream->get());
        cudaGraph_t raw_graph = nullptr;
        const cudaError_t ended = cudaStreamEndCapture(stream->get(), &raw_graph);
        CudaGraph graph(raw_graph);
        RETURN_IF_ERROR(enqueued);
        CUDA_RETURN_IF_ERROR(ended);
        size_t num_nodes = 0;
        CUDA_RETURN_IF_ERROR(cudaGraphGetNodes(graph.get(), nullptr, &num_nodes));
        if (num_nodes != 1) {
          return absl::InternalError(absl::StrCat("captured ", num_nodes, " nodes, expected 1"));
        }
        cudaGraphExec_t raw_exec = nullptr;
        CUDA_RETURN_IF_ERROR(cudaGraphInstantiate(&raw_exec, graph.get(), 0));
        CudaGraphExec exec(raw_exec);
        // Nothing ran during capture: the output still holds the poison.
        std::vector<float> before(33 * 4);
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(before.data(), out[0], before.size() * sizeof(float),
                                             cudaMemcpyDeviceToHost, stream->get()));
        CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream->get()));
        for (float x : before) {
          if (!std::isnan(x)) return absl::InternalError("the kernel ran during capture");
        }
        // Replay twice: a graph is reusable.
        CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec.get(), stream->get()));
        CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec.get(), stream->get()));
        CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream->get()));
        return absl::OkStatus();
      });
  ASSERT_TRUE(run.ok()) << run;
  ExpectMatches(*got[0], *want[0], "replayed Add");
}

// ------------------------------------------ plan-time checks (no GPU needed)

// The host kernel refuses an int64 divisor of 0 (so the comparison above
// never draws one); the device, which cannot report it, writes 0.
TEST_F(OpKernelTest, Int64ModByZeroWritesZero) {
  constexpr int64_t kLowest = std::numeric_limits<int64_t>::min();  // kLowest % -1 overflows
  const std::vector<int64_t> dividends = {7, -7, kLowest, kLowest};
  const std::vector<int64_t> divisors = {0, 0, 0, -1};
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok()) << stream.status();
  for (int64_t fmod : {0, 1}) {
    OpCase c;
    c.op_type = "Mod";
    c.label = absl::StrCat("Mod_fmod", fmod, "_by_zero");
    c.attributes["fmod"] = fmod;
    c.inputs = {Spec(DType::kInt64, {4}), Spec(DType::kInt64, {4})};
    c.outputs = {Spec(DType::kInt64, {4})};
    const SingleNodeGraph g = MakeGraph(c);
    absl::StatusOr<std::unique_ptr<CudaOpKernel>> kernel = MakeCudaKernel({g.graph, g.node()});
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    std::vector<HostTensor> inputs = {HostTensor(DType::kInt64, {4}),
                                      HostTensor(DType::kInt64, {4})};
    std::copy(dividends.begin(), dividends.end(), inputs[0].data<int64_t>());
    std::copy(divisors.begin(), divisors.end(), inputs[1].data<int64_t>());
    std::vector<std::unique_ptr<HostTensor>> got = MakeOutputs(c);
    const absl::Status run = RunOnDevice(
        inputs, got, stream->get(),
        [&](absl::Span<const void* const> in, absl::Span<void* const> out) {
          return (*kernel)->Enqueue(in, out, stream->get());
        });
    ASSERT_TRUE(run.ok()) << run;
    const int64_t* result = got[0]->data<int64_t>();
    EXPECT_EQ(std::vector<int64_t>(result, result + 4), (std::vector<int64_t>{0, 0, 0, 0}))
        << c.label;
  }
}

BoundGraph GraphFor(const OpCase& c) { return MakeGraph(c).graph; }

TEST(OpKernelPlanTest, RefusesRanksBeyondEight) {
  OpCase c;
  c.op_type = "Relu";
  const Dims nine_dims(9, 2);
  c.inputs = {Spec(DType::kFloat32, nine_dims)};
  c.outputs = {Spec(DType::kFloat32, nine_dims)};
  const BoundGraph graph = GraphFor(c);
  const absl::Status status = MakeCudaKernel({graph, graph.nodes[0]}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << status;
  EXPECT_NE(status.message().find("node_under_test"), absl::string_view::npos) << status;
}

TEST(OpKernelPlanTest, RefusesShapesThatDoNotBroadcast) {
  OpCase c;
  c.op_type = "Add";
  c.inputs = {Spec(DType::kFloat32, {4, 3}), Spec(DType::kFloat32, {4})};
  c.outputs = {Spec(DType::kFloat32, {4, 4})};
  const BoundGraph graph = GraphFor(c);
  EXPECT_EQ(MakeCudaKernel({graph, graph.nodes[0]}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OpKernelPlanTest, RefusesDTypesWithoutKernels) {
  OpCase c;
  c.op_type = "Softmax";
  c.inputs = {Spec(DType::kFloat64, {4})};
  c.outputs = {Spec(DType::kFloat64, {4})};
  c.attributes = {{"outer", int64_t{1}}, {"axis_size", int64_t{4}}, {"inner", int64_t{1}}};
  const BoundGraph graph = GraphFor(c);
  const absl::Status status = MakeCudaKernel({graph, graph.nodes[0]}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  // The registry names the node, the dtype and the dtypes it has kernels for.
  EXPECT_NE(status.message().find("node_under_test"), absl::string_view::npos) << status;
  EXPECT_NE(status.message().find(
                "no CUDA kernel for float64 (there are for float32, float16, bfloat16)"),
            absl::string_view::npos)
      << status;
}

TEST(OpKernelPlanTest, RefusesSlicesThatLeaveTheInput) {
  OpCase c;
  c.op_type = "Slice";
  c.inputs = {Spec(DType::kFloat32, {10})};
  c.outputs = {Spec(DType::kFloat32, {5})};
  c.attributes["starts"] = std::vector<int64_t>{2};
  c.attributes["steps"] = std::vector<int64_t>{2};  // reads 2, 4, ..., 10: one past the end
  const BoundGraph graph = GraphFor(c);
  EXPECT_EQ(MakeCudaKernel({graph, graph.nodes[0]}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The cases of every op, for the checks that need no GPU.
std::vector<OpCase> AllCases() {
  std::vector<OpCase> all;
  for (std::vector<OpCase> cases :
       {BinaryCases(), WhereCases(), UnaryCases(), CastCases(), TransposeCases(), SliceCases(),
        ExpandCases(), GatherCases(), SoftmaxCases(), LayerNormCases(), RmsNormCases(),
        GroupNormCases(), HardmaxCases(), ReduceCases(), ArgReduceCases(), FloatMathCases(),
        PReluCases(), ConcatCases(), RotaryCases(), GridSampleCases()}) {
    all.insert(all.end(), cases.begin(), cases.end());
  }
  return all;
}

TEST(OpKernelPlanTest, PlansEveryCaseWithoutTouchingTheDevice) {
  // The factory only computes parameters: every op plans on a machine with
  // no GPU (the device comparison above skips there).
  for (const OpCase& c : AllCases()) {
    const BoundGraph graph = GraphFor(c);
    EXPECT_TRUE(MakeCudaKernel({graph, graph.nodes[0]}).ok())
        << c.label << ": " << MakeCudaKernel({graph, graph.nodes[0]}).status();
  }
}

// The other half of each comparison, checked where there is no GPU: the
// host reference takes every case as it is written.
TEST(OpKernelPlanTest, HostReferenceRunsEveryCase) {
  for (const OpCase& c : AllCases()) {
    std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.label)));
    std::vector<HostTensor> inputs;
    std::vector<const HostTensor*> input_ptrs;
    for (const TensorSpec& spec : c.inputs) inputs.push_back(MakeInput(spec, rng));
    for (const HostTensor& in : inputs) input_ptrs.push_back(&in);
    std::vector<std::unique_ptr<HostTensor>> outputs = MakeOutputs(c);
    const SingleNodeGraph g = MakeGraph(c);
    const absl::Status status = RunHostNode(g.node(), input_ptrs, Pointers<HostTensor>(outputs));
    EXPECT_TRUE(status.ok()) << c.label << ": " << status;
  }
}

TEST(OpKernelPlanTest, EnqueueChecksArityBeforeLaunching) {
  OpCase c;
  c.op_type = "Add";
  c.inputs = {Spec(DType::kFloat32, {4}), Spec(DType::kFloat32, {4})};
  c.outputs = {Spec(DType::kFloat32, {4})};
  const BoundGraph graph = GraphFor(c);
  absl::StatusOr<std::unique_ptr<CudaOpKernel>> kernel = MakeCudaKernel({graph, graph.nodes[0]});
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const void* one_input[] = {nullptr};
  void* one_output[] = {nullptr};
  EXPECT_EQ((*kernel)->Enqueue(one_input, one_output, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace graphserve
