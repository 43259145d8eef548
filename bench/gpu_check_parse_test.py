#!/usr/bin/env python3
"""Tests of bench/gpu_check_parse.py on outputs as the real binaries print
them (gtest 1.1x full and brief output, onnx_conformance, run_example_models,
graphserve-capture prepare). Standard library only:

  python3 bench/gpu_check_parse_test.py
"""

import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check_parse as parse  # noqa: E402  (beside this file)

# A GPU test binary run where CUDA is not usable: the failure mode the checks
# exist for (taken from //runtime/cuda:gemm_test on a machine without a GPU).
GTEST_SKIPPED_FULL = """\
Running main() from ./googletest/src/gtest_main.cc
[==========] Running 3 tests from 1 test suite.
[----------] Global test environment set-up.
[----------] 3 tests from Shapes/CublasLtGemmTest
[ RUN      ] Shapes/CublasLtGemmTest.MatchesFloat64Reference/0
runtime/cuda/gemm_test.cc:61: Skipped
no CUDA device on this machine
[  SKIPPED ] Shapes/CublasLtGemmTest.MatchesFloat64Reference/0 (0 ms)
[ RUN      ] Shapes/CublasLtGemmTest.MatchesFloat64Reference/1
[       OK ] Shapes/CublasLtGemmTest.MatchesFloat64Reference/1 (3 ms)
[ RUN      ] Shapes/CublasLtGemmTest.MatchesFloat64Reference/2
runtime/cuda/gemm_test.cc:61: Skipped
no CUDA device on this machine
[  SKIPPED ] Shapes/CublasLtGemmTest.MatchesFloat64Reference/2 (0 ms)
[----------] 3 tests from Shapes/CublasLtGemmTest (3 ms total)

[----------] Global test environment tear-down
[==========] 3 tests from 1 test suite ran. (3 ms total)
[  PASSED  ] 1 test.
[  SKIPPED ] 2 tests, listed below:
[  SKIPPED ] Shapes/CublasLtGemmTest.MatchesFloat64Reference/0
[  SKIPPED ] Shapes/CublasLtGemmTest.MatchesFloat64Reference/2
"""

# --gtest_brief=1 counts skips but names none.
GTEST_SKIPPED_BRIEF = """\
Running main() from ./googletest/src/gtest_main.cc
common/cuda_handles_test.cc:14: Skipped
no CUDA device on this machine
common/cuda_handles_test.cc:14: Skipped
no CUDA device on this machine
[==========] 2 tests from 1 test suite ran. (0 ms total)
[  PASSED  ] 0 tests.
[  SKIPPED ] 2 tests.
"""

GTEST_PASSED = """\
Running main() from ./googletest/src/gtest_main.cc
[==========] Running 2 tests from 1 test suite.
[----------] Global test environment set-up.
[----------] 2 tests from CudaHandlesTest
[ RUN      ] CudaHandlesTest.RoundTripThroughDeviceAndPinnedBuffers
[       OK ] CudaHandlesTest.RoundTripThroughDeviceAndPinnedBuffers (120 ms)
[ RUN      ] CudaHandlesTest.ImpossibleAllocationIsResourceExhausted
[       OK ] CudaHandlesTest.ImpossibleAllocationIsResourceExhausted (1 ms)
[----------] 2 tests from CudaHandlesTest (121 ms total)

[----------] Global test environment tear-down
[==========] 2 tests from 1 test suite ran. (121 ms total)
[  PASSED  ] 2 tests.
"""

GTEST_FAILED = """\
[==========] Running 2 tests from 1 test suite.
[ RUN      ] Sizes/PadAndSplit.MatchesHostExecutorOnTheWholeBatch/0
tests/server_e2e_test.cc:310: Failure
Expected: (error) <= (kTolerance), actual: 0.5 vs 1e-05
[  FAILED  ] Sizes/PadAndSplit.MatchesHostExecutorOnTheWholeBatch/0, where GetParam() = 5 (4 ms)
[ RUN      ] Sizes/PadAndSplit.MatchesHostExecutorOnTheWholeBatch/1
[       OK ] Sizes/PadAndSplit.MatchesHostExecutorOnTheWholeBatch/1 (3 ms)
[==========] 2 tests from 1 test suite ran. (7 ms total)
[  PASSED  ] 1 test.
[  FAILED  ] 1 test, listed below:
[  FAILED  ] Sizes/PadAndSplit.MatchesHostExecutorOnTheWholeBatch/0, where GetParam() = 5

 1 FAILED TEST
"""

