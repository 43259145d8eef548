#!/usr/bin/env python3
"""Tests of bench/nvml_sampler.py's window arithmetic, its files and its first
read of the driver's buffer, with made-up samples (no NVML):

  python3 bench/nvml_sampler_test.py
"""
import csv
import io
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvml_sampler  # noqa: E402  (beside this file)

MS = 1000  # microseconds


def every_100_ms(values, start_us=0):
    """Driver samples 100 ms apart from start_us, the first holding values[0]."""
    return [(start_us + i * 100 * MS, value) for i, value in enumerate(values)]


class WindowArithmeticTest(unittest.TestCase):
    def test_busy_only_inside_the_window_gives_100_percent(self):
        # Periods (500, 1500] ms at 100%, the rest of 0..2000 ms idle.
        driver = [(t, 100 if 500 * MS < t <= 1500 * MS else 0)
                  for t, _ in every_100_ms([0] * 21)]
        line = nvml_sampler.report_line("graphs_on_batching", driver, [],
                                        [(500 * MS, 1500 * MS)])
        self.assertEqual(line, "gpu_busy graphs_on_batching: mean 100.0% over 1.0 s measured "
                               "(1 window, 10 driver samples, every 100 ms); polled mean -; "
                               "whole recording 50.0%")

    def test_a_window_over_half_a_period_weighs_it_by_half(self):
        # Periods (0, 100] at 90% and (100, 200] at 30%; the window takes the
        # second half of the first and the whole second: (50 x 90 + 100 x 30) / 150.
        driver = every_100_ms([0, 90, 30])
        mean, covered, count = nvml_sampler.weighted_mean(nvml_sampler.periods(driver),
                                                          [(50 * MS, 200 * MS)])
        self.assertEqual((mean, covered, count), (50.0, 150 * MS, 2))

    def test_the_first_sample_has_no_period(self):
        self.assertEqual(nvml_sampler.periods([(100 * MS, 100)]), [])
        self.assertEqual(nvml_sampler.periods(every_100_ms([100, 40])), [(0, 100 * MS, 40)])

    def test_two_windows_and_overlapping_ones_counted_once(self):
        driver = every_100_ms([0, 80, 20, 60])  # (0,100] 80, (100,200] 20, (200,300] 60
        two = [(0, 100 * MS), (200 * MS, 300 * MS)]
        self.assertEqual(nvml_sampler.report_line("m", driver, [], two),
                         "gpu_busy m: mean 70.0% over 0.2 s measured (2 windows, 2 driver "
                         "samples, every 100 ms); polled mean -; whole recording 53.3%")
        overlapping = [(0, 100 * MS), (50 * MS, 100 * MS)]
        self.assertEqual(nvml_sampler.merge(overlapping), [(0, 100 * MS)])
        self.assertEqual(nvml_sampler.weighted_mean(nvml_sampler.periods(driver),
                                                    nvml_sampler.merge(overlapping))[0], 80.0)

    def test_a_window_without_driver_samples_says_so(self):
        driver = every_100_ms([0, 50, 50])
        polled = [(5500 * MS, 97)]
        line = nvml_sampler.report_line("core_graphs_on_batching", driver, polled,
                                        [(5000 * MS, 6000 * MS)])
        self.assertEqual(line, "gpu_busy core_graphs_on_batching: no driver samples in the "
                               "measured windows (1.0 s measured, 1 window); polled mean 97.0%; "
                               "whole recording 50.0%")
        self.assertEqual(nvml_sampler.report_line("x", driver, [], []),
                         "gpu_busy x: no measured windows")

    def test_the_polled_mean_takes_only_samples_inside_windows(self):
        polled = [(50 * MS, 10), (150 * MS, 70), (250 * MS, 90), (400 * MS, 0)]
        windows = nvml_sampler.merge([(100 * MS, 300 * MS)])
        self.assertEqual(nvml_sampler.polled_mean(polled, windows), 80.0)
        self.assertIsNone(nvml_sampler.polled_mean(polled, [(500 * MS, 600 * MS)]))

    def test_a_sample_after_a_gap_covers_one_period(self):
        # 100 ms periods, then none for a second (an idle GPU unsampled): the
        # sample at 1300 ms covers (1200, 1300] only, and the window's
        # (300, 1200] has no samples.
        driver = every_100_ms([0, 0, 0, 0]) + [(1300 * MS, 100)]
        self.assertEqual(nvml_sampler.periods(driver)[-1], (1200 * MS, 1300 * MS, 100))
        line = nvml_sampler.report_line("g", driver, [], [(300 * MS, 1300 * MS)])
        self.assertEqual(line, "gpu_busy g: mean 100.0% over 1.0 s measured (1 window, "
                               "1 driver sample, every 100 ms, covering 0.1 s); polled mean -; "
                               "whole recording 25.0%")

    def test_a_window_must_be_start_comma_end(self):
        self.assertEqual(nvml_sampler.parse_window("100,250"), (100, 250))
        for text in ("250,100", "100", "a,b"):
            with self.assertRaises(nvml_sampler.SamplerError):
                nvml_sampler.parse_window(text)


class FilesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_a_timeline_spans_first_send_to_last_answer(self):
        # Rows in the order answered; the last answer (1000 + 900) is not the
        # last send's (1500 + 100). Failed requests held the server too.
        path = self.write("tl.csv", "Concurrency,Sent us,Latency us,OK\n"
                                    "64,1200,300,1\n64,1000,900,0\n64,1500,100,1\n")
        self.assertEqual(nvml_sampler.timeline_window(path), (1000, 1900))
        rate = self.write("rate.csv", "Request Rate,Sent us,Latency us,OK\n100,7,3,1\n")
        self.assertEqual(nvml_sampler.timeline_window(rate), (7, 10))
        empty = self.write("empty.csv", "Concurrency,Sent us,Latency us,OK\n")
        self.assertIsNone(nvml_sampler.timeline_window(empty))
        other = self.write("other.csv", "Concurrency,Inferences/Second\n64,100\n")
        with self.assertRaises(nvml_sampler.SamplerError):
            nvml_sampler.timeline_window(other)

    def test_reads_the_samples_record_writes(self):
        path = self.write("busy.csv", "monotonic_us,busy_percent,source\n"
                                      "200,40,driver\n150,99,polled\n100,30,driver\n")
        self.assertEqual(nvml_sampler.read_samples(path), ([(100, 30.0), (200, 40.0)],
                                                           [(150, 99.0)]))

    def test_report_reads_timelines_and_windows_and_appends_its_line(self):
        rows = ["monotonic_us,busy_percent,source"]
        rows += [f"{t},{100 if t > 1000 * MS else 0},driver"
                 for t, _ in every_100_ms([0] * 31)]
        samples = self.write("busy.csv", "\n".join(rows) + "\n")
        timeline = self.write("tl.csv", "Concurrency,Sent us,Latency us,OK\n"
                                        f"64,{1000 * MS},{500 * MS},1\n")
        out = self.write("gpu_busy.txt", "earlier line\n")
        result = subprocess.run(
            [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          "nvml_sampler.py"),
             "report", "--samples", samples, "--label", "graphs_off_batching",
             "--timeline", timeline, "--window", f"{2000 * MS},{2500 * MS}",
             "--timeline", os.path.join(self.tmp.name, "missing.csv"), "--out", out],
            capture_output=True, text=True, check=True)
        line = ("gpu_busy graphs_off_batching: mean 100.0% over 1.0 s measured (2 windows, "
                "10 driver samples, every 100 ms); polled mean -; whole recording 66.7%")
        self.assertEqual(result.stdout, line + "\n")
        self.assertIn("missing.csv; its window is left out", result.stderr)
        with open(out) as f:
            self.assertEqual(f.read(), "earlier line\n" + line + "\n")


class FakeNvml:
    """Hands out prepared reads of the driver's buffer, as Nvml.driver_samples."""

    def __init__(self, reads):
        self.reads = list(reads)

    def driver_samples(self, last_seen):
        samples = self.reads.pop(0) if self.reads else []
        return [s for s in samples if s[0] > last_seen]


class FirstReadTest(unittest.TestCase):
    """Recorder's first read, driver stamps on the wall clock (now minus seconds)."""

    def record(self, reads, start_ago_s):
        wall_us, mono_us = time.time() * 1e6, time.monotonic() * 1e6
        stamped = [[(round(wall_us - ago * 1e6), value) for ago, value in read]
                   for read in reads]
        text = io.StringIO()
        recorder = nvml_sampler.Recorder(FakeNvml(stamped), csv.writer(text),
                                         mono_us - start_ago_s * 1e6)
        for _ in reads:
            recorder.read_driver()
        return recorder, [mono_us - ago * 1e6 for read in reads for ago, _ in read], text

    def test_keeps_the_recording_and_the_sample_before_it(self):
        recorder, expected, text = self.record([[(3, 10), (2, 20), (1, 30), (0.1, 40)]],
                                               start_ago_s=1.5)
        self.assertEqual(recorder.clock, "CLOCK_REALTIME")
        self.assertEqual(len(recorder.driver), 3)  # the sample 2 s ago starts the first period
        for got, want in zip(recorder.driver, expected[1:]):
            self.assertAlmostEqual(got, want, delta=5 * MS)  # two clocks read a moment apart
        self.assertEqual([row.split(",")[1:] for row in text.getvalue().split()],
                         [["20", "driver"], ["30", "driver"], ["40", "driver"]])

    def test_an_old_buffer_waits_for_a_recent_period(self):
        # An idle GPU left only a minute-old buffer; the next read has the load's.
        recorder, _, _ = self.record([[(61, 0), (60, 0)], [(0.2, 90)]], start_ago_s=1)
        self.assertEqual(recorder.clock, "CLOCK_REALTIME")
        self.assertEqual(len(recorder.driver), 1)

    def test_no_clock_within_ten_seconds_is_an_error_naming_them(self):
        with self.assertRaises(nvml_sampler.SamplerError) as caught:
            nvml_sampler.choose_clock(5_000_000, {"CLOCK_REALTIME": 1.7e15,
                                                  "CLOCK_MONOTONIC": 9e11})
        self.assertIn("CLOCK_REALTIME 1700000000000000, CLOCK_MONOTONIC 900000000000",
                      str(caught.exception))
        self.assertEqual(nvml_sampler.choose_clock(899_995_000_000, {"CLOCK_REALTIME": 1.7e15,
                                                                     "CLOCK_MONOTONIC": 9e11}),
                         "CLOCK_MONOTONIC")


if __name__ == "__main__":
    unittest.main()
