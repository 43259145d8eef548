// Einsum: binding's lowering (Note [Einsum lowering]) run by the host
// executor against a direct evaluation of the equation (every assignment of
// the labels summed in double), the nodes it emits, and refusals.

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/bind.h"
#include "runtime/host/host_executor.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

HostTensor RandomInput(const Dims& dims, uint32_t seed) {
  HostTensor x(DType::kFloat32, dims);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = uniform(rng);
  return x;
}

Model EinsumModel(const std::string& equation, const std::vector<Dims>& dims) {
  Model model;
  model.name = "einsum";
  model.opset = 12;
  Node node{"n", "Einsum", {}, {"y"}, {{"equation", equation}}};
  for (size_t i = 0; i < dims.size(); ++i) {
    const std::string name = "x" + std::to_string(i);
    model.inputs.push_back({name, DType::kFloat32, dims[i]});
    node.inputs.push_back(name);
  }
  model.outputs = {{"y", DType::kFloat32, {}}};
  model.nodes = {std::move(node)};
  return model;
}

// The equation's explicit form, evaluated directly: the output element at
// each assignment of the output labels is the sum over every assignment of
// the other labels of the operands' product. Labels are letters; "..." is
// written out by each case as letters of its own.
HostTensor DirectEinsum(const std::string& lhs, const std::string& out_labels,
                        const std::vector<HostTensor>& xs) {
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::map<char, int64_t> size;
  for (size_t i = 0; i < terms.size(); ++i) {
    for (size_t d = 0; d < terms[i].size(); ++d) {
      size[terms[i][d]] = std::max(size[terms[i][d]], xs[i].dims()[d]);
    }
  }
  std::string all;
  for (const auto& [label, unused] : size) all += label;
  Dims out_dims;
  for (char label : out_labels) out_dims.push_back(size[label]);
  std::vector<double> sums(static_cast<size_t>(NumElements(out_dims)), 0.0);
  std::map<char, int64_t> at;
  for (char label : all) at[label] = 0;
  while (true) {
    double product = 1;
    for (size_t i = 0; i < terms.size(); ++i) {
      int64_t offset = 0;
      for (size_t d = 0; d < terms[i].size(); ++d) {
        const int64_t dim = xs[i].dims()[d];
        offset = offset * dim + (dim == 1 ? 0 : at[terms[i][d]]);  // broadcast dims of 1
      }
      product *= xs[i].data<float>()[offset];
    }
    int64_t out_offset = 0;
    for (size_t d = 0; d < out_labels.size(); ++d) {
      out_offset = out_offset * out_dims[d] + at[out_labels[d]];
    }
    sums[static_cast<size_t>(out_offset)] += product;
    size_t k = all.size();
    while (k > 0 && ++at[all[k - 1]] == size[all[k - 1]]) at[all[--k]] = 0;
    if (k == 0) break;
  }
  HostTensor y(DType::kFloat32, out_dims);
  for (size_t i = 0; i < sums.size(); ++i) y.data<float>()[i] = static_cast<float>(sums[i]);
  return y;
}

absl::StatusOr<BoundGraph> Bind(const Model& model) {
  BindOptions options;
  options.batch_size = 1;
  return BindModel(model, options);
}

struct EinsumCase {
  std::string equation;  // as the model gives it
  std::vector<Dims> dims;
  // The same contraction with the ellipsis spelt as letters and the output
  // written out, for DirectEinsum.
  std::string direct_lhs;
  std::string direct_output;
  // The op types binding emits, in order.
  std::vector<std::string> ops;
};

class EinsumBindTest : public testing::TestWithParam<EinsumCase> {};

