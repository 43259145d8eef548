#include "server/metrics.h"

#include <httplib.h>

#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/metric_names.h"
#include "common/status.h"
#include "planning/batch_sizes.h"
#include "planning/row_histogram.h"
#include "planning/shape_grid.h"
#include "prometheus/metric_family.h"
#include "prometheus/text_serializer.h"
#include "server/http_connection.h"
#include "spdlog/spdlog.h"

namespace graphserve {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// `sample`'s value as a counter's or a gauge's.
void SetValue(double value, MetricType type, ClientMetric& sample) {
  if (type == MetricType::Gauge) {
    sample.gauge.value = value;
  } else {
    sample.counter.value = value;
  }
}

ClientMetric Sample(const inference::ModelStatistics& statistics, double value, MetricType type) {
  ClientMetric sample;
  sample.label = {{"model", statistics.name()}, {"version", statistics.version()}};
  SetValue(value, type, sample);
  return sample;
}

// One family: `value` of each model, as a counter or a gauge.
template <typename Value>
MetricFamily Family(const std::string& name, const std::string& help, MetricType type,
                    const std::vector<ModelMetrics>& models, Value value) {
  MetricFamily family{name, help, type, {}};
  for (const ModelMetrics& model : models) {
    family.metric.push_back(Sample(model.statistics, value(model), type));
  }
  return family;
}

double Microseconds(const inference::StatisticDuration& duration) {
  return static_cast<double>(duration.ns()) / 1000.0;
}

// One family of per-GPU gauges (or counters): `value` of each reading,
// labelled gpu_uuid.
template <typename Value>
MetricFamily GpuFamily(const std::string& name, const std::string& help,
                       const std::vector<GpuReading>& gpus, Value value,
                       MetricType type = MetricType::Gauge) {
  MetricFamily family{name, help, type, {}};
  for (const GpuReading& gpu : gpus) {
    ClientMetric sample;
    sample.label = {{"gpu_uuid", gpu.uuid}};
    SetValue(value(gpu), type, sample);
    family.metric.push_back(std::move(sample));
  }
  return family;
}

// A family of one unlabelled gauge: the server's or the host's, not a
// model's or a GPU's.
MetricFamily HostGauge(const std::string& name, const std::string& help, double value) {
  ClientMetric sample;
  sample.gauge.value = value;
  return MetricFamily{name, help, MetricType::Gauge, {std::move(sample)}};
}

// `histogram` of one model as a Prometheus histogram sample.
ClientMetric HistogramSample(const inference::ModelStatistics& statistics,
                             const ModelCounters::Histogram& histogram) {
  ClientMetric sample;
  sample.label = {{"model", statistics.name()}, {"version", statistics.version()}};
  sample.histogram.sample_count =
      histogram.cumulative_counts.empty() ? 0 : histogram.cumulative_counts.back();
  sample.histogram.sample_sum = static_cast<double>(histogram.sum);
  for (size_t i = 0; i < histogram.upper_bounds.size(); ++i) {
    ClientMetric::Bucket bucket;
    bucket.upper_bound = histogram.upper_bounds[i];
    bucket.cumulative_count = histogram.cumulative_counts[i];
    sample.histogram.bucket.push_back(bucket);
  }
  return sample;
}

// GraphServe's own families (see the header).
void AddGraphServeFamilies(const std::vector<ModelMetrics>& models,
                           std::vector<MetricFamily>& families) {
  MetricFamily rows{kRequestRowsMetric,
                    "Rows (batch size) of each successful request: the live batch-size histogram",
                    MetricType::Histogram,
                    {}};
  MetricFamily demand{kChunkDemandRowsMetric,
                      "Rows queued that each chunk formed under dynamic batching could have "
                      "merged (select --plan-rows chunk-demand plans from it)",
                      MetricType::Histogram,
                      {}};
  MetricFamily length{kRequestLengthMetric,
                      "Extent of each successful request along the model's one shape dim (e.g. "
                      "its sequence length): the live length histogram buckets are chosen from",
                      MetricType::Histogram,
                      {}};
  MetricFamily duration{"graphserve_request_duration_us",
                        "Time from accept to answer of each successful request, in us",
                        MetricType::Histogram,
                        {}};
  MetricFamily launches{kGraphLaunchesMetric,
                        "Chunks launched at each captured batch size (and shape bucket) on each stream slot",
                        MetricType::Counter,
                        {}};
  MetricFamily position_padding{
      "graphserve_expected_padded_positions",
      "Expected padded positions (rows x length) per request over the live rows and length "
      "histograms: with the captured sizes and buckets (current) and with the best grid of as "
      "many graphs (optimal)",
      MetricType::Gauge,
      {}};
  MetricFamily padding{"graphserve_expected_padded_rows",
                       "Expected padded rows per request over the live rows histogram: with the "
                       "captured sizes (current) and with the best as many sizes (optimal)",
                       MetricType::Gauge,
                       {}};
  for (const ModelMetrics& model : models) {
    rows.metric.push_back(HistogramSample(model.statistics, model.request_rows));
    demand.metric.push_back(HistogramSample(model.statistics, model.chunk_demand_rows));
    if (model.request_length.has_value()) {
      length.metric.push_back(HistogramSample(model.statistics, *model.request_length));
    }
    duration.metric.push_back(HistogramSample(model.statistics, model.request_duration_us));
    for (const ModelCounters::Launches& launched : model.launches) {
      ClientMetric sample =
          Sample(model.statistics, static_cast<double>(launched.count), MetricType::Counter);
      sample.label.push_back({"batch_size", absl::StrCat(launched.key.batch_size)});
      // Only a model with shape dims has buckets: "128", or "224x224".
      if (!launched.key.bucket.empty()) {
        sample.label.push_back({"bucket", absl::StrJoin(launched.key.bucket, "x")});
      }
      sample.label.push_back({"stream", absl::StrCat(launched.stream)});
      launches.metric.push_back(std::move(sample));
    }
    const auto add_signal = [&model](const PaddingSignal& signal, MetricFamily& family) {
      for (const auto& [sizes, value] :
           {std::pair{"current", signal.current}, std::pair{"optimal", signal.optimal}}) {
        ClientMetric sample = Sample(model.statistics, value, MetricType::Gauge);
        sample.label.push_back({"sizes", sizes});
        family.metric.push_back(std::move(sample));
      }
    };
    if (model.padding.has_value()) add_signal(*model.padding, padding);
    if (model.position_padding.has_value()) {
      add_signal(*model.position_padding, position_padding);
    }
  }
  families.push_back(std::move(rows));
  families.push_back(std::move(demand));
  families.push_back(std::move(length));
  families.push_back(std::move(duration));
  families.push_back(
      Family("graphserve_padded_rows_total", "Padding rows launched to reach a captured batch size",
             MetricType::Counter, models,
             [](const ModelMetrics& m) { return static_cast<double>(m.padded_rows); }));
  families.push_back(std::move(launches));
  MetricFamily padded_positions{
      "graphserve_padded_positions_total",
      "Padding positions launched (rows x tokens or pixels of their shape bucket beyond the "
      "requests' own), for models with shape dims",
      MetricType::Counter,
      {}};
  for (const ModelMetrics& model : models) {
    if (!model.padded_positions.has_value()) continue;
    padded_positions.metric.push_back(Sample(
        model.statistics, static_cast<double>(*model.padded_positions), MetricType::Counter));
  }
  families.push_back(std::move(padded_positions));
  families.push_back(
      Family("graphserve_split_requests_total",
             "Successful requests whose rows ran in more than one chunk", MetricType::Counter,
             models, [](const ModelMetrics& m) { return static_cast<double>(m.split_requests); }));
  families.push_back(
      Family("graphserve_merged_executions_total", "Chunks that held rows of more than one request",
             MetricType::Counter, models,
             [](const ModelMetrics& m) { return static_cast<double>(m.merged_executions); }));
  families.push_back(std::move(padding));
  families.push_back(std::move(position_padding));
}

}  // namespace

