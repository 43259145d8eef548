#!/usr/bin/env python3
"""Tests of the pure parts of bench/run_runtime_bench.py and
bench/export_models.py: model selection, the CNN and multi-lane schedule
rows, tables, target and flag lines and failure rules. They need neither a GPU nor PyTorch: where torch or numpy
is not installed, an empty stand-in module is imported in its place (nothing
tested here calls them).

  python3 bench/run_runtime_bench_test.py
"""

import math
import os
import sys
import types
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _stand_in(name):
    """An empty module for `name` when it cannot be imported: enough for
    export_models' class definitions (nn.Module as a base, the BatchNorm
    classes as names)."""
    try:
        __import__(name)
        return
    except ImportError:
        pass
    module = types.ModuleType(name)
    if name == "torch":
        nn = types.ModuleType("torch.nn")
        for cls in ("Module", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d"):
            setattr(nn, cls, type(cls, (), {}))
        module.nn = nn
        sys.modules["torch.nn"] = nn
    sys.modules[name] = module


_stand_in("numpy")
_stand_in("torch")
import export_models  # noqa: E402
import run_runtime_bench as bench  # noqa: E402


def main_row(model, batch, **values):
    """A make_row row (the TF32-off pass) with the keys the CNN row reads."""
    row = dict(model=model, batch=batch, rel_err_ours=1e-6, rel_err_ours_graph=1e-6,
               rel_err_torch=2e-6, rel_err_torch_graph=2e-6, ours_graph_us=900.0,
               torch_graph_us=1000.0, ours_graph_over_torch_graph=0.9)
    row.update(values)
    return row


def schedule(policy, us, lanes=4, identical=True, **values):
    """One entry of a record's "schedules" list, as runtime_bench writes it."""
    entry = dict(policy=policy, lanes=lanes, events=0 if lanes == 1 else 17,
                 graph_compute_us=us, graph_min_us=us, graph_max_us=us,
                 bit_identical_to_single_eager=identical, arena_bytes=4014080)
    entry.update(values)
    return entry


def schedule_record(*entries):
    """A runtime_bench record (batch 1) whose single-lane keys are those
    without --schedules, with the given "schedules" entries."""
    return dict(model="googlenet", batch=1, graph_compute_us=2297.0, graph_min_us=2284.0,
                graph_max_us=2316.0, schedules=list(entries))


# Shaped like googlenet B=1 on the H100 (bench/results/
# 2026-11-23_0a1befb_multistream_h100: every policy timed, auto chose asap),
# with round times so that the ratios are exact.
GOOGLENET_SCHEDULES = (
    schedule("single", 2000.0, lanes=1),
    schedule("wavefront", 1250.0),
    schedule("asap", 1000.0),
    schedule("auto", 1010.0, chosen="asap"),
)


class ModelSelectionTest(unittest.TestCase):
    def test_groups_names_order_and_repeats(self):
        self.assertEqual(export_models.resolve_models("default"), list(export_models.MODEL_NAMES))
        self.assertEqual(export_models.resolve_models("resnet50,mobilenet_v2"),
                         ["resnet50", "mobilenet_v2"])
        self.assertEqual(export_models.resolve_models("mlp,cnn,resnet50,"),
                         ["mlp", "resnet50", "inception_v3", "mobilenet_v2", "efficientnet_b0",
                          "googlenet"])
        self.assertEqual(export_models.resolve_models("all"), list(export_models.SPECS))
        self.assertEqual(export_models.resolve_models("multistream"),
                         ["inception_v3", "googlenet", "resnet50", "multi_tower", "dlrm_dense",
                          "encoder"])

    def test_every_group_names_known_models(self):
        for group, names in export_models.MODEL_GROUPS.items():
            self.assertLessEqual(set(names), set(export_models.SPECS), group)

    def test_unknown_names_are_named(self):
        with self.assertRaisesRegex(ValueError, r"\['resnet18'\]"):
            export_models.resolve_models("resnet50,resnet18")

    def test_existing_models_keep_their_input_seed_index(self):
        # run_runtime_bench.make_inputs seeds with the index in ALL_MODEL_NAMES.
        self.assertEqual(export_models.ALL_MODEL_NAMES[:9],
                         ("mlp", "dlrm_dense", "encoder", "resnet50", "inception_v3",
                          "mobilenet_v2", "efficientnet_b0", "googlenet", "multi_tower"))

    def test_googlenet_is_a_cnn_and_multi_tower_is_not(self):
        self.assertIn("googlenet", export_models.CNN_NAMES)
        self.assertNotIn("multi_tower", export_models.CNN_NAMES)
        self.assertNotIn("multi_tower", export_models.MODEL_NAMES)  # not exported by default
        spec = export_models.SPECS["multi_tower"]
        self.assertEqual(spec.inputs, [("x", (256,))])
        self.assertEqual(spec.output_names, ["y"])

    def test_cnn_interfaces(self):
        for name, side in (("resnet50", 224), ("inception_v3", 299), ("mobilenet_v2", 224),
                           ("efficientnet_b0", 224), ("googlenet", 224)):
            spec = export_models.SPECS[name]
            self.assertEqual(spec.inputs, [("x", (3, side, side))], name)
            self.assertEqual(spec.output_names, ["y"], name)
        seeds = [spec.seed for spec in export_models.SPECS.values()]
        self.assertEqual(len(seeds), len(set(seeds)))

    def parse_args(self, *flags):
        argv = sys.argv
        try:
            sys.argv = ["run_runtime_bench.py", "--bin", "b", "--out", "o", *flags]
            return bench.parse_args()
        finally:
            sys.argv = argv

    def test_parse_args_models_and_sizes(self):
        args = self.parse_args("--models", "cnn", "--batch-sizes", "1,3,8,32",
                               "--tf32-batch-sizes", "")
        self.assertEqual(args.models, list(export_models.CNN_NAMES))
        self.assertEqual(args.batch_sizes, [1, 3, 8, 32])
        self.assertEqual(args.tf32_batch_sizes, [])
        self.assertEqual(args.schedules, ["single"])

    def test_parse_args_schedules(self):
        args = self.parse_args("--schedules", "single,asap,auto,asap")
        self.assertEqual(args.schedules, ["single", "asap", "auto"])
        with open(os.devnull, "w") as devnull:
            stderr = sys.stderr
            sys.stderr = devnull  # argparse's usage message
            try:
                for bad in ("single,fastest", ","):
                    with self.assertRaises(SystemExit, msg=bad):
                        self.parse_args("--schedules", bad)
            finally:
                sys.stderr = stderr


class CnnRowTest(unittest.TestCase):
    def test_tf32_pass_measured(self):
        row = bench.make_cnn_row(
            main_row("resnet50", 8), dict(torch_graph_us_tf32=500.0, rel_err_torch_graph_tf32=3e-4),
            dict(graph_compute_us=450.0), 2e-4, 2.5e-4)
        self.assertEqual(row["ours_over_torch"], 0.9)
        self.assertEqual(row["ours_over_torch_tf32"], 0.9)
        self.assertEqual(row["ours_graph_us_tf32"], 450.0)
        self.assertEqual(row["rel_err_ours_graph_tf32"], 2.5e-4)
        self.assertEqual(row["ratio_target"], 1.0)

    def test_no_tf32_pass_leaves_none(self):
        row = bench.make_cnn_row(main_row("resnet50", 3), {}, None, None, None)
        for key in ("ours_graph_us_tf32", "torch_graph_us_tf32", "ours_over_torch_tf32",
                    "rel_err_ours_tf32", "rel_err_ours_graph_tf32"):
            self.assertIsNone(row[key], key)
        self.assertIsNone(row["ratio_target"])  # B=3: reported only

    def test_summary_lines(self):
        rows = [
            bench.make_cnn_row(main_row("mobilenet_v2", 1, ours_graph_over_torch_graph=1.25),
                               dict(torch_graph_us_tf32=100.0), dict(graph_compute_us=80.0),
                               1e-3, 1e-3),
            bench.make_cnn_row(main_row("mobilenet_v2", 8), {}, None, None, None),
            bench.make_cnn_row(main_row("mobilenet_v2", 32), {}, None, None, None),
        ]
        summary = bench.cnn_summary(rows)
        self.assertEqual([(s["batch"], s["tf32"], s["meets"]) for s in summary],
                         [(1, False, False), (1, True, True), (8, False, True), (8, True, None)])
        lines = bench.cnn_summary_lines(summary)
        self.assertEqual(lines, [
            "mobilenet_v2, TF32 off: ours graph / torch graph (target <= 1.0, reported only): "
            "B=1 1.25 (MISSES), B=8 0.90 (meets)",
            "mobilenet_v2, TF32 on: ours graph / torch graph (target <= 1.0, reported only): "
            "B=1 0.80 (meets), B=8 not measured",
        ])


class ScheduleRowTest(unittest.TestCase):
    def test_no_row_without_two_schedules(self):
        row = main_row("googlenet", 1)
        self.assertIsNone(bench.make_schedule_row(row, None))
        self.assertIsNone(bench.make_schedule_row(row, dict(graph_compute_us=900.0)))
        self.assertIsNone(bench.make_schedule_row(row, schedule_record(schedule("asap", 800.0))))

    def test_every_policy_measured(self):
        row = bench.make_schedule_row(main_row("googlenet", 1, torch_graph_us=1600.0),
                                      schedule_record(*GOOGLENET_SCHEDULES))
        self.assertEqual(row["policies"], ["single", "wavefront", "asap", "auto"])
        self.assertEqual((row["single_lanes"], row["asap_lanes"]), (1, 4))
        self.assertEqual(row["wavefront_us"], 1250.0)
        self.assertEqual(row["wavefront_speedup"], 1.6)
        self.assertEqual(row["asap_speedup"], 2.0)
        self.assertEqual(row["auto_chosen"], "asap")
        self.assertAlmostEqual(row["auto_over_single"], 0.505)
        # auto replays asap's schedule: the best is a policy of its own.
        self.assertEqual((row["best_policy"], row["best_us"], row["best_speedup"]),
                         ("asap", 1000.0, 2.0))
        self.assertEqual(row["best_over_torch_graph"], 0.625)
        self.assertEqual(row["single_over_torch_graph"], 1.25)
        self.assertEqual(row["not_bit_identical"], [])
        lines = bench.schedule_summary_lines([row])
        self.assertEqual(lines, ["googlenet B=1: best policy asap, 2.00x single "
                                 "(1000.0 us vs 2000.0 us)"])

    def test_without_single_or_torch_graph(self):
        row = bench.make_schedule_row(
            main_row("multi_tower", 8, torch_graph_us=None),
            schedule_record(schedule("wavefront", 300.0), schedule("asap", 250.0)))
        self.assertIsNone(row["asap_speedup"])
        self.assertEqual((row["best_policy"], row["best_speedup"]), ("asap", None))
        self.assertIsNone(row["auto_over_single"])
        self.assertIsNone(row["best_over_torch_graph"])
        self.assertEqual(bench.schedule_summary_lines([row]), [
            "multi_tower B=8: best policy asap (250.0 us); speedup over single not measured"])

    def test_auto_slower_than_single_is_flagged(self):
        def lines(auto_us):
            row = bench.make_schedule_row(main_row("resnet50", 8), schedule_record(
                schedule("single", 1000.0, lanes=1), schedule("asap", 1100.0),
                schedule("auto", auto_us, lanes=1, chosen="single")))
            return bench.schedule_summary_lines([row])

        self.assertEqual(len(lines(1020.0)), 1)  # 2% slower: within auto's margin
        flagged = lines(1030.0)
        self.assertEqual(len(flagged), 2)
        self.assertEqual(flagged[0], "resnet50 B=8: best policy single, 1.00x single "
                                     "(1000.0 us vs 1000.0 us)")
        self.assertTrue(flagged[1].startswith(
            "AUTO SLOWER THAN SINGLE BY >2%: resnet50 B=8: auto (chose single) 1030.0 us vs "
            "single 1000.0 us"), flagged[1])

    def test_missing_times_give_no_ratios(self):
        row = bench.make_schedule_row(main_row("encoder", 1), schedule_record(
            schedule("single", None, lanes=1), schedule("asap", 0.0)))
        self.assertIsNone(row["best_policy"])
        self.assertIsNone(row["asap_speedup"])
        self.assertEqual(bench.schedule_summary_lines([row]),
                         ["encoder B=1: best policy not measured"])

    def test_table_only_with_schedule_rows(self):
        rows = [main_row("googlenet", 1, torch_graph_us=1600.0)]
        report, _, _ = bench.render_report(rows, ["googlenet"], "HEADER\n")
        self.assertNotIn("Multi-lane schedules", report)

        schedule_rows = [bench.make_schedule_row(rows[0], schedule_record(*GOOGLENET_SCHEDULES))]
        header = bench.schedule_report_header(["single", "wavefront", "asap", "auto"])
        report, _, _ = bench.render_report(rows, ["googlenet"], "HEADER\n", (), "",
                                           schedule_rows, header)
        self.assertIn(header, report)
        self.assertIn("| model | B | single lanes | single us | wavefront lanes | wavefront us | "
                      "wavefront speedup | asap lanes | asap us | asap speedup | auto lanes | "
                      "auto us | auto speedup | auto chose | auto / single | best | best speedup | "
                      "torch graph us | best / torch graph | single / torch graph | "
                      "bit-identical |", report)
        self.assertIn("| googlenet | 1 | 1 | 2000.0 | 4 | 1250.0 | 1.60 | 4 | 1000.0 | 2.00 | 4 | "
                      "1010.0 | 1.98 | asap | 0.505 | asap | 2.00 | 1600.0 | 0.62 | 1.25 | yes |",
                      report)
        self.assertIn("googlenet B=1: best policy asap, 2.00x single", report)

    def test_columns_follow_the_policies_measured(self):
        row = bench.make_schedule_row(main_row("mlp", 1), schedule_record(
            schedule("single", 100.0, lanes=1), schedule("wavefront", 100.0, lanes=1)))
        headings = [heading for heading, _, _ in bench.schedule_columns([row])]
        self.assertNotIn("asap us", headings)
        self.assertNotIn("auto chose", headings)
        self.assertNotIn("single speedup", headings)  # always 1
        self.assertIn("wavefront speedup", headings)


class FailuresTest(unittest.TestCase):
    def rows(self, err=1e-6, graph_err=1e-6):
        return [dict(model="resnet50", batch=1, rel_err_ours=err, rel_err_ours_graph=graph_err)]

    def test_tolerance_and_nan_fail_without_tf32(self):
        self.assertEqual(bench.failures(self.rows(), 1e-4), [])
        self.assertEqual(len(bench.failures(self.rows(err=2e-4), 1e-4)), 1)
        self.assertEqual(len(bench.failures(self.rows(graph_err=math.nan), 1e-4)), 1)
        self.assertEqual(len(bench.failures(self.rows(err=None), 1e-4)), 1)

    def test_tf32_errors_are_reported_and_only_nan_fails(self):
        large = bench.make_cnn_row(main_row("resnet50", 1), {}, {}, 5e-3, 5e-3)
        self.assertEqual(bench.failures(self.rows(), 1e-4, [large]), [])
        not_run = bench.make_cnn_row(main_row("resnet50", 3), {}, None, None, None)
        self.assertEqual(bench.failures(self.rows(), 1e-4, [not_run]), [])
        nan = bench.make_cnn_row(main_row("resnet50", 8), {}, {}, 1e-3, math.nan)
        bad = bench.failures(self.rows(), 1e-4, [nan])
        self.assertEqual(len(bad), 1)
        self.assertIn("resnet50 B=8: rel err ours graph with TF32 is NaN", bad[0])

    def test_not_bit_identical_schedule_fails(self):
        identical = bench.make_schedule_row(main_row("googlenet", 1),
                                            schedule_record(*GOOGLENET_SCHEDULES))
        self.assertEqual(bench.failures(self.rows(), 1e-4, (), [identical]), [])
        differs = bench.make_schedule_row(main_row("googlenet", 8), schedule_record(
            schedule("single", 3000.0, lanes=1), schedule("wavefront", 1900.0, identical=False),
            schedule("auto", 1950.0, chosen="wavefront", identical=False)))
        self.assertEqual(differs["not_bit_identical"], ["wavefront", "auto"])
        bad = bench.failures(self.rows(), 1e-4, (), [differs])
        self.assertEqual(bad, [
            "googlenet B=8: the wavefront schedule's replay is NOT BIT-IDENTICAL to the "
            "single-lane eager run",
            "googlenet B=8: the auto schedule's replay is NOT BIT-IDENTICAL to the "
            "single-lane eager run"])
        lines = bench.schedule_summary_lines([differs])
        self.assertIn("NOT BIT-IDENTICAL: googlenet B=8: wavefront, auto: the replay's outputs "
                      "differ from the single-lane eager run's (fails the run)", lines)
        report, _, _ = bench.render_report([main_row("googlenet", 8)], ["googlenet"], "H\n",
                                           (), "", [differs], "SCHEDULES\n")
        self.assertIn("| NO: wavefront, auto |", report)


class ReportTest(unittest.TestCase):
    def test_cnn_table_only_with_cnn_rows(self):
        rows = [dict(model="mlp", batch=1, ours_graph_over_torch_graph=0.5)]
        report, _, cnn = bench.render_report(rows, ["mlp"], "HEADER\n")
        self.assertNotIn("CNN", report)
        self.assertEqual(cnn, [])

        cnn_rows = [bench.make_cnn_row(main_row("resnet50", 1), dict(torch_graph_us_tf32=400.0),
                                       dict(graph_compute_us=300.0), 1e-3, 1e-3)]
        header = bench.cnn_report_header(False, [1, 8, 32], 1e-4)
        self.assertIn("torch.backends.cudnn.benchmark = True", header)
        report, _, cnn = bench.render_report(rows, ["mlp"], "HEADER\n", cnn_rows, header)
        self.assertIn(header, report)
        self.assertIn("| resnet50 | 1 | 1.00e-06 | 1.00e-06 | 2.00e-06 | 900.0 | 1000.0 | 0.90 | "
                      "300.0 | 400.0 | 0.75 | 1.00e-03 | - | 1.0 |", report)
        self.assertIn("resnet50, TF32 on: ours graph / torch graph", report)
        self.assertEqual(len(cnn), 2)

    def test_main_header_states_cudnn_benchmark(self):
        header = bench.report_header("H100", "2.11", False, 100, 10, 1e-4, "now")
        self.assertIn("cudnn.benchmark = True", header)


if __name__ == "__main__":
    unittest.main()
