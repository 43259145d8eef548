#include "bench/runtime_bench_record.h"

#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace graphserve {
namespace {

using ::testing::HasSubstr;

TEST(RuntimeBenchRecordTest, JsonHasEveryFieldTheScriptReads) {
  RuntimeBenchRecord record{.model = "mlp",
                            .batch = 64,
                            .eager_full_us = 41.25,
                            .eager_compute_us = 30.5,
                            .fused_epilogues = 4,
                            .arena_bytes = 1 << 20,
                            .arena_lower_bound_bytes = 3 << 18};
  const std::string json = RuntimeBenchRecordsToJson({record, record});
  EXPECT_THAT(json, HasSubstr("{\"model\": \"mlp\", \"batch\": 64, \"eager_full_us\": 41.250, "
                              "\"eager_compute_us\": 30.500,"));
  EXPECT_THAT(json, HasSubstr("\"fused_epilogues\": 4, \"arena_bytes\": 1048576, "
                              "\"arena_lower_bound_bytes\": 786432,"));
  EXPECT_THAT(json, HasSubstr("\"graph_compute_us\": 0.000, \"graph_full_us\": 0.000,"));
  EXPECT_THAT(json, HasSubstr("\"capture_ms\": 0.000, \"graph_nodes\": 0}"));
  EXPECT_EQ(json.front(), '[');
  EXPECT_THAT(json, HasSubstr("},\n  {"));
}

// Errors keep their significant digits: three decimals would print a
// float32 model's 5.5e-07 against the reference as 0.000.
TEST(RuntimeBenchRecordTest, ErrorsKeepTheirSignificantDigits) {
  const RuntimeBenchRecord record{.graph_rel_err_vs_eager = 3.25e-8,
                                  .reference_rel_err = 5.50521e-7};
  const std::string json = RuntimeBenchRecordsToJson({record});
  EXPECT_THAT(json, HasSubstr("\"graph_rel_err_vs_eager\": 3.25e-08,"));
  EXPECT_THAT(json, HasSubstr("\"reference_rel_err\": 5.51e-07,"));
  EXPECT_THAT(RuntimeBenchRecordsToJson({RuntimeBenchRecord{}}),
              HasSubstr("\"reference_rel_err\": -1,"));  // none asked for
}

TEST(RuntimeBenchRecordTest, SchedulesAreListedInRequestOrder) {
  RuntimeBenchRecord record;
  record.model = "inception_v3";
  record.batch = 1;
  record.schedules.push_back({.policy = "single", .lanes = 1, .graph_compute_us = 800,
                              .bit_identical_to_single_eager = true});
  record.schedules.push_back({.policy = "auto", .chosen = "asap", .lanes = 4, .events = 9,
                              .graph_compute_us = 600, .bit_identical_to_single_eager = false});
  const std::string json = RuntimeBenchRecordsToJson({record});
  EXPECT_THAT(json, HasSubstr("\"graph_nodes\": 0, \"schedules\": [{\"policy\": \"single\", "
                              "\"lanes\": 1, \"events\": 0, \"graph_compute_us\": 800.000"));
  EXPECT_THAT(json, HasSubstr("{\"policy\": \"auto\", \"chosen\": \"asap\", \"lanes\": 4, "
                              "\"events\": 9, \"graph_compute_us\": 600.000"));
  EXPECT_THAT(json, HasSubstr("\"bit_identical_to_single_eager\": false, \"arena_bytes\": 0}]}"));
  EXPECT_THAT(FormatRuntimeBenchRecord(record),
              HasSubstr("; single 800.0 us on 1 lane(s); auto (asap) 600.0 us on 4 lane(s) "
                        "NOT BIT-IDENTICAL"));
}

TEST(RuntimeBenchRecordTest, JsonStaysValidForOddValues) {
  RuntimeBenchRecord record{.model = "a\"b\\c",
                            .rerun_max_abs_diff = std::numeric_limits<double>::quiet_NaN()};
  const std::string json = RuntimeBenchRecordsToJson({record});
  EXPECT_THAT(json, HasSubstr("\"a\\\"b\\\\c\""));
  EXPECT_THAT(json, HasSubstr("\"rerun_max_abs_diff\": null"));
  EXPECT_EQ(RuntimeBenchRecordsToJson({}), "[]\n");
}

TEST(RuntimeBenchRecordTest, LineNamesModelAndBatch) {
  RuntimeBenchRecord record{.model = "encoder", .batch = 8, .eager_compute_us = 12.0};
  EXPECT_THAT(FormatRuntimeBenchRecord(record), HasSubstr("encoder B=8: full 0.0 us, compute 12.0 us"));
}

}  // namespace
}  // namespace graphserve
