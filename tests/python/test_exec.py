"""A profiled program that calls exec (issue 39 item 6): exec runs no exit handler, so the session
is finalized before the new program replaces the process (the exec guard `gpuprof run` preloads);
the new program, profiled too, gets a DB of its own beside the first; an exec that fails leaves
the program running and its DB written. Needs torch and the PyTorch hooks."""

import glob
import os
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import unittest

TRAIN = textwrap.dedent("""
    import torch
    model = torch.nn.Linear(16, 16)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(30):
        opt.zero_grad()
        model(torch.randn(8, 16)).square().mean().backward()
        opt.step()
    """)


def ops(db):
    with sqlite3.connect(db) as c:
        return c.execute("SELECT COUNT(*) FROM PYTORCH_API WHERE type = 50001").fetchone()[0]


class ExecTest(unittest.TestCase):
    def run_gpuprof(self, script):
        out = tempfile.mkdtemp(prefix="gpuprof_exec_")
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
        done = subprocess.run([os.environ["GPUPROF_CLI"], "run", "-o", out, "--", sys.executable, "-c", script],
                              capture_output=True, text=True, env=env, timeout=300)
        partial = glob.glob(os.path.join(out, "**", "*.partial"), recursive=True)
        self.assertEqual(partial, [], "unfinished DBs left behind\n" + done.stderr)
        dbs = sorted(glob.glob(os.path.join(out, "**", "ascend_pytorch_profiler*.db"), recursive=True))
        for db in dbs:
            check = subprocess.run([os.environ["GPUPROF_CLI"], "check", db], capture_output=True, text=True)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        return done, dbs

    def test_exec_after_training_keeps_the_profile_and_the_new_program_gets_its_own(self):
        after = TRAIN + "print('second program done', flush=True)\n"
        script = TRAIN + f"import os, sys\nos.execv(sys.executable, [sys.executable, '-c', {after!r}])\n"
        done, dbs = self.run_gpuprof(script)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("second program done", done.stdout)
        self.assertEqual(len(dbs), 2, done.stderr)
        for db in dbs:
            self.assertGreater(ops(db), 30, db)
            self.assertIn(db, done.stderr, "run's summary names both DBs")

    def test_exec_into_a_program_that_is_not_profiled_keeps_the_profile(self):
        done, dbs = self.run_gpuprof(TRAIN + "import os\nos.execl('/bin/sh', 'sh', '-c', 'echo replaced')\n")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("replaced", done.stdout)
        self.assertEqual(len(dbs), 1, done.stderr)
        self.assertGreater(ops(dbs[0]), 30)

    def test_a_failed_exec_leaves_the_program_running_and_its_db_written(self):
        script = TRAIN + textwrap.dedent("""
            import os
            try:
                os.execv('/nonexistent/program', ['program'])
            except OSError as e:
                print('exec failed:', e.errno, flush=True)
            model(torch.randn(8, 16)).sum().backward()
            print('still running', flush=True)
            """)
        done, dbs = self.run_gpuprof(script)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("exec failed: 2", done.stdout)
        self.assertIn("still running", done.stdout)
        self.assertEqual(len(dbs), 1, done.stderr)
        self.assertGreater(ops(dbs[0]), 30)
        self.assertIn("exec failed", done.stderr)


if __name__ == "__main__":
    unittest.main()
