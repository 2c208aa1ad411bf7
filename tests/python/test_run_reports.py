"""What `gpuprof run` says at the end about profiles that never started or never finished (issue 21,
defects 4 and 5): a start that fails is named in the last line, and another run's unfinished DB in
the same output directory is not claimed as this run's; and its progress, a live line on a terminal
and nothing in a pipe. Needs torch and the PyTorch hooks."""

import fcntl
import os
import pty
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import textwrap
import unittest

LOOP = textwrap.dedent("""
    import torch
    for step in range(10000000):
        torch.ones(4).add_(1)
        if step == 20:
            print("ready", flush=True)
    """)
SHORT = "import torch; torch.ones(4).add_(1)"
# Ops for a couple of seconds: longer than the live line's one-second delay.
BUSY = textwrap.dedent("""
    import time, torch
    start = time.monotonic()
    while time.monotonic() - start < 2.5:
        torch.ones(4).add_(1)
    print("trained", flush=True)
    """)


def on_a_terminal(argv, env, rows=24, columns=100):
    """Runs argv with stdout and stderr on a pseudo-terminal; (exit status, every byte shown)."""
    screen, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal,
                            env=dict(env, TERM="xterm"))
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(screen, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(screen)
    return proc.wait(timeout=300), shown.decode("utf-8", "replace")


def run_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "GPUPROF_WORKER_NAME")}
    env.update(extra)
    return env


class RunReportTest(unittest.TestCase):
    def test_a_start_that_fails_is_named_in_the_last_line(self):
        out = tempfile.mkdtemp(prefix="gpuprof_report_")
        run = subprocess.run([os.environ["GPUPROF_CLI"], "run", "-o", out, "--", sys.executable, "-c", SHORT],
                             capture_output=True, text=True, timeout=300, env=run_env(GPUPROF_WORKER_NAME=".."))
        self.assertEqual(run.returncode, 0, run.stderr)
        last = run.stderr.strip().splitlines()[-1]
        self.assertIn("gpuprof: no profile was recorded: profiling could not start in pid", last)
        self.assertIn('GPUPROF_WORKER_NAME="..": a worker name is one directory-name component', last)
        self.assertNotIn("did not initialize CUDA", run.stderr)

    def test_another_runs_live_db_in_the_same_output_is_not_claimed(self):
        out = tempfile.mkdtemp(prefix="gpuprof_report_")
        cli = os.environ["GPUPROF_CLI"]
        live = subprocess.Popen([cli, "run", "-o", out, "--", sys.executable, "-c", LOOP], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=run_env())
        try:
            self.assertEqual(live.stdout.readline().strip(), "ready")
            short = subprocess.run([cli, "run", "-o", out, "--", sys.executable, "-c", SHORT], capture_output=True,
                                   text=True, timeout=300, env=run_env())
            self.assertEqual(short.returncode, 0, short.stderr)
            self.assertNotIn(".partial", short.stderr, "the live run's DB was named as this run's")
            self.assertNotIn("unfinished", short.stderr)
        finally:
            live.send_signal(signal.SIGTERM)
            _, live_err = live.communicate(timeout=120)
        self.assertNotIn("unfinished", live_err)


class ProgressTest(unittest.TestCase):
    """Issue 21: progress on long work, a live line on a terminal and nothing in a pipe."""

    def test_run_shows_a_live_line_of_ops_on_a_terminal_and_gives_the_row_back(self):
        out = tempfile.mkdtemp(prefix="gpuprof_progress_")
        self.addCleanup(shutil.rmtree, out, True)
        status, shown = on_a_terminal([os.environ["GPUPROF_CLI"], "run", "-o", out, "--", sys.executable, "-c", BUSY],
                                      run_env())
        self.assertEqual(status, 0, shown)
        # The last row is kept apart (scroll region 1-23) and the line drawn there counts the ops.
        self.assertIn("\x1b[1;23r", shown)
        counts = [int(n.replace(",", "")) for n in re.findall(r"gpuprof run: \d+ launches, \d+ kernels, ([\d,]+) ops", shown)]
        self.assertTrue(counts and max(counts) > 0, shown[-2000:])
        self.assertEqual(counts, sorted(counts), "the counts only grow")
        # The application's output and gpuprof's summary come after the region is given back.
        reset = shown.rfind("\x1b[r")
        self.assertGreater(reset, shown.find("trained"))
        self.assertIn("gpuprof: profile DB: ", shown[reset:])
        self.assertNotIn("gpuprof run:", shown[reset:])

        # check of that DB on a terminal: the part being checked, on the cursor's line, then erased.
        db = re.search(r"gpuprof: profile DB: (\S+\.db)", shown[reset:]).group(1)
        status, checked = on_a_terminal([os.environ["GPUPROF_CLI"], "check", db], run_env())
        self.assertEqual(status, 0, checked)
        self.assertRegex(checked, r"\r\x1b\[2Kgpuprof check: [a-zA-Z]")
        self.assertIn("\r\x1b[2Kok: " + db, checked)

        # --progress off: nothing drawn, and the profiled process writes no counts.
        status, quiet = on_a_terminal([os.environ["GPUPROF_CLI"], "check", "--progress", "off", db], run_env())
        self.assertEqual(status, 0, quiet)
        self.assertNotIn("\x1b", quiet)

    def test_in_a_pipe_there_is_no_progress_line_and_no_progress_file(self):
        out = tempfile.mkdtemp(prefix="gpuprof_progress_")
        tmp = tempfile.mkdtemp(prefix="gpuprof_progress_tmp_")
        self.addCleanup(shutil.rmtree, out, True)
        self.addCleanup(shutil.rmtree, tmp, True)
        seen = set()
        proc = subprocess.Popen([os.environ["GPUPROF_CLI"], "run", "-o", out, "--", sys.executable, "-c", BUSY],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=run_env(TMPDIR=tmp, TERM="xterm"))
        while proc.poll() is None:  # what the run's private folder holds while the program runs
            for root, _, files in os.walk(tmp):
                seen.update(files)
        stdout, stderr = proc.communicate(timeout=300)
        self.assertEqual(proc.returncode, 0, stderr)
        self.assertIn("trained", stdout)
        self.assertNotIn("\x1b", stderr)
        self.assertNotIn("gpuprof run:", stderr)
        self.assertIn("results", seen, "the run's result file was seen: the walk looked in the right place")
        self.assertEqual([f for f in seen if ".progress." in f], [])
        self.assertEqual(os.listdir(tmp), [], "the run's private folder is removed")


if __name__ == "__main__":
    unittest.main()
