"""Two ranks on the CPU (gloo) under `gpuprof run -- torchrun` (issue 7): one DB per rank, the
collectives in COMMUNICATION_OP, nn.Module forwards in MSTX_EVENTS domain "Module", and
`gpuprof stats DIR` over both ranks. Needs /usr/bin/python3 with torch (Debian's 1.13 in CI) and
the PyTorch hooks; GPUPROF_LIB_DIR and GPUPROF_CLI name the build's libraries and CLI."""

import glob
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(REPO), "shared")

# The example a user starts a multi-rank profile from: 4 broadcasts, 3 steps of 1 forward and 4
# gradient all_reduce, one all_gather and one barrier per rank (its docstring), and the
# stepN_start / stepN_stop marks.
SCRIPT = os.path.join(REPO, "examples", "train_ddp.py")
COLLECTIVES = 4 + 3 * (1 + 4) + 1 + 1
# Set for the run; each rank prints what it saw (issue 23: they must reach every rank).
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TwoRankRun(unittest.TestCase):
    """Runs the two ranks once per class (no tests of its own)."""

    @classmethod
    def setUpClass(cls):
        cls.cli = os.environ.get("GPUPROF_CLI", os.path.join(REPO, "build", "default", "bin", "gpuprof"))
        if not os.path.exists(cls.cli):
            raise unittest.SkipTest(f"no gpuprof CLI at {cls.cli}; set GPUPROF_CLI")
        try:
            import torch.distributed as dist  # noqa: F401
            if not dist.is_available():
                raise unittest.SkipTest("this torch has no torch.distributed")
        except ImportError as e:
            raise unittest.SkipTest(f"torch is not importable: {e}")
        cls.out = tempfile.mkdtemp(prefix="gpuprof_dist_")
        env = dict(os.environ)
        env.pop("RANK", None)
        env.pop("WORLD_SIZE", None)
        # NVLink multicast off, as on the GPU machines: gpuprof hands them to the launcher and the ranks.
        env.update(MULTICAST_OFF)
        # As README.md gives it: no --redirects/--tee, which Debian's torch 1.13 launcher cannot
        # parse on Python 3.11 by default ("0"): gpuprof's autorun repairs that in the launcher.
        cmd = [cls.cli, "run", "-o", os.path.join(cls.out, "prof"), "--with-modules", "--",
               sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_addr=127.0.0.1",
               f"--master_port={free_port()}", SCRIPT]
        cls.done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        cls.dbs = sorted(glob.glob(os.path.join(cls.out, "prof", "**", "ascend_pytorch_profiler*.db"), recursive=True))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def rows(self, db, sql):
        with sqlite3.connect(db) as c:
            return c.execute(sql).fetchall()


