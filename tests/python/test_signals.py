"""Signals under `gpuprof run` (issue 21, defect 1): SIGTERM, SIGHUP and SIGQUIT sent to gpuprof are
forwarded to the application, and a Python program that does not handle them still finalizes its
profile, every op the PyTorch hooks buffered included, before the signal ends it; gpuprof then
exits 128+N. A program's own handler runs as before. Under torchrun the launcher handles SIGTERM
and stops its ranks with it: each rank's DB is finalized. Needs torch and the PyTorch hooks."""

import glob
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import unittest

from test_distributed import free_port  # noqa: E402  (tests/python is the working directory)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Trains until it is stopped; prints "ready" once ops have been recorded.
LOOP = textwrap.dedent("""
    import sys, time, torch
    model = torch.nn.Linear(16, 16)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(1000000):
        opt.zero_grad()
        model(torch.randn(8, 16)).square().mean().backward()
        opt.step()
        if step == 20:
            print("ready", flush=True)
    """)


def ops(db):
    with sqlite3.connect(db) as c:
        return c.execute("SELECT COUNT(*) FROM PYTORCH_API WHERE type = 50001").fetchone()[0]


class SignalTest(unittest.TestCase):
    def start(self, argv, out):
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
        return subprocess.Popen([os.environ["GPUPROF_CLI"], "run", "-o", out, "--", *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)

    def dbs(self, out):
        partial = glob.glob(os.path.join(out, "**", "*.partial"), recursive=True)
        self.assertEqual(partial, [], "unfinished DBs left behind")
        return sorted(glob.glob(os.path.join(out, "**", "ascend_pytorch_profiler*.db"), recursive=True))

    def test_term_hup_and_quit_finalize_a_python_programs_profile(self):
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            with self.subTest(signal=sig.name):
                out = tempfile.mkdtemp(prefix="gpuprof_signal_")
                run = self.start([sys.executable, "-c", LOOP], out)
                self.assertEqual(run.stdout.readline().strip(), "ready")
                run.send_signal(sig)
                stdout, stderr = run.communicate(timeout=120)
                self.assertEqual(run.returncode, 128 + sig, stderr)
                self.assertIn(f"killed by signal {int(sig)}", stderr)
                (db,) = self.dbs(out)
                self.assertGreater(ops(db), 20 * 5, "the ops the hooks buffered reached the DB")
                check = subprocess.run([os.environ["GPUPROF_CLI"], "check", db], capture_output=True, text=True)
                self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def start_many_ops_run(self, out):
        """`gpuprof run` of a script with 200,000 ops (so finalizing takes a while) in its own
        process group, once it printed "ready"; killed after 300 s."""
        script = textwrap.dedent("""
            import threading, time, torch
            from gpuprof import _native
            tid, t0 = threading.get_native_id(), time.time_ns()
            for i in range(200000):
                _native.record_op(f"op{i % 5000}", tid, t0 + i * 1000, t0 + i * 1000 + 500)
            """) + LOOP
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
        run = subprocess.Popen([os.environ["GPUPROF_CLI"], "run", "-o", out, "--", sys.executable, "-c", script],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               start_new_session=True)
        watchdog = threading.Timer(300, run.kill)
        watchdog.start()
        self.addCleanup(watchdog.cancel)
        self.assertEqual(run.stdout.readline().strip(), "ready")
        return run

    def test_repeated_sigterm_to_the_process_group_during_finalize_keeps_the_db(self):
        # Issue 39 item 5: `timeout`, Slurm and a group kill signal every process of the job while
        # gpuprof forwards one more, so the application gets SIGTERM twice or more; repeats that
        # arrive while the DB is being finalized must not end it with only the .partial file left.
        # Enough ops that finalizing takes a while; the repeats are sent once the application says
        # it is finalizing (its warning line), so they reach it mid-finalize.
        out = tempfile.mkdtemp(prefix="gpuprof_signal_")
        run = self.start_many_ops_run(out)
        os.killpg(run.pid, signal.SIGTERM)  # gpuprof and the application, and gpuprof forwards it
        stderr = []
        for line in run.stderr:
            stderr.append(line)
            if "finalizing the profile" in line:
                break
        for _ in range(3):
            try:
                os.killpg(run.pid, signal.SIGTERM)
            except ProcessLookupError:
                break
        _, rest = run.communicate(timeout=120)
        stderr = "".join(stderr) + rest
        self.assertEqual(run.returncode, 128 + signal.SIGTERM, stderr)
        (db,) = self.dbs(out)
        self.assertGreater(ops(db), 200000, stderr)
        check = subprocess.run([os.environ["GPUPROF_CLI"], "check", db], capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def test_repeated_sigint_to_the_process_group_keeps_the_db_and_the_exit_status(self):
        # SIGINT (Python's KeyboardInterrupt, then the exit handler finalizes), repeated to the
        # whole group until the run has ended: repeats during the exit handler's finalize must not
        # interrupt it, and those that reach `gpuprof run` once the application has ended must not
        # kill it mid-summary (its status stays the application's, 128+2).
        out = tempfile.mkdtemp(prefix="gpuprof_signal_")
        run = self.start_many_ops_run(out)
        while run.poll() is None:
            try:
                os.killpg(run.pid, signal.SIGINT)
            except ProcessLookupError:
                break
            try:
                run.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                pass
        _, stderr = run.communicate(timeout=120)
        self.assertEqual(run.returncode, 128 + signal.SIGINT, stderr)
        self.assertIn("More: gpuprof stats", stderr)
        (db,) = self.dbs(out)
        check = subprocess.run([os.environ["GPUPROF_CLI"], "check", db], capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def test_a_programs_own_sigterm_handler_still_runs(self):
        out = tempfile.mkdtemp(prefix="gpuprof_signal_")
        script = "import signal, sys\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(3))\n" + LOOP
        run = self.start([sys.executable, "-c", script], out)
        self.assertEqual(run.stdout.readline().strip(), "ready")
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate(timeout=120)
        self.assertEqual(run.returncode, 3, stderr)
        (db,) = self.dbs(out)
        self.assertGreater(ops(db), 20 * 5)

    def test_torchrun_stopped_with_sigterm_finalizes_each_rank(self):
        out = tempfile.mkdtemp(prefix="gpuprof_signal_")
        run = self.start([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                          "--master_addr=127.0.0.1", f"--master_port={free_port()}",
                          os.path.join(REPO, "examples", "train_ddp.py"), "--steps", "1000000",
                          "--print-every", "2"], out)
        # Both ranks past a few steps (their collectives included): the startup's cost differs by
        # machine, so the test waits for the ranks' own word, not for a time. The ranks share one
        # pipe, so their words are searched anywhere in a line; a run that never says them is
        # killed after 300 s, so the test fails instead of hanging.
        watchdog = threading.Timer(300, run.kill)
        watchdog.start()
        self.addCleanup(watchdog.cancel)
        stepped = set()
        while len(stepped) < 2:
            line = run.stdout.readline()
            self.assertTrue(line, "torchrun ended before both ranks reached step 4")
            for rank, step in re.findall(r"rank (\d) step (\d+)", line):
                if int(step) >= 4:
                    stepped.add(rank)
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate(timeout=180)
        self.assertNotEqual(run.returncode, 0, stderr)
        dbs = self.dbs(out)
        self.assertEqual([os.path.basename(d) for d in dbs], ["ascend_pytorch_profiler_0.db",
                                                             "ascend_pytorch_profiler_1.db"], stderr)
        for db in dbs:
            with sqlite3.connect(db) as c:
                self.assertGreater(c.execute("SELECT COUNT(*) FROM COMMUNICATION_OP").fetchone()[0], 4, db)


if __name__ == "__main__":
    unittest.main()
