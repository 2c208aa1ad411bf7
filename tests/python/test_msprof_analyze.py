"""msprof-analyze (../shared/third_party/msprof-analyze, v26.1.0, run from its source tree) over DBs
made here (issue 20): which of its cluster recipes find rows in gpuprof's files. Its exit code is 0
even when a recipe found nothing or failed inside, so each case reads the recipe's output DB
(<out>/cluster_analysis_output/cluster_analysis.db) and compares its figures with the profile's and
with `gpuprof stats`.

Inputs: `gpuprof demo -o` (device tasks, no torch), examples/train_ddp.py on two gloo ranks
under `gpuprof run --with-modules -- python3 -m torch.distributed.run` (needs torch and the PyTorch
hooks), and the DBs made on the H200 (tests/data/h200_profiles). Skipped, never passed, when the msprof-analyze tree, its Debian Python packages, the CLI or
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
import xml.etree.ElementTree as ET
import zipfile

from test_distributed import free_port  # noqa: E402  (tests/python is the working directory)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MSPROF_ANALYZE = os.path.join(os.path.dirname(REPO), "shared", "third_party", "msprof-analyze")
# What msprof_analyze imports at start-up (Debian: python3-pandas, python3-psutil, ...; tools/packages-test.txt).
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
            return f"skipped: msprof-analyze needs the Python module {module} (tools/packages-test.txt)"
    return None


XLSX = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
        "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships"}


def xlsx_sheets(path):
    """{sheet name: [row as a list of cell texts]} of an .xlsx (compare's output), read with the
    standard library: Debian's python3 has no openpyxl by default."""
    with zipfile.ZipFile(path) as z:
        shared = []
        if "xl/sharedStrings.xml" in z.namelist():
            for si in ET.fromstring(z.read("xl/sharedStrings.xml")).findall("m:si", XLSX):
                shared.append("".join(t.text or "" for t in si.iter(f"{{{XLSX['m']}}}t")))
        targets = {r.get("Id"): r.get("Target") for r in ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))}
        sheets = {}
        for sheet in ET.fromstring(z.read("xl/workbook.xml")).find("m:sheets", XLSX):
            target = targets[sheet.get(f"{{{XLSX['r']}}}id")].lstrip("/")
            target = target if target.startswith("xl/") else "xl/" + target
            table = []
            for row in ET.fromstring(z.read(target)).iter(f"{{{XLSX['m']}}}row"):
                cells = []
                for c in row.findall("m:c", XLSX):
                    v = c.find("m:v", XLSX)
                    text = "" if v is None else v.text
                    cells.append(shared[int(text)] if c.get("t") == "s" else text)
                table.append(cells)
            sheets[sheet.get("name")] = table
        return sheets


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

    def recipe(self, name, data=None):
        """Runs `msprof-analyze cluster -m NAME` over DATA (the class's input by default) and returns
        {table: rows} of its output DB and the DB's path."""
        data = data or self.data
        out = tempfile.mkdtemp(prefix="out_" + name + "_", dir=self.tmp)
        env = dict(os.environ, PYTHONPATH=MSPROF_ANALYZE)
        done = subprocess.run([sys.executable, "-c", ENTRY, "cluster", "-d", data, "-m", name,
                               "--output_path", out, "--force"], capture_output=True, text=True, timeout=600,
                              env=env)
        self.assertEqual(done.returncode, 0, done.stdout[-3000:] + done.stderr[-3000:])
        db = os.path.join(out, "cluster_analysis_output", "cluster_analysis.db")
        self.assertTrue(os.path.exists(db), f"{name} wrote no output DB:\n{done.stdout[-3000:]}")
        tables = [t for (t,) in rows(db, "SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: rows(db, f'SELECT * FROM "{t}"') for t in tables}, db

    def compare(self, base, comparison):
        """`msprof-analyze compare -d COMPARISON -bp BASE` (two run directories): its sheets."""
        out = tempfile.mkdtemp(prefix="compare_", dir=self.tmp)
        env = dict(os.environ, PYTHONPATH=MSPROF_ANALYZE)
        done = subprocess.run([sys.executable, "-c", ENTRY, "compare", "-d", comparison, "-bp", base, "-o", out],
                              capture_output=True, text=True, timeout=600, env=env)
        self.assertEqual(done.returncode, 0, done.stdout[-3000:] + done.stderr[-3000:])
        books = glob.glob(os.path.join(out, "performance_comparison_result_*.xlsx"))
        self.assertEqual(len(books), 1, f"compare wrote no workbook:\n{done.stdout[-3000:]}")
        return xlsx_sheets(books[0])

    @staticmethod
    def run_dir(db):
        return os.path.dirname(os.path.dirname(db))

    def stats(self, path, *flags):
        done = subprocess.run([self.cli, "stats", path, *flags], capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        return done.stdout


class DemoDbTest(MsprofAnalyzeRun):
    """`gpuprof demo -o`: kernels (COMPUTE_TASK_INFO), API rows, no torch ops."""

    @classmethod
    def make_input(cls):
        for out in (cls.data, os.path.join(cls.tmp, "second")):  # two runs, for compare
            done = subprocess.run([cls.cli, "demo", "-o", out], capture_output=True, text=True, timeout=300)
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

    def test_compare_of_two_runs_has_every_kernel_in_its_kernel_sheet(self):
        second = glob.glob(os.path.join(self.tmp, "second", "*_ascend_pt"))
        self.assertEqual(len(second), 1)
        sheets = self.compare(self.run_dir(self.dbs[0]), second[0])
        kernels = sheets.get("KernelCompare", [])
        header = kernels[1] if len(kernels) > 1 else []
        self.assertIn("Kernel", header, sheets.keys())
        got = {r[header.index("Kernel")]: int(r[header.index("Calls")]) for r in kernels[2:]}
        expected = dict(rows(self.dbs[0], """SELECT o.value, COUNT(*) FROM COMPUTE_TASK_INFO c
            JOIN STRING_IDS o ON o.id = c.opType GROUP BY o.value"""))
        self.assertEqual(got, expected)

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

    def test_analysis_db_beside_each_profile_passes_check(self):
        for db in self.dbs:
            self.assertTrue(os.path.exists(os.path.join(os.path.dirname(db), "analysis.db")), db)
        done = subprocess.run([self.cli, "check", self.data], capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertEqual(done.stdout.count("analysis.db ("), 2, done.stdout)

    def test_communication_group_map_has_the_default_group_of_both_ranks(self):
        tables, db = self.recipe("communication_group_map")
        self.assertEqual(rows(db, "SELECT type, rank_set, group_id FROM CommunicationGroupMapping"),
                         [("collective", "(0,1)", "default_pg")], tables)

    def test_communication_time_sum_totals_are_each_ranks_communication(self):
        tables, db = self.recipe("communication_time_sum")
        totals = {}
        for rank, elapsed in rows(db, "SELECT rank_id, elapsed_time FROM ClusterCommunicationTime "
                                      "WHERE hccl_op_name = 'Total Op Info'"):
            totals[rank] = totals.get(rank, 0) + elapsed
        self.assertEqual(sorted(totals), [0, 1], tables)
        for rank, profile in enumerate(self.dbs):
            (ns,) = rows(profile, "SELECT SUM(endNs - startNs) FROM COMMUNICATION_OP")[0]
            self.assertAlmostEqual(totals[rank], ns / 1e6, delta=1e-6)
        self.assertTrue(rows(db, "SELECT * FROM ClusterCommunicationBandwidth"), tables)

    def test_communication_matrix_sum_has_each_ranks_link(self):
        tables, db = self.recipe("communication_matrix_sum")
        links = rows(db, "SELECT DISTINCT CAST(src_rank AS INTEGER), CAST(dst_rank AS INTEGER) "
                         "FROM ClusterCommunicationMatrix ORDER BY 1")
        self.assertEqual(links, [(0, 0), (1, 1)], tables)
        kinds = {k for (k,) in rows(db, "SELECT hccl_op_name FROM ClusterCommunicationMatrix")}
        self.assertTrue({"allreduce-total", "broadcast-total", "Total Op Info"} <= kinds, kinds)

    def test_all_mode_step_trace_is_gpuprof_stats_split(self):
        tables, db = self.recipe("all")
        for table in ("CommunicationGroupMapping", "ClusterCommunicationTime", "ClusterCommunicationMatrix",
                      "ClusterBaseInfo"):
            self.assertTrue(tables.get(table), f"{table}: {tables.keys()}")
        # profiler_metadata.json beside each run (issue 41): the job's layout, so each rank has its
        # data-parallel index (both ranks of the default group are data-parallel replicas).
        self.assertIn('"data_parallel_size": 2', rows(db, "SELECT value FROM ClusterBaseInfo")[0][0])
        indices = rows(db, "SELECT DISTINCT CAST(\"index\" AS INTEGER), dp_index, pp_index, tp_index "
                           "FROM ClusterStepTraceTime WHERE type = 'rank' ORDER BY 1")
        self.assertEqual([(r, int(dp), int(pp), int(tp)) for r, dp, pp, tp in indices], [(0, 0, 0, 0), (1, 1, 0, 0)])
        steps = rows(db, "SELECT CAST(\"index\" AS INTEGER), step, computing, communication_not_overlapped, free "
                         "FROM ClusterStepTraceTime WHERE type = 'rank' ORDER BY 1, CAST(step AS INTEGER)")
        self.assertEqual([(r, s) for r, s, *_ in steps], [(r, str(s)) for r in (0, 1) for s in (1, 2, 3)], tables)
        # gpuprof stats DIR: "rank device steps mean-step-ms max-step-ms compute% comm-not-overlapped% idle%",
        # over every step as msprof-analyze counts them (the warm-up step too).
        out = self.stats(self.data, "--include-warmup")
        for rank in (0, 1):
            mine = [r for r in steps if r[0] == rank]
            total = sum(c + n + f for _, _, c, n, f in mine)
            line = re.search(rf"^\s+{rank}\s+\S+\s+3\s+([\d.]+)\s+[\d.]+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out, re.M)
            self.assertTrue(line, out)
            mean_ms, compute, comm, idle = (float(g) for g in line.groups())
            self.assertAlmostEqual(total / 3 / 1000, mean_ms, delta=0.0011)
            for value, share in ((compute, sum(r[2] for r in mine)), (comm, sum(r[3] for r in mine)),
                                 (idle, sum(r[4] for r in mine))):
                self.assertAlmostEqual(value, 100 * share / total, delta=0.051)

    def test_module_statistic_places_the_forward_all_reduce_under_its_module(self):
        tables, db = self.recipe("module_statistic")
        got = rows(db, "SELECT rankID, module, opName, opCount FROM ModuleStatistic ORDER BY rankID")
        self.assertEqual(got, [(r, "1 (CrossRankCenter)", "gloo:all_reduce", 3) for r in (0, 1)], tables)

    def test_cluster_time_summary_reads_our_files_given_one_device_copy(self):
        # msprof-analyze's cluster_time_summary merges a per-rank memcpy table that is column-less
        # when no rank has a MEMCPY_ASYNC task, and then fails ("'rank'") before it saves anything:
        # a CPU run has no device copy, so on these DBs it writes nothing. With one copy task added
        # to each rank's copy of its DB (standing in for a GPU run's copies), everything else it reads
        # is gpuprof's: STEP_TIME, analysis.db's StepTraceTime, COMMUNICATION_OP, the group map.
        data = os.path.join(self.tmp, "with_copy")
        shutil.copytree(self.data, data)
        for db in glob.glob(os.path.join(data, "*", "ASCEND_PROFILER_OUTPUT", "ascend_pytorch_profiler_*.db")):
            with sqlite3.connect(db) as c:
                (start,) = c.execute("SELECT MIN(startNs) FROM STEP_TIME").fetchone()
                c.execute("INSERT INTO STRING_IDS VALUES (268435455, 'MEMCPY_ASYNC')")
                columns = [r[1] for r in c.execute("PRAGMA table_info(TASK)")]
                values = dict.fromkeys(columns, 0)
                values.update(startNs=start + 1000, endNs=start + 2000, taskType=268435455, globalTaskId=1 << 40)
                c.execute(f"INSERT INTO TASK ({','.join(columns)}) VALUES ({','.join('?' * len(columns))})",
                          [values[k] for k in columns])
        tables, db = self.recipe("cluster_time_summary", data)
        got = rows(db, "SELECT rank, step, computation, communicationNotOverlapComputation FROM ClusterTimeSummary "
                       "ORDER BY rank, step")
        self.assertEqual([(r, s) for r, s, _, _ in got], [(r, s) for r in (0, 1) for s in (1, 2, 3)], tables)
        for rank, profile in enumerate(self.dbs):
            analysis = os.path.join(os.path.dirname(profile), "analysis.db")
            expected = rows(analysis, "SELECT CAST(step AS INTEGER), computing, communication_not_overlapped "
                                      "FROM StepTraceTime ORDER BY 1")
            self.assertEqual([(s, c, n) for r, s, c, n in got if r == rank], expected)

    def test_compare_of_rank_0_and_rank_1_has_the_communication_sheet(self):
        sheets = self.compare(self.run_dir(self.dbs[0]), self.run_dir(self.dbs[1]))
        comm = sheets.get("CommunicationCompare", [])
        header = comm[1] if len(comm) > 1 else []
        self.assertIn("Communication OP Name", header, sheets.keys())
        name, calls = header.index("Communication OP Name"), header.index("Calls")
        got = {r[name]: int(r[calls]) for r in comm[2:] if r[name]}
        self.assertEqual(got, {"broadcast": 4, "allreduce": 15, "allgather": 1, "barrier": 1})

    def test_mstx_sum_times_the_step_marks(self):
        tables, db = self.recipe("mstx_sum")
        marks = rows(db, "SELECT Name, Rank, CannDurationNs FROM MSTXMarkStats ORDER BY Rank, Name")
        # train_stop is made after the last step, outside every torch op: its framework time comes
        # from its own mstx op (without one mstx_sum drops all of the rank's marks).
        names = [f"step{i}" for i in range(3)] + ["train"]
        self.assertEqual([(n, r) for n, r, _ in marks], [(n, r) for r in (0, 1) for n in names], tables)
        for rank, profile in enumerate(self.dbs):
            for name in names:
                start, stop = (rows(profile, "SELECT x.startNs FROM MSTX_EVENTS x JOIN STRING_IDS s ON "
                                             "s.id = x.message WHERE s.value = ?", (f"{name}_{end}",))[0][0]
                               for end in ("start", "stop"))
                self.assertIn((name, rank, float(stop - start)), marks)


class H200DbsTest(MsprofAnalyzeRun):
    """Profiles made on the H200 and brought back (tests/data/h200_profiles, its README): two runs of
    examples/train_plain.py and one NCCL rank of examples/train_ddp.py, with kernels, copies, torch
    ops with shapes, module ranges and marks. The GPU column of issue 20's table."""

    @classmethod
    def make_input(cls):
        archive = os.path.join(REPO, "tests", "data", "h200_profiles", "dbs.tgz")
        subprocess.run(["tar", "xzf", archive, "-C", cls.tmp], check=True)
        cls.data = os.path.join(cls.tmp, "dbs", "plain1")
        cls.ddp = os.path.join(cls.tmp, "dbs", "ddp1")

    def test_compute_op_sum_has_every_kernel(self):
        tables, db = self.recipe("compute_op_sum")
        got = {t: (n, s) for t, n, s in rows(db, "SELECT OpType, Count, SumNs FROM ComputeOpAllRankStats")}
        expected = {t: (n, s) for t, n, s in rows(self.dbs[0], """
            SELECT o.value, COUNT(*), SUM(t.endNs - t.startNs) FROM COMPUTE_TASK_INFO c
            JOIN TASK t ON t.globalTaskId = c.globalTaskId JOIN STRING_IDS o ON o.id = c.opType GROUP BY o.value""")}
        self.assertEqual(got, expected, tables)
        # every kernel a torch op launched carries its shapes (compute_op_sum groups by them)
        self.assertTrue(any(shape for (shape,) in rows(db, "SELECT InputShapes FROM ComputeOpPerRankStatsByOpName")))

    def test_cann_api_sum_free_analysis_and_module_statistic_have_rows(self):
        for recipe, table in (("cann_api_sum", "CannApiSum"), ("free_analysis", "FreeAnalysis"),
                              ("module_statistic", "ModuleStatistic")):
            tables, _ = self.recipe(recipe)
            self.assertTrue(tables.get(table), f"{recipe}: {tables.keys()}")
        _, db = self.recipe("module_statistic")
        modules = {m for (m,) in rows(db, "SELECT module FROM ModuleStatistic")}
        self.assertIn("Linear", " ".join(modules))

    def test_mstx_sum_times_the_nccl_ranks_marks(self):
        tables, db = self.recipe("mstx_sum", self.ddp)
        names = {n for (n,) in rows(db, "SELECT Name FROM MSTXMarkStats")}
        self.assertEqual(names, {"step0", "step1", "step2", "train"}, tables)

    def test_nccl_rank_has_hccl_communication_all_and_cluster_time_summary_rows(self):
        for recipe, table in (("hccl_sum", "HcclPerRankStats"), ("communication_time_sum", "ClusterCommunicationTime"),
                              ("communication_matrix_sum", "ClusterCommunicationMatrix"),
                              ("communication_group_map", "CommunicationGroupMapping"),
                              ("cluster_time_summary", "ClusterTimeSummary"), ("all", "ClusterStepTraceTime")):
            tables, _ = self.recipe(recipe, self.ddp)
            self.assertTrue(tables.get(table), f"{recipe}: {tables.keys()}")
        _, db = self.recipe("cluster_time_summary", self.ddp)
        (profile,) = glob.glob(os.path.join(self.ddp, "*", "ASCEND_PROFILER_OUTPUT", "ascend_pytorch_profiler_0.db"))
        steps = [s for (s,) in rows(profile, "SELECT id FROM STEP_TIME ORDER BY id")]
        self.assertEqual([s for (s,) in rows(db, "SELECT step FROM ClusterTimeSummary ORDER BY step")], steps)

    def test_compare_of_two_runs_has_every_kernel_in_its_kernel_sheet(self):
        (second,) = glob.glob(os.path.join(self.tmp, "dbs", "plain2", "*_ascend_pt"))
        sheets = self.compare(self.run_dir(self.dbs[0]), second)
        kernels = sheets.get("KernelCompare", [])
        header = kernels[1] if len(kernels) > 1 else []
        self.assertIn("Kernel", header, sheets.keys())
        got = {r[header.index("Kernel")] for r in kernels[2:]}
        expected = {t for (t,) in rows(self.dbs[0], """SELECT DISTINCT o.value FROM COMPUTE_TASK_INFO c
            JOIN STRING_IDS o ON o.id = c.opType""")}
        self.assertEqual(got, expected)
        self.assertTrue(sheets.get("OperatorCompare"), sheets.keys())


if __name__ == "__main__":
    unittest.main()
