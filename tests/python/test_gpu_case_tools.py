"""The GPU cases' comparison with Nsight Compute, without a GPU (tests/gpu/run_case.py and
check_db.py, issue 19): ncu's CSV as `ncu --csv --print-units base` prints it, parsed into launches
in launch order; gpuprof's values against ncu's, exact, within 2% and loosely; and a missing ncu
turns the comparison into a "skipped" note, not a pass that compared nothing nor a failure."""

import contextlib
import io
import os
import sys
import unittest

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(REPO, "tests", "gpu"))

import check_db  # noqa: E402
import run_case  # noqa: E402

# The shape of ncu 2025.x's --csv output: its own ==PROF== lines, then quoted rows; values with
# thousands separators; two launches of fma_loop listed out of ID order.
NCU_CSV = '''==PROF== Connected to process 4242 (/tmp/gpu_test_replay_counters)
==PROF== Profiling "fma_loop": 0%....50%....100% - 3 passes
gpuprof-test: launch kernel=fma_loop k=4096 warps=1056
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"1","4242","gpu_test_replay_counters","127.0.0.1","fma_loop(float *, int)","1","7","(256, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","smsp__inst_executed.sum","inst","17,319,456"
"0","4242","gpu_test_replay_counters","127.0.0.1","stream_copy(const uint4 *, uint4 *, unsigned long)","1","7","(512, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","3,221,309,440"
"0","4242","gpu_test_replay_counters","127.0.0.1","stream_copy(const uint4 *, uint4 *, unsigned long)","1","7","(512, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","launch__grid_size","","1,056"
"1","4242","gpu_test_replay_counters","127.0.0.1","fma_loop(float *, int)","1","7","(256, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","launch__grid_size","","132"
==PROF== Disconnected from process 4242
'''


def rows_and_metrics(values):
    """Replay rows and GPUPROF_REPLAY_METRIC values as check_db reads them: [(name, {metric: value})]."""
    rows, metrics = [], {}
    for i, (name, got) in enumerate(values):
        rows.append({"id": 10 + i, "name": name, "launch_index": i, "replayed": 1})
        metrics[10 + i] = {m: (v, "", 1) for m, v in got.items()}
    return rows, metrics


def compare(rows, metrics, peer, **kinds):
    c = check_db.Checker()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        check_db.compare_with_ncu(c, rows, metrics, peer, **kinds)
    return c.failures, out.getvalue()


class ParseNcuCsvTest(unittest.TestCase):
    def test_launches_in_id_order_with_numbers(self):
        launches = run_case.parse_ncu_csv(NCU_CSV)
        self.assertEqual([l["kernel"] for l in launches],
                         ["stream_copy(const uint4 *, uint4 *, unsigned long)", "fma_loop(float *, int)"])
        self.assertEqual(launches[0]["metrics"]["dram__bytes_read.sum"], (3221309440.0, "byte"))
        self.assertEqual(launches[0]["metrics"]["launch__grid_size"], (1056.0, ""))
        self.assertEqual(launches[1]["metrics"]["smsp__inst_executed.sum"], (17319456.0, "inst"))

    def test_no_rows_gives_no_launches(self):
        self.assertEqual(run_case.parse_ncu_csv("==PROF== nothing profiled\n"), [])


class CompareWithNcuTest(unittest.TestCase):
    def setUp(self):
        self.peer = run_case.parse_ncu_csv(NCU_CSV)

    def test_equal_values_pass(self):
        rows, metrics = rows_and_metrics([
            ("stream_copy", {"dram__bytes_read.sum": 3221304320.0, "launch__grid_size": 1056.0}),
            ("fma_loop", {"smsp__inst_executed.sum": 17319456.0, "launch__grid_size": 132.0})])
        failures, _ = compare(rows, metrics, self.peer, exact=("launch__grid_size",))
        self.assertEqual(failures, [])
        failures, _ = compare(rows, metrics, self.peer, within_2pct=("dram__bytes_read.sum",), only="stream_copy")
        self.assertEqual(failures, [])

    def test_an_instruction_count_off_by_any_amount_fails(self):
        rows, metrics = rows_and_metrics([
            ("stream_copy", {}),
            ("fma_loop", {"smsp__inst_executed.sum": 17327944.0})])
        failures, _ = compare(rows, metrics, self.peer, exact=("smsp__inst_executed.sum",), only="fma_loop")
        self.assertEqual(len(failures), 1)
        self.assertIn("differs by +8488", failures[0])

    def test_bytes_beyond_two_percent_fail(self):
        rows, metrics = rows_and_metrics([("stream_copy", {"dram__bytes_read.sum": 3221309440.0 * 1.03}),
                                          ("fma_loop", {})])
        failures, _ = compare(rows, metrics, self.peer, within_2pct=("dram__bytes_read.sum",), only="stream_copy")
        self.assertEqual(len(failures), 1)
        self.assertIn("not within 2%", failures[0])

    def test_a_missing_value_or_launch_fails(self):
        rows, metrics = rows_and_metrics([("stream_copy", {}), ("fma_loop", {})])
        failures, _ = compare(rows, metrics, self.peer, exact=("launch__grid_size",))
        self.assertEqual(len(failures), 2)
        rows, metrics = rows_and_metrics([("stream_copy", {"launch__grid_size": 1056.0})])
        failures, _ = compare(rows, metrics, self.peer, exact=("launch__grid_size",))
        self.assertIn("ncu measured 2 launches, gpuprof replayed 1", failures[0])

    def test_loose_percentages(self):
        name = check_db.COMPUTE_THROUGHPUT
        peer = [{"kernel": "gemm_kernel(...)", "metrics": {name: (60.0, "%")}}]
        for mine, ok in ((66.0, True), (74.0, True), (40.0, False)):
            rows, metrics = rows_and_metrics([("gemm_kernel", {name: mine})])
            failures, _ = compare(rows, metrics, peer, loose=(name,))
            self.assertEqual(failures == [], ok, (mine, failures))

    def test_no_ncu_is_a_skip_that_says_why(self):
        rows, metrics = rows_and_metrics([("fma_loop", {})])
        failures, printed = compare(rows, metrics, "no ncu on PATH", exact=("smsp__inst_executed.sum",))
        self.assertEqual(failures, [])
        self.assertIn("SKIPPED: the comparison with ncu (no ncu on PATH)", printed)


if __name__ == "__main__":
    unittest.main()
