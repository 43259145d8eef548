#include "common/statistics.h"

#include <algorithm>
#include <limits>

namespace graphserve {

double Median(std::vector<double> samples) {
  if (samples.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t middle = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + middle, samples.end());
  const double upper = samples[middle];
  if (samples.size() % 2 == 1) return upper;
  // The lower middle value is the largest of the elements before `middle`.
  const double lower = *std::max_element(samples.begin(), samples.begin() + middle);
  return (lower + upper) / 2;
}

}  // namespace graphserve
