#include "tensor_holder/memory_planner.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphserve {
namespace {

constexpr size_t kNoOffset = std::numeric_limits<size_t>::max();

// A fixed-size set of step indices, one bit per step.
class StepSet {
 public:
  explicit StepSet(int num_steps) : words_((static_cast<size_t>(num_steps) + 63) / 64, 0) {}
  void Insert(int step) { words_[step / 64] |= uint64_t{1} << (step % 64); }
  [[nodiscard]] bool Contains(int step) const { return (words_[step / 64] >> (step % 64)) & 1; }
  void UnionWith(const StepSet& other) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] |= other.words_[i];
  }

 private:
  std::vector<uint64_t> words_;
};

size_t AlignUp(size_t value, size_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

// Checks the step graph and returns a topological order of its steps, or
// names a cycle.
absl::StatusOr<std::vector<int>> TopologicalOrder(const MemoryPlanInput& input) {
  const int n = input.num_steps;
  std::vector<int> unmet(n, 0);
  std::vector<std::vector<int>> successors(n);
  for (int step = 0; step < n; ++step) {
    for (int pred : input.step_predecessors[step]) {
      if (pred < 0 || pred >= n) {
        return absl::InvalidArgumentError(
            absl::StrCat("step ", step, " depends on step ", pred, ", outside [0, ", n, ")"));
      }
      if (pred == step) {
        return absl::InvalidArgumentError(absl::StrCat("step ", step, " depends on itself"));
      }
      ++unmet[step];
      successors[pred].push_back(step);
    }
  }
  std::vector<int> order;
  order.reserve(n);
  for (int step = 0; step < n; ++step) {
    if (unmet[step] == 0) order.push_back(step);
  }
  for (size_t i = 0; i < order.size(); ++i) {
    for (int next : successors[order[i]]) {
      if (--unmet[next] == 0) order.push_back(next);
    }
  }
  if (static_cast<int>(order.size()) == n) return order;

  // Every step left over waits on a predecessor that is also left over, so
  // walking back through such predecessors must come round to a cycle.
  int step = 0;
  while (unmet[step] == 0) ++step;
  std::vector<int> seen_at(n, -1);
  std::vector<int> path;
  while (seen_at[step] < 0) {
    seen_at[step] = static_cast<int>(path.size());
    path.push_back(step);
    for (int pred : input.step_predecessors[step]) {
      if (unmet[pred] > 0) {
        step = pred;
        break;
      }
    }
  }
  std::vector<int> cycle(path.begin() + seen_at[step], path.end());
  std::reverse(cycle.begin(), cycle.end());  // in execution direction
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  cycle.push_back(cycle.front());
  return absl::InvalidArgumentError(absl::StrCat("step_predecessors is not a DAG: steps ",
                                                 absl::StrJoin(cycle, " -> "), " form a cycle"));
}

bool IsIndexOrderTopological(const MemoryPlanInput& input) {
  for (int step = 0; step < input.num_steps; ++step) {
    for (int pred : input.step_predecessors[step]) {
      if (pred >= step) return false;
    }
  }
  return true;
}

// Steps that touch `buffer`: its producer, then its readers.
std::vector<int> StepsOf(const PlannedBuffer& buffer) {
  std::vector<int> steps = {buffer.producer_step};
  steps.insert(steps.end(), buffer.reader_steps.begin(), buffer.reader_steps.end());
  return steps;
}

// See Note [Reuse across streams].
bool FinishesBefore(const std::vector<int>& first_steps, int second_producer,
                    const std::vector<StepSet>& ancestors) {
  for (int step : first_steps) {
    if (!ancestors[second_producer].Contains(step)) return false;
  }
  return true;
}

}  // namespace

std::vector<std::vector<int>> LinearSchedule(int num_steps) {
  std::vector<std::vector<int>> predecessors(std::max(num_steps, 0));
  for (int step = 1; step < num_steps; ++step) predecessors[step] = {step - 1};
  return predecessors;
}

