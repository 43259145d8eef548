#!/usr/bin/env python3
"""Reads what bench/gpu_check.sh's steps print, so that a step fails on what
it did, not only on its exit code. Standard library only (the GPU machine's
python3 runs it; its tests, bench/gpu_check_parse_test.py, run anywhere).

  gpu_check_parse.py gtest FILE [--expect-executor cuda]
      FILE: a gtest binary's full output (no --gtest_brief). Prints it
      without the per-test "[ RUN      ]" / "[       OK ]" lines, then a
      verdict. Fails when a test skipped (on the GPU machine a skip means the
      test did not see the GPU; the skipped tests are named), when the
      summary line is missing or no test ran, or, with --expect-executor,
      when no line "e2e executor: NAME" says NAME, or one names another.
  gpu_check_parse.py conformance FILE --min-passed N [--min-by-opset 13:344,...]
      FILE: onnx_conformance's output. Fails unless its last "P passed,
      F failed" line has P >= N and F == 0, and, with --min-by-opset, its
      "passed by opset:" line has at least each OPSET:FLOOR's passes: an
      opset's semantics lost fails even where the total still clears N.
  gpu_check_parse.py examples FILE --executor cuda [--models mlp,dlrm_dense]
          [--batch-sizes 1,16,256] [--max-rel-err 1e-5]
      FILE: run_example_models' output. Fails unless its "executor:" line
      names the executor, each model has a row per batch size whose "rel err
      vs host" is a number <= the bound (a "-" there means no host check ran)
      and whose first outputs are finite, and nothing anywhere reads NaN or
      inf.

Exit status: 0 when the check passes, 1 when it fails, 2 on bad usage or an
unreadable FILE.
"""

import argparse
import math
import re
import sys

# --- gtest ---

_GTEST_PER_TEST = re.compile(r"^\[ +(RUN|OK) +\] ")
_GTEST_SKIPPED_TEST = re.compile(r"^\[  SKIPPED \] (\S+?)(?:, where .*)?(?: \(\d+ ms\))?$")
_GTEST_SKIPPED_COUNT = re.compile(r"^\[  SKIPPED \] (\d+) tests?(?:, listed below:|\.)$")
_GTEST_RAN = re.compile(r"^\[==========\] (\d+) tests? from \d+ test (?:suites?|cases?) ran\.")
_GTEST_PASSED = re.compile(r"^\[  PASSED  \] (\d+) tests?\.")
_GTEST_FAILED_TEST = re.compile(r"^\[  FAILED  \] (\S+?)(?:, where .*)?(?: \(\d+ ms\))?$")
_EXECUTOR_LINE = re.compile(r"^\s*e2e executor:\s*(\S+)", re.IGNORECASE)


def condense_gtest(text):
    """The output without gtest's per-test RUN and OK lines."""
    return "".join(line for line in text.splitlines(keepends=True)
                   if not _GTEST_PER_TEST.match(line))


def parse_gtest(text):
    """What a gtest binary's output says: dict(ran, passed, skipped,
    skipped_tests, failed_tests, executors). ran / passed are None without
    their summary lines; skipped is the larger of the summary's count and
    the named skips (a brief output names none); executors lists the values
    of "e2e executor: NAME" lines, in order."""
    ran = passed = None
    skipped_count = 0
    skipped_tests = []
    failed_tests = []
    executors = []
    for raw in text.splitlines():
        line = raw.rstrip()
        match = _GTEST_RAN.match(line)
        if match:
            ran = int(match.group(1))
            continue
        match = _GTEST_PASSED.match(line)
        if match:
            passed = int(match.group(1))
            continue
        match = _GTEST_SKIPPED_COUNT.match(line)
        if match:
            skipped_count = max(skipped_count, int(match.group(1)))
            continue
        match = _GTEST_SKIPPED_TEST.match(line)
        if match:
            if match.group(1) not in skipped_tests:
                skipped_tests.append(match.group(1))
            continue
        match = _GTEST_FAILED_TEST.match(line)
        if match and not re.match(r"^\d+$", match.group(1)):
            if match.group(1) not in failed_tests:
                failed_tests.append(match.group(1))
            continue
        match = _EXECUTOR_LINE.match(line)
        if match:
            executors.append(match.group(1))
    return dict(ran=ran, passed=passed, skipped=max(skipped_count, len(skipped_tests)),
                skipped_tests=skipped_tests, failed_tests=failed_tests, executors=executors)


def check_gtest(result, expect_executor=None):
    """Problems (a list of strings, empty when it passes) of a parse_gtest
    result on the GPU machine."""
    problems = []
    if result["ran"] is None:
        problems.append("no gtest summary line ('[==========] N tests from ... ran.'): "
                        "the binary did not finish")
    elif result["ran"] == 0:
        problems.append("0 tests ran")
    if result["skipped"]:
        names = ", ".join(result["skipped_tests"]) or "names not printed (--gtest_brief?)"
        problems.append(f"{result['skipped']} test(s) skipped on the GPU machine: {names}")
    if result["failed_tests"]:
        problems.append(f"failed: {', '.join(result['failed_tests'])}")
    if expect_executor is not None:
        executors = result["executors"]
        if not executors:
            problems.append(f"no line 'e2e executor: {expect_executor}' in the output: "
                            f"nothing shows which executor the suite ran on")
        else:
            others = sorted({e for e in executors if e.lower() != expect_executor.lower()})
            if others:
                problems.append(f"the suite ran on {', '.join(others)}, not on {expect_executor}")
    return problems