// `histogram` as `select --from-metrics` reads it from the text, so the
// optimal gauges are what select would choose (Note [Re-capture signal]).
absl::StatusOr<RowHistogram> AsSelectReadsIt(const ModelCounters::Histogram& histogram) {
  std::vector<CumulativeBucket> buckets;
  for (size_t i = 0; i < histogram.upper_bounds.size(); ++i) {
    buckets.push_back({.upper_bound = histogram.upper_bounds[i],
                       .cumulative_count = static_cast<double>(histogram.cumulative_counts[i])});
  }
  return RowHistogramFromBuckets(std::move(buckets));
}

absl::StatusOr<PaddingSignal> ExpectedPaddedPositionsSignal(
    const ModelCounters::Histogram& rows, const ModelCounters::Histogram& lengths,
    const std::vector<int64_t>& captured_sizes, const std::vector<int64_t>& captured_buckets,
    int64_t max_batch_size) {
  ASSIGN_OR_RETURN(const RowHistogram live_rows, AsSelectReadsIt(rows));
  ASSIGN_OR_RETURN(const RowHistogram live_lengths, AsSelectReadsIt(lengths));
  const ShapeHistogram shapes = IndependentShapes(live_rows.histogram, live_lengths.histogram);
  if (shapes.empty()) return PaddingSignal{};
  const int graphs = static_cast<int>(captured_sizes.size() * captured_buckets.size());
  ASSIGN_OR_RETURN(const GridChoice best, ChooseSizesAndBuckets(shapes, graphs, max_batch_size));
  return PaddingSignal{
      .current = ExpectedPaddedPositions(shapes, captured_sizes, captured_buckets),
      .optimal = best.expected_padded_positions};
}

