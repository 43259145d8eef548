#include "bench/runtime_bench_record.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/json_text.h"

namespace graphserve {
namespace {

std::string Mebibytes(size_t bytes) {
  return absl::StrFormat("%.2f MiB", static_cast<double>(bytes) / (1 << 20));
}

}  // namespace

std::string RuntimeBenchRecordsToJson(const std::vector<RuntimeBenchRecord>& records) {
  std::string out = "[";
  for (size_t i = 0; i < records.size(); ++i) {
    const RuntimeBenchRecord& r = records[i];
    absl::StrAppend(&out, i == 0 ? "\n" : ",\n", "  {\"model\": ", JsonString(r.model),
                    ", \"batch\": ", r.batch,
                    ", \"eager_full_us\": ", JsonNumber(r.eager_full_us),
                    ", \"eager_compute_us\": ", JsonNumber(r.eager_compute_us),
                    ", \"compute_min_us\": ", JsonNumber(r.compute_min_us),
                    ", \"compute_max_us\": ", JsonNumber(r.compute_max_us),
                    ", \"fused_epilogues\": ", r.fused_epilogues,
                    ", \"arena_bytes\": ", r.arena_bytes,
                    ", \"arena_lower_bound_bytes\": ", r.arena_lower_bound_bytes,
                    ", \"rerun_max_abs_diff\": ", JsonNumber(r.rerun_max_abs_diff),
                    ", \"graph_compute_us\": ", JsonNumber(r.graph_compute_us),
                    ", \"graph_full_us\": ", JsonNumber(r.graph_full_us),
                    ", \"graph_min_us\": ", JsonNumber(r.graph_min_us),
                    ", \"graph_max_us\": ", JsonNumber(r.graph_max_us),
                    ", \"graph_rel_err_vs_eager\": ", JsonNumber(r.graph_rel_err_vs_eager),
                    ", \"capture_ms\": ", JsonNumber(r.capture_ms),
                    ", \"graph_nodes\": ", r.graph_nodes, "}");
  }
  absl::StrAppend(&out, records.empty() ? "]\n" : "\n]\n");
  return out;
}

std::string FormatRuntimeBenchRecord(const RuntimeBenchRecord& r) {
  return absl::StrFormat(
      "%s B=%d: full %.1f us, compute %.1f us (min %.1f, max %.1f), fused epilogues %d, "
      "arena %s (lower bound %s), rerun max |diff| %g; graph %.1f us (full %.1f), %d nodes, "
      "rel err vs eager %g, set-up %.1f ms",
      r.model, r.batch, r.eager_full_us, r.eager_compute_us, r.compute_min_us, r.compute_max_us,
      r.fused_epilogues, Mebibytes(r.arena_bytes), Mebibytes(r.arena_lower_bound_bytes),
      r.rerun_max_abs_diff, r.graph_compute_us, r.graph_full_us, r.graph_nodes,
      r.graph_rel_err_vs_eager, r.capture_ms);
}

}  // namespace graphserve
