#!/usr/bin/env python3
"""Tests of bench/timeline_report.py on timelines made here:

  python3 bench/timeline_report_test.py
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timeline_report  # noqa: E402  (beside this file)

START_US = 5_000_000


def steady(sends=1000, gap_us=1000, latency_us=200):
    """A level of `sends` requests `gap_us` apart, each taking latency_us."""
    return [(START_US + i * gap_us, latency_us) for i in range(sends)]


def with_stall(requests, begin_ms, end_ms, latency_us):
    """The same requests, those sent in [begin_ms, end_ms) taking latency_us."""
    return [(sent, latency_us if begin_ms * 1000 <= sent - START_US < end_ms * 1000 else latency)
            for sent, latency in requests]


class TimelineReportTest(unittest.TestCase):
    def test_a_steady_level_has_no_stalls(self):
        lines = timeline_report.report_level("100", steady(), 10_000, [], [])
        self.assertIn("level 100: 1000 requests over 1.00 s, p50 200 us, p99 200 us", lines[0])
        self.assertIn("stalls (bins with median latency over 1000 us): 0, holding 0 requests "
                      "(0.0% of the level)", "\n".join(lines))

    def test_a_stall_is_found_with_the_requests_it_held(self):
        requests = with_stall(steady(), 300, 330, 15_000)
        lines = "\n".join(timeline_report.report_level("100", requests, 10_000, [], []))
        self.assertIn("p99 15000 us", lines)
        self.assertIn("stalls (bins with median latency over 1000 us): 1, holding 30 requests "
                      "(3.0% of the level)", lines)
        self.assertIn("+300 to +330 ms: 30 requests, worst 15000 us", lines)
        self.assertIn("+300 ms: 10 sent, p50 15000 us, max 15000 us", lines)

    def test_two_stalls_apart_stay_apart(self):
        requests = with_stall(with_stall(steady(), 100, 120, 9000), 500, 510, 9000)
        runs = timeline_report.stalls(timeline_report.bins(requests, 10_000)[1], 1000)
        self.assertEqual(runs, [(10, 11), (50, 50)])

    def test_the_series_shows_the_machine_in_the_stall(self):
        requests = with_stall(steady(), 300, 330, 15_000)
        # Samples every 10 ms: 20 runnable threads and the server waiting
        # 8 ms per 10 ms from a bin before the stall until its last request
        # was answered (+345 ms), 4 and none outside it.
        series = []
        for i in range(100):
            t = START_US + i * 10_000
            stalled = 290_000 <= t - START_US < 350_000
            series.append({"time_us": t, "procs_running": 20 if stalled else 4,
                           "server_cpu_us": 10_000, "server_wait_us": 8000 if stalled else 0,
                           "server_runnable": 3})
        lines = "\n".join(timeline_report.report_level("100", requests, 10_000, series,
                                                       ["server"]))
        self.assertIn("runnable 20.0, server cpu 10.0 wait 8.0 ms/10ms", lines)
        self.assertIn("whole level: runnable 5.0", lines)

    def test_reads_the_files_perf_and_the_sampler_write(self):
        with tempfile.TemporaryDirectory() as tmp:
            timeline = os.path.join(tmp, "timeline.csv")
            with open(timeline, "w") as f:
                f.write("Request Rate,Sent us,Latency us,OK\n100,10,250,1\n100,20,300,0\n"
                        "200,30,400,1\n")
            series = os.path.join(tmp, "series.csv")
            with open(series, "w") as f:
                f.write("time_us,procs_running,server_cpu_us,server_wait_us,server_runnable\n"
                        "10,3,100,5,1\n")
            # Failed requests are left out.
            self.assertEqual(timeline_report.read_timeline(timeline),
                             {"100": [(10, 250)], "200": [(30, 400)]})
            rows, labels = timeline_report.read_series(series)
            self.assertEqual(labels, ["server"])
            self.assertEqual(rows[0]["server_wait_us"], 5)


if __name__ == "__main__":
    unittest.main()
