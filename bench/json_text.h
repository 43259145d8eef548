#pragma once
// The two JSON scalars the benchmarks' result files need, written by hand
// (the files are small and flat, so no JSON library).

#include <string>

namespace graphserve {

// `text` as a JSON string, quoted and escaped.
std::string JsonString(const std::string& text);

// `value` with three decimals; "null" for NaN and infinity, which JSON lacks.
std::string JsonNumber(double value);

}  // namespace graphserve
