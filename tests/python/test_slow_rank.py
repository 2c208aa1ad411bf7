"""The slow-rank finding of `gpuprof stats DIR` on two gloo ranks (issue 41): when rank 1 straggles
30 ms per step outside every op, the finding names rank 1 as host-bound, the collective where rank 0
waits for it, and a time at stake within 20 % of what the program slept; with the ranks even, it
stays silent. The text and `--format json` ("across_ranks") carry the same figures. Needs torch with
torch.distributed and the PyTorch hooks (GPUPROF_LIB_DIR, GPUPROF_CLI)."""

import glob
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_findings import SCHEMA, schema_errors  # noqa: E402
PROGRAM = os.path.join(HERE, "planted", "straggler.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_two_ranks(out, mode):
    """`gpuprof run -o OUT/prof -- torchrun 2 ranks straggler.py MODE`: (rank DBs' directory, planted)."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "GPUPROF_WORKER_NAME")}
    planted = os.path.join(out, "planted")
    run = subprocess.run([os.environ["GPUPROF_CLI"], "run", "-o", os.path.join(out, "prof"), "--", sys.executable,
                          "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_addr=127.0.0.1",
                          f"--master_port={free_port()}", PROGRAM, mode, planted],
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    with open(planted + ".1.json") as f:
        return os.path.join(out, "prof"), json.load(f)


def stats(path, *flags):
    run = subprocess.run([os.environ["GPUPROF_CLI"], "stats", path, *flags], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout


class SlowRankTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.environ.get("GPUPROF_CLI") or not os.environ.get("GPUPROF_LIB_DIR"):
            raise unittest.SkipTest("set GPUPROF_CLI and GPUPROF_LIB_DIR")
        try:
            import torch.distributed as dist
            if not dist.is_available():
                raise unittest.SkipTest("this torch has no torch.distributed")
        except ImportError as e:
            raise unittest.SkipTest(f"torch is not importable: {e}")
        cls.tmp = tempfile.mkdtemp(prefix="gpuprof_slow_rank_")
        cls.straggler, cls.planted = run_two_ranks(os.path.join(cls.tmp, "straggler"), "straggler")
        cls.even, _ = run_two_ranks(os.path.join(cls.tmp, "even"), "even")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def across(self, path):
        document = json.loads(stats(path, "--format", "json"))
        with open(SCHEMA) as f:
            self.assertEqual(schema_errors(document, json.load(f)), [])
        return document["across_ranks"]

    def test_the_straggling_rank_is_named_with_its_cause_and_the_collective_waited_in(self):
        across = self.across(self.straggler)
        found = {f["id"]: f for f in across["findings"]}
        self.assertIn("slow-rank", found, json.dumps(across, indent=1))
        f = found["slow-rank"]
        planted = statistics.mean(row["straggle_ms"] for row in self.planted)
        self.assertLess(abs(f["at_stake_ms_per_step"] - planted), 0.2 * planted,
                        f"{f['at_stake_ms_per_step']} ms per step against {planted:.1f} planted")
        top = f["evidence"][0]
        self.assertEqual(top["name"], "rank 1 is the slowest")
        self.assertIn("host-bound", top["context"])
        self.assertIn("rank 0 waits for it in hcom_allReduce_", top["context"])
        # The collectives: the most skewed is an all-reduce that rank 0 entered first.
        c = across["collectives"][0]
        self.assertTrue(c["name"].startswith("hcom_allReduce_"), c)
        self.assertEqual((c["first_rank"], c["last_rank"]), (0, 1))
        self.assertGreater(c["skew_ms"], 0.5 * planted)
        # The text says the same.
        text = stats(self.straggler)
        self.assertIn("Across the ranks", text)
        # The text's two decimals round the exact figure; the JSON's has microseconds.
        per_step = re.search(r"in collectives: ([0-9.]+) ms per step", text)
        self.assertIsNotNone(per_step, text)
        self.assertAlmostEqual(float(per_step.group(1)), f["at_stake_ms_per_step"], delta=0.006)
        self.assertIn("rank 1 is the slowest", text)

    def test_even_ranks_have_no_slow_rank(self):
        across = self.across(self.even)
        self.assertNotIn("slow-rank", [f["id"] for f in across["findings"]], json.dumps(across, indent=1))


if __name__ == "__main__":
    unittest.main()