CONFORMANCE = """\
test_conv_with_strides_padding: output 0 element 3: got 1.5, expected 2 (tolerance 1e-05)
passed by opset: 7:28 13:147 17:1
756 skipped
176 passed, 1 failed
"""

EXAMPLES_CUDA = """\
executor: CUDA on NVIDIA H200 (latency = stage inputs, copy, run, copy back, sync)

mlp  (inputs: x[-1,512], -1 = batch)
   batch     median us  rel err vs host  first outputs
       1          42.6        0.00e+00  0.498818 
      16          50.2        2.58e-08  0.498929 0.488545 0.496926 0.505590 
     256         107.4        4.69e-08  0.506786 0.505607 0.499969 0.507424 

dlrm_dense  (inputs: dense[-1,13] sparse_emb[-1,26,16], -1 = batch)
   batch     median us  rel err vs host  first outputs
       1          79.9        1.09e-07  0.545151 
      16          77.8        5.71e-08  0.462287 0.499367 0.359736 0.597295 
     256         125.9        8.73e-08  0.529870 0.573442 0.506651 0.515231 
"""

EXAMPLES_HOST = """\
executor: HOST REFERENCE (no GPU found): plain loops, for correctness, not speed

mlp  (inputs: x[-1,512], -1 = batch)
   batch     median us  rel err vs host  first outputs
       1         842.6               -  0.498818 
"""

PREPARE_REPORT = """\
model 'dlrm_dense' from /root/out/models/dlrm_dense.onnx -> /tmp/graphserve-gpu/repo/dlrm_dense
12 graphs (6 sizes x 2 streams) captured and checked in 443.3 ms: capture 6.4 ms, checks 17.0 ms, binding and planning the rest; worst replay-vs-eager relative error 0

latency per launch, all rows, host copies included (median wall time):
| graph | eager us | graph us | eager / graph | graph nodes |
| ---: | ---: | ---: | ---: | ---: |
| 8 | 75.7 | 53.2 | 1.42 | 12 |

memory: weights 1.78 MiB (uploaded once, shared by every slot and size)
| slot | arena (shared by sizes) | arena without sharing | device I/O | pinned staging | GEMM workspace | graph execs |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 0 | 1.57 MiB | 3.31 MiB | 0.42 MiB | 0.42 MiB | 32.00 MiB | < 2 MiB |
activation memory of all 12 graphs: 3.14 MiB with one arena per slot, 6.63 MiB with one per graph (2.11x)
"""