class TwoRankTest(TwoRankRun):
    def test_one_db_per_rank_with_its_rank_and_nothing_for_the_launcher(self):
        self.assertEqual(self.done.returncode, 0, self.done.stdout + self.done.stderr)
        self.assertIn("rank 0 done on cpu, replicas identical: True", self.done.stdout)
        self.assertIn("rank 1 done on cpu, replicas identical: True", self.done.stdout)
        self.assertEqual([os.path.basename(d) for d in self.dbs],
                         ["ascend_pytorch_profiler_0.db", "ascend_pytorch_profiler_1.db"], self.dbs)
        self.assertEqual(len({os.path.dirname(os.path.dirname(d)) for d in self.dbs}), 2,
                         "each rank has its own *_ascend_pt directory")
        self.assertEqual(glob.glob(os.path.join(self.out, "prof", "**", "*.partial"), recursive=True), [])
        for rank, db in enumerate(self.dbs):
            self.assertEqual(self.rows(db, "SELECT rankId, deviceId FROM RANK_DEVICE_MAP"), [(rank, rank)])
            check = subprocess.run([self.cli, "check", db], capture_output=True, text=True, timeout=120)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def test_every_rank_sees_nvlink_multicast_off(self):
        seen = " ".join(f"{name}={value}" for name, value in MULTICAST_OFF.items())
        for rank in (0, 1):
            self.assertIn(f"rank {rank} backend gloo, {seen}\n", self.done.stdout)

    def test_every_collective_is_a_communication_op(self):
        for db in self.dbs:
            ops = self.rows(db, """
                SELECT t.value, c.count, d.name, c.rankSize, a.type
                FROM COMMUNICATION_OP c JOIN STRING_IDS t ON t.id = c.opType
                JOIN ENUM_HCCL_DATA_TYPE d ON d.id = c.dataType
                JOIN CANN_API a ON a.connectionId = c.connectionId ORDER BY c.opId""")
            self.assertEqual(len(ops), COLLECTIVES, ops)
            types = [t for t, _, _, _, _ in ops]
            # torch_npu's opType spelling, which msprof-analyze's parsers split on "_"
            self.assertEqual(types.count("hcom_broadcast_"), 4)
            self.assertEqual(types.count("hcom_allReduce_"), 15)
            self.assertEqual(types.count("hcom_allGather_"), 1)
            self.assertEqual(types.count("hcom_barrier_"), 1)
            self.assertEqual({size for _, _, _, size, _ in ops}, {2})
            self.assertEqual({api for _, _, _, _, api in ops}, {5500})
            # the first broadcast is the 32x16 weight of the first Linear: 512 FP32 elements
            self.assertEqual(ops[0][:3], ("hcom_broadcast_", 512, "FP32"))
            names = self.rows(db, "SELECT s.value FROM COMMUNICATION_OP c JOIN STRING_IDS s ON s.id = c.opName")
            self.assertEqual(len(set(names)), COLLECTIVES, "opName unique per instance")
            for (name,) in names:  # HCCL's hcom_<type>__<group tag>_<n>_1
                self.assertRegex(name, r"^hcom_[a-zA-Z]+__\d{3}_\d+_1$")
        # The same collective has the same name in both ranks' DBs.
        first, second = (self.rows(db, "SELECT s.value FROM COMMUNICATION_OP c JOIN STRING_IDS s "
                                       "ON s.id = c.opName ORDER BY c.opId") for db in self.dbs)
        self.assertEqual(first, second)

    def test_module_forwards_are_ranges_in_the_module_domain(self):
        for db in self.dbs:
            ranges = self.rows(db, """
                SELECT m.value, COUNT(*) FROM MSTX_EVENTS e JOIN STRING_IDS d ON d.id = e.domainId
                JOIN STRING_IDS m ON m.id = e.message WHERE d.value = 'Module' GROUP BY m.value ORDER BY m.value""")
            # By their path in the model with the class beside it; the outermost by its class.
            self.assertEqual(ranges, [("0 (Linear)", 3), ("1 (CrossRankCenter)", 3), ("2 (ReLU)", 3),
                                      ("3 (Linear)", 3), ("Sequential", 3)])

    def test_stats_over_the_directory_reports_both_ranks(self):
        done = subprocess.run([self.cli, "stats", os.path.join(self.out, "prof")], capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("Cluster: 2 ranks", done.stdout)
        for rank in (0, 1):  # rank, device, steps (optimizer.step() closes each), ..., compute from host ops
            self.assertRegex(done.stdout, rf"(?m)^\s+{rank}\s+{rank}\s+[1-9]\d*\s.*host ops\s*$")
        self.assertRegex(done.stdout, r"(?m)^\s+step\s+rank 0\s+rank 1\s+slowest\s+spread ms$")
        for db in self.dbs:
            self.assertIn(db, done.stdout)


class SharedSchemaCheckTest(TwoRankRun):
    """../shared/tools/schema_check.py on each rank's DB: its own CTest test
    (PythonApiTest.TwoRanksSharedSchemaCheck), skipped, not passed, without ../shared."""

    SCHEMA_CHECK = os.path.join(SHARED, "tools", "schema_check.py")

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(cls.SCHEMA_CHECK):
            raise unittest.SkipTest(f"{cls.SCHEMA_CHECK} is missing (../shared beside the checkout)")
        super().setUpClass()

    def test_shared_schema_check_accepts_each_rank_db(self):
        self.assertEqual(self.done.returncode, 0, self.done.stdout + self.done.stderr)
        self.assertEqual(len(self.dbs), 2, self.dbs)
        for db in self.dbs:
            done = subprocess.run([sys.executable, self.SCHEMA_CHECK, db], capture_output=True, text=True,
                                  timeout=120)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)


if __name__ == "__main__":
    unittest.main()
