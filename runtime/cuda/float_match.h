#pragma once
// The comparison GPU kernel tests make against a host reference.

#include <vector>

#include "gtest/gtest.h"

namespace graphserve {

// Compares got with the reference: NaN exactly where the reference is NaN,
// infinities equal, finite values within rtol * max(|want|, scale[i]) (scale
// empty: |want|), where scale[i] is the magnitude the rounding error grows
// with (the mean of |x| for an average). Values below FLT_MIN carry no
// relative precision and are compared to within FLT_MIN; rtol 0 demands
// equality.
::testing::AssertionResult MatchesReference(const std::vector<float>& got,
                                            const std::vector<float>& want, double rtol,
                                            const std::vector<float>& scale = {});

}  // namespace graphserve
