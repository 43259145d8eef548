#!/usr/bin/env python3
"""Tests of the pure parts of bench/run_runtime_bench.py and
bench/export_models.py: model selection, the CNN rows, table, target lines
and failure rules. They need neither a GPU nor PyTorch: where torch or numpy
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


class ModelSelectionTest(unittest.TestCase):
    def test_groups_names_order_and_repeats(self):
        self.assertEqual(export_models.resolve_models("default"), list(export_models.MODEL_NAMES))
        self.assertEqual(export_models.resolve_models("resnet50,mobilenet_v2"),
                         ["resnet50", "mobilenet_v2"])
        self.assertEqual(export_models.resolve_models("mlp,cnn,resnet50,"),
                         ["mlp", "resnet50", "inception_v3", "mobilenet_v2", "efficientnet_b0"])
        self.assertEqual(export_models.resolve_models("all"), list(export_models.SPECS))

    def test_unknown_names_are_named(self):
        with self.assertRaisesRegex(ValueError, r"\['resnet18'\]"):
            export_models.resolve_models("resnet50,resnet18")

    def test_existing_models_keep_their_input_seed_index(self):
        # run_runtime_bench.make_inputs seeds with the index in ALL_MODEL_NAMES.
        self.assertEqual(export_models.ALL_MODEL_NAMES[:3], ("mlp", "dlrm_dense", "encoder"))

    def test_cnn_interfaces(self):
        for name, side in (("resnet50", 224), ("inception_v3", 299), ("mobilenet_v2", 224),
                           ("efficientnet_b0", 224)):
            spec = export_models.SPECS[name]
            self.assertEqual(spec.inputs, [("x", (3, side, side))], name)
            self.assertEqual(spec.output_names, ["y"], name)
        seeds = [spec.seed for spec in export_models.SPECS.values()]
        self.assertEqual(len(seeds), len(set(seeds)))

    def test_parse_args_models_and_sizes(self):
        argv = sys.argv
        try:
            sys.argv = ["run_runtime_bench.py", "--bin", "b", "--out", "o", "--models", "cnn",
                        "--batch-sizes", "1,3,8,32", "--tf32-batch-sizes", ""]
            args = bench.parse_args()
        finally:
            sys.argv = argv
        self.assertEqual(args.models, list(export_models.CNN_NAMES))
        self.assertEqual(args.batch_sizes, [1, 3, 8, 32])
        self.assertEqual(args.tf32_batch_sizes, [])


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
