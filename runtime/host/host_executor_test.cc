#include "runtime/host/host_executor.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace graphserve {
namespace {

HostTensor Floats(Dims dims, const std::vector<float>& values) {
  HostTensor t(DType::kFloat32, std::move(dims));
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

std::vector<float> Values(const HostTensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.num_elements());
}

// y = Relu(x @ W + b) with x [2,3] (batch 2), W [3,2], b [2].
constexpr ValueId kX = 0, kW = 1, kB = 2, kXW = 3, kSum = 4, kY = 5;

BoundGraph MatMulAddRelu() {
  BoundGraph graph;
  graph.batch_size = 2;
  graph.values.resize(6);
  graph.values[kX] = {"x", DType::kFloat32, {2, 3}, nullptr};
  graph.values[kW] = {"W",
                      DType::kFloat32,
                      {3, 2},
                      std::make_shared<const HostTensor>(Floats({3, 2}, {1, -1, 2, 0, -3, 1}))};
  graph.values[kB] = {
      "b", DType::kFloat32, {2}, std::make_shared<const HostTensor>(Floats({2}, {0.5f, -2}))};
  graph.values[kXW] = {"xw", DType::kFloat32, {2, 2}, nullptr};
  graph.values[kSum] = {"sum", DType::kFloat32, {2, 2}, nullptr};
  graph.values[kY] = {"y", DType::kFloat32, {2, 2}, nullptr};
  graph.nodes.push_back({"matmul", "MatMul", {kX, kW}, {kXW}, {}});
  graph.nodes.push_back({"add", "Add", {kXW, kB}, {kSum}, {}});
  graph.nodes.push_back({"relu", "Relu", {kSum}, {kY}, {}});
  graph.inputs = {kX};
  graph.outputs = {kY};
  return graph;
}

// x rows [1,2,3] and [0,1,-1]:
//   xW = [1+4-9, -1+0+3] = [-4, 2];  [0+2+3, 0+0-1] = [5, -1]
//   + b = [-3.5, 0], [5.5, -3];  Relu -> [0, 0], [5.5, 0]
const std::vector<float> kInput = {1, 2, 3, 0, 1, -1};
const std::vector<float> kExpected = {0, 0, 5.5f, 0};

TEST(HostExecutorTest, RunsMatMulAddReluEndToEnd) {
  absl::StatusOr<std::unique_ptr<HostExecutor>> executor = HostExecutor::Create(MatMulAddRelu());
  ASSERT_TRUE(executor.ok()) << executor.status();
  std::vector<HostTensor> inputs;
  inputs.push_back(Floats({2, 3}, kInput));
  absl::StatusOr<std::vector<HostTensor>> outputs = (*executor)->Run(inputs);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), 1u);
  EXPECT_EQ((*outputs)[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(Values((*outputs)[0]), kExpected);
}

TEST(HostExecutorTest, WrongInputDimsAreRejectedNamingTheInput) {
  auto executor = HostExecutor::Create(MatMulAddRelu());
  ASSERT_TRUE(executor.ok()) << executor.status();
  std::vector<HostTensor> inputs;
  inputs.push_back(Floats({3, 2}, kInput));
  absl::StatusOr<std::vector<HostTensor>> outputs = (*executor)->Run(inputs);
  ASSERT_FALSE(outputs.ok());
  EXPECT_EQ(outputs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(outputs.status().message().find("'x'"), std::string::npos) << outputs.status();
}

TEST(HostExecutorTest, OutputsMayBeConstantsOrGraphInputs) {
  BoundGraph graph = MatMulAddRelu();
  graph.outputs = {kY, kB, kX};
  auto executor = HostExecutor::Create(std::move(graph));
  ASSERT_TRUE(executor.ok()) << executor.status();
  std::vector<HostTensor> inputs;
  inputs.push_back(Floats({2, 3}, kInput));
  absl::StatusOr<std::vector<HostTensor>> outputs = (*executor)->Run(inputs);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), 3u);
  EXPECT_EQ(Values((*outputs)[0]), kExpected);
  EXPECT_EQ(Values((*outputs)[1]), (std::vector<float>{0.5f, -2}));
  EXPECT_EQ(Values((*outputs)[2]), kInput);
}

TEST(HostExecutorTest, IntermediateOutputIsKeptWhileStillRead) {
  // `sum` is read by Relu (its last reader) and also returned.
  BoundGraph graph = MatMulAddRelu();
  graph.outputs = {kSum, kY};
  auto executor = HostExecutor::Create(std::move(graph));
  ASSERT_TRUE(executor.ok()) << executor.status();
  std::vector<HostTensor> inputs;
  inputs.push_back(Floats({2, 3}, kInput));
  auto outputs = (*executor)->Run(inputs);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  EXPECT_EQ(Values((*outputs)[0]), (std::vector<float>{-3.5f, 0, 5.5f, -3}));
  EXPECT_EQ(Values((*outputs)[1]), kExpected);
}

TEST(HostExecutorTest, KernelErrorsNameTheNode) {
  BoundGraph graph = MatMulAddRelu();
  graph.nodes[2].op_type = "NoSuchOp";
  auto executor = HostExecutor::Create(std::move(graph));
  ASSERT_TRUE(executor.ok()) << executor.status();
  std::vector<HostTensor> inputs;
  inputs.push_back(Floats({2, 3}, kInput));
  auto outputs = (*executor)->Run(inputs);
  ASSERT_FALSE(outputs.ok());
  EXPECT_NE(outputs.status().message().find("relu"), std::string::npos) << outputs.status();
}

TEST(HostExecutorTest, CreateRejectsNodesOutOfOrder) {
  BoundGraph graph = MatMulAddRelu();
  std::swap(graph.nodes[0], graph.nodes[1]);  // Add before the MatMul it reads
  auto executor = HostExecutor::Create(std::move(graph));
  ASSERT_FALSE(executor.ok());
  EXPECT_NE(executor.status().message().find("add"), std::string::npos) << executor.status();
}

TEST(HostExecutorTest, ConcurrentRunsAgree) {
  constexpr int kThreads = 8;  // enough to interleave on any CI machine
  auto executor = HostExecutor::Create(MatMulAddRelu());
  ASSERT_TRUE(executor.ok()) << executor.status();
  std::vector<std::vector<float>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<HostTensor> inputs;
      inputs.push_back(Floats({2, 3}, kInput));
      for (int repeat = 0; repeat < 100; ++repeat) {
        auto outputs = (*executor)->Run(inputs);
        if (outputs.ok()) results[t] = Values((*outputs)[0]);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::vector<float>& result : results) EXPECT_EQ(result, kExpected);
}

}  // namespace
}  // namespace graphserve
