"""msprof-analyze (../shared/third_party/msprof-analyze, v26.1.0, run from its source tree) over DBs
made here (issue 20): which of its cluster recipes find rows in gpuprof's files. Its exit code is 0
even when a recipe found nothing or failed inside, so each case reads the recipe's output DB
(<out>/cluster_analysis_output/cluster_analysis.db) and compares its figures with the profile's and
with `gpuprof stats`.

Inputs: `gpuprof demo -o` (device tasks, no torch) and examples/train_ddp.py on two gloo ranks
under `gpuprof run --with-modules -- python3 -m torch.distributed.run` (needs torch and the PyTorch
hooks). Skipped, never passed, when the msprof-analyze tree, its Debian Python packages, the CLI or
torch are missing. GPUPROF_CLI names the build's CLI."""

import glob
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

from test_distributed import free_port  # noqa: E402  (tests/python is the working directory)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MSPROF_ANALYZE = os.path.join(os.path.dirname(REPO), "shared", "third_party", "msprof-analyze")
# What msprof_analyze imports at start-up (Debian: python3-pandas, python3-psutil, ...; tools/packages.txt).
MODULES = ("pandas", "numpy", "click", "tqdm", "prettytable", "xlsxwriter", "psutil", "networkx", "ijson",
           "sqlalchemy", "jinja2")
ENTRY = "import sys; from msprof_analyze.cli.entrance import msprof_analyze_cli; sys.exit(msprof_analyze_cli())"


def missing_requirement():
    if not os.path.isdir(os.path.join(MSPROF_ANALYZE, "msprof_analyze")):
        return f"skipped: no msprof-analyze tree at {MSPROF_ANALYZE}"
    for module in MODULES:
        try:
            __import__(module)
        except ImportError:
            return f"skipped: msprof-analyze needs the Python module {module} (tools/packages.txt)"
    return None


def rows(db, sql, params=()):
    with sqlite3.connect(db) as c:
        return c.execute(sql, params).fetchall()