# --- onnx_conformance ---

_CONFORMANCE_TOTALS = re.compile(r"^\s*(\d+) passed, (\d+) failed\s*$")
_CONFORMANCE_SKIPPED = re.compile(r"^\s*(\d+) skipped\s*$")
_CONFORMANCE_BY_OPSET = re.compile(r"^passed by opset:(.*)$")


def opset_counts(text):
    """{opset: count} from "OPSET:COUNT" pairs split by spaces or commas."""
    pairs = [pair for pair in re.split(r"[\s,]+", text.strip()) if pair]
    return {int(opset): int(count) for opset, count in (pair.split(":") for pair in pairs)}


def parse_conformance(text):
    """dict(passed, failed, skipped, by_opset) from onnx_conformance's output:
    the last "P passed, F failed" line (None, None without one), "K skipped"
    and the last "passed by opset:" line ({} without one)."""
    passed = failed = skipped = None
    by_opset = {}
    for line in text.splitlines():
        match = _CONFORMANCE_TOTALS.match(line)
        if match:
            passed, failed = int(match.group(1)), int(match.group(2))
            continue
        match = _CONFORMANCE_SKIPPED.match(line)
        if match:
            skipped = int(match.group(1))
            continue
        match = _CONFORMANCE_BY_OPSET.match(line)
        if match:
            by_opset = opset_counts(match.group(1))
    return dict(passed=passed, failed=failed, skipped=skipped, by_opset=by_opset)


def check_conformance(result, min_passed, min_by_opset=None):
    problems = []
    if result["passed"] is None:
        return ["no 'N passed, M failed' line: the suite did not finish"]
    if result["failed"]:
        problems.append(f"{result['failed']} test(s) failed")
    if result["passed"] < min_passed:
        problems.append(f"only {result['passed']} passed, fewer than the {min_passed} of the "
                        f"last committed results: tests went missing or stopped running")
    for opset, floor in sorted((min_by_opset or {}).items()):
        passed = result["by_opset"].get(opset, 0)
        if passed < floor:
            problems.append(f"opset {opset}: {passed} passed, fewer than its floor {floor}")
    return problems


# --- run_example_models ---

_NON_FINITE = re.compile(r"(?<![A-Za-z])[-+]?(?:nan|inf(?:inity)?)(?![A-Za-z])", re.IGNORECASE)
_EXAMPLE_EXECUTOR = re.compile(r"^executor:\s*(.*)$")
_EXAMPLE_MODEL = re.compile(r"^(\S+)\s+\(inputs:")
_EXAMPLE_ROW = re.compile(r"^\s*(\d+)\s+(\S+)\s+(\S+)\s*(.*)$")


def _float(text):
    try:
        return float(text)
    except ValueError:
        return None


def parse_examples(text):
    """dict(executor, models, non_finite) from run_example_models' output:
    executor is the rest of its "executor:" line (None without one), models
    maps each model to {batch: dict(median_us, rel_err, rel_err_text,
    first)}, first being the printed first outputs as floats (None for a
    token that is not a number), non_finite the lines that read NaN or inf."""
    executor = None
    models = {}
    current = None
    non_finite = []
    for line in text.splitlines():
        if _NON_FINITE.search(line):
            non_finite.append(line.strip())
        match = _EXAMPLE_EXECUTOR.match(line)
        if match:
            executor = match.group(1).strip()
            continue
        match = _EXAMPLE_MODEL.match(line)
        if match:
            current = models.setdefault(match.group(1), {})
            continue
        match = _EXAMPLE_ROW.match(line)
        if match and current is not None:
            current[int(match.group(1))] = dict(
                median_us=_float(match.group(2)),
                rel_err=_float(match.group(3)),
                rel_err_text=match.group(3),
                first=[_float(token) for token in match.group(4).split()])
    return dict(executor=executor, models=models, non_finite=non_finite)


