#pragma once
// The two JSON scalars GraphServe's hand-written JSON needs (benchmark
// records, `select --json`, schedules): the documents are small and flat, so
// no JSON library.

#include <string>

#include "absl/strings/string_view.h"

namespace graphserve {

// `text` as a JSON string, quoted and escaped.
std::string JsonString(absl::string_view text);

// `value` with three decimals; "null" for NaN and infinity, which JSON lacks.
std::string JsonNumber(double value);

}  // namespace graphserve
