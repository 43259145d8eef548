#pragma once
// Padding rows of a part-filled batch, filled on the device.
//
// Note [Padding rows from a valid row]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A chunk of r real rows runs the graph captured for B >= r rows. Only the r
// real rows are copied to the device; rows [r, B) of every input would
// otherwise hold whatever the slot's previous chunk left there: another
// request's data, or values (NaN, huge magnitudes) that slow a kernel down
// or, in a model that mixes rows, change a real row's result. As TF Serving
// does, we fill them with a copy of a valid row of the same chunk (row 0), so
// a padded batch is always a batch of plausible inputs. One small kernel per
// input, enqueued after the input's copy and before the replay; it is outside
// the graph because r changes from launch to launch.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace graphserve {

// Enqueues on `stream`: rows [rows, batch_size) of the row-major device
// buffer `rows_base` (batch_size rows of bytes_per_row bytes) become copies
// of row 0. Nothing is enqueued when rows >= batch_size. Capturable, no
// allocation; returns the launch's error.
cudaError_t FillPaddingRows(void* rows_base, size_t bytes_per_row, int64_t rows,
                            int64_t batch_size, cudaStream_t stream);

}  // namespace graphserve
