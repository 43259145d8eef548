#pragma once
// Numbers as text: what ONNX's Cast between STRING and a number type does,
// for the STRING tensors served at a model's edges (Note [Strings at the
// model's edges] in runtime/ir.h).
//
// Note [Number text]
// ~~~~~~~~~~~~~~~~~~
// ONNX defines Cast from STRING for decimal and scientific text ("3.14",
// "1000", "1e-5", "1E8") and the words "NaN", "INF", "+INF" and "-INF" in any
// case; a string that is not a number, and the text of a fraction cast to an
// integer type, are undefined behaviour. Its two implementations at hand
// agree where the spec defines the answer and part where it does not:
// onnxruntime (what Triton's onnxruntime backend runs) reads with
// std::stod / std::stoll and narrows, so "1.5x" is 1.5, "2.718" to INT32 is 2
// and 2147483648 wraps to -2147483648; ONNX's reference evaluator reads with
// Python's float() and int(), which refuse all three. GraphServe answers what
// both answer and refuses, with a message, what they disagree on:
//   - integer types: optional sign and decimal digits, nothing else (no
//     fraction, exponent, hex or digit separator); a value the type cannot
//     hold is refused, never wrapped;
//   - float types: decimal or scientific text, "NaN", "INF" and "Infinity"
//     with an optional sign, in any case; read as the nearest double, then
//     rounded to the type (onnxruntime and numpy both go through a double;
//     float16 and bfloat16 through a float too, as onnxruntime does), so
//     "1e50" is INF in FP32; text beyond a double's range ("1e400") is
//     refused, as onnxruntime refuses it;
//   - surrounding ASCII whitespace is ignored (both skip it);
//   - BOOL has no text: from STRING onnxruntime reads an integer ("0" false)
//     and the reference any non-empty string as true ("0" true), so import
//     refuses the Cast.
// The other direction, a number as text, is onnxruntime's exactly, since that
// is what a Triton client of the same model reads: integers in decimal, BOOL
// "1" or "0", floats "NaN", "INF", "-INF", else printf's "%.8g" of the value
// as a double ("0.1", "1e+10", "9.9999997e-05", "-0"); float16 and bfloat16
// widened to float first. ONNX's reference evaluator writes numpy's str
// instead ("1.0", "True", "nan"): for integers the two agree.

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/dtype_table.h"

namespace graphserve {

// Reads `text` as one `dtype` number into `out` (DTypeSize(dtype) bytes, the
// host's order) by Note [Number text]. InvalidArgument otherwise, whose
// message is a clause to follow the quoted text, which it does not quote
// (the caller quotes a client's text its own way): "is not a decimal
// integer", "is outside the range of INT32 (-2147483648 to 2147483647)".
absl::Status ParseNumberText(absl::string_view text, DType dtype, std::byte* out);

// Appends the text of the `dtype` element at `element` to `out`, as
// onnxruntime's Cast to STRING writes it (Note [Number text]).
void AppendNumberText(const std::byte* element, DType dtype, std::string* out);

}  // namespace graphserve
