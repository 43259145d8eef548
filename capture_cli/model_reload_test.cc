#include "capture_cli/model_reload.h"

#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(WithCaptureSizes, ReplacesTheSizesAndClearsWhatWasPerSize) {
  inference::ModelConfig config;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        name: "mlp"
        max_batch_size: 256
        capture {
          batch_sizes: [ 1, 4, 16, 64 ]
          streams: 2
          schedule: "single"
          max_lanes: 3
          cost { batch_size: 1 graph_us: 10 }
          cost { batch_size: 4 graph_us: 12 }
          schedules { batch_size: 1 policy: "single" lanes: 1 }
        }
        dynamic_batching { max_queue_delay_microseconds: 100 }
      )pb",
      &config));
  const inference::ModelConfig reloaded = WithCaptureSizes(config, {3, 7, 20});
  EXPECT_THAT(reloaded.capture().batch_sizes(), ElementsAre(3, 7, 20));
  EXPECT_EQ(reloaded.capture().cost_size(), 0);
  EXPECT_EQ(reloaded.capture().schedules_size(), 0);
  // Everything else is the model's as it was.
  EXPECT_EQ(reloaded.name(), "mlp");
  EXPECT_EQ(reloaded.max_batch_size(), 256);
  EXPECT_EQ(reloaded.capture().streams(), 2);
  EXPECT_EQ(reloaded.capture().schedule(), "single");
  EXPECT_EQ(reloaded.capture().max_lanes(), 3);
  EXPECT_EQ(reloaded.dynamic_batching().max_queue_delay_microseconds(), 100u);
}

TEST(WithCaptureSizes, ReplacesTheBucketsWhenGivenSome) {
  inference::ModelConfig config;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        name: "bert"
        capture {
          batch_sizes: [ 1, 8 ]
          shape_dims: "sequence"
          buckets { extents: 64 }
          buckets { extents: 512 }
        }
      )pb",
      &config));
  const inference::ModelConfig kept = WithCaptureSizes(config, {2});
  ASSERT_EQ(kept.capture().buckets_size(), 2);
  EXPECT_THAT(kept.capture().buckets(1).extents(), ElementsAre(512));
  const inference::ModelConfig reloaded = WithCaptureSizes(config, {2, 4}, {16, 48, 512});
  EXPECT_THAT(reloaded.capture().batch_sizes(), ElementsAre(2, 4));
  ASSERT_EQ(reloaded.capture().buckets_size(), 3);
  EXPECT_THAT(reloaded.capture().buckets(0).extents(), ElementsAre(16));
  EXPECT_THAT(reloaded.capture().buckets(2).extents(), ElementsAre(512));
  EXPECT_THAT(reloaded.capture().shape_dims(), ElementsAre("sequence"));
}

TEST(ReloadWithCaptureSizes, NoServerNamesTheCallAndTheAddress) {
  ModelReloadOptions options;
  options.address = "127.0.0.1:1";  // nothing listens on port 1
  options.model = "mlp";
  options.batch_sizes = {1, 8};
  options.config_timeout = absl::Seconds(5);
  absl::StatusOr<ModelReloadResult> result = ReloadWithCaptureSizes(options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << result.status();
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("ModelConfig of 'mlp' at 127.0.0.1:1 failed: "));
}

}  // namespace
}  // namespace graphserve