absl::StatusOr<PaddingSignal> ExpectedPaddedRowsSignal(const ModelCounters::Histogram& rows,
                                                       const std::vector<int64_t>& captured_sizes,
                                                       int64_t max_batch_size) {
  ASSIGN_OR_RETURN(const RowHistogram live, AsSelectReadsIt(rows));
  if (live.histogram.empty()) return PaddingSignal{};
  ASSIGN_OR_RETURN(
      const SizeChoice best,
      ChooseBatchSizes(live.histogram, static_cast<int>(captured_sizes.size()), max_batch_size));
  return PaddingSignal{.current = ExpectedPaddedRows(live.histogram, captured_sizes),
                       .optimal = best.expected_padded_rows};
}

std::string MetricsText(const std::vector<ModelMetrics>& models,
                        const std::vector<GpuReading>& gpus,
                        const std::optional<CpuReading>& cpu) {
  std::vector<MetricFamily> families;
  families.push_back(Family(
      "nv_inference_request_success", "Number of successful inference requests, all batch sizes",
      MetricType::Counter, models, [](const ModelMetrics& m) {
        return static_cast<double>(m.statistics.inference_stats().success().count());
      }));
  // Every reason for every model, zeros included, as Triton exports them.
  MetricFamily failure{"nv_inference_request_failure",
                       "Number of failed inference requests, all batch sizes",
                       MetricType::Counter,
                       {}};
  for (const ModelMetrics& model : models) {
    for (size_t reason = 0; reason < kNumFailureReasons; ++reason) {
      ClientMetric sample = Sample(model.statistics, static_cast<double>(model.failures[reason]),
                                   MetricType::Counter);
      sample.label.push_back({"reason", FailureReasonLabel(static_cast<FailureReason>(reason))});
      failure.metric.push_back(std::move(sample));
    }
  }
  families.push_back(std::move(failure));
  families.push_back(Family(
      "nv_inference_count", "Number of inferences performed (a batch of n counts n)",
      MetricType::Counter, models,
      [](const ModelMetrics& m) { return static_cast<double>(m.statistics.inference_count()); }));
  families.push_back(Family(
      "nv_inference_exec_count", "Number of model executions performed (graph launches)",
      MetricType::Counter, models,
      [](const ModelMetrics& m) { return static_cast<double>(m.statistics.execution_count()); }));
  const std::pair<const char*, const char*> durations[] = {
      {"nv_inference_request_duration_us", "Cumulative inference request duration in us"},
      {"nv_inference_queue_duration_us", "Cumulative inference queuing duration in us"},
      {"nv_inference_compute_input_duration_us", "Cumulative compute input duration in us"},
      {"nv_inference_compute_infer_duration_us", "Cumulative compute inference duration in us"},
      {"nv_inference_compute_output_duration_us", "Cumulative compute output duration in us"},
  };
  using Field = const inference::StatisticDuration& (inference::InferStatistics::*)() const;
  const Field fields[] = {&inference::InferStatistics::success, &inference::InferStatistics::queue,
                          &inference::InferStatistics::compute_input,
                          &inference::InferStatistics::compute_infer,
                          &inference::InferStatistics::compute_output};
  for (size_t i = 0; i < std::size(fields); ++i) {
    const Field field = fields[i];
    families.push_back(Family(durations[i].first, durations[i].second, MetricType::Counter, models,
                              [field](const ModelMetrics& m) {
                                return Microseconds((m.statistics.inference_stats().*field)());
                              }));
  }
  families.push_back(
      Family("nv_inference_pending_request_count", "Requests accepted and not yet answered",
             MetricType::Gauge, models,
             [](const ModelMetrics& m) { return static_cast<double>(m.pending_requests); }));
  families.push_back(Family("nv_model_load_duration_secs", "Model load time in seconds",
                            MetricType::Gauge, models,
                            [](const ModelMetrics& m) { return m.load_seconds; }));
  AddGraphServeFamilies(models, families);
  if (!gpus.empty()) {
    families.push_back(GpuFamily("nv_gpu_utilization", "GPU utilization rate [0.0 - 1.0)", gpus,
                                 [](const GpuReading& g) { return g.utilization; }));
    families.push_back(
        GpuFamily("nv_gpu_memory_total_bytes", "GPU total memory, in bytes", gpus,
                  [](const GpuReading& g) { return static_cast<double>(g.memory_total_bytes); }));
    families.push_back(
        GpuFamily("nv_gpu_memory_used_bytes", "GPU used memory, in bytes", gpus,
                  [](const GpuReading& g) { return static_cast<double>(g.memory_used_bytes); }));
    families.push_back(GpuFamily("nv_gpu_power_usage", "GPU power usage in watts", gpus,
                                 [](const GpuReading& g) { return g.power_watts; }));
    families.push_back(GpuFamily("nv_gpu_power_limit", "GPU power management limit in watts",
                                 gpus, [](const GpuReading& g) { return g.power_limit_watts; }));
    families.push_back(GpuFamily("nv_energy_consumption",
                                 "GPU energy consumption in joules since the Triton Server started",
                                 gpus, [](const GpuReading& g) { return g.energy_joules; },
                                 MetricType::Counter));
  }
  if (cpu.has_value()) {
    families.push_back(
        HostGauge("nv_cpu_utilization", "CPU utilization rate [0.0 - 1.0]", cpu->utilization));
    families.push_back(HostGauge("nv_cpu_memory_total_bytes", "CPU total memory (RAM), in bytes",
                                 static_cast<double>(cpu->memory.total_bytes)));
    families.push_back(HostGauge("nv_cpu_memory_used_bytes", "CPU used memory (RAM), in bytes",
                                 static_cast<double>(cpu->memory.used_bytes)));
  }
  // Note [Pinned memory pool]: every byte staged is held, so used is total.
  uint64_t pinned_bytes = 0;
  for (const ModelMetrics& model : models) pinned_bytes += model.pinned_bytes;
  families.push_back(HostGauge("nv_pinned_memory_pool_total_bytes",
                               "Pinned memory pool total memory size, in bytes",
                               static_cast<double>(pinned_bytes)));
  families.push_back(HostGauge("nv_pinned_memory_pool_used_bytes",
                               "Pinned memory pool used memory size, in bytes",
                               static_cast<double>(pinned_bytes)));
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

std::vector<ModelMetrics> ReadMetrics(const ModelRegistry& registry) {
  std::vector<ModelMetrics> models;
  for (const ModelVersionState& state : registry.states()) {
    if (state.model == nullptr) continue;
    ModelMetrics& model = models.emplace_back();
    state.model->FillStatistics(&model.statistics);
    model.load_seconds = state.model->summary().load_ms / 1000.0;
    model.pinned_bytes = state.model->summary().pinned_bytes;
    model.pending_requests = state.model->pending_requests();
    const ModelCounters& counters = state.model->counters();
    model.failures = counters.FailuresByReason();
    model.request_rows = counters.RequestRows();
    model.chunk_demand_rows = counters.ChunkDemandRows();
    model.request_length = counters.RequestLength();
    model.request_duration_us = counters.RequestDurationUs();
    model.padded_rows = counters.padded_rows();
    model.launches = counters.LaunchesPerKeyAndStream();
    if (!counters.buckets().front().empty()) model.padded_positions = counters.padded_positions();
    model.split_requests = counters.split_requests();
    model.merged_executions = counters.merged_executions();
    absl::StatusOr<PaddingSignal> padding = ExpectedPaddedRowsSignal(
        model.request_rows, counters.batch_sizes(), counters.max_batch_size());
    if (padding.ok()) {
      model.padding = *padding;
    } else {
      // Not expected (the counters make the histogram): the gauges go
      // missing rather than the page.
      spdlog::warn("model '{}': no graphserve_expected_padded_rows: {}", model.statistics.name(),
                   padding.status().ToString());
    }
    if (model.request_length.has_value()) {
      absl::StatusOr<PaddingSignal> positions = ExpectedPaddedPositionsSignal(
          model.request_rows, *model.request_length, counters.batch_sizes(),
          OneDimExtents(counters.buckets()), counters.max_batch_size());
      if (positions.ok()) {
        model.position_padding = *positions;
      } else {
        spdlog::warn("model '{}': no graphserve_expected_padded_positions: {}",
                     model.statistics.name(), positions.status().ToString());
      }
    }
  }
  return models;
}

TcpListenAddress MetricsListenAddress(const std::string& host, int port) {
  TcpListenAddress address;
  address.host = host;
  address.port = port;
  address.port_flag = "--metrics-port";
  return address;
}

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const ModelRegistry* registry, const std::string& host, int port,
    const MetricsOptions& options) {
  auto endpoint = std::unique_ptr<MetricsEndpoint>(new MetricsEndpoint());
  endpoint->gpus_ = GpuMonitor::Open();
  if (options.allow_cpu_metrics) {
    CpuMonitor::Options cpu_options;
    cpu_options.interval = options.interval;
    endpoint->cpu_ = CpuMonitor::Open(cpu_options);
  }
  const GpuMonitor* gpus = endpoint->gpus_.get();
  CpuMonitor* cpu = endpoint->cpu_.get();
  auto server = std::make_unique<FramedHttpServer>();
  server->Get("/metrics", [registry, gpus, cpu](const httplib::Request&,
                                                httplib::Response& response) {
    response.set_content(
        MetricsText(ReadMetrics(*registry),
                    gpus != nullptr ? gpus->Read() : std::vector<GpuReading>{},
                    cpu != nullptr ? std::optional<CpuReading>(cpu->Read()) : std::nullopt),
        "text/plain; version=0.0.4");
  });
  absl::StatusOr<std::unique_ptr<HttpListener>> listener =
      HttpListener::Start(std::move(server), MetricsListenAddress(host, port));
  if (!listener.ok()) return listener.status();
  endpoint->listener_ = *std::move(listener);
  return endpoint;
}

}  // namespace graphserve