absl::StatusOr<MemoryPlan> PlanMemory(const MemoryPlanInput& input) {
  const int n = input.num_steps;
  if (n < 0) return absl::InvalidArgumentError(absl::StrCat("num_steps is ", n));
  if (input.step_predecessors.size() != static_cast<size_t>(n)) {
    return absl::InvalidArgumentError(
        absl::StrCat("step_predecessors has ", input.step_predecessors.size(), " entries for ", n,
                     " steps; give one (possibly empty) per step, "
                     "e.g. LinearSchedule(num_steps)"));
  }
  const size_t alignment = input.alignment;
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("alignment ", alignment, " is not a power of two"));
  }
  auto order = TopologicalOrder(input);
  if (!order.ok()) return order.status();

  // ancestors[s]: every step that happens-before s, transitively.
  std::vector<StepSet> ancestors(n, StepSet(n));
  for (int step : *order) {
    for (int pred : input.step_predecessors[step]) {
      ancestors[step].UnionWith(ancestors[pred]);
      ancestors[step].Insert(pred);
    }
  }

  const size_t num_buffers = input.buffers.size();
  size_t total_aligned = 0;
  for (size_t i = 0; i < num_buffers; ++i) {
    const PlannedBuffer& buffer = input.buffers[i];
    const int producer = buffer.producer_step;
    if (producer < 0 || producer >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("buffer ", i, ": producer step ", producer, " is outside [0, ", n, ")"));
    }
    for (int reader : buffer.reader_steps) {
      if (reader < 0 || reader >= n) {
        return absl::InvalidArgumentError(
            absl::StrCat("buffer ", i, ": reader step ", reader, " is outside [0, ", n, ")"));
      }
      if (reader != producer && !ancestors[reader].Contains(producer)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "buffer ", i, ": reader step ", reader, " does not depend on producer step ", producer,
            ", so it could read the buffer before it is written"));
      }
    }
    if (buffer.bytes > std::numeric_limits<size_t>::max() - total_aligned - alignment) {
      return absl::InvalidArgumentError(
          absl::StrCat("buffer ", i, ": ", buffer.bytes, " bytes overflow the arena size"));
    }
    total_aligned += AlignUp(buffer.bytes, alignment);
  }

  MemoryPlan plan;
  plan.offsets.assign(num_buffers, 0);

  // Lower bound: live bytes at each point of one linear run.
  std::vector<int> linear_order(n);
  if (IsIndexOrderTopological(input)) {
    std::iota(linear_order.begin(), linear_order.end(), 0);
  } else {
    linear_order = *order;
  }
  std::vector<int> position(n);
  for (int i = 0; i < n; ++i) position[linear_order[i]] = i;
  std::vector<size_t> starts(n + 1, 0);
  std::vector<size_t> ends(n + 1, 0);
  for (const PlannedBuffer& buffer : input.buffers) {
    int first = position[buffer.producer_step];
    int last = first;
    for (int reader : buffer.reader_steps) last = std::max(last, position[reader]);
    starts[first] += buffer.bytes;
    ends[last + 1] += buffer.bytes;
  }
  size_t live = 0;
  for (int i = 0; i < n; ++i) {
    live = live + starts[i] - ends[i];
    plan.lower_bound_bytes = std::max(plan.lower_bound_bytes, live);
  }

  // Largest first; ties in execution order, then input order, so plans are
  // deterministic.
  std::vector<size_t> by_size;
  for (size_t i = 0; i < num_buffers; ++i) {
    if (input.buffers[i].bytes > 0) by_size.push_back(i);
  }
  std::sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
    const PlannedBuffer& x = input.buffers[a];
    const PlannedBuffer& y = input.buffers[b];
    if (x.bytes != y.bytes) return x.bytes > y.bytes;
    if (x.producer_step != y.producer_step) {
      return position[x.producer_step] < position[y.producer_step];
    }
    return a < b;
  });

  std::vector<std::vector<int>> steps_of(num_buffers);
  for (size_t i = 0; i < num_buffers; ++i) steps_of[i] = StepsOf(input.buffers[i]);

  std::vector<size_t> placed;
  std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) of conflicting buffers
  for (size_t current : by_size) {
    const PlannedBuffer& buffer = input.buffers[current];
    busy.clear();
    for (size_t other : placed) {
      const bool disjoint_in_time =
          FinishesBefore(steps_of[other], buffer.producer_step, ancestors) ||
          FinishesBefore(steps_of[current], input.buffers[other].producer_step, ancestors);
      if (!disjoint_in_time) {
        busy.emplace_back(plan.offsets[other], plan.offsets[other] + input.buffers[other].bytes);
      }
    }
    std::sort(busy.begin(), busy.end());
    // Best fit: the smallest free gap that holds the buffer; else past the end.
    size_t best_offset = kNoOffset;
    size_t best_gap = kNoOffset;
    size_t cursor = 0;  // end of the busy bytes seen so far
    for (const auto& [begin, end] : busy) {
      const size_t candidate = AlignUp(cursor, alignment);
      if (begin >= candidate && begin - candidate >= buffer.bytes && begin - candidate < best_gap) {
        best_gap = begin - candidate;
        best_offset = candidate;
      }
      cursor = std::max(cursor, end);
    }
    if (best_offset == kNoOffset) best_offset = AlignUp(cursor, alignment);
    plan.offsets[current] = best_offset;
    plan.arena_bytes = std::max(plan.arena_bytes, best_offset + buffer.bytes);
    placed.push_back(current);
  }
  return plan;
}

}  // namespace graphserve