def run_main(args, text):
    """gpu_check_parse.main on `text` in a file: (exit status, stdout)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    try:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = parse.main([args[0], f.name] + args[1:])
        return status, out.getvalue()
    finally:
        os.unlink(f.name)


class GtestTest(unittest.TestCase):
    def test_full_output_names_each_skip_once(self):
        result = parse.parse_gtest(GTEST_SKIPPED_FULL)
        self.assertEqual(result["ran"], 3)
        self.assertEqual(result["passed"], 1)
        self.assertEqual(result["skipped"], 2)
        self.assertEqual(result["skipped_tests"],
                         ["Shapes/CublasLtGemmTest.MatchesFloat64Reference/0",
                          "Shapes/CublasLtGemmTest.MatchesFloat64Reference/2"])
        problems = parse.check_gtest(result)
        self.assertEqual(len(problems), 1)
        self.assertIn("2 test(s) skipped", problems[0])
        self.assertIn("MatchesFloat64Reference/2", problems[0])

    def test_brief_output_counts_skips_without_names(self):
        result = parse.parse_gtest(GTEST_SKIPPED_BRIEF)
        self.assertEqual(result["skipped"], 2)
        self.assertEqual(result["skipped_tests"], [])
        self.assertIn("names not printed", parse.check_gtest(result)[0])

    def test_all_passed_is_clean(self):
        result = parse.parse_gtest(GTEST_PASSED)
        self.assertEqual((result["ran"], result["passed"], result["skipped"]), (2, 2, 0))
        self.assertEqual(parse.check_gtest(result), [])

    def test_failed_parameterised_test_is_named_once(self):
        result = parse.parse_gtest(GTEST_FAILED)
        self.assertEqual(result["failed_tests"],
                         ["Sizes/PadAndSplit.MatchesHostExecutorOnTheWholeBatch/0"])
        self.assertEqual(result["skipped"], 0)

    def test_missing_summary_means_the_binary_did_not_finish(self):
        truncated = GTEST_PASSED.split("[==========] 2 tests from")[0]
        problems = parse.check_gtest(parse.parse_gtest(truncated))
        self.assertIn("did not finish", problems[0])

    def test_zero_tests_fail(self):
        text = "[==========] 0 tests from 0 test suites ran. (0 ms total)\n[  PASSED  ] 0 tests.\n"
        self.assertEqual(parse.check_gtest(parse.parse_gtest(text)), ["0 tests ran"])

    def test_executor_line_required_and_checked(self):
        missing = parse.check_gtest(parse.parse_gtest(GTEST_PASSED), expect_executor="cuda")
        self.assertEqual(len(missing), 1)
        self.assertIn("no line 'e2e executor: cuda'", missing[0])

        on_cuda = "e2e executor: cuda\n" + GTEST_PASSED
        self.assertEqual(parse.check_gtest(parse.parse_gtest(on_cuda), "cuda"), [])

        on_host = "e2e executor: host\n" + GTEST_PASSED
        self.assertIn("ran on host, not on cuda",
                      parse.check_gtest(parse.parse_gtest(on_host), "cuda")[0])

    def test_condense_drops_only_run_and_ok_lines(self):
        condensed = parse.condense_gtest(GTEST_SKIPPED_FULL)
        self.assertNotIn("[ RUN      ]", condensed)
        self.assertNotIn("[       OK ]", condensed)
        self.assertIn("no CUDA device on this machine", condensed)
        self.assertEqual(condensed.count("[  SKIPPED ]"), GTEST_SKIPPED_FULL.count("[  SKIPPED ]"))

    def test_main_exit_status(self):
        status, out = run_main(["gtest"], GTEST_SKIPPED_FULL)
        self.assertEqual(status, 1)
        self.assertIn("CHECK FAILED: 2 test(s) skipped", out)
        self.assertEqual(run_main(["gtest"], GTEST_PASSED)[0], 0)
        self.assertEqual(run_main(["gtest", "--expect-executor", "cuda"], GTEST_PASSED)[0], 1)


class ConformanceTest(unittest.TestCase):
    def test_parses_last_totals(self):
        result = parse.parse_conformance(CONFORMANCE)
        self.assertEqual(result, dict(passed=176, failed=1, skipped=756,
                                      by_opset={7: 28, 13: 147, 17: 1}))

    def test_an_opset_below_its_floor_fails(self):
        clean = dict(parse.parse_conformance(CONFORMANCE), failed=0)
        self.assertEqual(parse.check_conformance(clean, 176, {7: 28, 13: 147}), [])
        problems = parse.check_conformance(clean, 176, {13: 148, 18: 1})
        self.assertEqual(problems, ["opset 13: 147 passed, fewer than its floor 148",
                                    "opset 18: 0 passed, fewer than its floor 1"])
        status, out = run_main(["conformance", "--min-passed", "1", "--min-by-opset", "7:29"],
                               "passed by opset: 7:28\n28 passed, 0 failed\n")
        self.assertEqual(status, 1)
        self.assertIn("opset 7: 28 passed, fewer than its floor 29", out)

    def test_fewer_passed_than_the_minimum_fails(self):
        clean = dict(passed=170, failed=0, skipped=762, by_opset={})
        problems = parse.check_conformance(clean, min_passed=176)
        self.assertEqual(len(problems), 1)
        self.assertIn("only 170 passed", problems[0])
        self.assertEqual(parse.check_conformance(dict(clean, passed=176), 176), [])
        self.assertEqual(parse.check_conformance(dict(clean, passed=180), 176), [])

    def test_failures_and_a_missing_totals_line_fail(self):
        self.assertIn("1 test(s) failed",
                      parse.check_conformance(parse.parse_conformance(CONFORMANCE), 176)[0])
        self.assertIn("did not finish",
                      parse.check_conformance(parse.parse_conformance("756 skipped\n"), 1)[0])

    def test_main_suggests_raising_the_minimum(self):
        status, out = run_main(["conformance", "--min-passed", "170"], "176 passed, 0 failed\n")
        self.assertEqual(status, 0)
        self.assertIn("raise it to 176", out)
        self.assertEqual(run_main(["conformance", "--min-passed", "177"],
                                  "176 passed, 0 failed\n")[0], 1)


class ExamplesTest(unittest.TestCase):
    def check(self, text, **kwargs):
        options = dict(executor="cuda", models=["mlp", "dlrm_dense"], batch_sizes=[1, 16, 256],
                       max_rel_err=1e-5)
        options.update(kwargs)
        return parse.check_examples(parse.parse_examples(text), **options)

    def test_cuda_run_passes(self):
        result = parse.parse_examples(EXAMPLES_CUDA)
        self.assertTrue(result["executor"].startswith("CUDA on NVIDIA H200"))
        self.assertEqual(sorted(result["models"]), ["dlrm_dense", "mlp"])
        self.assertAlmostEqual(result["models"]["mlp"][256]["rel_err"], 4.69e-08)
        self.assertEqual(len(result["models"]["mlp"][16]["first"]), 4)
        self.assertEqual(self.check(EXAMPLES_CUDA), [])

    def test_host_fallback_fails(self):
        problems = self.check(EXAMPLES_HOST, models=["mlp"], batch_sizes=[1])
        self.assertIn("not on cuda", problems[0])
        self.assertTrue(any("no host check ran" in p for p in problems))

    def test_nan_anywhere_fails(self):
        for bad in ("nan", "-nan", "NaN", "inf", "-inf"):
            text = EXAMPLES_CUDA.replace("0.498929 0.488545", f"0.498929 {bad}")
            problems = self.check(text)
            self.assertTrue(any("NaN or inf" in p for p in problems), (bad, problems))
            self.assertTrue(any("mlp batch 16: first outputs" in p for p in problems), bad)
        text = EXAMPLES_CUDA.replace("2.58e-08", "     nan")
        self.assertTrue(any("mlp batch 16: rel err vs host" in p for p in self.check(text)))

    def test_words_holding_nan_or_inf_are_not_values(self):
        text = EXAMPLES_CUDA.replace("(latency =", "(info: nano inference; latency =")
        self.assertEqual(self.check(text), [])

    def test_large_error_and_missing_rows_fail(self):
        problems = self.check(EXAMPLES_CUDA.replace("5.71e-08", "3.00e-03"))
        self.assertEqual(problems, ["dlrm_dense batch 16: rel err vs host 3.00e-03 > 1e-05"])
        problems = self.check(EXAMPLES_CUDA, batch_sizes=[1, 16, 256, 1024])
        self.assertEqual(problems, ["mlp batch 1024: no row", "dlrm_dense batch 1024: no row"])
        self.assertEqual(self.check(EXAMPLES_CUDA, models=["mlp", "encoder"]),
                         ["no section for encoder"])


class PrepareReportTest(unittest.TestCase):
    def test_numbers(self):
        result = parse.parse_prepare_report(PREPARE_REPORT)
        self.assertEqual((result["graphs"], result["sizes"], result["streams"]), (12, 6, 2))
        self.assertEqual(result["setup_ms"], 443.3)
        self.assertEqual(result["capture_ms"], 6.4)
        self.assertEqual(result["check_ms"], 17.0)
        self.assertEqual(result["worst_check_rel_err"], 0.0)
        self.assertEqual(result["weights_mib"], 1.78)
        self.assertEqual(result["activations_shared_mib"], 3.14)
        self.assertEqual(result["activations_unshared_mib"], 6.63)

    def test_missing_lines_give_none(self):
        result = parse.parse_prepare_report("prepare: unsupported op Conv\n")
        self.assertTrue(all(value is None for value in result.values()))


if __name__ == "__main__":
    unittest.main()
