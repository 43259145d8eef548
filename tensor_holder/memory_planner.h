#pragma once
// Static memory planning for the activations of one bound graph: every buffer
// gets a fixed offset in one arena, so a captured CUDA graph replays with the
// same addresses, and buffers whose lifetimes cannot overlap share bytes.
//
// Pure host code; no CUDA.
//
// Note [Reuse across streams]
// Steps may run on several streams, so "later in index order" does not mean
// "after". Two buffers may share memory only if one of them is finished
// before the other starts in *every* execution the step DAG allows: its
// producer and all its readers happen-before (are transitive predecessors of)
// the other's producer. Anything weaker lets a kernel on one stream overwrite
// a buffer another stream is still reading.

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"

namespace graphserve {

struct PlannedBuffer {
  // Size in bytes; a zero-byte buffer gets offset 0 and takes no space.
  size_t bytes = 0;
  // The step that writes the buffer.
  int producer_step = 0;
  // The steps that read it. Each must be the producer itself or happen after
  // it in the DAG. None: the buffer lives only during its producer step.
  std::vector<int> reader_steps;
};

struct MemoryPlanInput {
  // Steps are numbered 0 .. num_steps - 1.
  int num_steps = 0;
  // Direct dependencies of each step (one entry per step): a DAG. Execution
  // respects it, possibly on several streams. Index order need not be a
  // topological order; cycles are an error.
  std::vector<std::vector<int>> step_predecessors;
  std::vector<PlannedBuffer> buffers;
  // Every offset is a multiple of this; a power of two.
  size_t alignment = 256;
};

struct MemoryPlan {
  // Byte offset of each buffer in the arena, in the order of
  // MemoryPlanInput::buffers.
  std::vector<size_t> offsets;
  // Arena size the plan needs: max(offset + bytes).
  size_t arena_bytes = 0;
  // Peak live bytes over the steps in index order (in a topological order
  // when index order is not one): a lower bound on arena_bytes for any valid
  // plan, since buffers live at the same point of a linear run conflict.
  size_t lower_bound_bytes = 0;
};

// Validates `input` (step ranges, a DAG, readers after producers, alignment)
// and assigns offsets: buffers largest first, each at the best-fitting aligned
// gap among the already placed buffers it conflicts with (see Note [Reuse
// across streams]). InvalidArgument names what is wrong.
absl::StatusOr<MemoryPlan> PlanMemory(const MemoryPlanInput& input);

// Predecessors of a single-stream run: step i depends on step i - 1.
std::vector<std::vector<int>> LinearSchedule(int num_steps);

}  // namespace graphserve
