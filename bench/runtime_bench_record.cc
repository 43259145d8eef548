#include "bench/runtime_bench_record.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_text.h"

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
                    ", \"graph_rel_err_vs_eager\": ", JsonSignificant(r.graph_rel_err_vs_eager),
                    ", \"reference_rel_err\": ", JsonSignificant(r.reference_rel_err),
                    ", \"reference_ms\": ", JsonNumber(r.reference_ms),
                    ", \"capture_ms\": ", JsonNumber(r.capture_ms),
                    ", \"graph_nodes\": ", r.graph_nodes);
    if (!r.schedules.empty()) {
      absl::StrAppend(&out, ", \"schedules\": [");
      for (size_t k = 0; k < r.schedules.size(); ++k) {
        const ScheduleBenchTiming& s = r.schedules[k];
        absl::StrAppend(&out, k == 0 ? "" : ", ", "{\"policy\": ", JsonString(s.policy),
                        s.chosen.empty() ? "" : absl::StrCat(", \"chosen\": ", JsonString(s.chosen)),
                        ", \"lanes\": ", s.lanes, ", \"events\": ", s.events,
                        ", \"graph_compute_us\": ", JsonNumber(s.graph_compute_us),
                        ", \"graph_min_us\": ", JsonNumber(s.graph_min_us),
                        ", \"graph_max_us\": ", JsonNumber(s.graph_max_us),
                        ", \"bit_identical_to_single_eager\": ",
                        s.bit_identical_to_single_eager ? "true" : "false",
                        ", \"arena_bytes\": ", s.arena_bytes, "}");
      }
      absl::StrAppend(&out, "]");
    }
    absl::StrAppend(&out, "}");
  }
  absl::StrAppend(&out, records.empty() ? "]\n" : "\n]\n");
  return out;
}

std::string FormatRuntimeBenchRecord(const RuntimeBenchRecord& r) {
  std::string line = absl::StrFormat(
      "%s B=%d: full %.1f us, compute %.1f us (min %.1f, max %.1f), fused epilogues %d, "
      "arena %s (lower bound %s), rerun max |diff| %g; graph %.1f us (full %.1f), %d nodes, "
      "rel err vs eager %g, set-up %.1f ms",
      r.model, r.batch, r.eager_full_us, r.eager_compute_us, r.compute_min_us, r.compute_max_us,
      r.fused_epilogues, Mebibytes(r.arena_bytes), Mebibytes(r.arena_lower_bound_bytes),
      r.rerun_max_abs_diff, r.graph_compute_us, r.graph_full_us, r.graph_nodes,
      r.graph_rel_err_vs_eager, r.capture_ms);
  if (r.reference_rel_err >= 0) {
    absl::StrAppendFormat(&line, ", rel err vs the independent reference %g (%.1f ms)",
                          r.reference_rel_err, r.reference_ms);
  }
  for (const ScheduleBenchTiming& s : r.schedules) {
    absl::StrAppendFormat(&line, "; %s%s %.1f us on %d lane(s)%s", s.policy,
                          s.chosen.empty() ? "" : absl::StrCat(" (", s.chosen, ")"),
                          s.graph_compute_us, s.lanes,
                          s.bit_identical_to_single_eager ? "" : " NOT BIT-IDENTICAL");
  }
  return line;
}

}  // namespace graphserve