TEST_P(EinsumBindTest, HostExecutorComputesTheEquation) {
  const EinsumCase& c = GetParam();
  const Model model = EinsumModel(c.equation, c.dims);
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<std::string> ops;
  for (const BoundNode& node : graph->nodes) ops.push_back(node.op_type);
  EXPECT_EQ(ops, c.ops);
  std::vector<HostTensor> xs;
  for (size_t i = 0; i < c.dims.size(); ++i) xs.push_back(RandomInput(c.dims[i], 11 + i));
  const HostTensor want = DirectEinsum(c.direct_lhs, c.direct_output, xs);
  absl::StatusOr<std::unique_ptr<HostExecutor>> executor = HostExecutor::Create(*graph);
  ASSERT_TRUE(executor.ok()) << executor.status();
  absl::StatusOr<std::vector<HostTensor>> got = (*executor)->Run(xs);
  ASSERT_TRUE(got.ok()) << got.status();
  const HostTensor& y = (*got)[0];
  ASSERT_EQ(y.dims(), want.dims());
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    EXPECT_NEAR(y.data<float>()[i], want.data<float>()[i], 1e-5) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Equations, EinsumBindTest,
    testing::Values(
        // A batched matmul is one MatMul: no view or transpose changes anything.
        EinsumCase{"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, "bij,bjk", "bik", {"MatMul"}},
        // Attention scores: B is transposed to [b, h, d, j].
        EinsumCase{"bhid,bhjd->bhij",
                   {{2, 3, 4, 5}, {2, 3, 6, 5}},
                   "bhid,bhjd",
                   "bhij",
                   {"Transpose", "MatMul"}},
        // Ellipsis dims broadcast in MatMul: A's [2, 1] against B's [1, 3].
        EinsumCase{
            "...ij,...jk->...ik", {{2, 1, 2, 3}, {1, 3, 3, 4}}, "xyij,xyjk", "xyik", {"MatMul"}},
        // A's wider ellipsis: its extra dim joins M (A transposed to [y, x,
        // i, j] and back).
        EinsumCase{"...ij,...jk->...ik",
                   {{2, 1, 2, 3}, {3, 3, 4}},
                   "xyij,yjk",
                   "xyik",
                   {"Transpose", "Reshape", "MatMul", "Reshape", "Transpose"}},
        EinsumCase{"ij->ji", {{3, 4}}, "ij", "ji", {"Transpose"}},
        EinsumCase{"ij->i", {{3, 4}}, "ij", "i", {"ReduceSum"}},
        EinsumCase{"i,j->ij", {{3}, {4}}, "i,j", "ij", {"Reshape", "Reshape", "MatMul"}},
        // The implicit output: labels that occur once, in order.
        EinsumCase{"ij,jk", {{2, 3}, {3, 4}}, "ij,jk", "ik", {"MatMul"}},
        EinsumCase{"i,i", {{5}, {5}}, "i,i", "", {"Reshape", "Reshape", "MatMul", "Reshape"}},
        EinsumCase{"ii->i", {{4, 4}}, "ii", "i", {"Reshape", "Slice"}},
        EinsumCase{"bii->b", {{2, 3, 3}}, "bii", "b", {"Reshape", "Slice", "ReduceSum"}},
        // Three operands, contracted left to right.
        EinsumCase{
            "ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}, "ij,jk,kl", "il", {"MatMul", "MatMul"}},
        // A label only one side has and the output drops is summed first.
        EinsumCase{"ij,jk->k",
                   {{2, 3}, {3, 4}},
                   "ij,jk",
                   "k",
                   {"ReduceSum", "Reshape", "MatMul", "Reshape"}}),
    [](const testing::TestParamInfo<EinsumCase>& info) {
      return "case" + std::to_string(info.index);
    });

TEST(EinsumRefusalTest, NamesTheNode) {
  struct Refusal {
    std::string equation;
    std::vector<Dims> dims;
    std::string says;
  };
  const std::vector<Refusal> refusals = {
      {"ij,jk->ik", {{2, 3}, {4, 5}}, "a label has sizes"},
      {"ij->ik", {{2, 3}}, "names one no input has"},
      {"ij,jk->ik", {{2, 3}}, "has 2 terms for 1 inputs"},
      {"ijk->i", {{2, 3}}, "does not fit input 0"},
      {"i1->i", {{2, 3}}, "has '1'"},
  };
  for (const Refusal& refusal : refusals) {
    absl::StatusOr<BoundGraph> graph = Bind(EinsumModel(refusal.equation, refusal.dims));
    ASSERT_FALSE(graph.ok()) << refusal.equation;
    EXPECT_THAT(graph.status().message(), HasSubstr("node 'n' (Einsum)"));
    EXPECT_THAT(graph.status().message(), HasSubstr(refusal.says));
  }
}

}  // namespace
}  // namespace graphserve