def check_examples(result, executor, models, batch_sizes, max_rel_err):
    problems = []
    printed = result["executor"]
    if printed is None:
        problems.append("no 'executor:' line")
    elif not printed.lower().startswith(executor.lower()):
        problems.append(f"ran on '{printed}', not on {executor}")
    for line in result["non_finite"]:
        problems.append(f"NaN or inf in: {line}")
    for model in models:
        rows = result["models"].get(model)
        if rows is None:
            problems.append(f"no section for {model}")
            continue
        for batch in batch_sizes:
            row = rows.get(batch)
            where = f"{model} batch {batch}"
            if row is None:
                problems.append(f"{where}: no row")
                continue
            if row["median_us"] is None or not math.isfinite(row["median_us"]):
                problems.append(f"{where}: median us is not a number")
            err = row["rel_err"]
            if err is None:
                problems.append(f"{where}: rel err vs host is '{row['rel_err_text']}', "
                                f"not a number (no host check ran)")
            elif not err <= max_rel_err:
                problems.append(f"{where}: rel err vs host {err:.2e} > {max_rel_err:g}")
            if not row["first"] or any(v is None or not math.isfinite(v) for v in row["first"]):
                problems.append(f"{where}: first outputs not all finite numbers")
    return problems


# --- graphserve-capture prepare's report (for bench/cnn_bench.py) ---

_PREPARE_GRAPHS = re.compile(
    r"(\d+) graphs \((\d+) sizes(?: x \d+ buckets)? x (\d+) streams\) captured and checked in "
    r"([\d.]+) ms: "
    r"capture ([\d.]+) ms, checks ([\d.]+) ms.*?worst replay-vs-eager relative error (\S+)")
_PREPARE_WEIGHTS = re.compile(r"^memory: weights ([\d.]+) MiB", re.MULTILINE)
_PREPARE_ACTIVATIONS = re.compile(
    r"activation memory of all \d+ graphs: ([\d.]+) MiB with one arena per slot, "
    r"([\d.]+) MiB with one per graph")


def parse_prepare_report(text):
    """The numbers of a capture_report.txt that a results table wants; a key
    is None when its line is missing (the report's format moved on)."""
    result = dict(graphs=None, sizes=None, streams=None, setup_ms=None, capture_ms=None,
                  check_ms=None, worst_check_rel_err=None, weights_mib=None,
                  activations_shared_mib=None, activations_unshared_mib=None)
    match = _PREPARE_GRAPHS.search(text)
    if match:
        result.update(graphs=int(match.group(1)), sizes=int(match.group(2)),
                      streams=int(match.group(3)), setup_ms=float(match.group(4)),
                      capture_ms=float(match.group(5)), check_ms=float(match.group(6)),
                      worst_check_rel_err=_float(match.group(7)))
    match = _PREPARE_WEIGHTS.search(text)
    if match:
        result["weights_mib"] = float(match.group(1))
    match = _PREPARE_ACTIVATIONS.search(text)
    if match:
        result.update(activations_shared_mib=float(match.group(1)),
                      activations_unshared_mib=float(match.group(2)))
    return result


# --- command line ---

def _int_list(text):
    return [int(part) for part in text.split(",") if part]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    gtest = commands.add_parser("gtest")
    gtest.add_argument("file")
    gtest.add_argument("--expect-executor", default=None)
    conformance = commands.add_parser("conformance")
    conformance.add_argument("file")
    conformance.add_argument("--min-passed", type=int, required=True)
    conformance.add_argument("--min-by-opset", type=opset_counts, default={})
    examples = commands.add_parser("examples")
    examples.add_argument("file")
    examples.add_argument("--executor", required=True)
    examples.add_argument("--models", default="mlp,dlrm_dense")
    examples.add_argument("--batch-sizes", type=_int_list, default=[1, 16, 256])
    examples.add_argument("--max-rel-err", type=float, default=1e-5)
    args = parser.parse_args(argv)
    try:
        with open(args.file, errors="replace") as f:
            text = f.read()
    except OSError as error:
        print(f"gpu_check_parse: {error}", file=sys.stderr)
        return 2

    if args.command == "gtest":
        sys.stdout.write(condense_gtest(text))
        result = parse_gtest(text)
        problems = check_gtest(result, args.expect_executor)
        summary = (f"gtest: {result['ran']} ran, {result['passed']} passed, "
                   f"{result['skipped']} skipped, {len(result['failed_tests'])} failed")
        if args.expect_executor is not None:
            summary += f"; e2e executor: {', '.join(sorted(set(result['executors']))) or '?'}"
    elif args.command == "conformance":
        sys.stdout.write(text)
        result = parse_conformance(text)
        problems = check_conformance(result, args.min_passed, args.min_by_opset)
        summary = (f"conformance: {result['passed']} passed (minimum {args.min_passed}), "
                   f"{result['failed']} failed, {result['skipped']} skipped")
        if result["passed"] is not None and result["passed"] > args.min_passed:
            summary += (f"; more than the minimum: raise it to {result['passed']} in "
                        f"bench/gpu_check.sh once these results are committed")
    else:
        sys.stdout.write(text)
        result = parse_examples(text)
        models = [m for m in args.models.split(",") if m]
        problems = check_examples(result, args.executor, models, args.batch_sizes,
                                  args.max_rel_err)
        rows = sum(len(rows) for rows in result["models"].values())
        summary = f"examples: executor '{result['executor']}', {rows} rows"
    if text and not text.endswith("\n"):
        print()
    print(summary)
    for problem in problems:
        print(f"CHECK FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
