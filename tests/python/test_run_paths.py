"""`gpuprof run` with odd output paths and a full disk (issue 39 item 9): an output path longer
than SQLite's 512-byte limit is profiled, and stats/check read the DB; a newline in -o or in the
worker name stays inside one summary line (escaped) and the DB is found; a disk that fills while
the DB is written is named as such in the last line, with the unfinished file. Needs torch and
the PyTorch hooks; the full disk needs root (a small tmpfs) and is skipped otherwise."""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

TRAIN = textwrap.dedent("""
    import torch
    model = torch.nn.Linear(16, 16)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(20):
        opt.zero_grad()
        model(torch.randn(8, 16)).square().mean().backward()
        opt.step()
    """)


def cli(*args):
    return subprocess.run([os.environ["GPUPROF_CLI"], *args], capture_output=True, text=True, timeout=300)


class RunPathsTest(unittest.TestCase):
    def run_gpuprof(self, out, script=TRAIN, env_extra=None):
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
        env.update(env_extra or {})
        return subprocess.run([os.environ["GPUPROF_CLI"], "run", "-o", out, "--", sys.executable, "-c", script],
                              capture_output=True, text=True, env=env, timeout=300)

    def tmp(self):
        d = tempfile.mkdtemp(prefix="gpuprof_paths_")
        self.addCleanup(shutil.rmtree, d, True)
        return d

    def test_an_output_path_longer_than_sqlites_limit_is_profiled_and_read(self):
        out = self.tmp()
        for i in range(7):  # > 600 bytes, each component well under NAME_MAX
            out = os.path.join(out, f"{i}" * 90)
        done = self.run_gpuprof(out)
        self.assertEqual(done.returncode, 0, done.stderr)
        dbs = glob.glob(os.path.join(glob.escape(out), "**", "ascend_pytorch_profiler*.db"), recursive=True)
        self.assertEqual(len(dbs), 1, done.stderr)
        self.assertGreater(len(dbs[0]), 600)
        self.assertIn("profile DB: " + dbs[0], done.stderr)
        self.assertNotIn("warning", done.stderr)
        stats = cli("stats", dbs[0])
        self.assertEqual(stats.returncode, 0, stats.stderr)
        check = cli("check", dbs[0])
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def test_a_newline_in_the_output_dir_or_worker_name_is_escaped_in_the_summary(self):
        for where in ("output dir", "worker name"):
            with self.subTest(where=where):
                out = self.tmp()
                if where == "output dir":
                    out = os.path.join(out, "two\nlines")
                    done = self.run_gpuprof(out)
                else:
                    done = self.run_gpuprof(out, env_extra={"GPUPROF_WORKER_NAME": "w\nx"})
                self.assertEqual(done.returncode, 0, done.stderr)
                dbs = glob.glob(os.path.join(glob.escape(out), "**", "ascend_pytorch_profiler*.db"), recursive=True)
                self.assertEqual(len(dbs), 1, done.stderr)
                shown = dbs[0].replace("\n", "\\n")
                self.assertIn("gpuprof: profile DB: " + shown + "\n", done.stderr)
                self.assertIn("More: gpuprof stats $'" + shown + "'", done.stderr)
                self.assertNotIn("cannot summarize", done.stderr)

    def test_a_full_disk_at_finalize_is_named_in_the_last_line(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to mount a small tmpfs")
        out = self.tmp()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", out], capture_output=True).returncode:
            self.skipTest("cannot mount a tmpfs here")
        self.addCleanup(subprocess.run, ["umount", "-l", out], capture_output=True)
        script = textwrap.dedent("""
            import threading, time, torch
            from gpuprof import _native
            tid, t0 = threading.get_native_id(), time.time_ns()
            for i in range(100000):
                _native.record_op(f"an op with a name long enough to fill the disk {i}", tid, t0 + i * 1000,
                                  t0 + i * 1000 + 500)
            """)
        done = self.run_gpuprof(out, script)
        last = done.stderr.strip().splitlines()[-1]
        self.assertIn("disk is full (ENOSPC) under " + out, last, done.stderr)
        self.assertRegex(last, r"the unfinished file \S+\.partial was (kept|removed)")
        self.assertNotIn("a profiled process ended", last)


if __name__ == "__main__":
    unittest.main()
