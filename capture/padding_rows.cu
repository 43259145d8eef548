#include "capture/padding_rows.h"

#include <algorithm>
#include <cstdint>

namespace graphserve {

namespace {

// Element k of the padding region [first, total) copies element k mod
// row_elems of row 0. T is the widest type that divides the row's bytes and
// the buffer's alignment, so a float row moves in 4- or 16-byte words.
template <typename T>
__global__ void FillFromRowZero(T* base, size_t row_elems, size_t first, size_t total) {
  for (size_t k = first + blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<size_t>(gridDim.x) * blockDim.x) {
    base[k] = base[k % row_elems];
  }
}

template <typename T>
cudaError_t Launch(void* base, size_t bytes_per_row, int64_t rows, int64_t batch_size,
                   cudaStream_t stream) {
  const size_t row_elems = bytes_per_row / sizeof(T);
  const size_t first = row_elems * static_cast<size_t>(rows);
  const size_t total = row_elems * static_cast<size_t>(batch_size);
  constexpr int kThreads = 256;
  // Enough blocks to fill the GPU for large rows, one for a few bytes.
  const size_t blocks = std::min<size_t>((total - first + kThreads - 1) / kThreads, 1024);
  FillFromRowZero<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<T*>(base), row_elems, first, total);
  return cudaGetLastError();
}

bool Fits(const void* base, size_t bytes_per_row, size_t width) {
  return bytes_per_row % width == 0 && reinterpret_cast<uintptr_t>(base) % width == 0;
}

}  // namespace

cudaError_t FillPaddingRows(void* rows_base, size_t bytes_per_row, int64_t rows,
                            int64_t batch_size, cudaStream_t stream) {
  if (rows >= batch_size || rows < 1 || bytes_per_row == 0) return cudaSuccess;
  if (Fits(rows_base, bytes_per_row, 16)) {
    return Launch<uint4>(rows_base, bytes_per_row, rows, batch_size, stream);
  }
  if (Fits(rows_base, bytes_per_row, 4)) {
    return Launch<uint32_t>(rows_base, bytes_per_row, rows, batch_size, stream);
  }
  return Launch<unsigned char>(rows_base, bytes_per_row, rows, batch_size, stream);
}

}  // namespace graphserve
