#include "server/metrics.h"

#include <chrono>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planning/batch_sizes.h"
#include "planning/shape_grid.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, TritonNamesAndLabelsFromTheStatistics) {
  ModelMetrics mlp;
  mlp.statistics.set_name("mlp");
  mlp.statistics.set_version("1");
  mlp.statistics.set_inference_count(40);
  mlp.statistics.set_execution_count(7);
  inference::InferStatistics* stats = mlp.statistics.mutable_inference_stats();
  stats->mutable_success()->set_count(9);
  stats->mutable_success()->set_ns(4500000);
  stats->mutable_fail()->set_count(2);
  mlp.failures = {/*REJECTED*/ 1, /*CANCELED*/ 0, /*BACKEND*/ 0, /*OTHER*/ 1};
  stats->mutable_queue()->set_ns(12000);
  stats->mutable_compute_infer()->set_ns(3000000);
  mlp.load_seconds = 1.5;
  ModelMetrics dlrm;
  dlrm.statistics.set_name("dlrm_dense");
  dlrm.statistics.set_version("2");

  const std::string text = MetricsText({mlp, dlrm});
  EXPECT_THAT(text, HasSubstr("# TYPE nv_inference_request_success counter\n"));
  EXPECT_THAT(text, HasSubstr("nv_inference_request_success{model=\"mlp\",version=\"1\"} 9\n"));
  // Every one of Triton's reasons, zeros included.
  for (const auto& [reason, count] : {std::pair{"REJECTED", 1}, std::pair{"CANCELED", 0},
                                      std::pair{"BACKEND", 0}, std::pair{"OTHER", 1}}) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat("nv_inference_request_failure{model=\"mlp\",version="
                                             "\"1\",reason=\"",
                                             reason, "\"} ", count, "\n")));
  }
  EXPECT_THAT(text, HasSubstr("nv_inference_count{model=\"mlp\",version=\"1\"} 40\n"));
  EXPECT_THAT(text, HasSubstr("nv_inference_exec_count{model=\"mlp\",version=\"1\"} 7\n"));
  EXPECT_THAT(text,
              HasSubstr("nv_inference_request_duration_us{model=\"mlp\",version=\"1\"} 4500\n"));
  EXPECT_THAT(text, HasSubstr("nv_inference_queue_duration_us{model=\"mlp\",version=\"1\"} 12\n"));
  EXPECT_THAT(
      text,
      HasSubstr("nv_inference_compute_infer_duration_us{model=\"mlp\",version=\"1\"} 3000\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE nv_model_load_duration_secs gauge\n"));
  EXPECT_THAT(text, HasSubstr("nv_model_load_duration_secs{model=\"mlp\",version=\"1\"} 1.5\n"));
  EXPECT_THAT(text,
              HasSubstr("nv_inference_request_success{model=\"dlrm_dense\",version=\"2\"} 0\n"));
}

