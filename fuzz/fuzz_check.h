#pragma once
// What a fuzz target does when an invariant breaks: print why and abort, so
// that libFuzzer (and the corpus tests) record a crash with the reason. A
// target returns normally for every input the code under test rejects
// cleanly; only a sanitizer report or a FUZZ_CHECK failure is a finding.

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition, why)                                                   \
  do {                                                                               \
    if (!(condition)) {                                                              \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: %s\n", __FILE__, __LINE__, \
                   #condition, why);                                                 \
      std::abort();                                                                  \
    }                                                                                \
  } while (false)
