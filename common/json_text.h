#pragma once
// The JSON scalars GraphServe's hand-written JSON needs (benchmark
// records, `select --json`, schedules): the documents are small and flat, so
// no JSON library.

#include <string>

#include "absl/strings/string_view.h"

namespace graphserve {

// `text` as a JSON string, quoted and escaped.
std::string JsonString(absl::string_view text);

// `value` with three decimals; "null" for NaN and infinity, which JSON lacks.
std::string JsonNumber(double value);

// `value` with three significant digits (an error of 5.5e-07 stays one,
// where three decimals would print 0.000); "null" likewise.
std::string JsonSignificant(double value);

}  // namespace graphserve
