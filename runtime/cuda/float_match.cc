#include "runtime/cuda/float_match.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace graphserve {

::testing::AssertionResult MatchesReference(const std::vector<float>& got,
                                            const std::vector<float>& want, double rtol,
                                            const std::vector<float>& scale) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << "sizes " << got.size() << " vs " << want.size();
  }
  int64_t mismatches = 0;
  std::string examples;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i];
    const double w = want[i];
    bool ok;
    if (std::isnan(w)) {
      ok = std::isnan(g);
    } else if (std::isinf(w)) {
      ok = g == w;
    } else if (!std::isfinite(g)) {
      ok = false;
    } else if (rtol == 0) {
      ok = g == w;
    } else {
      double magnitude = std::fabs(w);
      if (!scale.empty() && std::isfinite(scale[i]))
        magnitude = std::max(magnitude, std::fabs(double{scale[i]}));
      ok = std::fabs(g - w) <= std::max(rtol * magnitude, double{FLT_MIN});
    }
    if (!ok && ++mismatches <= 5) {
      char line[128];
      std::snprintf(line, sizeof(line), " [%zu] got %.9g want %.9g;", i, g, w);
      examples += line;
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << mismatches << " of " << got.size() << " elements differ:" << examples;
}

}  // namespace graphserve