TEST(MetricsTest, PendingRequestsAndGpuGauges) {
  ModelMetrics mlp;
  mlp.statistics.set_name("mlp");
  mlp.statistics.set_version("1");
  mlp.pending_requests = 3;
  GpuReading gpu;
  gpu.uuid = "GPU-1234";
  gpu.utilization = 0.25;
  gpu.memory_total_bytes = 1000;
  gpu.memory_used_bytes = 600;
  gpu.power_watts = 312.5;
  gpu.power_limit_watts = 700;
  gpu.energy_joules = 1234.5;
  const std::string text = MetricsText({mlp}, {gpu});
  EXPECT_THAT(text, HasSubstr("# TYPE nv_inference_pending_request_count gauge\n"));
  EXPECT_THAT(text,
              HasSubstr("nv_inference_pending_request_count{model=\"mlp\",version=\"1\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("nv_gpu_utilization{gpu_uuid=\"GPU-1234\"} 0.25\n"));
  EXPECT_THAT(text, HasSubstr("nv_gpu_memory_total_bytes{gpu_uuid=\"GPU-1234\"} 1000\n"));
  EXPECT_THAT(text, HasSubstr("nv_gpu_memory_used_bytes{gpu_uuid=\"GPU-1234\"} 600\n"));
  EXPECT_THAT(text, HasSubstr("nv_gpu_power_usage{gpu_uuid=\"GPU-1234\"} 312.5\n"));
  EXPECT_THAT(text, HasSubstr("# HELP nv_gpu_power_limit GPU power management limit in watts\n"
                              "# TYPE nv_gpu_power_limit gauge\n"
                              "nv_gpu_power_limit{gpu_uuid=\"GPU-1234\"} 700\n"));
  // A counter in Triton, with no _total suffix.
  EXPECT_THAT(text, HasSubstr("# HELP nv_energy_consumption GPU energy consumption in joules "
                              "since the Triton Server started\n"
                              "# TYPE nv_energy_consumption counter\n"
                              "nv_energy_consumption{gpu_uuid=\"GPU-1234\"} 1234.5\n"));
  // Without NVML there are no GPU families at all.
  EXPECT_THAT(MetricsText({mlp}), ::testing::Not(HasSubstr("nv_gpu_")));
  EXPECT_THAT(MetricsText({mlp}), ::testing::Not(HasSubstr("nv_energy_consumption")));
}

TEST(MetricsTest, CpuGaugesAsTritonsWithoutLabels) {
  CpuReading cpu;
  cpu.utilization = 0.35;
  cpu.memory.total_bytes = 16000;
  cpu.memory.used_bytes = 4000;
  const std::string text = MetricsText({}, {}, cpu);
  EXPECT_THAT(text, HasSubstr("# HELP nv_cpu_utilization CPU utilization rate [0.0 - 1.0]\n"
                              "# TYPE nv_cpu_utilization gauge\n"
                              "nv_cpu_utilization 0.35\n"));
  EXPECT_THAT(text, HasSubstr("# HELP nv_cpu_memory_total_bytes CPU total memory (RAM), in bytes\n"
                              "# TYPE nv_cpu_memory_total_bytes gauge\n"
                              "nv_cpu_memory_total_bytes 16000\n"));
  EXPECT_THAT(text, HasSubstr("# HELP nv_cpu_memory_used_bytes CPU used memory (RAM), in bytes\n"
                              "# TYPE nv_cpu_memory_used_bytes gauge\n"
                              "nv_cpu_memory_used_bytes 4000\n"));
  // --allow-cpu-metrics=false (or no /proc): no CPU families.
  EXPECT_THAT(MetricsText({}), ::testing::Not(HasSubstr("nv_cpu_")));
}

// Note [Pinned memory pool]: the staging every loaded model holds, all of
// it in use.
TEST(MetricsTest, PinnedPoolIsTheStagingOfEveryModel) {
  ModelMetrics mlp;
  mlp.statistics.set_name("mlp");
  mlp.statistics.set_version("1");
  mlp.pinned_bytes = 3 << 20;
  ModelMetrics dlrm;
  dlrm.statistics.set_name("dlrm_dense");
  dlrm.statistics.set_version("2");
  dlrm.pinned_bytes = 1 << 20;
  const std::string text = MetricsText({mlp, dlrm});
  EXPECT_THAT(text, HasSubstr("# HELP nv_pinned_memory_pool_total_bytes Pinned memory pool total "
                              "memory size, in bytes\n"
                              "# TYPE nv_pinned_memory_pool_total_bytes gauge\n"
                              "nv_pinned_memory_pool_total_bytes 4194304\n"));
  EXPECT_THAT(text, HasSubstr("# HELP nv_pinned_memory_pool_used_bytes Pinned memory pool used "
                              "memory size, in bytes\n"
                              "# TYPE nv_pinned_memory_pool_used_bytes gauge\n"
                              "nv_pinned_memory_pool_used_bytes 4194304\n"));
  // No models (or only host ones): present, and 0, as Triton's empty pool.
  EXPECT_THAT(MetricsText({}), HasSubstr("nv_pinned_memory_pool_total_bytes 0\n"));
}

TEST(MetricsTest, NoModelsGiveFamiliesWithoutSamples) {
  const std::string text = MetricsText({});
  EXPECT_THAT(text, ::testing::Not(HasSubstr("{model=")));
}

TEST(MetricsTest, GraphServesOwnHistogramsAndCounters) {
  ModelCounters counters({1, 4}, /*max_batch_size=*/4, /*num_streams=*/2);
  for (int64_t rows : {1, 1, 3}) counters.RecordSuccess(rows, /*length=*/0, 2000 * rows, 0, {});
  counters.RecordChunk({.stream = 0, .batch_size = 1, .rows = 1}, {});
  counters.RecordChunk({.stream = 1, .batch_size = 1, .rows = 1}, {});
  counters.RecordChunk({.stream = 1, .batch_size = 4, .rows = 3}, {});
  ModelMetrics mlp;
  mlp.statistics.set_name("mlp");
  mlp.statistics.set_version("1");
  mlp.request_rows = counters.RequestRows();
  mlp.request_duration_us = counters.RequestDurationUs();
  mlp.padded_rows = counters.padded_rows();
  mlp.launches = counters.LaunchesPerKeyAndStream();

  const std::string text = MetricsText({mlp});
  EXPECT_THAT(text, HasSubstr("# TYPE graphserve_request_rows histogram\n"));
  EXPECT_THAT(
      text, HasSubstr("graphserve_request_rows_bucket{model=\"mlp\",version=\"1\",le=\"1\"} 2\n"));
  EXPECT_THAT(
      text, HasSubstr("graphserve_request_rows_bucket{model=\"mlp\",version=\"1\",le=\"3\"} 3\n"));
  EXPECT_THAT(
      text,
      HasSubstr("graphserve_request_rows_bucket{model=\"mlp\",version=\"1\",le=\"+Inf\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("graphserve_request_rows_count{model=\"mlp\",version=\"1\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("graphserve_request_rows_sum{model=\"mlp\",version=\"1\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE graphserve_request_duration_us histogram\n"));
  // 2, 2 and 6 us: all at most 50.
  EXPECT_THAT(
      text,
      HasSubstr(
          "graphserve_request_duration_us_bucket{model=\"mlp\",version=\"1\",le=\"50\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("graphserve_padded_rows_total{model=\"mlp\",version=\"1\"} 1\n"));
  // Every (size, stream), launched or not.
  for (const auto& [labels, count] : {std::pair{"batch_size=\"1\",stream=\"0\"", 1},
                                      std::pair{"batch_size=\"1\",stream=\"1\"", 1},
                                      std::pair{"batch_size=\"4\",stream=\"0\"", 0},
                                      std::pair{"batch_size=\"4\",stream=\"1\"", 1}}) {
    EXPECT_THAT(
        text, HasSubstr(absl::StrCat("graphserve_graph_launches_total{model=\"mlp\",version=\"1\",",
                                     labels, "} ", count, "\n")));
  }  // No shape dims: no bucket label, no padded positions.
  EXPECT_THAT(text, ::testing::Not(HasSubstr("bucket=")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("graphserve_padded_positions_total{")));
}

TEST(MetricsTest, ShapeBucketsLabelLaunchesAndCountPaddedPositions) {
  ModelCounters counters({2}, /*max_batch_size=*/2, /*num_streams=*/1, {{32}, {64}});
  counters.RecordChunk({.batch_size = 2, .rows = 2, .bucket = 1, .launched_positions = 128,
                        .real_positions = 40 + 64},
                       {});
  ModelMetrics bert;
  bert.statistics.set_name("bert");
  bert.statistics.set_version("1");
  bert.launches = counters.LaunchesPerKeyAndStream();
  bert.padded_positions = counters.padded_positions();
  const std::string text = MetricsText({bert});
  EXPECT_THAT(text, HasSubstr("graphserve_graph_launches_total{model=\"bert\",version=\"1\","
                              "batch_size=\"2\",bucket=\"64\",stream=\"0\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("graphserve_graph_launches_total{model=\"bert\",version=\"1\","
                              "batch_size=\"2\",bucket=\"32\",stream=\"0\"} 0\n"));
  EXPECT_THAT(text,
              HasSubstr("graphserve_padded_positions_total{model=\"bert\",version=\"1\"} 24\n"));
}

// Note [Live length histogram]: a model with one shape dim exports the
// lengths its requests brought, one without shape dims no samples.
TEST(MetricsTest, LengthHistogramOnlyForAModelWithOneShapeDim) {
  // Buckets 16 and 64 along a sequence: bounds every 8 up to 64.
  ModelCounters bert_counters({1, 4}, /*max_batch_size=*/4, /*num_streams=*/1, {{16}, {64}});
  for (int64_t length : {3, 16, 17, 40, 64}) bert_counters.RecordSuccess(1, length, 1, 0, {});
  ModelMetrics bert;
  bert.statistics.set_name("bert");
  bert.statistics.set_version("1");
  bert.request_rows = bert_counters.RequestRows();
  bert.request_length = bert_counters.RequestLength();
  ModelCounters mlp_counters({1, 4}, /*max_batch_size=*/4, /*num_streams=*/1);
  mlp_counters.RecordSuccess(2, /*length=*/0, 1, 0, {});
  ModelMetrics mlp;
  mlp.statistics.set_name("mlp");
  mlp.statistics.set_version("1");
  mlp.request_rows = mlp_counters.RequestRows();
  mlp.request_length = mlp_counters.RequestLength();

  const std::string text = MetricsText({bert, mlp});
  EXPECT_THAT(text, HasSubstr("# HELP graphserve_request_length Extent of each successful request "
                              "along the model's one shape dim (e.g. its sequence length)"));
  EXPECT_THAT(text, HasSubstr("# TYPE graphserve_request_length histogram\n"));
  for (const auto& [le, count] :
       {std::pair{"8", 1}, std::pair{"16", 2}, std::pair{"24", 3}, std::pair{"32", 3},
        std::pair{"40", 4}, std::pair{"56", 4}, std::pair{"64", 5}, std::pair{"+Inf", 5}}) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat(
                          "graphserve_request_length_bucket{model=\"bert\",version=\"1\",le=\"", le,
                          "\"} ", count, "\n")));
  }
  EXPECT_THAT(text, HasSubstr("graphserve_request_length_count{model=\"bert\",version=\"1\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("graphserve_request_length_sum{model=\"bert\",version=\"1\"} 140\n"));
  // Both models keep their rows; only bert its lengths.
  EXPECT_THAT(text, HasSubstr("graphserve_request_rows_count{model=\"mlp\",version=\"1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("graphserve_request_rows_count{model=\"bert\",version=\"1\"} 5\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("graphserve_request_length_count{model=\"mlp\"")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("graphserve_request_length_bucket{model=\"mlp\"")));
}

TEST(MetricsTest, SplitRequestsAndMergedExecutions) {
  ModelCounters counters({4}, /*max_batch_size=*/8, /*num_streams=*/1);
  // 6 rows split over two chunks, the second merged with a request of 2.
  counters.RecordChunk({.batch_size = 4, .rows = 4, .requests = 1}, {});
  counters.RecordChunk({.batch_size = 4, .rows = 4, .requests = 2}, {});
  counters.RecordSuccess(6, /*length=*/0, 1, 0, {}, /*split=*/true);
  counters.RecordSuccess(2, /*length=*/0, 1, 0, {}, /*split=*/false);
  ModelMetrics mlp;
  mlp.statistics.set_name("mlp");
  mlp.statistics.set_version("1");
  mlp.split_requests = counters.split_requests();
  mlp.merged_executions = counters.merged_executions();
  const std::string text = MetricsText({mlp});
  EXPECT_THAT(text, HasSubstr("# TYPE graphserve_split_requests_total counter\n"));
  EXPECT_THAT(text, HasSubstr("graphserve_split_requests_total{model=\"mlp\",version=\"1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE graphserve_merged_executions_total counter\n"));
  EXPECT_THAT(text,
              HasSubstr("graphserve_merged_executions_total{model=\"mlp\",version=\"1\"} 1\n"));
}

// The re-capture signal against hand-computed padding (Note [Re-capture
// signal]).
TEST(MetricsTest, ExpectedPaddedRowsOfCurrentAndOptimalSizes) {
  // Captured (2, 8), 4 requests: 1 row pads 1, 3 pads 5, 3 pads 5, 8 pads 0:
  // 11 rows over 4 requests. The best two sizes for this histogram are
  // (3, 8): 1 pads 2, the rest nothing: 2 / 4.
  ModelCounters counters({2, 8}, /*max_batch_size=*/8, /*num_streams=*/1);
  for (int64_t rows : {1, 3, 3, 8}) counters.RecordSuccess(rows, /*length=*/0, 1, 0, {});
  absl::StatusOr<PaddingSignal> signal = ExpectedPaddedRowsSignal(
      counters.RequestRows(), counters.batch_sizes(), counters.max_batch_size());
  ASSERT_TRUE(signal.ok()) << signal.status();
  EXPECT_DOUBLE_EQ(signal->current, 11.0 / 4);
  EXPECT_DOUBLE_EQ(signal->optimal, 2.0 / 4);

  ModelMetrics mlp;
  mlp.statistics.set_name("mlp");
  mlp.statistics.set_version("1");
  mlp.padding = *signal;
  const std::string text = MetricsText({mlp});
  EXPECT_THAT(text, HasSubstr("# TYPE graphserve_expected_padded_rows gauge\n"));
  EXPECT_THAT(text, HasSubstr("graphserve_expected_padded_rows{model=\"mlp\",version=\"1\","
                              "sizes=\"current\"} 2.75\n"));
  EXPECT_THAT(text, HasSubstr("graphserve_expected_padded_rows{model=\"mlp\",version=\"1\","
                              "sizes=\"optimal\"} 0.5\n"));
  // No signal, no samples.
  mlp.padding.reset();
  EXPECT_THAT(MetricsText({mlp}), ::testing::Not(HasSubstr("graphserve_expected_padded_rows{")));
}

// Note [Demand rows]: under dynamic batching the chunks' demand is exported
// beside the requests' rows, empty before any chunk.
TEST(MetricsTest, ChunkDemandRowsHistogram) {
  ModelCounters counters({1, 2}, /*max_batch_size=*/8, /*num_streams=*/1);
  ModelMetrics mlp;
  mlp.statistics.set_name("mlp");
  mlp.statistics.set_version("1");
  mlp.chunk_demand_rows = counters.ChunkDemandRows();
  EXPECT_THAT(MetricsText({mlp}),
              HasSubstr("graphserve_chunk_demand_rows_count{model=\"mlp\",version=\"1\"} 0\n"));
  for (int i = 0; i < 4; ++i) {
    counters.RecordChunk({.batch_size = 2, .rows = 2, .requests = 2, .demand_rows = 8}, {});
  }
  mlp.chunk_demand_rows = counters.ChunkDemandRows();
  const std::string text = MetricsText({mlp});
  EXPECT_THAT(text, HasSubstr("# TYPE graphserve_chunk_demand_rows histogram\n"));
  EXPECT_THAT(text, HasSubstr("graphserve_chunk_demand_rows_bucket{model=\"mlp\",version=\"1\","
                              "le=\"7\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("graphserve_chunk_demand_rows_bucket{model=\"mlp\",version=\"1\","
                              "le=\"8\"} 4\n"));
  EXPECT_THAT(text,
              HasSubstr("graphserve_chunk_demand_rows_sum{model=\"mlp\",version=\"1\"} 32\n"));
}

TEST(MetricsTest, ExpectedPaddedRowsBeforeAnyRequestAreZero) {
  ModelCounters counters({1, 4, 16}, /*max_batch_size=*/16, /*num_streams=*/1);
  absl::StatusOr<PaddingSignal> signal = ExpectedPaddedRowsSignal(
      counters.RequestRows(), counters.batch_sizes(), counters.max_batch_size());
  ASSERT_TRUE(signal.ok()) << signal.status();
  EXPECT_EQ(signal->current, 0.0);
  EXPECT_EQ(signal->optimal, 0.0);
}

// Above 64 rows the histogram's buckets are wider than a row; both gauges
// count a request at its bucket's upper bound, as select --from-metrics
// does, and they agree with ChooseBatchSizes on that histogram.
TEST(MetricsTest, ExpectedPaddedRowsReadWideBucketsAsSelectDoes) {
  constexpr int64_t kMaxBatch = 1000;  // buckets ..., 64, 128, 256, 512, 1000
  ModelCounters counters({1, 64, kMaxBatch}, kMaxBatch, /*num_streams=*/1);
  // 100 and 120 rows are counted at 128, 600 at 1000.
  for (int64_t rows : {1, 2, 100, 120, 600}) {
    counters.RecordSuccess(rows, /*length=*/0, 1, 0, {});
  }
  const BatchHistogram as_select_reads = {{1, 1}, {2, 1}, {128, 2}, {1000, 1}};
  absl::StatusOr<PaddingSignal> signal = ExpectedPaddedRowsSignal(
      counters.RequestRows(), counters.batch_sizes(), counters.max_batch_size());
  ASSERT_TRUE(signal.ok()) << signal.status();
  // Current: 2 pads 62, 128 pads 872 each (one launch of 1000): 1806 / 5.
  EXPECT_DOUBLE_EQ(signal->current, (62.0 + 2 * 872 + 0) / 5);
  EXPECT_DOUBLE_EQ(signal->current, ExpectedPaddedRows(as_select_reads, {1, 64, kMaxBatch}));
  absl::StatusOr<SizeChoice> best = ChooseBatchSizes(as_select_reads, 3, kMaxBatch);
  ASSERT_TRUE(best.ok());
  EXPECT_DOUBLE_EQ(signal->optimal, best->expected_padded_rows);
  // (2, 128, 1000): only the 1-row request pads, by 1.
  EXPECT_DOUBLE_EQ(signal->optimal, 1.0 / 5);
}

// The re-capture signal in positions for a model with one shape dim (Note
// [Re-capture signal]): current against the best grid of as many graphs,
// as select --from-metrics --max-graphs would choose.
TEST(MetricsTest, ExpectedPaddedPositionsOfCurrentAndOptimalGrids) {
  // Captured sizes (1, 4) x buckets (16, 64). Requests: 1 row of 8 x3 and
  // 4 rows of 64 x1: rows {1: 3, 4: 1}, lengths {8: 3, 64: 1}.
  ModelCounters counters({1, 4}, /*max_batch_size=*/4, /*num_streams=*/1, {{16}, {64}});
  for (int i = 0; i < 3; ++i) counters.RecordSuccess(1, /*length=*/8, 1, 0, {});
  counters.RecordSuccess(4, /*length=*/64, 1, 0, {});
  absl::StatusOr<PaddingSignal> signal =
      ExpectedPaddedPositionsSignal(counters.RequestRows(), *counters.RequestLength(),
                                    counters.batch_sizes(), {16, 64}, counters.max_batch_size());
  ASSERT_TRUE(signal.ok()) << signal.status();
  // Read as independent, from 4 requests: (1, 8) x2.25, (1, 64) x0.75,
  // (4, 8) x0.75, (4, 64) x0.25, each count rounded and at least 1: (1, 8)
  // x2, (1, 64) x1, (4, 8) x1, (4, 64) x1 (5 requests). Current: 8 runs in
  // 16 (8 padded positions a row): 2 x 8 + 0 + 4 x 8 + 0 = 48 / 5. Optimal,
  // 4 graphs: (1, 4) x (8, 64) pads nothing.
  const ShapeHistogram read = {{{1, 8}, 2}, {{1, 64}, 1}, {{4, 8}, 1}, {{4, 64}, 1}};
  EXPECT_DOUBLE_EQ(signal->current, ExpectedPaddedPositions(read, {1, 4}, {16, 64}));
  EXPECT_DOUBLE_EQ(signal->current, 48.0 / 5);
  EXPECT_DOUBLE_EQ(signal->optimal, 0.0);

  ModelMetrics bert;
  bert.statistics.set_name("bert");
  bert.statistics.set_version("1");
  bert.position_padding = *signal;
  const std::string text = MetricsText({bert});
  EXPECT_THAT(text, HasSubstr("# TYPE graphserve_expected_padded_positions gauge\n"));
  EXPECT_THAT(text, HasSubstr("graphserve_expected_padded_positions{model=\"bert\",version=\"1\","
                              "sizes=\"current\"} 9.6\n"));
  EXPECT_THAT(text, HasSubstr("graphserve_expected_padded_positions{model=\"bert\",version=\"1\","
                              "sizes=\"optimal\"} 0\n"));
  bert.position_padding.reset();
  EXPECT_THAT(MetricsText({bert}),
              ::testing::Not(HasSubstr("graphserve_expected_padded_positions{")));
}

// The planner runs at every scrape, on histograms as wide as the server
// makes them: every multiple of 8 to 512, every row count to 32, a budget
// of 24 graphs. The optimal grid never costs more than the current one;
// how long it took is recorded, not asserted (a unit test is no benchmark).
TEST(MetricsTest, ExpectedPaddedPositionsOnTheWidestHistograms) {
  std::vector<std::vector<int64_t>> buckets;
  for (int64_t extent : {64, 128, 256, 512}) buckets.push_back({extent});
  ModelCounters counters({1, 2, 4, 8, 16, 32}, /*max_batch_size=*/32, /*num_streams=*/1,
                         buckets);
  for (int64_t rows = 1; rows <= 32; ++rows) {
    for (int64_t length = 8; length <= 512; length += 8) {
      counters.RecordSuccess(rows, length, 1, 0, {});
    }
  }
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<PaddingSignal> signal = ExpectedPaddedPositionsSignal(
      counters.RequestRows(), *counters.RequestLength(), counters.batch_sizes(),
      {64, 128, 256, 512}, counters.max_batch_size());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(signal.ok()) << signal.status();
  EXPECT_GT(signal->current, 0.0);
  EXPECT_LE(signal->optimal, signal->current);
  RecordProperty("seconds", std::to_string(seconds));
}

}  // namespace
}  // namespace graphserve