class MsprofAnalyzeRun(unittest.TestCase):
    """Runs recipes over one input folder (made by make_input) into a temporary folder."""

    @classmethod
    def setUpClass(cls):
        problem = missing_requirement()
        if problem:
            raise unittest.SkipTest(problem)
        cls.cli = os.environ.get("GPUPROF_CLI", os.path.join(REPO, "build", "default", "bin", "gpuprof"))
        if not os.path.exists(cls.cli):
            raise unittest.SkipTest(f"skipped: no gpuprof CLI at {cls.cli}; set GPUPROF_CLI")
        cls.tmp = tempfile.mkdtemp(prefix="gpuprof_msa_")
        cls.data = os.path.join(cls.tmp, "prof")
        cls.make_input()
        cls.dbs = sorted(glob.glob(os.path.join(cls.data, "**", "ASCEND_PROFILER_OUTPUT", "ascend_pytorch_profiler*.db"), recursive=True))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def recipe(self, name):
        """Runs `msprof-analyze cluster -m NAME` and returns {table: rows} of its output DB."""
        out = os.path.join(self.tmp, "out_" + name)
        env = dict(os.environ, PYTHONPATH=MSPROF_ANALYZE)
        done = subprocess.run([sys.executable, "-c", ENTRY, "cluster", "-d", self.data, "-m", name,
                               "--output_path", out, "--force"], capture_output=True, text=True, timeout=600,
                              env=env)
        self.assertEqual(done.returncode, 0, done.stdout[-3000:] + done.stderr[-3000:])
        db = os.path.join(out, "cluster_analysis_output", "cluster_analysis.db")
        self.assertTrue(os.path.exists(db), f"{name} wrote no output DB:\n{done.stdout[-3000:]}")
        tables = [t for (t,) in rows(db, "SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: rows(db, f'SELECT * FROM "{t}"') for t in tables}, db

    def stats(self, path):
        done = subprocess.run([self.cli, "stats", path], capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        return done.stdout


class DemoDbTest(MsprofAnalyzeRun):
    """`gpuprof demo -o`: kernels (COMPUTE_TASK_INFO), API rows, no torch ops."""

    @classmethod
    def make_input(cls):
        done = subprocess.run([cls.cli, "demo", "-o", cls.data], capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(done.stdout + done.stderr)

    def test_compute_op_sum_has_every_kernel_and_gpuprof_stats_total(self):
        tables, db = self.recipe("compute_op_sum")
        by_type = rows(db, "SELECT OpType, Count, SumNs FROM ComputeOpAllRankStats")
        self.assertTrue(by_type, tables)
        profile = self.dbs[0]
        expected = dict(((t, (n, s)) for t, n, s in rows(profile, """
            SELECT o.value, COUNT(*), SUM(t.endNs - t.startNs) FROM COMPUTE_TASK_INFO c
            JOIN TASK t ON t.globalTaskId = c.globalTaskId JOIN STRING_IDS o ON o.id = c.opType GROUP BY o.value""")))
        self.assertEqual({t: (n, s) for t, n, s in by_type}, expected)
        # gpuprof stats prints the same kernel total ("Top kernels by total time (..., 0.505 ms)").
        total_ms = float(re.search(r"Top kernels by total time \(.*?([\d.]+) ms\)", self.stats(profile)).group(1))
        self.assertAlmostEqual(sum(s for _, _, s in by_type) / 1e6, total_ms, delta=0.0011)

    def test_cann_api_sum_and_free_analysis_have_rows(self):
        cann, _ = self.recipe("cann_api_sum")
        self.assertTrue(cann.get("CannApiSum"), cann)
        free, _ = self.recipe("free_analysis")
        self.assertTrue(free.get("FreeAnalysis"), free)


class TwoGlooRanksTest(MsprofAnalyzeRun):
    """examples/train_ddp.py on two gloo ranks: collectives, marks, module ranges; no device tasks."""

    @classmethod
    def make_input(cls):
        try:
            import torch.distributed as dist
            if not dist.is_available():
                raise unittest.SkipTest("skipped: this torch has no torch.distributed")
        except ImportError as e:
            raise unittest.SkipTest(f"skipped: torch is not importable: {e}")
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
        done = subprocess.run([cls.cli, "run", "-o", cls.data, "--with-modules", "--", sys.executable, "-m",
                               "torch.distributed.run", "--nproc_per_node=2", "--master_addr=127.0.0.1",
                               f"--master_port={free_port()}", os.path.join(REPO, "examples", "train_ddp.py")],
                              capture_output=True, text=True, timeout=600, env=env)
        if done.returncode != 0:
            raise RuntimeError(done.stdout + done.stderr)

    def test_two_dbs(self):
        self.assertEqual([os.path.basename(d) for d in self.dbs],
                         ["ascend_pytorch_profiler_0.db", "ascend_pytorch_profiler_1.db"])

    def test_hccl_sum_per_rank_totals_are_the_profiles(self):
        tables, db = self.recipe("hccl_sum")
        got = {(rank, op): (n, s) for op, n, s, rank in rows(db, "SELECT OpType, Count, SumNs, Rank FROM HcclPerRankStats")}
        self.assertTrue(got, tables)
        expected = {}
        for rank, profile in enumerate(self.dbs):
            for op, n, s in rows(profile, """SELECT t.value, COUNT(*), SUM(c.endNs - c.startNs) FROM COMMUNICATION_OP c
                                             JOIN STRING_IDS t ON t.id = c.opType GROUP BY t.value"""):
                expected[(rank, op)] = (n, s)
        self.assertEqual(got, expected)
        self.assertEqual(got[(0, "hcom_allReduce_")][0], 15)  # 3 steps x (1 forward + 4 gradients)

    def test_cann_api_sum_has_the_communication_rows(self):
        tables, _ = self.recipe("cann_api_sum")
        self.assertTrue(tables.get("CannApiSum"), tables)

    def test_mstx_sum_times_the_step_marks(self):
        tables, db = self.recipe("mstx_sum")
        marks = rows(db, "SELECT Name, Rank, CannDurationNs FROM MSTXMarkStats ORDER BY Rank, Name")
        self.assertEqual([(n, r) for n, r, _ in marks], [(f"step{i}", r) for r in (0, 1) for i in range(3)], tables)
        for rank, profile in enumerate(self.dbs):
            for step in range(3):
                start, stop = (rows(profile, "SELECT x.startNs FROM MSTX_EVENTS x JOIN STRING_IDS s ON "
                                             "s.id = x.message WHERE s.value = ?", (f"step{step}_{end}",))[0][0]
                               for end in ("start", "stop"))
                self.assertIn((f"step{step}", rank, float(stop - start)), marks)


if __name__ == "__main__":
    unittest.main()
