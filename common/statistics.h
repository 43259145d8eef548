#pragma once
// Summary statistics the benchmarks and the cost table share.

#include <vector>

namespace graphserve {

// The median of `samples` (the mean of the two middle values for an even
// count); NaN for no samples.
double Median(std::vector<double> samples);

}  // namespace graphserve
